"""Split variants (issue 25 part 3): the padded distance against a direct computation, ward linkage, the balance
criterion that picks the default, the random split's score over facts and train/test images, and centring."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.cluster.hierarchy as sch
from scipy.spatial.distance import squareform

from lifelong.facts.centring import centre_facts, padded_vectors
from lifelong.facts.linkage import condensed_distances
from lifelong.facts.split_choice import VARIANTS, choose_variant, chosen_semantic_split, compare_variants
from lifelong.facts.splits import load_split, random_split, save_split, semantic_split

from .test_splits import random_facts, same_partition


def direct_padded(ids: np.ndarray, vectors) -> np.ndarray:
    """The padded distance fact by fact: unit part vectors, zeros where undefined, minus the mean fact, then
    sqrt(2 (1 - cos)) of each pair, in plain loops."""
    n, d = len(ids), vectors[0].shape[1]
    rows = []
    for fact in ids:
        row = []
        for c in range(3):
            if fact[c] < 0:
                row.extend([0.0] * d)
            else:
                v = vectors[c][fact[c]]
                row.extend(list(v / np.sqrt(sum(x * x for x in v))))
        rows.append(row)
    mean = [sum(r[j] for r in rows) / n for j in range(3 * d)]
    centred = [[r[j] - mean[j] for j in range(3 * d)] for r in rows]
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            a, b = centred[i], centred[j]
            cos = sum(x * y for x, y in zip(a, b, strict=True)) / np.sqrt(sum(x * x for x in a) * sum(y * y for y in b))
            out[i, j] = np.sqrt(max(2.0 * (1.0 - cos), 0.0))
    np.fill_diagonal(out, 0.0)
    return squareform(out, checks=False)


def test_padded_distance_equals_the_direct_computation_and_undefined_parts_count():
    ids, vectors = random_facts(40, seed=3, dim=6)
    np.testing.assert_allclose(condensed_distances(ids, vectors, "padded"), direct_padded(ids, vectors), atol=1e-9)
    # <s> and <s,p> share their defined words: distance 0 under eq2, not under padded (P counts where undefined)
    pair = np.array([[0, -1, -1], [0, 0, -1], [1, 1, 1]])
    eq2 = squareform(condensed_distances(pair, vectors, "eq2"))
    padded = squareform(condensed_distances(pair, vectors, "padded"))
    assert eq2[0, 1] == 0.0 and padded[0, 1] > 0.1


def test_padded_vectors_are_centred_after_zero_padding():
    ids, vectors = random_facts(30, seed=4, dim=5, kinds=(0.4, 0.3, 0.3))
    assert (ids[:, 1] < 0).any()
    rows = padded_vectors(ids, vectors, centre=False)
    assert np.all(rows[ids[:, 1] < 0][:, 5:10] == 0.0)  # uncentred: undefined P is zero
    centred = padded_vectors(ids, vectors)
    np.testing.assert_allclose(np.linalg.norm(centred, axis=1), 1.0)
    undefined = np.flatnonzero(ids[:, 1] < 0)[0]
    assert np.abs(centred[undefined, 5:10]).sum() > 0  # centred after padding: the undefined block is -mean/|.|


@pytest.mark.parametrize("linkage", ["single", "average", "complete", "ward"])
def test_every_linkage_under_padded_matches_scipy_on_the_direct_matrix(linkage):
    ids, vectors = random_facts(60, seed=8, dim=6)
    z = sch.linkage(direct_padded(ids, vectors), method=linkage)
    for tasks in (2, 3, 5):
        split = semantic_split(ids, vectors, tasks, linkage=linkage, distance="padded")
        assert same_partition(split.task, sch.fcluster(z, tasks, criterion="maxclust"))
        assert split.distance == "padded" and split.linkage == linkage


def test_unknown_distance_is_named():
    ids, vectors = random_facts(10, seed=1)
    with pytest.raises(ValueError, match="unknown fact distance 'cosine'; choose one of eq2, padded"):
        semantic_split(ids, vectors, 2, distance="cosine")


def rows_for(devs, smallest):
    return [
        {"image_deviation": d, "fact_deviation": 0.5, "smallest_task": s, "eligible": s > 5}
        for d, s in zip(devs, smallest, strict=True)
    ]


def test_the_criterion_picks_the_most_balanced_eligible_variant_never_an_ineligible_one():
    assert choose_variant(rows_for([0.1, 0.4, 0.3], [3, 9, 7])) == 2  # 0.1 has a task of 3 facts
    assert choose_variant(rows_for([0.4, 0.4], [9, 9])) == 0  # ties: the listed order
    assert choose_variant(rows_for([0.5, 0.2, 0.9], [1, 2, 3])) == 1  # none eligible: most balanced of all


def test_chosen_split_records_the_variant_table_and_agrees_with_a_direct_search():
    ids, vectors = random_facts(80, seed=12, dim=8)
    images = np.random.default_rng(0).integers(1, 50, len(ids))
    split = chosen_semantic_split(ids, vectors, 4, images, k=5)
    table = split.info["variants"]
    assert [(r["distance"], r["linkage"]) for r in table] == list(VARIANTS)
    eligible = [(r["image_deviation"], r["fact_deviation"], i) for i, r in enumerate(table) if min(r["facts"]) > 5]
    best = table[min(eligible)[2]] if eligible else None
    if best is not None:
        assert (split.distance, split.linkage) == (best["distance"], best["linkage"])
    direct = semantic_split(ids, vectors, 4, linkage=split.linkage, images_per_fact=images, distance=split.distance)
    np.testing.assert_array_equal(split.task, direct.task)
    named = chosen_semantic_split(ids, vectors, 4, images, k=5, distance="eq2", linkage="single")
    assert "variants" not in named.info and (named.distance, named.linkage) == ("eq2", "single")
    assert [(r["distance"], r["linkage"]) for _, r in compare_variants(ids, vectors, 4, images, 5, VARIANTS[:2])] == [
        ("eq2", "single"),
        ("eq2", "average"),
    ]


def test_random_split_score_is_the_largest_deviation_over_facts_train_and_test_images():
    rng = np.random.default_rng(5)
    train, test = rng.integers(1, 300, 200), rng.integers(1, 20, 200)
    split = random_split(200, 4, images_per_fact=train, seed=2, candidates=30, test_images_per_fact=test)

    def deviation(weights, task):
        per = np.array([weights[task == t].sum() for t in range(4)], dtype=float)
        return np.abs(per - per.mean()).max() / per.mean()

    def score(task):
        return max(deviation(np.ones(200), task), deviation(train, task), deviation(test, task))

    scores = [score(np.random.default_rng([2, c]).integers(0, 4, 200)) for c in range(30)]
    assert split.score == pytest.approx(min(scores))
    assert split.info["candidate"] == int(np.argmin(scores))
    assert set(split.info["deviations"]) == {"facts", "images", "test_images"}


def test_saved_split_keeps_its_distance_and_old_sidecars_still_load(tmp_path):
    ids, vectors = random_facts(12, seed=2)
    facts = [tuple(None if w < 0 else f"w{c}_{w}" for c, w in enumerate(row)) for row in ids]
    split = semantic_split(ids, vectors, 3, linkage="ward", distance="padded")
    path = save_split(split, facts, tmp_path / "s.csv")
    loaded, _ = load_split(path)
    assert (loaded.distance, loaded.linkage) == ("padded", "ward")
    meta = json.loads(path.with_suffix(".json").read_text())
    meta["score"], meta["method"] = {"images": 0.25, "facts": 0.5}, "random"  # the two-number sidecar
    del meta["distance"]
    path.with_suffix(".json").write_text(json.dumps(meta))
    old, _ = load_split(path)
    assert old.score == 0.5 and old.distance is None


def test_centring_subtracts_the_mean_fact_after_zero_padding():
    vectors = np.random.default_rng(1).normal(size=(6, 3, 4)).astype(np.float32)
    vectors[2, 1:] = 0.0  # an <S> fact
    centred = centre_facts(vectors)
    np.testing.assert_allclose(centred.mean(axis=0), 0.0, atol=1e-6)
    np.testing.assert_allclose(centred[2, 1], -vectors[:, 1].mean(axis=0), atol=1e-6)  # undefined P -> -mean


def test_auto_keeps_to_the_mst_variant_above_the_dense_limit(monkeypatch):
    import lifelong.facts.split_choice as choice

    monkeypatch.setattr(choice, "MAX_DENSE_FACTS", 10)
    assert choice.candidate_variants("auto", "auto", 11) == [("eq2", "single")]
    assert len(choice.candidate_variants("auto", "auto", 10)) == 8
    assert choice.candidate_variants("padded", "auto", 5) == [
        ("padded", k) for k in ("single", "average", "complete", "ward")
    ]
    with pytest.raises(ValueError, match="unknown linkage 'median'"):
        choice.candidate_variants("auto", "median", 5)
