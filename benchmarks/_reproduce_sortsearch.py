"""reproduce.py section `sortsearch`: `lifelong bench compare` on a 240-model Fashion-MNIST zoo (docs/sort-and-search).

In WORK (reproduce.py's --work), through the Python API (`lifelong.api.bench_build_zoo`, `bench_compare`), what

    lifelong bench build-zoo sortsearch/zoo --models 240 --test-samples 2000 --seed 0 \
        --corruptions noise,blur,contrast,rotation,occlusion --severities 1,2,3 --resume
    lifelong bench compare --zoo sortsearch/zoo --out sortsearch/cmp --resume

run, printed as those commands print it. The compare prints its own table (every method, split and budget, then
`lifelong` against each method, paired); then this section prints the two tables the docs show, from
WORK/sortsearch/cmp/table.json: at n' = 100 per split each quoted method's mean absolute error in accuracy points
(ratio to the random-sample mean's), `lifelong`'s interval coverage and its paired differences; and `lifelong` at
every budget. Both also go to WORK/sortsearch.md.

A zoo folder whose zoo.json records the settings this section builds is used as it is (a zoo copied from another
run has no models/ folder for `build-zoo --resume` to read, and retraining would give another matrix on another
CPU). From nothing on 2 cores: about half an hour for the zoo (one model at a time), then hours for the comparison
(its records' fit and estimate times add up to about 5 hours). --quick: 8 models (model seed 4: no large ResNet),
50 clean + 50 noisy samples, one seed per split at n' = 10.
"""

from __future__ import annotations

import json
from pathlib import Path

from _reproduce_common import this_machine

from lifelong import api
from lifelong.commands.bench_console import print_compare, print_record, print_zoo
from lifelong.commands.terminal import note

# the zoo's settings as zoo.json records them (the build-zoo defaults made explicit, one torch thread per model)
CORRUPTIONS = ["noise", "blur", "contrast", "rotation", "occlusion"]
ZOO = {"n_models": 240, "n_test": 2000, "seed": 0, "corruptions": CORRUPTIONS, "severities": [1, 2, 3]}
QUICK_ZOO = {"n_models": 8, "n_test": 50, "seed": 4, "corruptions": ["noise"], "severities": [1]}
SOURCE = {"source": "fashion-mnist", "threads": 1}
QUICK_COMPARE = {"seeds": 1, "budgets": [10]}
BUDGET = 100  # the budget of the first table
QUOTED = ("random-mean", "stratified-mean", "ridge", "anchor-points", "ridge-anchors", "lifelong")
PAIRED = ("anchor-points", "ridge-anchors")  # the closest methods, whose paired difference the docs quote


def _zoo_spec(folder: Path, zoo: dict) -> api.BenchBuildZooSpec:
    """`bench build-zoo FOLDER` with `zoo`'s settings and --resume (SOURCE's source, the default)."""
    return api.BenchBuildZooSpec(
        folder,
        models=zoo["n_models"],
        test_samples=zoo["n_test"],
        seed=zoo["seed"],
        corruptions=zoo["corruptions"],
        severities=zoo["severities"],
        resume=True,
    )


def _zoo_is_built(folder: Path, zoo: dict) -> bool:
    """Whether `folder` holds a finished zoo whose zoo.json records `zoo`'s settings (and SOURCE's)."""
    if not all((folder / name).is_file() for name in ("zoo.json", "correctness.npy", "models.csv", "samples.csv")):
        return False
    recorded = json.loads((folder / "zoo.json").read_text())["settings"]
    return all(recorded.get(key) == value for key, value in (zoo | SOURCE).items())


def _cell(rows: dict, split: str, budget: int, method: str) -> str:
    r = rows.get((split, budget, method))
    if r is None:
        return "-"
    return f"{100 * r['mae']:.2f}" if method == "random-mean" else f"{100 * r['mae']:.2f} ({r['ratio']:.2f})"


def _paired(versus: dict, split: str, budget: int, other: str) -> str:
    v = versus.get((split, budget, other))
    if v is None:
        return "-"
    lo, hi = v["interval"]
    return f"{100 * v['difference']:+.2f} [{100 * lo:+.2f}, {100 * hi:+.2f}]"


def _verdicts(versus: dict, split: str, budget: int) -> str:
    """How many methods `lifelong` is closer than / not clearly different from / behind, by the paired interval."""
    found = [v["interval"] for (s, b, _), v in versus.items() if (s, b) == (split, budget)]
    closer = sum(hi < 0 for _, hi in found)
    behind = sum(lo > 0 for lo, _ in found)
    return f"{closer} / {len(found) - closer - behind} / {behind}"


def tables(table: dict, budget: int) -> str:
    """The docs' two tables from a compare's table.json: methods at `budget`, and `lifelong` at every budget."""
    rows = {(r["split"], r["budget"], r["method"]): r for r in table["rows"]}
    versus = {(v["split"], v["budget"], v["other"]): v for v in table["paired"]}
    splits = sorted({r["split"] for r in table["rows"]})
    head = ["split", *QUOTED, "lifelong's cover", *(f"lifelong - {m}" for m in PAIRED)]
    head.append("lifelong closer / no clear difference / other closer")
    lines = [f"| {' | '.join(head)} |", "|" + "---|" * len(head)]
    for split in splits:
        cover = rows.get((split, budget, "lifelong"), {}).get("coverage")
        cells = [split, *(_cell(rows, split, budget, m) for m in QUOTED)]
        cells += ["-" if cover is None else f"{100 * cover:.0f}%"]
        cells += [_paired(versus, split, budget, m) for m in PAIRED] + [_verdicts(versus, split, budget)]
        lines.append(f"| {' | '.join(cells)} |")
    lines += ["", "| split | n' | lifelong MAE (x random) | cover | rank | closer / no clear / other closer |"]
    lines.append("|---|---|---|---|---|---|")
    for split in splits:
        for n in sorted({r["budget"] for r in table["rows"] if r["split"] == split}):
            mine = rows.get((split, n, "lifelong"))
            if mine is None:
                continue
            others = [r for (s, b, _), r in rows.items() if (s, b) == (split, n)]
            rank = 1 + sum(r["mae"] < mine["mae"] for r in others)
            cover = "-" if mine.get("coverage") is None else f"{100 * mine['coverage']:.0f}%"
            lines.append(
                f"| {split} | {n} | {_cell(rows, split, n, 'lifelong')} | {cover} | {rank} of {len(others)} | "
                f"{_verdicts(versus, split, n)} |"
            )
    return "\n".join(lines)


def sortsearch(work: Path, quick: bool) -> list[dict]:
    """Build (or find) the zoo, run `bench compare` on it with --resume, print the docs' tables."""
    base = work / "sortsearch"
    base.mkdir(parents=True, exist_ok=True)
    zoo_settings = QUICK_ZOO if quick else ZOO
    zoo, cmp = base / "zoo", base / "cmp"
    if _zoo_is_built(zoo, zoo_settings):
        print(f"{zoo}: zoo.json records this zoo's settings; used as it is (not rebuilt)")
    else:
        print(f"building the zoo in {zoo} (`lifelong bench build-zoo` with --resume)", flush=True)
        print_zoo(api.bench_build_zoo(_zoo_spec(zoo, zoo_settings), progress=True, on_note=note))
    options = QUICK_COMPARE if quick else {}
    print(f"comparing the estimators on it into {cmp} (`lifelong bench compare --zoo` with --resume)", flush=True)
    spec = api.BenchCompareSpec(zoo=zoo, out=cmp, resume=True, **options)
    print_compare(api.bench_compare(spec, progress=print_record))
    table = json.loads((cmp / "table.json").read_text())
    budget = 10 if quick else BUDGET
    summary = json.loads((zoo / "zoo.json").read_text())
    records = sum(1 for _ in (cmp / "records.jsonl").open())
    text = (
        f"Mean absolute error in accuracy points at n' = {budget} (ratio to random-mean's), lifelong's 95% interval "
        f"coverage and its paired differences [95% bootstrap CI]; then lifelong at every budget.\n"
        f"Zoo: {summary['n_models']} models x {summary['n_samples']} samples of {summary['source']} "
        f"(settings in {zoo / 'zoo.json'}); {records} records in {cmp / 'records.jsonl'}; "
        f"printed on {this_machine()}\n\n" + tables(table, budget)
    )
    print(text)
    (work / "sortsearch.md").write_text(text + "\n")
    return []


SECTIONS = {"sortsearch": sortsearch}
