"""`cog levels --compare`: a levels file placed in our ranking. Bands and contiguity against a brute force; our
own levels are contiguous; swapped concepts are flagged by name; filtered concepts and ancestor pairs named."""

from __future__ import annotations

import csv
import json
import pickle

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.concepts import LevelSpec, build_levels
from lifelong.concepts.compare_levels import compare_levels, outside_bands

SEEN = ["n02084071", "n02121808"]  # dog, domestic cat
CANDIDATES = [  # pug, tabby, persian cat, wolf, fox, bird, airliner, tank, oak, rose, car, bus, minibus
    "n02110958",
    "n02123045",
    "n02123394",
    "n02114100",
    "n02119022",
    "n01503061",
    "n02690373",
    "n04389033",
    "n12268246",
    "n04971313",
    "n02958343",
    "n02924116",
    "n03769881",
]


def _brute_outside(similarity, level, numbers):
    """A concept of level k is in band iff at least start_k + 1 concepts are as similar or more, and at most
    start_k + n_k - 1 are strictly more similar (start_k: concepts in the levels before k)."""
    outside = []
    for i in range(len(similarity)):
        k = level[i]
        start = sum(int((level == n).sum()) for n in numbers if n < k)
        count = int((level == k).sum())
        at_least = int((similarity >= similarity[i]).sum())
        above = int((similarity > similarity[i]).sum())
        outside.append(not (at_least >= start + 1 and above <= start + count - 1))
    return np.array(outside)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(1, 4)), min_size=1, max_size=25))
def test_out_of_band_matches_a_brute_force_and_defines_contiguity(pairs):
    similarity = np.array([s / 6 for s, _ in pairs])  # few distinct values: many ties
    level = np.array([lv for _, lv in pairs])
    numbers = [1, 2, 3, 4]
    outside = outside_bands(similarity, level, numbers)
    assert outside.tolist() == _brute_outside(similarity, level, numbers).tolist()
    present = [n for n in numbers if (level == n).any()]
    pairs_of_levels = zip(present[:-1], present[1:], strict=True)
    contiguous = all(similarity[level == a].min() >= similarity[level == b].max() for a, b in pairs_of_levels)
    assert contiguous == (not outside.any())


def _write_csv(path, levels):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["wnid", "name", "similarity", "level"])
        for number, wnids in enumerate(levels, start=1):
            writer.writerows([w, w, 0, number] for w in wnids)


def test_our_levels_are_contiguous_and_a_swap_is_flagged_by_name(tax, tmp_path):
    spec = LevelSpec(seen=SEEN, candidates=CANDIDATES, levels=3, order="seen,seen-ancestors,person,manual")
    built = build_levels(spec)
    ours = [[r["wnid"] for r in built.rows if r["level"] == n] for n in (1, 2, 3)]
    same = compare_levels(ours, spec)
    assert same.contiguous and not same.out_of_band
    for row, lv in zip(same.levels, ours, strict=True):
        sims = [r["similarity"] for r in built.rows if r["wnid"] in lv]
        assert (row["count"], row["min_similarity"], row["max_similarity"]) == (len(lv), min(sims), max(sims))
    swapped = [list(lv) for lv in ours]
    top, bottom = swapped[0][0], swapped[2][-1]  # the most similar concept and the least similar one trade places
    swapped[0][0], swapped[2][-1] = bottom, top
    result = compare_levels(swapped, spec)
    assert not result.contiguous
    assert {(r["wnid"], r["level"], r["belongs"]) for r in result.out_of_band} == {
        (bottom, 1, "lower"),
        (top, 3, "higher"),
    }

    path = tmp_path / "swapped.pkl"  # the same through the CLI, from the authors' pkl format
    path.write_bytes(pickle.dumps(swapped))
    (tmp_path / "seen.txt").write_text("\n".join(SEEN))
    (tmp_path / "candidates.txt").write_text("\n".join(CANDIDATES))
    args = ["cog", "levels", "--compare", str(path), "--seen", str(tmp_path / "seen.txt")]
    args += ["--candidates", str(tmp_path / "candidates.txt"), "--order", "seen,seen-ancestors,person,manual"]
    out = CliRunner().invoke(app, [*args, "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert set(data) >= {"levels", "contiguous", "out_of_band"}
    assert data["contiguous"] is False and sorted(data["out_of_band"]) == sorted([top, bottom])
    assert [lv["level"] for lv in data["levels"]] == [1, 2, 3]
    assert {"count", "min_similarity", "max_similarity"} <= set(data["levels"][0])
    text = CliRunner().invoke(app, args, env={"COLUMNS": "120"})
    assert text.exit_code == 0 and "NOT contiguous" in text.output and top in text.output and bottom in text.output


def test_filtered_concepts_and_ancestor_pairs_are_named(tax, tmp_path):
    spec = LevelSpec(seen=["n04146614"], candidates=CANDIDATES + ["n04146614"])  # seen: school bus
    # bus (n02924116) is a parent of the seen school bus and of minibus (n03769881); a car is a candidate kept
    levels = [["n02924116", "n02958343"], ["n03769881", "n12268246"]]
    result = compare_levels(levels, spec)
    filtered = {r["wnid"]: r["filter"] for r in result.filtered}
    assert filtered["n02924116"] == "seen-ancestors"
    pairs = [
        (p["ancestor"], p["ancestor_level"], p["descendant"], p["descendant_level"]) for p in result.ancestor_pairs
    ]
    assert ("n02924116", 1, "n03769881", 2) in pairs
    outside = compare_levels([["n02924116", "n01440764"], ["n03769881"]], spec)
    assert {r["wnid"]: r["filter"] for r in outside.filtered}["n01440764"] == "candidates"  # tench: no candidate
    _write_csv(tmp_path / "levels.csv", levels)
    (tmp_path / "seen.txt").write_text("n04146614\n")
    (tmp_path / "candidates.txt").write_text("\n".join(spec.candidates))
    args = ["cog", "levels", "--compare", str(tmp_path / "levels.csv"), "--seen", str(tmp_path / "seen.txt")]
    args += ["--candidates", str(tmp_path / "candidates.txt")]
    text = CliRunner().invoke(app, args, env={"COLUMNS": "160"})
    assert text.exit_code == 0, text.output
    assert "seen-ancestors" in text.output and "bus (n02924116)" in text.output and "minibus" in text.output
    both = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "x.csv")])
    assert both.exit_code != 0 and "--compare" in both.output
