"""Concept similarity on a Taxonomy (Lin, Wu-Palmer, Jiang-Conrath), pairwise and to a seen set, vectorised.

For each candidate-seen pair the subsumer is found among their common ancestors with one gather per batch of
candidates: rows of a (seen-ancestor x seen) table picked by the candidate's ancestors, then a segmented max
(`np.maximum.reduceat`). Definitions follow nltk's (the tests compare with it):
- Lin = 2 IC(lcs) / (IC(c1) + IC(c2)), lcs = the most informative common subsumer (multiple inheritance: the max
  IC over all common ancestors);
- Jiang-Conrath = 1 / (IC(c1) + IC(c2) - 2 IC(lcs)), 1e300 for identical concepts, 0 when either is the root;
- Wu-Palmer = 2 d / (len1 + len2 + 2 d) with nltk's subsumer (the common ancestor of largest minimum depth, the
  concept itself first, then by synset name), d = its maximum depth + 1, len = nltk's shortest path distance.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from lifelong.concepts.taxonomy import Taxonomy
from lifelong.concepts.text_similarity import text_to_seen

INF = 1e300  # nltk's stand-in for an infinite Jiang-Conrath similarity
BATCH = 512
GRAPH_MEASURES = ("lin", "wup", "jcn")


class _Gather:
    """For candidate rows: per (candidate, seen) pair, the max of a per-node key over their common ancestors."""

    node: np.ndarray  # Wu-Palmer only: the node whose key ends in a given remainder

    def __init__(self, tax: Taxonomy, seen: np.ndarray, key: np.ndarray):
        seen_anc = tax.ancestors[seen]
        self.columns = np.unique(seen_anc.indices)  # every ancestor of some seen concept
        self.where = np.full(len(tax), -1, dtype=np.int64)
        self.where[self.columns] = np.arange(len(self.columns))
        member = seen_anc[:, self.columns].T.toarray()  # (seen ancestors, seen)
        self.table = np.where(member, key[self.columns][:, None], -np.inf)

    def best(self, tax: Taxonomy, rows: np.ndarray, bonus: tuple[float, ...] = ()) -> np.ndarray:
        """(len(rows), seen) maxima; `bonus` (one value) is added where the ancestor is the candidate itself."""
        sub = tax.ancestors[rows]
        position = self.where[sub.indices]
        keep = position >= 0
        owner = np.repeat(np.arange(len(rows)), np.diff(sub.indptr))[keep]
        gathered = self.table[position[keep]]
        if bonus:
            gathered[sub.indices[keep] == rows[owner]] += bonus[0]
        starts = np.searchsorted(owner, np.arange(len(rows)))  # the root is common to all: no segment is empty
        return np.maximum.reduceat(gathered, starts, axis=0)


def _batches(n: int):
    for start in range(0, n, BATCH):
        yield slice(start, min(n, start + BATCH))


def lcs_ic(tax: Taxonomy, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(len(a), len(b)): IC of the most informative common subsumer of each pair of node indices."""
    gather = _Gather(tax, np.asarray(b), tax.ic)
    return np.vstack([gather.best(tax, np.asarray(a)[s]) for s in _batches(len(a))])


def _lin(ic_a: np.ndarray, ic_b: np.ndarray, lcs: np.ndarray) -> np.ndarray:
    total = ic_a[:, None] + ic_b[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, 2.0 * lcs / np.where(total > 0, total, 1.0), 1.0)


def _jcn(ic_a: np.ndarray, ic_b: np.ndarray, lcs: np.ndarray, same: np.ndarray) -> np.ndarray:
    diff = ic_a[:, None] + ic_b[None, :] - 2.0 * lcs
    with np.errstate(divide="ignore"):
        value = np.where(diff == 0, INF, 1.0 / np.where(diff == 0, 1.0, diff))
    value = np.where((ic_a[:, None] == 0) | (ic_b[None, :] == 0), 0.0, value)
    return np.where(same, INF, value)


def _hops(tax: Taxonomy) -> tuple[np.ndarray, np.ndarray]:
    """nltk's shortest_path_distance(i, a) for every node i and ancestor a, as (sorted keys i*n+a, distances).

    nltk measures it through any common ancestor x: min over x above a of d(i, x) + d(a, x), which is shorter than
    the path from i up to a only where multiple inheritance offers a detour; nodes with a single chain above keep d.
    """
    cached = tax.cache.get("hops")
    if cached is not None:
        return cached
    dist = tax.distance
    n = len(tax)
    hops = dist.data.astype(np.int64) - 1  # the directed distances, refined below where detours exist
    up = hops.copy()
    multiple = np.array([len(p) > 1 for p in tax.parents])
    rows_with_detours = np.unique(np.repeat(np.arange(n), np.diff(dist.indptr))[multiple[dist.indices]])
    indptr, indices = dist.indptr, dist.indices
    for i in rows_with_detours.tolist():
        lo, hi = indptr[i], indptr[i + 1]
        mine = dict(zip(indices[lo:hi].tolist(), up[lo:hi].tolist(), strict=True))
        for k, a in enumerate(indices[lo:hi].tolist()):
            above = zip(
                indices[indptr[a] : indptr[a + 1]].tolist(), up[indptr[a] : indptr[a + 1]].tolist(), strict=True
            )
            hops[lo + k] = min(mine[x] + d for x, d in above)
    keys = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr)) * n + indices
    tax.cache["hops"] = (keys, hops)
    return keys, hops


def _lookup(table: tuple[np.ndarray, np.ndarray], n: int, i: np.ndarray, a: np.ndarray) -> np.ndarray:
    keys, values = table
    return values[np.searchsorted(keys, i.astype(np.int64) * n + a)].astype(np.float64)


def _wup_block(tax: Taxonomy, gather: _Gather, rows: np.ndarray, seen: np.ndarray) -> np.ndarray:
    n = len(tax)
    best = gather.best(tax, rows, bonus=(float(n),))
    lcs = gather.node[np.mod(best, n).astype(np.int64)]
    depth = tax.max_depth[lcs] + 1.0
    hops = _hops(tax)
    len1 = _lookup(hops, n, np.broadcast_to(rows[:, None], lcs.shape), lcs)
    len2 = _lookup(hops, n, np.broadcast_to(seen[None, :], lcs.shape), lcs)
    return 2.0 * depth / (len1 + len2 + 2.0 * depth)


def _wup_gather(tax: Taxonomy, seen: np.ndarray) -> _Gather:
    """A gather whose key picks nltk's Wu-Palmer subsumer: largest min depth, the candidate itself, first name."""
    n = len(tax)
    name_rank = np.empty(n, dtype=np.int64)
    name_rank[np.argsort(np.asarray(tax.synset_names), kind="stable")] = np.arange(n)
    low = n - 1 - name_rank  # earlier name = larger key; the key's remainder mod n is this
    key = tax.min_depth.astype(np.float64) * (2 * n) + low
    gather = _Gather(tax, seen, key)
    gather.node = np.empty(n, dtype=np.int64)
    gather.node[low] = np.arange(n)
    return gather


def pairwise(tax: Taxonomy, a: np.ndarray, b: np.ndarray, measure: str = "lin") -> np.ndarray:
    """(len(a), len(b)) similarities between node indices under `measure` (lin, jcn or wup)."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    if measure == "wup":
        gather = _wup_gather(tax, b)
        return np.vstack([_wup_block(tax, gather, a[s], b) for s in _batches(len(a))])
    lcs = lcs_ic(tax, a, b)
    if measure == "lin":
        return _lin(tax.ic[a], tax.ic[b], lcs)
    if measure == "jcn":
        return _jcn(tax.ic[a], tax.ic[b], lcs, a[:, None] == b[None, :])
    raise ValueError(f"unknown similarity {measure!r}; choose one of {sorted(GRAPH_MEASURES)}")


def _max_to_seen(measure: str) -> Callable[[Taxonomy, np.ndarray, np.ndarray], np.ndarray]:
    def to_seen(tax: Taxonomy, candidates: np.ndarray, seen: np.ndarray) -> np.ndarray:
        candidates, seen = np.asarray(candidates, dtype=np.int64), np.asarray(seen, dtype=np.int64)
        if measure == "wup":
            gather = _wup_gather(tax, seen)
            block = lambda rows: _wup_block(tax, gather, rows, seen)  # noqa: E731
        else:
            gather = _Gather(tax, seen, tax.ic)
            block = lambda rows: (  # noqa: E731
                _lin(tax.ic[rows], tax.ic[seen], gather.best(tax, rows))
                if measure == "lin"
                else _jcn(tax.ic[rows], tax.ic[seen], gather.best(tax, rows), rows[:, None] == seen[None, :])
            )
        out = np.empty(len(candidates), dtype=np.float64)
        for s in _batches(len(candidates)):
            out[s] = block(candidates[s]).max(axis=1)
        return out

    to_seen.__doc__ = f"Each candidate's maximum {measure} similarity over the seen set (node indices)."
    return to_seen


# Similarity of each candidate to a seen set, by name: `(taxonomy, candidate indices, seen indices) -> array`.
# Extension point: a text-embedding similarity (cosine between embeddings of concept names or glosses) registers
# here under its own name with this signature; it may ignore the graph and read `taxonomy.wnids` and `.lemmas`.
# `text` is one: its module imports the sentence model (and torch) only when it has texts to embed.
SET_SIMILARITIES: dict[str, Callable[[Taxonomy, np.ndarray, np.ndarray], np.ndarray]] = {
    **{name: _max_to_seen(name) for name in GRAPH_MEASURES},
    "text": text_to_seen,
}


def ancestor_closure(tax: Taxonomy, nodes: np.ndarray, relation: str = "ancestor") -> np.ndarray:
    """Mask of the nodes that are proper ancestors (or, for relation='parent', direct parents) of `nodes`."""
    mask = np.zeros(len(tax), dtype=bool)
    nodes = np.asarray(nodes, dtype=np.int64)
    if relation == "ancestor":
        sub: sp.csr_matrix = tax.ancestors[nodes]
        above = sub.indices[sub.indices != np.repeat(nodes, np.diff(sub.indptr))]
        mask[above] = True
    elif relation == "parent":
        for i in nodes.tolist():
            mask[list(tax.parents[i])] = True
    else:
        raise ValueError(f"unknown relation {relation!r}; choose 'ancestor' or 'parent'")
    return mask
