"""Terminal output of `lifelong pretrain`, `pretrain-ssl` and `transfer-matrix`."""

from __future__ import annotations

import json
from typing import Any

from rich.markup import escape
from rich.table import Table

from lifelong.commands.terminal import console
from lifelong.commands.training_api import TransferMatrixResult


def print_summary(summary: dict[str, Any]) -> None:
    """A checkpoint's or encoder's summary as (highlighted) JSON."""
    console.print_json(json.dumps(summary, default=str))


def print_transfer_matrix(result: TransferMatrixResult) -> None:
    """The matrix (row: the source task, column: the target; accuracy gain over Independent) and where it is."""
    table = Table(title=f"transfer matrix of {result.stream} (accuracy gain over Independent; row = source)")
    table.add_column("from \\ to", overflow="fold")
    for uid in result.tasks:
        table.add_column(uid, justify="right", overflow="fold")
    for uid, row in zip(result.tasks, result.matrix, strict=True):
        table.add_row(uid, *(f"{v:+.3f}" if v is not None else "-" for v in row))
    console.print(table)
    console.print(f"written to {escape(str(result.path))}")
