"""Terminal output of `lifelong run` and `lifelong results`: per-task tables, stream summaries, run listings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from rich.table import Table

from lifelong.commands.terminal import console


def print_run(result: dict) -> None:
    """The per-task table of one run (error and cumulative training FLOPs per evaluated task) and its summary."""
    table = Table(title=f"{result['run_id']}  ({result['path']})")
    for column in ("#", "task", "year", "kind", "meta-test", "error", "cum. train FLOPs"):
        table.add_column(
            column, justify="right" if column in ("#", "error", "cum. train FLOPs") else "left", overflow="fold"
        )
    for record in result["records"]:
        if record["type"] != "predict":
            continue
        table.add_row(
            str(record["event"] // 2),
            record["task"],
            str(record["year"] or ""),
            record["task_kind"],
            "yes" if record["meta_test"] else "",
            f"{record['error']:.4f}",
            f"{record['cumulative_train_flops']:.3e}",
        )
    console.print(table)
    mean, meta = result["mean_error"], result["meta_test_mean_error"]
    console.print(
        f"mean error {mean:.4f} over {result['num_evaluated_tasks']} tasks"
        + (f"; meta-test mean error {meta:.4f} over {result['num_meta_test_tasks']} tasks" if meta is not None else "")
        + f"; cumulative training FLOPs {result['cumulative_train_flops']:.3e}"
    )
    if result.get("tasks_missing"):
        missing = result["tasks_missing"]
        console.print(f"[yellow]{len(missing)} task(s) without data were left out[/] (--allow-missing): {missing[:8]}")
    if result["corrupt_skipped"]:
        console.print(f"[yellow]{result['corrupt_skipped']} corrupt image(s) skipped[/] (per task: events.jsonl)")
    if result["skipped_labels"]:
        console.print(f"{result['skipped_labels']} label(s) had no positive in their split (left out of mAP)")
    if result["events_done"] < result["events_total"]:
        console.print(f"[yellow]stopped after {result['events_done']}/{result['events_total']} events[/]")
    console.print(f"records, plots and checkpoint: {result['path']}")


def print_seed_summary(results: list[dict]) -> None:
    """Mean +- std (ddof=1) over seeds of the mean error and the cumulative training FLOPs."""
    errors = np.array([r["mean_error"] for r in results], dtype=float)
    flops = np.array([r["cumulative_train_flops"] for r in results], dtype=float)
    console.print(
        f"over {len(results)} seeds: mean error {errors.mean():.4f} +- {errors.std(ddof=1):.4f}, "
        f"cumulative training FLOPs {flops.mean():.3e} +- {flops.std(ddof=1):.2e}"
    )


def print_results(runs: list[dict], out: Path) -> None:
    """One row per run recorded in a results directory: status, stream, learner, seed, errors, FLOPs."""
    table = Table(title=f"runs in {out}")
    for column in ("run", "status", "stream", "learner", "seed", "mean error", "meta-test error", "train FLOPs"):
        table.add_column(column, overflow="fold")
    for row in runs:
        s = row.get("summary") or {}
        table.add_row(
            row["run_id"],
            row["status"],
            row["stream"],
            row["learner"],
            str(row["seed"]),
            _format(s.get("mean_error")),
            _format(s.get("meta_test_mean_error")),
            _format(s.get("cumulative_train_flops"), "e"),
        )
    console.print(table)


def _format(value, style: str = "f") -> str:
    if value is None:
        return "-"
    return f"{value:.3e}" if style == "e" else f"{value:.4f}"


def print_provenance(runs: list[dict]) -> None:
    """Per run: CPU, threads, torch and numpy versions, python, and the files it loaded with their sha256."""
    table = Table(title="provenance")
    for column in ("run", "cpu", "threads", "torch", "numpy", "python", "files (sha256)"):
        table.add_column(column, overflow="fold")
    for run in runs:
        found = run.get("provenance") or {}
        machine, versions = found.get("machine") or {}, found.get("versions") or {}
        files = "\n".join(f"{Path(p).name} {h[:12]}" for p, h in (found.get("files") or {}).items()) or "-"
        table.add_row(
            run["run_id"],
            str(machine.get("cpu", "-")),
            str(machine.get("threads", "-")),
            str(versions.get("torch", "-")),
            str(versions.get("numpy", "-")),
            str(found.get("python") or "-"),
            files,
        )
    console.print(table)
