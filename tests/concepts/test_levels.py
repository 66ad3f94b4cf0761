"""ImageNet-CoG levels: the filters and their order, the count filter, cutting the ranking into levels."""

from __future__ import annotations

import numpy as np
import pytest

from lifelong.concepts import (
    ConceptError,
    EmptyLevelError,
    LevelSpec,
    build_levels,
    count_images,
    cut_levels,
    filter_concepts,
    imagenet21k,
    parse_order,
    read_counts,
)


def test_cut_levels_spreads_the_leftover_as_gaps_over_the_whole_ranking():
    per, bounds = cut_levels(5146, 5)
    assert per == 1000
    assert bounds[0][0] == 0 and bounds[-1][1] == 5146
    gaps = [b[0] - a[1] for a, b in zip(bounds, bounds[1:], strict=False)]
    assert gaps == [36, 37, 36, 37] and sum(gaps) == 146
    assert all(stop - start == 1000 for start, stop in bounds)


def test_cut_levels_splits_evenly_when_there_are_too_few_for_the_papers_size():
    per, bounds = cut_levels(4999, 5)
    assert per == 999 and bounds[-1][1] == 4999
    assert cut_levels(12, 1) == (1000 if 12 >= 1000 else 12, [(0, 12)])


@pytest.mark.parametrize(("n", "levels", "per"), [(4, 5, None), (100, 5, 21), (100, 0, None), (10, 2, 0)])
def test_an_empty_level_is_an_error(n, levels, per):
    with pytest.raises(EmptyLevelError) as info:
        cut_levels(n, levels, per)
    assert isinstance(info.value, ValueError) and "level" in str(info.value)


def test_orders_by_name_and_by_list():
    assert parse_order("paper") == (("seen", "seen-ancestors", "person", "manual", "count", "leaves"), "ancestor")
    assert parse_order("supplement")[1] == "parent"
    assert parse_order("seen, leaves") == (("seen", "leaves"), "ancestor")
    for bad in ("seen,bogus", "seen,seen", ""):
        with pytest.raises(ConceptError):
            parse_order(bad)


def steps(levels):
    return {s.name: s for s in levels.steps}


def test_default_levels_without_counts(tax):
    levels = build_levels()
    by_name = steps(levels)
    assert [(s.name, s.left) for s in levels.steps] == [
        ("start", 21841),
        ("seen", 20842),  # 999: teddy bear is seen but no fall 2011 candidate
        ("seen-ancestors", 20081),
        ("person", 17254),
        ("manual", 17184),
        ("count", 17184),
        ("leaves", 14183),
    ]
    assert by_name["count"].skipped and by_name["count"].removed == 0
    assert any("count filter was skipped" in n for n in levels.notes)
    assert any("n04399382" in n for n in levels.notes)
    assert levels.eligible == 14183 and len(levels.rows) == 5000
    sims = [r["similarity"] for r in levels.ranking]
    assert sims == sorted(sims, reverse=True)
    assert [r["level"] for r in levels.rows] == sorted(r["level"] for r in levels.rows)


def test_filter_order_changes_the_counts_as_expected(tax):
    all21k = imagenet21k()
    # give every concept enough images except the leaves under 'dog' (n02084071): their parents lose children
    dog = tax.index["n02084071"]
    under_dog = {tax.wnids[i] for i in tax.ancestors[:, dog].nonzero()[0]}
    poor = {w for w in under_dog if w in set(all21k)}
    counts = {w: (0 if w in poor else 2000) for w in all21k}
    count_then_leaves = filter_concepts(LevelSpec(counts=counts))
    leaves_then_count = filter_concepts(
        LevelSpec(counts=counts, order="seen,seen-ancestors,person,manual,leaves,count")
    )
    a = {tax.wnids[i] for i in count_then_leaves.eligible}
    b = {tax.wnids[i] for i in leaves_then_count.eligible}
    assert b < a  # counting first makes leaves of parents whose children all went; leaves first drops them
    for wnid in a - b:  # each extra concept is a parent whose eligible descendants were all poor
        below = {tax.wnids[i] for i in tax.ancestors[:, tax.index[wnid]].nonzero()[0]} - {wnid}
        assert below & poor
    assert steps(count_then_leaves)["count"].removed > 0 and not steps(count_then_leaves)["count"].skipped

    paper = filter_concepts()
    supplement = filter_concepts(LevelSpec(order="supplement"))
    # "parent" drops only the seen concepts' direct parents, "ancestor" every ancestor of theirs
    assert steps(supplement)["seen-ancestors"].removed < steps(paper)["seen-ancestors"].removed
    assert [s.name for s in supplement.steps[1:]] == ["seen", "count", "person", "seen-ancestors", "leaves", "manual"]
    parent_rule = filter_concepts(LevelSpec(relation="parent"))
    assert steps(parent_rule)["seen-ancestors"].left > steps(paper)["seen-ancestors"].left


def test_counts_from_a_csv_and_from_an_image_folder(tmp_path):
    csv_path = tmp_path / "counts.csv"
    csv_path.write_text("wnid,count\nn02084071,1300\nn01440764,12\n")
    assert read_counts(csv_path) == {"n02084071": 1300, "n01440764": 12}
    csv_path.write_text("n02084071,many\n")
    with pytest.raises(ConceptError, match="n02084071"):
        read_counts(csv_path)
    csv_path.write_text("dog,3\n")
    with pytest.raises(ConceptError, match="'dog'"):
        read_counts(csv_path)
    root = tmp_path / "images"
    for wnid, k in (("n02084071", 3), ("n01440764", 1)):
        (root / wnid).mkdir(parents=True)
        for j in range(k):
            (root / wnid / f"{j}.jpg").write_bytes(b"x")
    (root / "README").write_text("not a class")
    counts, ignored = count_images(root)
    assert counts == {"n02084071": 3, "n01440764": 1} and ignored == ["README"]


def test_small_custom_levels_and_bad_input(tax):
    seen = ["n02084071"]  # dog
    candidates = ["n02121808", "n02123045", "n01503061", "n02691156", "n04285008", "n02110958"]
    levels = build_levels(LevelSpec(seen=seen, candidates=candidates, levels=2))
    assert levels.per_level == len(levels.ranking) // 2
    assert levels.ranking[0]["wnid"] == "n02110958"  # pug: a dog, the most similar to the seen dog
    with pytest.raises(EmptyLevelError):
        build_levels(LevelSpec(seen=seen, candidates=candidates, levels=7))
    with pytest.raises(ConceptError, match="n99999999"):
        build_levels(LevelSpec(seen=seen, candidates=[*candidates, "n99999999"]))
    with pytest.raises(ConceptError, match="bogus"):
        build_levels(LevelSpec(seen=seen, candidates=candidates, similarity="bogus"))
    assert np.isfinite([r["similarity"] for r in levels.ranking]).all()
