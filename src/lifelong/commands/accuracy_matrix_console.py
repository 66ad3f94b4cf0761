"""Terminal output of accuracy-matrix (CLEAR) runs: the matrix, its metrics, and mean ± std over seeds."""

from __future__ import annotations

import json
from pathlib import Path

from rich.table import Table

from lifelong.commands.run_console import print_path
from lifelong.commands.terminal import console
from lifelong.core.files import atomic_write_bytes
from lifelong.metrics.accuracy_matrix import summarize_matrix_seeds
from lifelong.report.plots import plot_accuracy_matrix
from lifelong.results.runs import group_id

METRIC_NAMES = {
    "in_domain": "in-domain",
    "next_domain": "next-domain",
    "acc": "Acc",
    "bwt": "BwT",
    "fwt": "FwT",
}


def _labels(result: dict) -> list[str]:
    if result.get("labels"):
        return list(result["labels"])
    seen: list[str] = []
    for record in result.get("records", ()):
        if record["type"] == "train" and record["task"] not in seen:
            seen.append(record["task"])
    return seen or [str(i) for i in range(len(result["accuracy_matrix"]))]


def print_matrix_run(result: dict) -> None:
    """The accuracy matrix in percent (rows: after training bucket i; columns: evaluated on bucket j) and metrics."""
    labels = _labels(result)
    table = Table(title=f"{result['run_id']}: accuracy %, {result['matrix_protocol']} protocol")
    table.add_column("after \\ on", overflow="fold")
    for label in labels:
        table.add_column(label.removeprefix("bucket"), justify="right", overflow="fold")
    for label, row in zip(labels, result["accuracy_matrix"], strict=False):
        table.add_row(label.removeprefix("bucket"), *("-" if v is None else f"{100 * v:.1f}" for v in row))
    console.print(table)
    metrics = result.get("clear_metrics") or {}
    if metrics:
        console.print(
            "  ".join(f"{METRIC_NAMES[k]} {100 * v:.2f}%" for k, v in metrics.items())
            + f"; cumulative training FLOPs {result['cumulative_train_flops']:.3e}"
        )
    if result["events_done"] < result["events_total"]:
        console.print(f"[yellow]stopped after {result['events_done']}/{result['events_total']} events[/]")
    print_path("records, accuracy_matrix.csv/.png and checkpoint:", result["path"])


def print_matrix_seeds(results: list[dict], out: Path) -> Path:
    """Mean ± std (sample, ddof=1) of the reported metrics over seeds; written to OUT/<group>-seeds.json + heatmap."""
    finished = [r for r in results if r.get("clear_metrics")]
    if not finished:
        console.print("[yellow]no run finished its accuracy matrix: nothing to summarise over seeds[/]")
        return out
    summary = summarize_matrix_seeds(
        [{"clear_metrics": r["clear_metrics"], "accuracy_matrix": r["accuracy_matrix"]} for r in finished]
    )
    name = group_id(finished[0]["run_id"])
    table = Table(title=f"{name}: {len(finished)} seeds, mean ± std (%)")
    table.add_column("metric", overflow="fold")
    table.add_column("mean ± std", justify="right", overflow="fold")
    for key, stats in summary["metrics"].items():
        std = "" if stats["std"] is None else f" ± {100 * stats['std']:.2f}"
        table.add_row(METRIC_NAMES.get(key, key), f"{100 * stats['mean']:.2f}{std}")
    console.print(table)
    document = {
        "group": name,
        "runs": [r["run_id"] for r in finished],
        "seeds": [r.get("seed") for r in finished],
        **summary,
    }
    path = Path(out) / f"{name}-seeds.json"
    atomic_write_bytes(path, (json.dumps(document, indent=2) + "\n").encode())
    png = plot_accuracy_matrix(
        summary["mean_matrix"],
        Path(out) / f"{name}-seeds.png",
        labels=_labels(finished[0]),
        title=f"{name}: mean over seeds",
    )
    print_path("seed summary:", path)
    print_path("mean-matrix heatmap:", png)
    return path
