"""What the `lifelong models` commands print: the models table, one model's fields, features written, predictions."""

from __future__ import annotations

import textwrap
from typing import Any

from rich import box
from rich.markup import escape
from rich.table import Table

from lifelong.commands.models_api import ModelsFeaturesResult, ModelsInfoResult, ModelsListResult, ModelsPredictResult
from lifelong.commands.terminal import console, note


def _text(value: Any) -> str:
    return "-" if value is None or value == "" else str(value)


def print_models_list(result: ModelsListResult) -> None:
    """A table of every model (name, package, side, dim, head, sha256, licence), then why any did not load."""
    table = Table(title="models", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("name", "package", "side", "dim", "head", "sha256", "licence"):
        table.add_column(column, no_wrap=True, justify="right" if column in ("side", "dim") else "left")
    for row in result.rows:
        if row["error"]:
            table.add_row(row["name"], _text(row["package"]), "-", "-", "-", "-", "not loadable")
            continue
        table.add_row(
            row["name"],
            _text(row["package"]),
            _text(row["resolution"]),
            str(row["feature_dim"]),
            "yes" if row["head"] else "no",
            row["weights_sha256"][:12],
            _text(row["licence"]),
        )
    console.print(table)
    for row in result.rows:
        if row["error"]:
            note(f"{row['name']}: {row['error']}")
    console.print("One model in full: lifelong models info NAME.")


def print_models_info(result: ModelsInfoResult) -> None:
    """`key: value` lines, wrapped between words under the value, so paths and hashes stay whole."""
    info = result.info
    rows = [
        ("name", result.name),
        ("description", info["description"]),
        ("package", info["package"]),
        ("source", info["source"]),
        ("licence", info["licence"]),
        ("input", info["preprocessing_text"]),
        ("feature dim", info["feature_dim"]),
        ("head", f"{info['classes']} ImageNet-1K classes" if info["head"] else "no"),
        ("parameters", f"{info['parameters']:,}"),
        ("weights sha256", info["weights_sha256"]),
        ("layer groups", f"{', '.join(info['layer_groups'])} ({len(info['layer_groups'])} groups)"),
        ("fine-tuning", "-o frozen_groups=K freezes the first K groups"),
    ]
    width = max(console.width, 40)
    for key, value in rows:
        text = textwrap.fill(
            _text(value),
            width,
            initial_indent=f"{key + ':':16}",
            subsequent_indent=" " * 16,
            break_long_words=False,
            break_on_hyphens=False,
        )
        console.print(escape(text), soft_wrap=True)


def print_models_features(result: ModelsFeaturesResult) -> None:
    """`N images x D features -> FILE.npy (+ FILE.json)`, and how many images were skipped."""
    out, sidecar = result.out, result.sidecar
    assert out is not None and sidecar is not None  # the command always writes --out
    console.print(
        f"{len(result.images)} images x {result.feature_dim} features -> {escape(str(out))} (+ {sidecar.name})"
    )
    if result.skipped:
        note(f"skipped {len(result.skipped)} unreadable images (listed in {sidecar.name})")


def print_skipped(result: ModelsPredictResult) -> None:
    """One note per image `models predict --skip-corrupt` left out."""
    for entry in result.skipped:
        note(f"skipped {entry['reason']}")


def print_predictions(result: ModelsPredictResult) -> None:
    """Each image's path, then its classes: probability, wnid, the first of its names."""
    for prediction in result.predictions:
        console.print(escape(prediction["image"]), soft_wrap=True)
        for entry in prediction["top"]:
            name = entry["name"].split(",")[0]
            console.print(f"  {entry['probability']:6.3f}  {entry['wnid']}  {escape(name)}")


__all__ = ["print_models_features", "print_models_info", "print_models_list", "print_predictions", "print_skipped"]
