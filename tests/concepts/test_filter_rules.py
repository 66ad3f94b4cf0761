"""The seen-ancestors and leaves filters as separate switches, each variant against a brute force over the
taxonomy's parent lists; and counting a winter 2021 folder as fall 2011 is refused unless asked for."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.concepts import LevelSpec
from lifelong.concepts.corpus import person_subtree
from lifelong.concepts.counts import looks_like_winter21
from lifelong.concepts.levels import LEAF_RULES, SEEN_RULES, filter_concepts, filter_rules

SEEN = ["n04146614", "n02088364"]  # school bus, beagle
CANDIDATES = [
    "n02924116",
    "n04146614",
    "n03769881",
    "n02958343",
    "n02930766",  # bus, school bus, minibus, car, cab
    "n02084071",
    "n02087122",
    "n02087551",
    "n02088364",
    "n02110958",
    "n02085374",  # dog, hunting dog, hound, ...
    "n02121808",
    "n02123045",
    "n02123394",
    "n01503061",
    "n01514859",  # domestic cat, tabby, persian, bird, hen
]
ORDER = "seen,seen-ancestors,leaves"


def _ancestors(tax, node):
    """Proper ancestors of `node`, walking the parent lists (no sparse matrix)."""
    found, stack = set(), list(tax.parents[node])
    while stack:
        up = stack.pop()
        if up not in found:
            found.add(up)
            stack.extend(tax.parents[up])
    return found


def _brute(tax, seen_rule, leaf_rule):
    seen = {tax.index[w] for w in SEEN}
    cand = [tax.index[w] for w in CANDIDATES]
    above_seen = set().union(*(_ancestors(tax, s) if seen_rule == "ancestor" else set(tax.parents[s]) for s in seen))
    left = [c for c in cand if c not in seen and c not in above_seen]
    if leaf_rule == "eligible":
        drop = {c for c in left if any(c in _ancestors(tax, d) for d in left if d != c)}
    elif leaf_rule == "eligible-parent":
        drop = {c for c in left if any(c in tax.parents[d] for d in left)}
    else:  # in21k-parent: a parent of any candidate
        drop = {c for c in left if any(c in tax.parents[d] for d in cand)}
    return sorted(tax.wnids[c] for c in left if c not in drop)


@pytest.mark.parametrize("seen_rule", SEEN_RULES)
@pytest.mark.parametrize("leaf_rule", list(LEAF_RULES))
def test_each_rule_variant_matches_a_brute_force(tax, seen_rule, leaf_rule):
    spec = LevelSpec(seen=SEEN, candidates=CANDIDATES, order=ORDER, seen_rule=seen_rule, leaf_rule=leaf_rule)
    found = filter_concepts(spec)
    got = sorted(found.taxonomy.wnids[i] for i in found.eligible)
    assert got == _brute(found.taxonomy, seen_rule, leaf_rule)


def test_the_variants_differ_where_the_rules_do(tax):
    def eligible(**rules):
        found = filter_concepts(LevelSpec(seen=SEEN, candidates=CANDIDATES, order=ORDER, **rules))
        return {found.taxonomy.wnids[i] for i in found.eligible}

    # bus is a parent of the seen school bus: gone under either seen rule; dog is an ancestor (not a parent) of
    # the seen beagle: gone under "ancestor" only
    assert "n02924116" not in eligible(seen_rule="parent") and "n02084071" not in eligible(seen_rule="ancestor")
    assert eligible(seen_rule="ancestor") == eligible(relation="ancestor")  # main text = the older default
    assert filter_rules(LevelSpec()) == ("ancestor", "eligible")
    assert filter_rules(LevelSpec(order="supplement")) == ("parent", "in21k-parent")
    assert filter_rules(LevelSpec(relation="parent")) == ("parent", "eligible-parent")
    with pytest.raises(ValueError, match="unknown leaf rule 'leafy'"):
        filter_rules(LevelSpec(leaf_rule="leafy"))


def test_a_winter21_folder_is_not_counted_as_fall_2011_unless_asked(tax, tmp_path):
    persons = person_subtree()
    assert "n00007846" in persons and len(persons) > 1000
    others = [w for w in tax.wnids if w not in persons][:600]
    counts = dict.fromkeys(others, 900)
    assert "none of the" in looks_like_winter21(tmp_path / "in21k", counts, persons)
    assert looks_like_winter21(tmp_path / "in21k", counts | {sorted(persons)[5]: 900}, persons) is None
    assert looks_like_winter21(tmp_path / "winter21_whole", {"n01440764": 900}, persons)

    folder = tmp_path / "winter21_whole"
    for wnid in ("n02121808", "n02123045"):
        (folder / wnid).mkdir(parents=True)
        for i in range(3):
            (folder / wnid / f"{i}.JPEG").write_bytes(b"x")
    (tmp_path / "seen.txt").write_text("n04146614\n")
    (tmp_path / "cand.txt").write_text("\n".join(CANDIDATES))
    args = ["cog", "levels", "--out", str(tmp_path / "l.csv"), "--images", str(folder), "--min-images", "2"]
    args += ["--seen", str(tmp_path / "seen.txt"), "--candidates", str(tmp_path / "cand.txt"), "--levels", "1"]
    refused = CliRunner().invoke(app, args)
    assert refused.exit_code != 0 and "winter 2021" in refused.output and "--images-release winter21" in refused.output
    assert not (tmp_path / "l.csv").exists()
    meant = CliRunner().invoke(app, [*args, "--images-release", "winter21"])
    assert meant.exit_code == 0, meant.output
    assert "eligible concepts under each rule variant" in meant.output
    assert meant.output.count("chosen") == 1
