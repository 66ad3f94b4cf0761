"""Terminal output of `lifelong pretrain`, `pretrain-ssl` and `transfer-matrix`."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from lifelong.commands.terminal import console, matrix_table, print_title
from lifelong.commands.training_api import TransferMatrixResult

LABELS = {
    "path": "checkpoint",
    "num_classes": "classes",
    "pretraining_flops": "pretraining FLOPs",
    "train_flops": "training FLOPs",
    "flops_per_step": "FLOPs per step",
    "dev_error": "dev error (the best trial's)",
    "threads": "torch threads",
    "resolution": "resolution (px)",
    "trials": "hyper-parameter trials",
    "trial": "hyper-parameters (the best trial's)",
    "split_sizes": "images per split",
    "feature_dim": "feature size",
    "num_images": "images",
    "complete": "state",
    "use": "use it",
}


def summary_value(key: str, value: Any) -> str:
    """A summary's value in plain words: FLOPs as 1.645e+13, other numbers to 4 significant digits, a mapping as
    `lr 0.05, label smoothing 0.1` (options as typed: `n_per_class=10`), a list comma-separated, true/false as
    yes/no."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3e}" if "flops" in key or abs(value) >= 1e6 else f"{value:.4g}"
    if isinstance(value, dict) and key.endswith("options"):
        return ", ".join(f"{k}={summary_value(k, v)}" for k, v in value.items())
    if isinstance(value, dict):
        return ", ".join(f"{k.replace('_', ' ')} {summary_value(k, v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(summary_value(key, v) for v in value)
    return str(value)


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """`label: value` per entry of a checkpoint's or encoder's summary, labels in words (`pretraining FLOPs`),
    entries with no value (None, {}) left out."""
    return [
        f"{LABELS.get(key, key.replace('_', ' '))}: {summary_value(key, value)}"
        for key, value in summary.items()
        if value is not None and value != {} and value != []
    ]


def print_summary(summary: dict[str, Any]) -> None:
    """A checkpoint's or encoder's summary, one `label: value` line per entry (see `summary_lines`)."""
    for line in summary_lines(summary):
        console.print(line, soft_wrap=True, markup=False, highlight=False)


def print_transfer_matrix(result: TransferMatrixResult) -> None:
    """The matrix (row: the source task, column: the target; accuracy gain over Independent in points) and where it
    is. Columns are the tasks' numbers (the rows name them); as many tables as it takes to fit the console's width."""
    print_title(f"transfer matrix of {result.stream} (accuracy gain over Independent, points; row = source)")
    names = [f"{i} {uid}" for i, uid in enumerate(result.tasks, start=1)]
    cells = [[f"{100 * v:+.1f}" if v is not None else "-" for v in row] for row in result.matrix]
    corner = "from \\ to"
    first = max(len(corner), *(len(name) for name in names))
    width = max([len(str(len(names)))] + [len(cell) for row in cells for cell in row])
    per_table = max(1, (console.width - first - 2) // (width + 1))  # the box draws a space at each edge
    for start in range(0, len(names), per_table):
        columns = range(start, min(start + per_table, len(names)))
        table = matrix_table(corner, [str(j + 1) for j in columns])
        for name, row in zip(names, cells, strict=True):
            table.add_row(name, *(row[j] for j in columns))
        console.print(table)
    console.print(f"written to {escape(str(result.path))}")
