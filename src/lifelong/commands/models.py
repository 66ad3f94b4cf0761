"""`lifelong models ...`: the encoders the toolkit can run (registered names and every other encoder spec), their
features, and ImageNet-1K predictions for those with a classifier head (the check that weights and
preprocessing load right)."""

from __future__ import annotations

import json
import os
import tempfile
import textwrap
from importlib.metadata import entry_points
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from lifelong.commands.outputs import OverwriteOption, SkipCorruptOption
from lifelong.commands.terminal import console, fail, note
from lifelong.core.progress import progress_bar

models_app = typer.Typer(
    help="Pretrained encoders: list them, describe one, extract features, predict ImageNet classes.",
    no_args_is_help=True,
)

GROUP = "lifelong.encoders"
SIDECAR_FORMAT = "lifelong-model-features-v1"
SPEC_HELP = (
    "A model name (lifelong models list), a checkpoint file, torchscript:FILE, hf:FOLDER_OR_ID or "
    "package.module:factory."
)

SpecArgument = Annotated[str, typer.Argument(metavar="NAME", help=SPEC_HELP)]
ThreadsOption = Annotated[int, typer.Option("--threads", min=1, metavar="N", help="Torch CPU threads.")]
BatchOption = Annotated[int, typer.Option("--batch-size", min=1, metavar="B", help="Images per forward pass.")]


def _set_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(int(threads))


def _load(spec: str):
    """The encoder of `spec`, or an error exit in CLI words."""
    from lifelong.training.encoders import load_encoder

    try:
        return load_encoder(spec)
    except (ValueError, FileNotFoundError, ImportError, TypeError) as exc:
        raise fail(exc) from None


def _packages() -> dict[str, str]:
    """Registered name -> the distribution that registers it."""
    found: dict[str, str] = {}
    for ep in entry_points(group=GROUP):
        found.setdefault(ep.name, ep.dist.name if ep.dist is not None else "-")
    return found


def _describe(name: str, encoder: Any, package: str | None = None) -> dict[str, Any]:
    from lifelong.training.encoders import weights_sha256

    return {
        "name": name,
        "package": package,
        "description": encoder.description,
        "source": encoder.source or None,
        "licence": encoder.licence or None,
        "resolution": encoder.resolution,
        "preprocessing": encoder.preprocessing.to_dict(),
        "preprocessing_text": encoder.preprocessing.describe(),
        "feature_dim": encoder.feature_dim,
        "in_channels": encoder.in_channels,
        "head": encoder.head is not None,
        "classes": len(encoder.labels) if encoder.labels else None,
        "parameters": sum(p.numel() for p in encoder.parameters()),
        "weights_sha256": weights_sha256(encoder),
    }


def _text(value: Any) -> str:
    return "-" if value is None or value == "" else str(value)


@models_app.command("list")
def list_command(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Every registered model: package, input side, feature size, head, weights sha256, licence."""
    from lifelong.training.encoders.specs import load_registered

    rows = []
    for name, package in _packages().items():
        try:
            rows.append(_describe(name, load_registered(name), package) | {"error": None})
        except Exception as exc:  # a model whose package is missing is listed, saying why
            rows.append({"name": name, "package": package, "error": str(exc)})
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title="models", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("name", "package", "side", "dim", "head", "sha256", "licence"):
        table.add_column(column, no_wrap=True, justify="right" if column in ("side", "dim") else "left")
    for row in rows:
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
    for row in rows:
        if row["error"]:
            note(f"{row['name']}: {row['error']}")
    console.print("One model in full: lifelong models info NAME.")


@models_app.command("info")
def info_command(
    spec: SpecArgument, as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False
) -> None:
    """One model: where its weights come from, its preprocessing, feature size, head and identity."""
    from lifelong.training.encoders import layer_groups

    encoder = _load(spec)
    info = _describe(spec, encoder, _packages().get(spec))
    info["layer_groups"] = [group.name for group in layer_groups(encoder)]  # what -o frozen_groups=K counts
    if as_json:
        typer.echo(json.dumps(info, indent=2))
        return
    rows = [
        ("name", spec),
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
    for key, value in rows:  # wrapped between words under its value, so paths and hashes stay whole
        text = textwrap.fill(
            _text(value),
            width,
            initial_indent=f"{key + ':':16}",
            subsequent_indent=" " * 16,
            break_long_words=False,
            break_on_hyphens=False,
        )
        console.print(escape(text), soft_wrap=True)


def _image_paths(source: Path) -> list[Path]:
    from lifelong.data.images import is_image_file

    if source.is_file():
        return [source]
    if source.is_dir():
        paths = sorted(p for p in source.rglob("*") if p.is_file() and is_image_file(p))
        if not paths:
            raise fail(f"{source} holds no image files (.png, .jpg, ...)")
        return paths
    raise fail(f"image or folder not found: {source}")


def _decode(paths: list[Path], skip_corrupt: bool) -> tuple[list, list[Path], list[dict[str, str]]]:
    from lifelong.data.images import CorruptImageError, decode_image

    images, kept, skipped = [], [], []
    for path in paths:
        try:
            images.append(decode_image(path))
            kept.append(path)
        except (CorruptImageError, FileNotFoundError) as exc:
            if not skip_corrupt:
                raise fail(exc) from None
            skipped.append({"image": str(path), "reason": str(exc)})
    return images, kept, skipped


def _atomic_write(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@models_app.command("features")
def features_command(
    spec: SpecArgument,
    source: Annotated[Path, typer.Argument(metavar="IMAGE_OR_FOLDER", help="An image, or a folder (recursive).")],
    out: Annotated[
        Path,
        typer.Option("--out", metavar="FILE.npy", help="Features [N, D] float32; FILE.json: images, identity."),
    ],
    overwrite: OverwriteOption = False,
    skip_corrupt: SkipCorruptOption = False,
    threads: ThreadsOption = 1,
    batch_size: BatchOption = 32,
) -> None:
    """Features of one image or every image in a folder (sorted paths), with the model's own preprocessing."""
    import numpy as np

    from lifelong.training.encoders import encode_images

    if out.suffix != ".npy":
        raise fail(f"--out must end in .npy, got {out}")
    sidecar = out.with_suffix(".json")
    existing = [p for p in (out, sidecar) if p.exists()]
    if existing and not overwrite:
        raise fail(f"{existing[0]} already exists; pass --overwrite to replace it, or --out to write elsewhere")
    paths = _image_paths(source)
    encoder = _load(spec)
    _set_threads(threads)
    features = np.zeros((0, encoder.feature_dim), dtype=np.float32)
    kept: list[Path] = []
    skipped: list[dict[str, str]] = []
    chunks = []
    with progress_bar(True, len(paths), description=f"{spec}: features of {len(paths)} images") as advance:
        for s in range(0, len(paths), batch_size):
            images, ok, bad = _decode(paths[s : s + batch_size], skip_corrupt)
            kept += ok
            skipped += bad
            if images:
                chunks.append(encode_images(encoder, images, batch_size=batch_size))
            advance(len(paths[s : s + batch_size]))
    if chunks:
        features = np.concatenate(chunks).astype(np.float32)
    meta = {
        "format": SIDECAR_FORMAT,
        "model": spec,
        "features": out.name,
        "shape": list(features.shape),
        "images": [str(p) for p in kept],
        "skipped": skipped,
        "identity": encoder.identity(),
        "threads": threads,
    }
    _atomic_write(out, lambda f: np.save(f, features))
    _atomic_write(sidecar, lambda f: f.write((json.dumps(meta, indent=2) + "\n").encode()))
    console.print(f"{len(kept)} images x {encoder.feature_dim} features -> {escape(str(out))} (+ {sidecar.name})")
    if skipped:
        note(f"skipped {len(skipped)} unreadable images (listed in {sidecar.name})")


@models_app.command("predict")
def predict_command(
    spec: SpecArgument,
    images: Annotated[list[Path], typer.Argument(metavar="IMAGE...", help="Image files, predicted in this order.")],
    top: Annotated[int, typer.Option("--top", min=1, metavar="K", help="Classes per image, most probable first.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    skip_corrupt: SkipCorruptOption = False,
    threads: ThreadsOption = 1,
    batch_size: BatchOption = 32,
) -> None:
    """ImageNet-1K classes of each image, for a model with a classifier head."""
    import numpy as np

    from lifelong.training.encoders import encode_images
    from lifelong.training.encoders.imagenet import label_name

    encoder = _load(spec)
    if encoder.head is None:
        with_head = [name for name, row in _heads().items() if row]
        raise fail(
            f"model {spec!r} has no classifier head, so `lifelong models predict` cannot name classes; models with "
            f"one: {', '.join(with_head) or 'none'}; `lifelong models features` gives its features"
        )
    decoded, images, skipped = _decode(list(images), skip_corrupt)
    for entry in skipped:
        note(f"skipped {entry['reason']}")
    if not decoded:
        raise fail("no readable image to predict")
    _set_threads(threads)
    logits = encode_images(encoder, decoded, batch_size=batch_size, logits=True).astype(np.float64)
    logits -= logits.max(axis=1, keepdims=True)
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    k = min(top, probs.shape[1])
    results = []
    for path, row in zip(images, probs, strict=True):
        order = np.argsort(-row, kind="stable")[:k]
        results.append(
            {
                "image": str(path),
                "top": [
                    {
                        "wnid": encoder.labels[i],
                        "name": label_name(encoder.labels[i]),
                        "probability": round(float(row[i]), 6),
                    }
                    for i in order
                ],
            }
        )
    if as_json:
        typer.echo(json.dumps(results, indent=2))
        return
    for result in results:
        console.print(escape(result["image"]), soft_wrap=True)
        for entry in result["top"]:
            name = entry["name"].split(",")[0]
            console.print(f"  {entry['probability']:6.3f}  {entry['wnid']}  {escape(name)}")


def _heads() -> dict[str, bool]:
    """Registered name -> whether it loads with a classifier head (False when it does not load)."""
    from lifelong.training.encoders.specs import load_registered

    heads = {}
    for name in _packages():
        try:
            heads[name] = load_registered(name).head is not None
        except Exception:
            heads[name] = False
    return heads
