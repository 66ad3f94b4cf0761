"""The WordNet noun graph over a corpus of concepts, as arrays: ancestor sets, distances, depths, information content.

The corpus is the given concepts plus every WordNet ancestor of theirs (hypernyms and instance hypernyms), each
counted once. p(c) = |corpus concepts under c, c included| / |corpus| and IC(c) = -log p(c), so p(entity) = 1.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from lifelong.concepts.wnids import UnknownConceptError, check_wnid, to_wnid


@dataclass(frozen=True)
class Taxonomy:
    """Nodes (the corpus) in a fixed order, with per-node arrays and sparse ancestor matrices.

    `ancestors[i, j]` is True when j is i or an ancestor of i; `distance[i, j]` is 1 + the length of the
    shortest hypernym path from i up to j (stored +1 so that i itself is kept in the sparse matrix).
    """

    wnids: tuple[str, ...]
    synset_names: tuple[str, ...]  # nltk's names ('dog.n.01'): nltk breaks ties between subsumers by them
    lemmas: tuple[str, ...]  # the first lemma, readable ('tiger cat')
    parents: tuple[tuple[int, ...], ...]
    ancestors: sp.csr_matrix
    distance: sp.csr_matrix
    min_depth: np.ndarray
    max_depth: np.ndarray
    counts: np.ndarray  # corpus concepts under each node, itself included
    ic: np.ndarray
    index: dict[str, int] = field(repr=False)
    cache: dict = field(default_factory=dict, repr=False, compare=False)  # derived tables, built on first use

    def __len__(self) -> int:
        return len(self.wnids)

    def indices(self, wnids: Iterable[str], what: str = "concept") -> np.ndarray:
        """Node indices of `wnids`, or an UnknownConceptError naming the first that is not in the corpus."""
        out = []
        for wnid in wnids:
            position = self.index.get(check_wnid(wnid, what))
            if position is None:
                raise UnknownConceptError(f"{what} {wnid} is not in the concept corpus; build it with this concept")
            out.append(position)
        return np.asarray(out, dtype=np.int64)

    def subtree_mask(self, root: str) -> np.ndarray:
        """Boolean mask of the nodes under `root` (itself included)."""
        column = self.ancestors[:, self.index[root]] if root in self.index else None
        mask = np.zeros(len(self), dtype=bool)
        if column is not None:
            mask[column.nonzero()[0]] = True
        return mask


class CorpusNotice(UserWarning):
    """Something about the corpus a user should know that is not an error (a concept added to it)."""


def synset_of(wordnet, wnid: str, where: str = "concept"):
    """nltk's noun synset for a wnid, or an UnknownConceptError naming it."""
    check_wnid(wnid, where)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nltk warns before returning None for an offset that is no synset
        try:
            synset = wordnet.synset_from_pos_and_offset("n", int(wnid[1:]))
        except (ValueError, AssertionError, IndexError):
            synset = None
    if synset is None:
        raise UnknownConceptError(f"{where} {wnid} is no WordNet 3.0 noun synset (no synset at offset {wnid[1:]})")
    return synset


def build_taxonomy(wordnet, concepts: Iterable[str], what: str = "concept") -> Taxonomy:
    """The taxonomy of `concepts` and all their WordNet ancestors, read through nltk's reader `wordnet`."""
    synsets = {}
    todo = []
    for wnid in dict.fromkeys(concepts):
        synset = synset_of(wordnet, wnid, what)
        synsets[wnid] = synset
        todo.append(synset)
    parent_wnids: dict[str, list[str]] = {}
    while todo:
        synset = todo.pop()
        wnid = to_wnid(synset.offset())
        if wnid in parent_wnids:
            continue
        hypernyms = synset.hypernyms() + synset.instance_hypernyms()
        parent_wnids[wnid] = [to_wnid(h.offset()) for h in hypernyms]
        for hypernym in hypernyms:
            key = to_wnid(hypernym.offset())
            synsets.setdefault(key, hypernym)
            if key not in parent_wnids:
                todo.append(hypernym)
    order = _topological(parent_wnids)
    index = {wnid: i for i, wnid in enumerate(order)}
    parents = tuple(tuple(index[p] for p in parent_wnids[w]) for w in order)
    rows, cols, dist, min_depth, max_depth = _closure(parents)
    n = len(order)
    ancestors = sp.csr_matrix((np.ones(len(rows), dtype=bool), (rows, cols)), shape=(n, n))
    distance = sp.csr_matrix((dist + 1, (rows, cols)), shape=(n, n), dtype=np.int32)
    ancestors.sort_indices()
    distance.sort_indices()
    counts = np.bincount(cols, minlength=n)
    return Taxonomy(
        wnids=tuple(order),
        synset_names=tuple(synsets[w].name() for w in order),
        lemmas=tuple(synsets[w].lemma_names()[0].replace("_", " ") for w in order),
        parents=parents,
        ancestors=ancestors,
        distance=distance,
        min_depth=min_depth,
        max_depth=max_depth,
        counts=counts,
        ic=-np.log(counts / n),
        index=index,
    )


def _topological(parent_wnids: dict[str, list[str]]) -> list[str]:
    """Nodes ordered so that every parent comes before its children (ties by wnid, for a stable order)."""
    children: dict[str, list[str]] = {w: [] for w in parent_wnids}
    waiting = {w: len(ps) for w, ps in parent_wnids.items()}
    for wnid, ps in parent_wnids.items():
        for p in ps:
            children[p].append(wnid)
    ready = sorted(w for w, k in waiting.items() if k == 0)
    order = []
    while ready:
        nxt = []
        for wnid in ready:
            order.append(wnid)
            for child in children[wnid]:
                waiting[child] -= 1
                if waiting[child] == 0:
                    nxt.append(child)
        ready = sorted(nxt)
    if len(order) != len(parent_wnids):
        raise ValueError("WordNet's hypernym graph has a cycle here; is this WordNet 3.0?")
    return order


def _closure(parents: Sequence[tuple[int, ...]]):
    """(rows, cols, shortest distance, min depth, max depth) of every node-ancestor pair, parents first."""
    n = len(parents)
    up: list[dict[int, int]] = [{} for _ in range(n)]
    min_depth = np.zeros(n, dtype=np.int64)
    max_depth = np.zeros(n, dtype=np.int64)
    for i, ps in enumerate(parents):
        mine = {i: 0}
        for p in ps:
            for a, d in up[p].items():
                if d + 1 < mine.get(a, n + 1):
                    mine[a] = d + 1
        up[i] = mine
        if ps:
            min_depth[i] = 1 + min(min_depth[p] for p in ps)
            max_depth[i] = 1 + max(max_depth[p] for p in ps)
    sizes = np.fromiter((len(u) for u in up), dtype=np.int64, count=n)
    rows = np.repeat(np.arange(n), sizes)
    cols = np.fromiter((a for u in up for a in u), dtype=np.int64, count=int(sizes.sum()))
    dist = np.fromiter((d for u in up for d in u.values()), dtype=np.int64, count=int(sizes.sum()))
    return rows, cols, dist, min_depth, max_depth
