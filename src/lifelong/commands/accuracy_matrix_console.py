"""Terminal output of accuracy-matrix (CLEAR) runs: the matrix, its metrics, and mean ± std over seeds."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from lifelong.commands.results_api import MatrixSummary, matrix_labels, write_matrix_seeds
from lifelong.commands.terminal import console, counted, matrix_table, print_path, print_title

METRIC_NAMES = {
    "in_domain": "in-domain",
    "next_domain": "next-domain",
    "acc": "Acc",
    "bwt": "BwT",
    "fwt": "FwT",
}


def print_matrix_run(result: dict) -> None:
    """The accuracy matrix in percent (rows: after training bucket i; columns: evaluated on bucket j) and metrics."""
    labels = matrix_labels(result)
    print_title(f"{result['run_id']}: accuracy %, {result['matrix_protocol']} protocol")
    table = matrix_table("after \\ on", [label.removeprefix("bucket") for label in labels])
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
    summary = write_matrix_seeds(results, out)
    print_matrix_summary(summary)
    return out if summary is None else summary.path


def print_matrix_summary(summary: MatrixSummary | None) -> None:
    """A seed summary's table (mean ± std in %) and the files it was written to."""
    if summary is None:
        console.print("[yellow]no run finished its accuracy matrix: nothing to summarise over seeds[/]")
        return
    print_title(f"{summary.group}: {counted(len(summary.runs), 'seed')}, mean ± std (%)")
    table = Table()
    table.add_column("metric", overflow="fold")
    table.add_column("mean ± std", justify="right", overflow="fold")
    for key, stats in summary.metrics.items():
        std = "" if stats["std"] is None else f" ± {100 * stats['std']:.2f}"
        table.add_row(METRIC_NAMES.get(key, key), f"{100 * stats['mean']:.2f}{std}")
    console.print(table)
    print_path("seed summary:", summary.path)
    print_path("mean-matrix heatmap:", summary.heatmap)
