"""reproduce.py's Nevis'22 sections: the default run, nevis-mini (toolkit learners, EfficientNet-Lite0), nevis-full.

default: `lifelong run` with no options (mini, independent, seed 0): the README's first figures.
nevis: nevis-mini, 3 seeds: independent, finetune-prev, finetune-knn, pretrained (checkpoint from
       `lifelong pretrain builtin:chars -o n_per_class=80 --epochs 10`): meta-test error E, mean error, cFLOP.
nevis-real: the nevis section's runs, then the ImageNet-1K EfficientNet-Lite0 (the [models] extra) at 64 px,
       3 seeds: fine-tuned whole (`pretrained`), `pretrained+finetune-knn`, frozen (`-o finetune=frozen`), and
       `-o lr=0.005` (seed 0); prints docs/nevis.md's table (with pretraining charged) and seed 0's per-task
       errors (about 15 minutes a seed for each fine-tuned Lite0 learner on one CPU thread).
nevis-full: Fashion-MNIST converted from Debian's files (`lifelong data fetch fashion_mnist --from`), then
       nevis-full with `--allow-missing` (the one task those files give) and nearest-mean.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
from pathlib import Path

from _reproduce_common import call, row, run_group, summaries

from lifelong.api import PretrainSpec, RunsSpec

QUICK_NEVIS = {"epochs": 1, "resolution": 16}
QUICK_NEVIS_LEARNERS = ("pretrained",)  # the others run the same command without the checkpoint (10-30 s each)
SUMMARY_METRICS = ("meta_test_mean_error", "mean_error", "cumulative_train_flops")
FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")  # Debian's dataset-fashion-mnist
LITE0 = {"encoder": "efficientnet-lite0", "resolution": 64}
QUICK_LITE0 = {"encoder": "efficientnet-lite0", "resolution": 32, "epochs": 1}
QUICK_LITE0_ROWS = ("Lite0", "frozen")  # the other rows: the same command with other options
# (label, learner, options, seeds) of the Lite0 rows; the fine-tuned runs use the Independent recipe (lr 0.05).
LITE0_ROWS = (  # (label, short label for the per-task table, learner, options, seeds)
    ("`pretrained` on Lite0, fine-tuned whole", "Lite0", "pretrained", {}, 3),
    ("`pretrained+finetune-knn` on Lite0", "Lite0 kNN", "pretrained+finetune-knn", {}, 3),
    ("`pretrained` on Lite0, frozen (`-o finetune=frozen`)", "frozen", "pretrained", {"finetune": "frozen"}, 3),
    ("`pretrained` on Lite0, `-o lr=0.005` (seed 0 only)", "lr 0.005", "pretrained", {"lr": 0.005}, 1),
)
BASE_ROWS = (  # (label, short label, learner) of the nevis section's runs
    ("`independent`", "indep.", "independent"),
    ("`finetune-prev`", "FT-prev", "finetune-prev"),
    ("`finetune-knn`", "FT-kNN", "finetune-knn"),
    ("`pretrained`, toolkit checkpoint", "ckpt", "pretrained"),
)


def default_run(work: Path, quick: bool) -> list[dict]:
    call(work, "run", RunsSpec(out="default", learner_options=QUICK_NEVIS if quick else {}, resume=True))
    found = summaries(work / "default", "mini-independent-")
    infos = [info for _, info in found]
    return [row("mini independent (lifelong run)", m, [s[m] for s, _ in found], infos) for m in SUMMARY_METRICS]


def pretrained_checkpoint(work: Path, quick: bool) -> Path:
    """The toolkit checkpoint the `pretrained` nevis-mini row starts from (pretrained once, then reused)."""
    checkpoint = work / "pretrained" / "chars.pt"
    if not checkpoint.exists():
        n_per_class, epochs = (10, 1) if quick else (80, 10)
        spec = PretrainSpec("builtin:chars", checkpoint, epochs=epochs, seed=0, options={"n_per_class": n_per_class})
        call(work, "pretrain", spec)
    return checkpoint


def nevis(work: Path, quick: bool) -> list[dict]:
    seeds, epochs = (1, QUICK_NEVIS) if quick else (3, {})
    checkpoint = pretrained_checkpoint(work, quick)
    learners = {
        "independent": {},
        "finetune-prev": {},
        "finetune-knn": {},
        "pretrained": {"checkpoint": str(checkpoint)},
    }
    if quick:
        skipped = [learner for learner in learners if learner not in QUICK_NEVIS_LEARNERS]
        print(f"--quick: nevis-mini learners {', '.join(skipped)} skipped (the same command with another learner)")
        learners = {learner: learners[learner] for learner in QUICK_NEVIS_LEARNERS}
    rows = []
    for learner, options in learners.items():
        spec = RunsSpec("nevis-mini", learner, seeds=seeds, out="nevis", learner_options={**options, **epochs})
        call(work, "run", dataclasses.replace(spec, resume=True))
        rows += nevis_rows(work / "nevis", f"nevis-mini-{learner}-", f"nevis-mini {learner}")
    return rows


def nevis_rows(out: Path, prefix: str, label: str) -> list[dict]:
    """E, mean error and cFLOP rows of the finished nevis-mini runs in `out` whose ids start with `prefix`."""
    found = summaries(out, prefix)
    infos = [info for _, info in found]
    return [row(label, metric, [s[metric] for s, _ in found], infos) for metric in SUMMARY_METRICS]


def nevis_real(work: Path, quick: bool) -> list[dict]:
    from lifelong.training.encoders.efficientnet import pretraining_flops
    from lifelong.training.pretrain import load_pretrained

    rows = nevis(work, quick)
    table = []
    lite0_rows = LITE0_ROWS
    if quick:
        lite0_rows = [r for r in LITE0_ROWS if r[1] in QUICK_LITE0_ROWS]
        print(f"--quick: Lite0 at 32 px, one epoch, rows {', '.join(QUICK_LITE0_ROWS)} only")
    for label, short, learner, extra, seeds in lite0_rows:
        options = {**(QUICK_LITE0 if quick else LITE0), **extra}
        spec = RunsSpec("nevis-mini", learner, seeds=1 if quick else seeds, out="nevis-real", learner_options=options)
        call(work, "run", dataclasses.replace(spec, resume=True))
        prefix = run_group(spec) + "-seed"
        rows += nevis_rows(work / "nevis-real", prefix, f"nevis-mini {label}")
        found = summaries(work / "nevis-real", prefix)
        table.append((label, short, found, pretraining_flops("efficientnet-lite0")))
    checkpoint_flops = load_pretrained(pretrained_checkpoint(work, quick)).pretraining_flops
    for label, short, learner in BASE_ROWS:
        charged = checkpoint_flops if learner == "pretrained" else None
        found = summaries(work / "nevis", f"nevis-mini-{learner}-")
        if found:  # --quick runs only the pretrained learner of the nevis section
            table.append((label, short, found, charged))
    text = "\n\n".join([lite0_table(table), per_task_table(table), run_minutes(table)])
    (work / "nevis-real.md").write_text(text + "\n")
    print(text)
    return rows


def lite0_table(table: list) -> str:
    """docs/nevis.md's table: E (mean +- std, per seed), mean error, training cFLOP, with pretraining charged."""

    def spread(values: list[float]) -> str:
        return (
            f"{values[0]:.3f}"
            if len(values) == 1
            else f"{statistics.fmean(values):.3f} ± {statistics.stdev(values):.3f}"
        )

    lines = [
        "| learner | E | per seed | mean error (13 tasks) | training cFLOP | with pretraining charged |",
        "|---|---|---|---|---|---|",
    ]
    for label, _, found, pretraining in table:
        errors = [s["meta_test_mean_error"] for s, _ in found]
        means = [s["mean_error"] for s, _ in found]
        flops = found[0][0]["cumulative_train_flops"] if found else float("nan")
        if pretraining is None:
            charged = "-"
        elif pretraining > 100 * flops:
            charged = f"{flops + pretraining:.3g}"
        else:
            charged = f"{flops:.3g} + {pretraining:.3g}"
        per_seed = ", ".join(f"{e:.3f}" for e in errors)
        lines.append(f"| {label} | {spread(errors)} | {per_seed} | {spread(means)} | {flops:.3g} | {charged} |")
    return "\n".join(lines)


def per_task_table(table: list) -> str:
    """Seed 0's error on every nevis-mini task, one column per row of the table above."""
    seed0 = [(short, s) for _, short, found, _ in table for s, _ in found if s["seed"] == 0]
    tasks = list(seed0[0][1]["per_task_error"]) if seed0 else []
    lines = ["| task (seed 0) | " + " | ".join(label for label, _ in seed0) + " |", "|---" * (len(seed0) + 1) + "|"]
    for task in tasks:
        lines.append(f"| {task} | " + " | ".join(f"{s['per_task_error'][task]:.2f}" for _, s in seed0) + " |")
    return "\n".join(lines)


def run_minutes(table: list) -> str:
    """Each row's wall minutes per run (seeds in order), as its runs recorded them."""
    lines = ["wall minutes per run (seeds 0, 1, 2; one torch thread, other runs sharing the cores):"]
    for label, _, found, _ in table:
        lines.append(f"  {label}: " + ", ".join(f"{s['timing']['total_seconds'] / 60:.1f}" for s, _ in found))
    return "\n".join(lines)


def nevis_full(work: Path, quick: bool) -> list[dict]:
    from lifelong.api import DataFetchSpec, data_fetch
    from lifelong.commands.data_fetch_console import print_fetched

    data = work / "data"
    if not (data / "fashion_mnist").exists():
        fetch = DataFetchSpec(["fashion_mnist"], from_dir=FASHION_MNIST, data_root=data)
        print(f"$ api.data_fetch({fetch})", flush=True)
        print_fetched(data_fetch(fetch, progress=sys.stderr.isatty()))
    spec = RunsSpec("nevis-full", "nearest-mean", data_root=data, allow_missing=True, out="nevis-full", resume=True)
    call(work, "run", spec)
    found = summaries(work / "nevis-full", "nevis-full-nearest-mean-")
    infos = [info for _, info in found]
    return [
        row("nevis-full nearest-mean (Fashion-MNIST only)", "mean_error", [s["mean_error"] for s, _ in found], infos)
    ]


SECTIONS = {"default": default_run, "nevis": nevis, "nevis-real": nevis_real, "nevis-full": nevis_full}
