"""reproduce.py sections for docs/cog.md (ImageNet-CoG on WordNet and on cog-mini), through lifelong.api.

cog-levels: `api.cog_levels` (`lifelong cog levels --out levels.csv`; WordNet 3.0, no image counts): the concepts left
       after each filter and the eligible count under every (seen rule, leaf rule) variant (about 20 s).
cog: cog-mini with Twemoji held out, 5 seeds, reference probe, the seen level as 2 draws: the encoders of
       docs/cog.md (`api.cog_pretrain`, then `api.cog_run` into runs/NAME), then three tables: top-1 per encoder and
       level with the interval over concepts, each level minus the encoder trained on all concepts, and the
       supervised encoder per held-out style. Hours from nothing on 2 cores (EfficientNet-Lite0's features alone
       about 70 minutes); the features go to the data root ($LIFELONG_DATA), the runs to --work.
       --quick: one seed, one epoch, levels seen and L1, the fast probe, Twemoji only, no SimCLR or Lite0.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from _reproduce_common import row, this_machine

from lifelong.api import CogLevelsSpec, CogPretrainSpec, CogRunSpec

LEVELS = ("seen", "L1", "L2", "L3", "L4", "L5")
STYLES = ("noto", "twemoji", "openmoji")
RUN_OPTIONS = {"seen_draws": 2, "resume": True}


def _echo(name: str, spec: Any) -> None:
    """One line: the API call and the spec's fields that differ from their defaults (the command it stands for)."""
    given = [
        f"{f.name}={str(value)!r}" if isinstance(value, Path) else f"{f.name}={value!r}"
        for f in dataclasses.fields(spec)
        if (value := getattr(spec, f.name)) != f.default
    ]
    print(f"$ api.{name}({type(spec).__name__}({', '.join(given)}))", flush=True)


def cog_levels(work: Path, quick: bool) -> list[dict]:
    """`lifelong cog levels` from WordNet, through lifelong.api (the same with --quick: it takes seconds)."""
    from lifelong.api import cog_levels as build
    from lifelong.commands.cog_levels_console import print_levels

    work.mkdir(parents=True, exist_ok=True)
    spec = CogLevelsSpec(out=work / "levels.csv", overwrite=True)
    _echo("cog_levels", spec)
    started = time.perf_counter()
    result = build(spec)
    seconds = time.perf_counter() - started
    print_levels(result)
    lines = ["| seen rule | leaf rule | after seen-ancestors | eligible |", "|---|---|---|---|"]
    for variant in result.variants:
        leaf = f"{variant.leaf_rule} (default)" if variant.chosen else variant.leaf_rule
        after = "-" if variant.after_seen_ancestors is None else f"{variant.after_seen_ancestors:,}"
        lines.append(f"| {variant.seen_rule} | {leaf} | {after} | {variant.eligible:,} |")
    chain = " -> ".join(f"{step.left:,} {step.name}" for step in result.levels.steps)
    out = "\n".join(lines) + (
        f"\n\nconcepts left after each filter: {chain}\n"
        f"`lifelong cog levels --out levels.csv`: {seconds:.0f} s on {this_machine()}\n"
    )
    print(out, end="")
    (work / "cog-levels.md").write_text(out)
    return []


def _encoders(work: Path, quick: bool) -> list[tuple[str, str, list[CogPretrainSpec], CogRunSpec]]:
    """(label, runs folder, the encoders to pretrain, the `cog run` spec) per encoder, table order."""
    epochs = {"epochs": 1} if quick else {}
    styles = ("twemoji",) if quick else STYLES
    enc = work / "enc"
    seeds = {"seeds": 1, "levels": "seen,1", "probe": "fast"} if quick else {"seeds": 5}

    def run(name: str, encoder: str | Path, **options: Any) -> CogRunSpec:
        return CogRunSpec(encoder=str(encoder), out=work / "runs" / name, **options, **seeds, **RUN_OPTIONS)

    def pretrain(kind: str, out: Path, **options: Any) -> CogPretrainSpec:
        return CogPretrainSpec(kind=kind, out=out, resume=True, **options)

    sup = [pretrain("supervised", enc / f"sup-{s}.pt", test_style=s, **epochs) for s in styles]
    encoders = [
        ("EfficientNet-Lite0 (ImageNet-1K, frozen, 224 px)", "lite0", [], run("lite0", "efficientnet-lite0")),
        ("supervised ResNet-mini (30 epochs)", "sup", sup, run("sup", enc / "sup-{style}.pt", test_style="all")),
        (
            "SimCLR ResNet-mini (30 epochs)",
            "simclr",
            [pretrain("simclr", enc / "simclr-twemoji.pt", test_style="twemoji", **epochs)],
            run("simclr", enc / "simclr-twemoji.pt"),
        ),
        ("random init (control)", "random", [pretrain("random", enc / "random.pt")], run("random", enc / "random.pt")),
        (
            "supervised on all concepts (control)",
            "all",
            [pretrain("supervised", enc / "all-twemoji.pt", concepts="all", test_style="twemoji", **epochs)],
            run("all", enc / "all-twemoji.pt"),
        ),
    ]
    if quick:
        print("--quick: EfficientNet-Lite0 and SimCLR skipped (the same calls with another encoder); Twemoji only")
        encoders = [e for e in encoders if e[1] not in ("lite0", "simclr")]
        label, name, pretrains, spec = encoders[0]
        encoders[0] = (label, name, pretrains, dataclasses.replace(spec, test_style="twemoji"))  # its Twemoji fold
    return encoders


def _runs(folder: Path) -> list:
    """The finished cog runs in `folder` (read_run), sorted by folder name."""
    from lifelong.results.runs import read_run

    found = []
    for path in sorted(folder.glob("cog-mini-*-seed*")):
        summary = path / "summary.json"
        if summary.is_file():
            done = json.loads(summary.read_text())
            if done.get("events_done") == done.get("events_total"):
                found.append(read_run(path))
    return found


def _fold(run) -> str:
    """The held-out style of a run (its features set's encoder name ends in it), else twemoji (the default)."""
    features = str(run.info["config"]["stream_options"].get("features", ""))
    return next((s for s in STYLES if f"-{s}-" in features), "twemoji")


def _level_stats(runs: list) -> tuple[dict[str, list[float]], dict[str, tuple[float, float]]]:
    """({level: top-1 % per run and seen draw}, {level: 95% bootstrap interval over concepts}) as `cog run` prints."""
    from lifelong.results.cog_intervals import level_intervals
    from lifelong.suites.cog import base_level, split_task_name

    values: dict[str, list[float]] = {}
    for run in runs:
        for record in run.records:
            if record.get("type") == "predict" and record.get("error") is not None:
                level, shots = split_task_name(str(record["task"]))
                if shots == "all":
                    values.setdefault(base_level(level), []).append(100.0 * (1.0 - float(record["error"])))
    intervals = level_intervals([{"records": r.records} for r in runs], [r.path for r in runs])
    return values, {level: span for (level, shots), span in intervals.items() if shots == "all"}


def _lin_within_levels() -> str:
    """cog-mini's level sizes, its candidate-rule notes, and the mean Lin similarity from each concept of a level to
    its nearest other concept of that level."""
    from lifelong.concepts import corpus_with, taxonomy
    from lifelong.concepts.similarity import SET_SIMILARITIES
    from lifelong.data.sources.cog_mini import plan_levels, read_mapping

    mapping = read_mapping()
    plan, notes = plan_levels(mapping)
    corpus, _ = corpus_with(("cog-mini", [c.wnid for c in mapping]))
    tax, lin = taxonomy(corpus), SET_SIMILARITIES["lin"]
    nearest = []
    for name, members in plan.items():
        if name != "seen":
            index = tax.indices([c.wnid for c, _ in members], "cog-mini concept")
            near = [lin(tax, index[i : i + 1], np.delete(index, i))[0] for i in range(len(index))]
            nearest.append(f"{name} {np.mean(near):.2f}")
    sizes = ", ".join(f"{name} {len(members)}" for name, members in plan.items())
    kept = [n for n in notes if not n.endswith("more") and "IC corpus" not in n]
    return (
        f"cog-mini: {len(mapping)} concepts; {sizes}\n"
        + "".join(f"  {n}\n" for n in kept)
        + f"mean Lin from a concept to its nearest other concept of its level: {', '.join(nearest)}\n"
    )


def cog(work: Path, quick: bool) -> list[dict]:
    """cog-mini: pretrain the encoders, probe them level by level, print docs/cog.md's three tables."""
    from lifelong.api import cog_pretrain, cog_run
    from lifelong.commands.cog_console import print_pretrain_result, print_run_result

    work.mkdir(parents=True, exist_ok=True)
    encoders = _encoders(work, quick)
    for _, _, pretrains, run_spec in encoders:
        for spec in pretrains:
            _echo("cog_pretrain", spec)
            print_pretrain_result(cog_pretrain(spec, progress=True))
        _echo("cog_run", run_spec)
        print_run_result(cog_run(run_spec, progress=True))
    levels = LEVELS[:2] if quick else LEVELS
    header = "| encoder | " + " | ".join(levels) + " |\n|---|" + "---|" * len(levels)
    stats, rows, infos_of = {}, [], {}
    for label, name, _, _ in encoders:
        runs = [r for r in _runs(work / "runs" / name) if name != "sup" or _fold(r) == "twemoji"]
        stats[label] = _level_stats(runs)
        infos_of[label] = [r.info for r in runs]
    table1 = [header]
    for label, (values, spans) in stats.items():
        cells = []
        for level in levels:
            v = values.get(level, [])
            low, high = spans.get(level, (float("nan"), float("nan")))
            cells.append(f"{np.mean(v):.1f} ± {np.std(v):.1f} [{low:.0f}, {high:.0f}]" if v else "-")
            if v:
                rows.append(row(f"cog-mini {label}", f"top-1 {level}", v, infos_of[label]))
        table1.append(f"| {label} | " + " | ".join(cells) + " |")
    base = stats["supervised on all concepts (control)"][0]
    short = {"EfficientNet-Lite0": "EfficientNet-Lite0", "supervised ResNet-mini": "supervised"}
    short |= {"SimCLR ResNet-mini": "SimCLR", "random init": "random init"}
    table2 = [header]
    for label, (values, _) in stats.items():
        if "all concepts" in label:
            continue
        name = next(s for key, s in short.items() if label.startswith(key))
        cells = [
            f"{np.mean(values[lv]) - np.mean(base[lv]):+.1f}" if values.get(lv) and base.get(lv) else "-"
            for lv in levels
        ]
        table2.append(f"| {name} | " + " | ".join(cells) + " |")
    table3 = ["| held out | " + " | ".join(levels) + " |", "|---|" + "---|" * len(levels)]
    sup_runs = _runs(work / "runs" / "sup")
    means = []
    for style in STYLES:
        values, _ = _level_stats([r for r in sup_runs if _fold(r) == style])
        if values:
            means.append({lv: np.mean(v) for lv, v in values.items()})
            cells = [
                f"{np.mean(values[lv]):.1f} ± {np.std(values[lv]):.1f}" if values.get(lv) else "-" for lv in levels
            ]
            title = {"noto": "Noto", "twemoji": "Twemoji", "openmoji": "OpenMoji"}[style]
            table3.append(f"| {title} | " + " | ".join(cells) + " |")
    if len(means) > 1:
        mean_cells = [f"{np.mean([m[lv] for m in means]):.1f}" if all(lv in m for m in means) else "-" for lv in levels]
        table3.append(f"| mean of the {len(means)} | " + " | ".join(mean_cells) + " |")
    machines = {
        label: "{cpu}, {threads} thread(s), torch {torch}".format(**row("", "", [], infos))
        for label, infos in infos_of.items()
    }
    machine_lines = "".join(f"  {label}: {m}\n" for label, m in machines.items())
    out = (
        "top-1 % (mean ± population std over runs [95% bootstrap interval over the level's concepts]), Twemoji held "
        "out:\n\n" + "\n".join(table1) + "\n\neach level minus the encoder trained on every concept (points):\n\n"
        + "\n".join(table2) + "\n\nthe supervised encoder per held-out style (top-1 % mean ± std over runs):\n\n"
        + "\n".join(table3) + "\n\n" + _lin_within_levels()
        + f"machine the runs recorded (run.json):\n{machine_lines}printed on: {this_machine()}\n"
    )  # fmt: skip
    print(out, end="")
    (work / "cog.md").write_text(out)
    return rows


SECTIONS = {"cog-levels": cog_levels, "cog": cog}
