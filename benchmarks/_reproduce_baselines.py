"""reproduce.py's section for Nevis'22's six baselines at equal trials: docs/nevis.md's baselines table.

nevis-baselines: nevis-mini, 3 seeds, every learner with the same 8 trials of 3 epochs: Indep, FT-prev, FT-kNN, PT
       (the nevis section's toolkit checkpoint), MT top-1 and all, random search and BHPO (GP-UCB) in the small and
       the large space; and FT-kNN with 15 epochs a trial (about the compute of MT all). Prints E, mean error and
       cFLOP per row (mean +- std over seeds, ddof=1), writes WORK/nevis-baselines.md, and `lifelong report
       WORK/nevis-baselines --out WORK/nevis-baselines-report` draws them on the error-vs-compute plane. About 4 h
       on one 2-core CPU, two runs at a time (MT all and FT-kNN 15 epochs: about 15 minutes a seed each).
"""

from __future__ import annotations

import statistics
from pathlib import Path

from _reproduce_common import call, row, summaries
from _reproduce_nevis import SUMMARY_METRICS, pretrained_checkpoint

from lifelong.api import RunsSpec

EQUAL = {"trials": 8, "epochs": 3}
QUICK_EQUAL = {"trials": 2, "epochs": 1, "resolution": 16}
# (row label, folder, learner, options)
BASELINES = (
    ("Indep (random search, small space)", "independent", "independent", {}),
    ("FT-prev", "finetune-prev", "finetune-prev", {}),
    ("FT-kNN (dynamic)", "finetune-knn", "finetune-knn", {}),
    ("PT (toolkit checkpoint)", "pretrained", "pretrained", {}),
    ("MT top-1", "mt-top1", "multitask", {}),
    ("MT all", "mt-all", "multitask", {"aux_tasks": "all"}),
    ("BHPO, small space", "gp-small", "independent", {"search": "gp-ucb"}),
    ("Indep, random search, large space", "random-large", "independent", {"space": "large"}),
    ("BHPO, large space", "gp-large", "independent", {"search": "gp-ucb", "space": "large"}),
    ("FT-kNN, 15 epochs a trial (about MT all's compute)", "finetune-knn-15ep", "finetune-knn", {"epochs": 15}),
)
QUICK_BASELINES = ("mt-all", "gp-large")  # the others: the same command with other options


def baselines(work: Path, quick: bool) -> list[dict]:
    """Run (or, with finished runs in WORK/nevis-baselines, read) every baseline; print the table."""
    seeds, equal = (1, QUICK_EQUAL) if quick else (3, EQUAL)
    checkpoint = pretrained_checkpoint(work, quick)
    rows, table = [], []
    for label, folder, learner, options in BASELINES:
        if quick and folder not in QUICK_BASELINES:
            continue
        options = {**equal, **options, **({"checkpoint": str(checkpoint)} if learner == "pretrained" else {})}
        out = work / "nevis-baselines" / folder
        for seed in range(seeds):  # one seed at a time, so that two such scripts can share the seeds of a row
            call(
                work,
                "run",
                RunsSpec("nevis-mini", learner, seed=seed, out=str(out), learner_options=options, resume=True),
            )
        found = summaries(out, "nevis-mini-")
        infos = [info for _, info in found]
        values = {metric: [s[metric] for s, _ in found] for metric in SUMMARY_METRICS}
        rows += [row(f"nevis-mini {label}", metric, values[metric], infos) for metric in SUMMARY_METRICS]
        table.append((label, folder, values))
    text = markdown(table)
    (work / "nevis-baselines.md").write_text(text + "\n")
    print(text)
    return rows


def _mean_std(values: list[float], spec: str) -> str:
    if not values:
        return "n/a"
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    std = f" ± {spread:{spec}}" if spread else ""  # one seed, or seeds that agree exactly (cFLOP)
    return f"{statistics.fmean(values):{spec}}{std}"


def markdown(table: list[tuple[str, str, dict]]) -> str:
    """docs/nevis.md's baselines table: E, its per-seed values, mean error and cFLOP (and its ratio to Indep's)."""
    indep = [values["cumulative_train_flops"] for _, folder, values in table if folder == "independent"]
    reference = statistics.fmean(indep[0]) if indep and indep[0] else None
    lines = [
        "| baseline | E (meta-test) | per seed | mean error (13 tasks) | cFLOP | x Indep |",
        "|---|---|---|---|---|---|",
    ]
    for label, _, values in table:
        flops = values["cumulative_train_flops"]
        ratio = f"{statistics.fmean(flops) / reference:.2f}" if reference and flops else "n/a"
        per_seed = ", ".join(f"{v:.3f}" for v in values["meta_test_mean_error"])
        lines.append(
            f"| {label} | {_mean_std(values['meta_test_mean_error'], '.3f')} | {per_seed} | "
            f"{_mean_std(values['mean_error'], '.3f')} | {_mean_std(flops, '.3e')} | {ratio} |"
        )
    return "\n".join(lines)


SECTIONS = {"nevis-baselines": baselines}
