"""Reproduce the figures in the README and docs: every command, seeds fixed, pretraining included; print each table.

Each section runs the commands behind one table of the docs (with --resume: finished runs are kept, so a second call
only reads and prints), prints that table in the docs' layout (also written to WORK/<section>.md), and adds per-seed
rows to one common table (reproduce.md and reproduce.json in WORK: per-seed values, mean +- std (ddof=1), and the
provenance each run recorded: CPU, threads, torch, sha256 of the checkpoints and encoders it loaded).

Run: python benchmarks/reproduce.py [--only SECTION,...] [--work DIR] [--quick]
Sections (the times: from nothing, on 2 CPU cores, one torch thread a run):
  default      README: `lifelong run` (mini, independent, seed 0). 3-4 min.
  nevis        docs/nevis.md, README: nevis-mini, 3 seeds, independent / finetune-prev / finetune-knn / pretrained
               (toolkit checkpoint). About 1 h 40 min.
  nevis-real   docs/nevis.md, README: the nevis section's runs and EfficientNet-Lite0 at 64 px (fine-tuned whole,
               +finetune-knn, frozen, lr=0.005), with pretraining charged; seed 0's per-task errors. About 2 h more.
  nevis-full   README: Fashion-MNIST from Debian's files through `data fetch --from`, then nevis-full. Under a minute.
  nevis-baselines  docs/nevis.md: the six baselines (MT, BHPO included) at equal trials (8 of 3 epochs), 3 seeds.
               About 3 h, two runs at a time.
  clear        README, docs/clear.md: clear-mini iid finetune, CNN and linear on a SimCLR encoder, 5 seeds. 10 min.
  clear-real   README, docs/clear.md: the linear regime on Lite0 features, 5 seeds. About 35 min.
  clear-table  README, docs/clear.md: every row of the CLEAR table (learners x CNN / SSL / Lite0, iid / streaming).
               About 1.5 h (clear and clear-real are parts of it).
  cog-levels   docs/cog.md: `lifelong cog levels`, the filter variants. Seconds.
  cog          README, docs/cog.md: cog-mini, 5 encoders (pretraining included), reference probe, 5 seeds. Hours.
  facts-split  docs/facts.md: `lifelong facts split` on facts-mini, every variant and the chosen one. Seconds.
  facts        README, docs/facts.md: facts-mini, 7 learners x 2 splits x 5 seeds. About 7.5 h.
  sortsearch   README, docs/sort-and-search.md: a 240-model zoo and `bench compare` (13 estimators, 3 splits, 10
               seeds). Hours.
Default: DEFAULT (about 2 h from nothing). --quick: the same commands at a small size (one seed, one epoch,
small streams and zoos) in a temporary --work: a smoke test of the script, not the figures; CI runs the default
sections, `--only nevis-full,facts,sortsearch,clear-table` and `--only nevis-baselines` that way (cog and
nevis-real take minutes even so).
The sections live in the `_reproduce_<area>.py` modules beside this script (each exports SECTIONS).
"""

from __future__ import annotations

import argparse
import importlib
import json
import tempfile
import time
from pathlib import Path


def _more_sections() -> dict:
    """The sections of the `_reproduce_<area>.py` modules beside this script (each exports a SECTIONS dict)."""
    found = {}
    for path in sorted(Path(__file__).resolve().parent.glob("_reproduce_*.py")):
        module = importlib.import_module(path.stem)
        found.update(getattr(module, "SECTIONS", {}))
    return found


EXPERIMENTS = _more_sections()
DEFAULT = "default,nevis,clear,cog-levels,facts-split"


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
    parser.add_argument("--only", default=DEFAULT, help=f"comma-separated, of {', '.join(EXPERIMENTS)}")
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
    work = work.resolve()  # the commands run inside `work`: paths handed to them must not be relative to it
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
