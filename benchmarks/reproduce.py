"""Reproduce the headline figures from nothing: every command, seeds fixed, pretraining included.

Writes one table (markdown and JSON) with per-seed values, mean +- std (ddof=1), and the provenance each run
recorded (CPU, threads, versions, sha256 of the checkpoints and encoders it loaded). The README's "what to
expect" figures come from this script, with the machine it ran on.

Run: python benchmarks/reproduce.py [--only nevis,clear,nevis-real,clear-real] [--work DIR] [--quick]
  nevis: nevis-mini, 3 seeds: independent, finetune-prev, finetune-knn, pretrained (checkpoint from
         `lifelong pretrain builtin:chars -o n_per_class=80 --epochs 10`): meta-test error E, mean error, cFLOP.
  clear: clear-mini iid, 5 seeds: finetune (CNN) and finetune on a SimCLR encoder (`lifelong pretrain-ssl`).
  nevis-real: nevis-mini, 3 seeds: pretrained and pretrained+finetune-knn starting from the ImageNet-1K
         EfficientNet-Lite0 (the [models] extra) at 64 px (about 15 minutes a seed each on one CPU thread).
  clear-real: clear-mini iid, 5 seeds: the linear regime on EfficientNet-Lite0 features (the first seed encodes
         every image, about 30 minutes; the others read the feature cache).
Default: nevis and clear. --quick: one seed and one epoch everywhere, nevis-mini at 16 px with its pretrained learner
only (from a checkpoint of 10 images per class), a smaller clear-mini (QUICK_CLEAR), in a temporary --work: a smoke
test of the script, not the figures.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LIFELONG = [sys.executable, "-m", "lifelong.cli"]
QUICK_NEVIS = ["-o", "epochs=1", "-o", "resolution=16"]
QUICK_NEVIS_LEARNERS = ("pretrained",)  # the others run the same command without the checkpoint (10-30 s each)
QUICK_CLEAR = ["-s", "n_per_class=20", "-s", "num_buckets=4", "-s", "unlabeled_per_bucket=200"]  # 3 labeled buckets


def lifelong(*args: str, cwd: Path) -> None:
    print("$ lifelong " + " ".join(args), flush=True)
    subprocess.run([*LIFELONG, *args], cwd=cwd, check=True)


def summaries(out: Path, prefix: str) -> list[tuple[dict, dict]]:
    """(summary.json, run.json) of every finished run folder in `out` whose id starts with `prefix`."""
    found = []
    for folder in sorted(out.glob(f"{prefix}*")):
        if re.search(r"-seed\d+$", folder.name) and (folder / "summary.json").is_file():
            found.append(
                (json.loads((folder / "summary.json").read_text()), json.loads((folder / "run.json").read_text()))
            )
    return found


def _row(experiment: str, metric: str, values: list[float], infos: list[dict]) -> dict:
    mean = statistics.fmean(values) if values else None
    std = statistics.stdev(values) if len(values) > 1 else None
    machine = infos[0].get("machine", {}) if infos else {}
    files = {Path(p).name: h[:12] for info in infos for p, h in (info.get("files") or {}).items()}
    return {
        "experiment": experiment,
        "metric": metric,
        "per_seed": values,
        "mean": mean,
        "std": std,
        "cpu": machine.get("cpu"),
        "threads": machine.get("threads"),
        "torch": (infos[0].get("versions") or {}).get("torch") if infos else None,
        "files": files,
    }


def nevis(work: Path, quick: bool) -> list[dict]:
    seeds, epochs = ("1", QUICK_NEVIS) if quick else ("3", [])
    checkpoint = work / "pretrained" / "chars.pt"
    if not checkpoint.exists():
        lifelong(
            "pretrain",
            "builtin:chars",
            "--out",
            str(checkpoint),
            "-o",
            "n_per_class=10" if quick else "n_per_class=80",
            "--epochs",
            "1" if quick else "10",
            "--seed",
            "0",
            cwd=work,
        )
    rows = []
    learners = {
        "independent": [],
        "finetune-prev": [],
        "finetune-knn": [],
        "pretrained": ["-o", f"checkpoint={checkpoint}"],
    }
    if quick:
        skipped = [learner for learner in learners if learner not in QUICK_NEVIS_LEARNERS]
        print(f"--quick: nevis-mini learners {', '.join(skipped)} skipped (the same command with another learner)")
        learners = {learner: learners[learner] for learner in QUICK_NEVIS_LEARNERS}
    for learner, options in learners.items():
        lifelong(
            "run",
            "--stream",
            "nevis-mini",
            "--learner",
            learner,
            "--seeds",
            seeds,
            "--out",
            "nevis",
            *options,
            *epochs,
            "--resume",
            cwd=work,
        )
        rows += nevis_rows(work / "nevis", learner, f"nevis-mini {learner}")
    return rows


def nevis_rows(out: Path, learner: str, label: str) -> list[dict]:
    """E, mean error and cFLOP rows of `learner`'s finished nevis-mini runs in `out`."""
    found = summaries(out, f"nevis-mini-{learner}-")
    infos = [info for _, info in found]
    metrics = ("meta_test_mean_error", "mean_error", "cumulative_train_flops")
    return [_row(label, metric, [s[metric] for s, _ in found], infos) for metric in metrics]


def nevis_real(work: Path, quick: bool) -> list[dict]:
    seeds, epochs = ("1", ["-o", "epochs=1"]) if quick else ("3", [])
    rows = []
    for learner in ("pretrained", "pretrained+finetune-knn"):
        options = ["-o", "encoder=efficientnet-lite0", "-o", "resolution=64", *epochs]
        lifelong("run", "--stream", "nevis-mini", "--learner", learner, "--seeds", seeds, "--out", "nevis-real",
                 *options, "--resume", cwd=work)  # fmt: skip
        rows += nevis_rows(work / "nevis-real", learner, f"nevis-mini {learner} (lite0)")
    return rows


def clear_real(work: Path, quick: bool) -> list[dict]:
    seeds = "1" if quick else "5"
    options = ["-o", "encoder=efficientnet-lite0", *(["-o", "linear_epochs=1", *QUICK_CLEAR] if quick else [])]
    lifelong("run", "--stream", "clear-mini", "--protocol", "iid", "--learner", "finetune", "--seeds", seeds,
             "--out", "clear-real", *options, "--resume", cwd=work)  # fmt: skip
    found = summaries(work / "clear-real", "clear-mini-")
    infos = [info for _, info in found]
    metrics = ("in_domain", "next_domain", "acc", "bwt", "fwt")
    label = "clear-mini iid finetune (linear, lite0)"
    return [_row(label, m, [s["clear_metrics"][m] for s, _ in found], infos) for m in metrics]


def clear(work: Path, quick: bool) -> list[dict]:
    seeds, epochs, stream = ("1", ["-o", "epochs=1"], QUICK_CLEAR) if quick else ("5", [], [])
    encoder = work / "encoders" / "clear-mini-simclr.pt"
    if not encoder.exists():
        lifelong("pretrain-ssl", "--out", str(encoder), *(["--epochs", "1"] if quick else []), *stream, cwd=work)
    rows = []
    for label, options in (("finetune (CNN)", epochs), ("finetune (linear)", ["-o", f"encoder={encoder}"])):
        out = "clear-cnn" if "CNN" in label else "clear-linear"
        lifelong(
            "run",
            "--stream",
            "clear-mini",
            "--protocol",
            "iid",
            "--learner",
            "finetune",
            "--seeds",
            seeds,
            "--out",
            out,
            *options,
            *stream,
            "--resume",
            cwd=work,
        )
        found = summaries(work / out, "clear-mini-")
        infos = [info for _, info in found]
        for metric in ("in_domain", "next_domain", "acc", "bwt", "fwt"):
            rows.append(_row(f"clear-mini iid {label}", metric, [s["clear_metrics"][metric] for s, _ in found], infos))
    return rows


EXPERIMENTS = {"nevis": nevis, "clear": clear, "nevis-real": nevis_real, "clear-real": clear_real}


def markdown(rows: list[dict]) -> str:
    lines = [
        "| experiment | metric | per seed | mean +- std | CPU, threads, torch | files (sha256) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        per_seed = ", ".join(f"{v:.4g}" for v in r["per_seed"])
        spread = "-" if r["mean"] is None else f"{r['mean']:.4g}" + ("" if r["std"] is None else f" +- {r['std']:.2g}")
        files = ", ".join(f"{k} {v}" for k, v in r["files"].items()) or "-"
        lines.append(
            f"| {r['experiment']} | {r['metric']} | {per_seed} | {spread} | {r['cpu']}, {r['threads']}, "
            f"{r['torch']} | {files} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="nevis,clear", help=f"comma-separated, of {', '.join(EXPERIMENTS)}")
    # --quick's default is a fresh folder: --resume must not find an earlier run's results and skip the work
    work_help = "folder for checkpoints and runs (default: reproduce; --quick: a temporary folder, deleted after)"
    parser.add_argument("--work", type=Path, default=None, help=work_help)
    parser.add_argument("--quick", action="store_true", help="one seed, one epoch, small sizes: a smoke test")
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in EXPERIMENTS]
    if unknown or not chosen:
        parser.error(f"--only {args.only!r}: choose among {', '.join(EXPERIMENTS)}")
    if args.quick and args.work is None:
        with tempfile.TemporaryDirectory(prefix="reproduce-quick-") as work:
            reproduce(chosen, Path(work), quick=True)
    else:
        reproduce(chosen, args.work or Path("reproduce"), args.quick)


def reproduce(chosen: list[str], work: Path, quick: bool) -> None:
    """Run the `chosen` experiments in `work`; write reproduce.md and reproduce.json there and print the table."""
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    rows: list[dict] = []
    for name in chosen:
        rows += EXPERIMENTS[name](work, quick)
    (work / "reproduce.json").write_text(json.dumps(rows, indent=2) + "\n")
    table = markdown(rows)
    (work / "reproduce.md").write_text(table + "\n")
    print(table)
    print(f"written to {work / 'reproduce.md'} and reproduce.json in {time.perf_counter() - started:.0f} s")
    empty = [f"{row['experiment']} {row['metric']}" for row in rows if not row["per_seed"]]
    if empty:
        raise SystemExit(f"FAIL: no finished run gave {', '.join(empty)}")


if __name__ == "__main__":
    main()
