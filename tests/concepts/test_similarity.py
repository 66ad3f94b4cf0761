"""Information content and similarity: brute force on a hand-made graph, and nltk's own measures on WordNet."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from lifelong.concepts import CorpusNotice, build_taxonomy, imagenet1k, imagenet21k, lcs_ic, lin_to_seen, pairwise
from lifelong.concepts.similarity import SET_SIMILARITIES
from lifelong.concepts.wnids import to_wnid


class FakeSynset:
    def __init__(self, graph, offset):
        self.graph, self._offset = graph, offset

    def offset(self):
        return self._offset

    def name(self):
        return f"s{self._offset}.n.01"

    def lemma_names(self):
        return [f"s{self._offset}"]

    def hypernyms(self):
        return [FakeSynset(self.graph, p) for p in self.graph[self._offset]]

    def instance_hypernyms(self):
        return []


class FakeWordNet:
    """A hand-made noun graph {offset: [parent offsets]} behind nltk's reader interface."""

    def __init__(self, graph):
        self.graph = graph

    def synset_from_pos_and_offset(self, pos, offset):
        return FakeSynset(self.graph, offset) if offset in self.graph else None


# 1 is the root. 6 has two parents (3 and 4): multiple inheritance. 4 sits deeper than 3 but is shallower in IC terms.
GRAPH = {1: [], 2: [1], 3: [1], 4: [2], 5: [4], 6: [3, 4], 7: [5], 8: [5], 9: [3], 10: [9]}


def brute_ancestors(node):
    out = {node}
    for parent in GRAPH[node]:
        out |= brute_ancestors(parent)
    return out


def brute_ic(node):
    under = [n for n in GRAPH if node in brute_ancestors(n)]
    return -math.log(len(under) / len(GRAPH))


@pytest.fixture(scope="module")
def small():
    leaves = [to_wnid(n) for n in (6, 7, 8, 10)]
    return build_taxonomy(FakeWordNet(GRAPH), leaves)


def test_information_content_matches_brute_force(small):
    assert len(small) == len(GRAPH)  # the corpus is the leaves and all their ancestors, each once
    for node in GRAPH:
        assert small.ic[small.index[to_wnid(node)]] == pytest.approx(brute_ic(node), abs=1e-12)
    assert small.ic[small.index[to_wnid(1)]] == 0.0


def test_lin_matches_brute_force_on_every_pair(small):
    nodes = list(GRAPH)
    idx = small.indices([to_wnid(n) for n in nodes])
    lin = pairwise(small, idx, idx, "lin")
    for (i, a), (j, b) in itertools.product(enumerate(nodes), repeat=2):
        best = max(brute_ic(c) for c in brute_ancestors(a) & brute_ancestors(b))
        total = brute_ic(a) + brute_ic(b)
        expected = 2 * best / total if total else 1.0
        assert lin[i, j] == pytest.approx(expected, abs=1e-12), (a, b)


def test_multiple_inheritance_takes_the_most_informative_common_subsumer(small):
    # 6 (under 3 and 4) and 7 (under 5 < 4 < 2): common subsumers are 1, 2 and 4; the LCS is 4, reached through
    # 6's second parent, not root 1 through its first.
    idx = small.indices([to_wnid(6), to_wnid(7), to_wnid(10)])
    got = lcs_ic(small, idx[:1], idx[1:])
    assert got[0, 0] == pytest.approx(brute_ic(4)) and brute_ic(4) > 0
    assert got[0, 1] == pytest.approx(brute_ic(3))  # with 10 (under 9 < 3): through the first parent


def nltk_ic(wordnet, tax):
    """nltk's IC dict built from the taxonomy's corpus counts (so nltk and we use the same IC)."""
    counts = {int(w[1:]): float(c) for w, c in zip(tax.wnids, tax.counts, strict=True)}
    counts[0] = float(len(tax))
    return {"n": counts}


def sample_pairs(tax, k=120):
    """Random pairs, plus pairs whose ancestry has multiple inheritance (where LCS and path rules matter)."""
    rng = random.Random(7)
    multi = [i for i, p in enumerate(tax.parents) if len(p) > 1]
    below_multi = np.unique(tax.ancestors[:, multi].nonzero()[0]).tolist()
    a = rng.sample(range(len(tax)), k) + rng.sample(below_multi, k)
    b = rng.sample(range(len(tax)), k) + rng.sample(below_multi, k)
    return np.array(a), np.array(b)


@pytest.mark.parametrize("measure", ["lin", "jcn", "wup"])
def test_measures_match_nltk_with_the_same_information_content(wordnet, tax, measure):
    ic = nltk_ic(wordnet, tax)
    a, b = sample_pairs(tax)
    ours = pairwise(tax, a, b, measure)
    synset = {i: wordnet.synset_from_pos_and_offset("n", int(tax.wnids[i][1:])) for i in set(a) | set(b)}
    stride = 21 if measure == "wup" else 7  # nltk's own wup is slow
    for x, i in enumerate(a.tolist()):
        for y, j in enumerate(b.tolist()[::stride]):
            s1, s2 = synset[i], synset[j]
            if measure == "lin":
                expected = s1.lin_similarity(s2, ic)
            elif measure == "jcn":
                expected = s1.jcn_similarity(s2, ic)
            else:
                expected = s1.wup_similarity(s2)
            assert ours[x, stride * y] == pytest.approx(expected, rel=1e-12, abs=1e-12), (s1, s2)


def test_lin_to_seen_is_the_max_over_the_seen_set_and_says_when_the_corpus_grows(tax):
    seen = imagenet1k()
    candidates = imagenet21k()[:300]
    with pytest.warns(CorpusNotice, match="n04399382"):
        got = lin_to_seen(candidates, seen)
    full = pairwise(tax, tax.indices(candidates), tax.indices(seen), "lin")
    np.testing.assert_allclose(got, full.max(axis=1), rtol=0, atol=0)
    for measure in ("wup", "jcn"):
        to_seen = SET_SIMILARITIES[measure](tax, tax.indices(candidates[:50]), tax.indices(seen))
        np.testing.assert_array_equal(
            to_seen, pairwise(tax, tax.indices(candidates[:50]), tax.indices(seen), measure).max(1)
        )
