"""reproduce.py sections `facts-split` and `facts`: docs/facts.md's tables on facts-mini, from their commands.

facts-split: `lifelong facts split` on facts-mini's facts (FACTS.csv written from the stream's plan: one S,P,O row per
    training image; the word vectors facts-mini ships), semantic (every distance x linkage variant and the one the
    criterion chose) and random (seed 0, best of 100); prints the variants table in docs/facts.md's layout, facts-mini's
    counts, single linkage's largest task and the random split's balance. Seconds; --quick runs the same (it is
    already that small).
facts: `lifelong run --stream facts-mini -s split=SPLIT --learner LEARNER --seeds 5` for the 7 learners on the random
    and the semantic split (each run a folder in WORK/facts), then the "What to expect on facts-mini" table (top-5 %
    after the last task, mean ± std with ddof=1 over the seeds, beside the paper's figure) and the figures its
    findings quote. From nothing about 7.5 hours of runs on one core each (the section runs them one after another).
    --quick: facts-mini cut to 40 facts and 400 images at 32 px (QUICK_STREAM), one seed, the fits capped at one
    epoch, and only QUICK_LEARNERS (the others are the same command with another learner).
Both print the machine: the runs' recorded provenance (facts) or this one (facts-split).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import re
import statistics
from collections import Counter
from pathlib import Path

from _reproduce_common import call, row, run_group, summaries, this_machine

from lifelong.api import FactsSplitSpec, RunsSpec

TASKS = 4
LEARNERS = ("fact-finetune", "fact-ewc", "fact-si", "fact-mas", "fact-imm", "fact-expertgate", "fact-joint")
SPLITS = ("random", "semantic")
NAMES = {"fact-finetune": "Finetune", "fact-ewc": "EWC", "fact-si": "SI", "fact-mas": "MAS", "fact-imm": "IMM",
         "fact-expertgate": "ExpertGate", "fact-joint": "Joint"}  # fmt: skip
# The paper's generalized top-5 over examples (%) after the last task on its mid-scale benchmark, (random, semantic):
# Elhoseiny et al., "Exploring the Challenges towards Lifelong Fact Learning" (arXiv 1812.10524), Table 3 (random
# split) and Table 4 (semantic split). The paper has no EWC row; Joint is one model, the same on both splits.
PAPER = {
    "fact-finetune": (42.02, 6.07),
    "fact-ewc": (None, None),
    "fact-si": (50.95, 5.77),
    "fact-mas": (56.94, 6.04),
    "fact-imm": (58.77, 37.31),
    "fact-expertgate": (43.69, 51.83),
    "fact-joint": (70.87, 70.87),
}
COLUMNS = (  # (header, summary.json key), in docs/facts.md's order
    ("standard (tasks)", "fact_standard_mean_over_tasks"),
    ("generalized (tasks)", "fact_generalized_mean_over_tasks"),
    ("standard (examples)", "fact_standard_mean_over_examples"),
    ("generalized (examples)", "fact_generalized_mean_over_examples"),
    ("generalized (examples, authors' rule)", "fact_generalized_mean_over_examples_authors"),
    ("BWT", "fact_bwt"),
    ("FWT", "fact_fwt"),
)
HEADLINE = "fact_generalized_mean_over_examples"
COLLAPSE = ("fact-finetune", "fact-si", "fact-mas")  # the paper's "collapse to the last task" on the semantic split
QUICK_STREAM = {"n_sp": 8, "n_spo": 8, "n_images": 400, "test_per_fact": 4, "min_per_fact": 4, "size": 32}
QUICK_LEARNERS = ("fact-finetune",)
VARIANT = re.compile(r"^(eq2|padded)\s+(\w+)\s+([\d/]+)\s+([\d/]+)\s+([\d.]+)\s*(.*)$")
BALANCE = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+[\d.]+%\s+[\d.]+%\s*$")


# -- facts-split ---------------------------------------------------------------------------------------------------


def write_facts_csv(path: Path) -> Path:
    """facts-mini's facts as `lifelong facts split` reads them: S,P,O ('*' undefined), one row per training image."""
    from lifelong.data.sources.facts_mini import plan_counts, plan_facts

    facts, counts = plan_facts(), plan_counts()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(("S", "P", "O"))
        for fact, count in zip(facts, counts, strict=True):
            writer.writerows([[part or "*" for part in fact]] * int(count))
    return path


def _per_task(text: str) -> str:
    return " / ".join(f"{int(n):,}" for n in text.split("/"))


def _mark(facts: list[int], chosen: bool) -> str:
    if chosen:
        return "**chosen**"
    smallest = min(facts)
    if smallest > 5:  # K = 5 (lifelong.facts.split_choice): such a variant is eligible
        return ""
    unit = "fact" if smallest == 1 else "facts"
    return f"a task of {smallest} {unit}" if facts.count(smallest) == 1 else f"tasks of {smallest} {unit}"


def split_printed(spec: FactsSplitSpec) -> str:
    """`lifelong facts split` through lifelong.api: echoes the call, prints what the command prints and returns it."""
    from rich.console import Console

    from lifelong.api import facts_split
    from lifelong.commands.facts_console import print_facts_split

    print(f"$ api.facts_split({spec})", flush=True)
    console = Console(record=True)
    print_facts_split(facts_split(spec), console)
    return console.export_text()


def facts_split(work: Path, quick: bool) -> list[dict]:
    """The split-variant table of docs/facts.md and the random split's balance (quick: the same, it takes seconds)."""
    from lifelong.data.sources.facts_mini import shipped_vectors_path

    folder = work / "facts-split"
    facts_csv = write_facts_csv(folder / "facts-mini-facts.csv")
    # overwrite, not resume: a finished split prints nothing under resume, and the split takes seconds
    semantic = split_printed(FactsSplitSpec(facts_csv, folder / "semantic.csv", TASKS, vectors=shipped_vectors_path(),
                                            overwrite=True))  # fmt: skip
    random = split_printed(FactsSplitSpec(facts_csv, folder / "random.csv", TASKS, method="random", seed=0,
                                          overwrite=True))  # fmt: skip
    lines = [
        "| distance | linkage | facts per task | training images per task | image deviation | |",
        "|---|---|---|---|---|---|",
    ]
    single = {}  # distance: the largest task's share of the facts under single linkage
    for line in semantic.splitlines():
        if m := VARIANT.match(line.strip()):
            distance, linkage, facts, images, deviation, mark = m.groups()
            counts = [int(n) for n in facts.split("/")]
            cells = [distance, linkage, _per_task(facts), _per_task(images), deviation, _mark(counts, mark == "chosen")]
            lines.append(("| " + " | ".join(cells) + " |").replace("|  |", "| |"))
            if linkage == "single":
                single[distance] = max(counts) / sum(counts)
    if len(lines) != 10:
        raise SystemExit(
            f"FAIL: facts-split: expected 8 variant lines from `lifelong facts split`, got {len(lines) - 2}"
        )
    balance = [tuple(int(v) for v in m.groups()) for line in random.splitlines() if (m := BALANCE.match(line))]
    score = re.search(r"balance score ([\d.]+)", " ".join(random.split()))
    facts = [f for _, f, _ in balance]
    images = [i for _, _, i in balance]
    deviation = {
        "facts": max(abs(f - statistics.fmean(facts)) for f in facts) / statistics.fmean(facts),
        "training images": max(abs(i - statistics.fmean(images)) for i in images) / statistics.fmean(images),
    }
    by = max(deviation, key=deviation.get)
    from lifelong.data.sources.facts_mini import FactsMiniOptions, plan_counts, plan_facts

    options, plan = FactsMiniOptions(), plan_facts()
    counts, kinds = plan_counts(options, len(plan)), Counter(fact.kind for fact in plan)
    dataset = (
        f"facts-mini: {len(plan)} facts ({', '.join(f'{n} {kind}' for kind, n in kinds.items())}), "
        f"{options.n_images:,} images at {options.size} px: {counts.sum():,} training ({counts.min()} to "
        f"{counts.max():,} per fact), {options.test_per_fact * len(plan):,} test ({options.test_per_fact} per fact)."
    )
    chains = ", ".join(f"{100 * share:.0f}% ({distance})" for distance, share in single.items())
    lines += [
        "",
        dataset,
        "",
        f"Single linkage: the largest task holds {chains} of the facts.",
        "",
        f"Random split (split seed 0, best of 100): {' / '.join(map(str, facts))} facts, "
        f"{' / '.join(f'{i:,}' for i in images)} training images per task; balance score "
        f"{score.group(1) if score else '?'} (largest relative deviation: {by}).",
        "",
        f"Printed on: {this_machine()}.",
    ]
    table = "\n".join(lines)
    print(table)
    (work / "facts-split.md").write_text(table + "\n")
    return []


# -- facts ---------------------------------------------------------------------------------------------------------


def _pct(values: list[float]) -> str:
    values = [100 * v for v in values]
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.fmean(values):.2f} ± {statistics.stdev(values):.2f}"


def _mean_std(values: list[float]) -> tuple[float, float | None]:
    values = [100 * v for v in values]
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def _fmt(values: list[float]) -> str:
    mean, std = _mean_std(values)
    return f"{mean:.1f}" + ("" if std is None else f" ± {std:.1f}")


def _fits(folder: Path) -> Counter:
    """How the run's fits stopped (train records' `stopped`: converged, cap; unrecorded: None)."""
    records = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines() if line.strip()]
    return Counter(r.get("stopped") for r in records if r.get("type") == "train")


def findings(runs: dict) -> list[str]:
    """The figures docs/facts.md's findings quote, from the finished runs (generalized top-5 over examples, %)."""
    gen = {key: [s[HEADLINE] for s, _ in found] for key, found in runs.items()}
    lines = ["Findings (generalized top-5 over examples, %, mean ± std over seeds):"]
    below = [
        (key, s["seed"])
        for key, found in runs.items()
        for s, _ in found
        for over in ("tasks", "examples")
        if not s[f"fact_generalized_mean_over_{over}"] < s[f"fact_standard_mean_over_{over}"]
    ]
    total = sum(len(found) for found in runs.values())
    lines.append(f"- generalized below standard (over tasks and over examples): fails in {len(below)} of {total} runs")
    for learner in LEARNERS[:-1]:  # Joint: the line below
        if (learner, "random") in gen and (learner, "semantic") in gen:
            (a, sa), (b, sb) = _mean_std(gen[(learner, "random")]), _mean_std(gen[(learner, "semantic")])
            within = sa is not None and sb is not None and abs(a - b) < max(sa, sb)
            order = "above" if a > b else "not above"
            lines.append(f"- {NAMES[learner]}: random {_fmt(gen[(learner, 'random')])} {order} semantic "
                         f"{_fmt(gen[(learner, 'semantic')])}{', within one std' if within else ''}")  # fmt: skip
    joint = [runs.get(("fact-joint", split)) for split in SPLITS]
    if all(joint):
        same = {s["seed"]: s[HEADLINE] for s, _ in joint[0]}
        identical = all(abs(same.get(s["seed"], -1) - s[HEADLINE]) < 1e-12 for s, _ in joint[1])
        lines.append(f"- Joint identical on both splits for every seed: {'yes' if identical else 'no'}")
    for split in SPLITS:
        single = {learner: gen[(learner, split)] for learner in LEARNERS if learner != "fact-joint" and (learner, split)
                  in gen}  # fmt: skip
        if single:
            ranked = sorted(single, key=lambda learner: -statistics.fmean(single[learner]))
            joint_text = f"Joint {_fmt(gen[('fact-joint', split)])}; " if ("fact-joint", split) in gen else ""
            order = ", ".join(f"{NAMES[learner]} {_fmt(single[learner])}" for learner in ranked)
            lines.append(f"- {split} split: {joint_text}single models best first: {order}")
    per_task = {
        learner: [statistics.fmean(100 * s["fact_generalized_per_task"][t] for s, _ in runs[(learner, "semantic")])
                  for t in range(len(runs[(learner, "semantic")][0][0]["fact_generalized_per_task"]))]
        for learner in COLLAPSE if (learner, "semantic") in runs
    }  # fmt: skip
    if per_task:
        earlier = [v for values in per_task.values() for v in values[:-1]]
        last = [values[-1] for values in per_task.values()]
        lines.append(
            f"- semantic split, {', '.join(NAMES[m] for m in per_task)}: generalized top-5 per task after the last "
            f"task (mean over seeds): earlier tasks {min(earlier):.0f}-{max(earlier):.0f}, the last task "
            f"{min(last):.0f}-{max(last):.0f}"
        )
    first = next(iter(runs.values()))[0][0]
    lines.append(
        f"- chance (a random ranking, generalized, over examples): "
        f"{100 * first['fact_generalized_chance_over_examples']:.1f} (our wildcard rule), "
        f"{100 * first['fact_generalized_chance_over_examples_authors']:.1f} (the authors' rule)"
    )
    return lines


def costs(runs: dict, out: Path) -> list[str]:
    """Minutes per run (the runs' own timing) and how their fits stopped."""
    lines = ["Run time (minutes, min-max over the runs of both splits, each run on one torch thread) and fits:"]
    stopped: Counter = Counter()
    unrecorded: Counter = Counter()
    hours = 0.0
    for learner in LEARNERS:
        found = [s for split in SPLITS for s, _ in runs.get((learner, split), [])]
        if not found:
            continue
        minutes = [s["timing"]["total_seconds"] / 60 for s in found]
        hours += sum(minutes) / 60
        lines.append(f"- {NAMES[learner]}: {min(minutes):.1f}-{max(minutes):.1f} (median "
                     f"{statistics.median(minutes):.1f}, {len(minutes)} runs)")  # fmt: skip
        for s in found:
            fits = _fits(out / s["run_id"])
            stopped += fits
            unrecorded[NAMES[learner]] += fits.get(None, 0)
    lines.append(f"- all runs one after another: {hours:.1f} h")
    by_learner = "".join(f"; {name} {n}" for name, n in unrecorded.items() if n)
    lines.append(
        f"- fits: {stopped.get('cap', 0)} of {sum(stopped.values())} stopped at the epoch cap, "
        f"{stopped.get('converged', 0)} converged, {stopped.get(None, 0)} did not record why they stopped{by_learner}"
    )
    return lines


def facts(work: Path, quick: bool) -> list[dict]:
    """docs/facts.md's "What to expect on facts-mini": 7 learners x 2 splits x 5 seeds (quick: a tiny smoke test)."""
    seeds, stream, options = (1, QUICK_STREAM, {"epochs": 1}) if quick else (5, {}, {})
    learners = LEARNERS
    if quick:
        skipped = [learner for learner in LEARNERS if learner not in QUICK_LEARNERS]
        print(f"--quick: facts-mini learners {', '.join(skipped)} skipped (the same command with another learner)")
        learners = QUICK_LEARNERS
    out = work / "facts"
    runs, rows = {}, []
    for learner in learners:
        for split in SPLITS:
            spec = RunsSpec("facts-mini", learner, seeds=seeds, out="facts", learner_options=options,
                            stream_options={"split": split, **stream}, save_predictions=False)  # fmt: skip
            own_data = work / "data" if quick else None  # the tiny render stays in the work folder
            call(work, "run", dataclasses.replace(spec, data_root=own_data, resume=True))
            found = summaries(out, run_group(spec) + "-seed")
            if found:
                runs[(learner, split)] = found
                infos = [info for _, info in found]
                label = f"facts-mini {split} {learner}"
                for metric in (HEADLINE, "fact_generalized_mean_over_examples_authors", "fact_bwt", "fact_fwt"):
                    rows.append(row(label, f"{metric} (%)", [100 * s[metric] for s, _ in found], infos))
    header = ["learner", "split", "seeds", *(name for name, _ in COLUMNS), "paper, generalized"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for learner in learners:
        for split in SPLITS:
            found = runs.get((learner, split))
            if not found:
                continue
            paper = PAPER[learner][SPLITS.index(split)]
            cells = [learner, split, str(len(found)), *(_pct([s[key] for s, _ in found]) for _, key in COLUMNS)]
            lines.append("| " + " | ".join([*cells, "-" if paper is None else f"{paper:.2f}"]) + " |")
    infos = [info for found in runs.values() for _, info in found]
    machines = Counter(
        (i.get("machine", {}).get("cpu"), i.get("machine", {}).get("cpu_count"), i.get("machine", {}).get("threads"),
         (i.get("versions") or {}).get("torch"))
        for i in infos
    )  # fmt: skip
    created = sorted(i.get("created", "") for i in infos)
    provenance = "; ".join(f"{n} runs on {cpu} ({cores} cores), {threads} torch thread(s), torch {torch}"
                           for (cpu, cores, threads, torch), n in machines.items())  # fmt: skip
    lines += ["", f"Runs: {provenance}; created {created[0]} to {created[-1]}." if infos else "Runs: none finished."]
    if runs:
        lines += ["", *findings(runs), "", *costs(runs, out)]
    lines += ["", f"Printed on: {this_machine()}."]
    table = "\n".join(lines)
    print(table)
    (work / "facts.md").write_text(table + "\n")
    return rows


SECTIONS = {"facts-split": facts_split, "facts": facts}
