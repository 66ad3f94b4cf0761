"""`lifelong models ...`: list the pretrained encoders, describe one, extract features, predict ImageNet classes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from lifelong.cli.options import OverwriteOption, SkipCorruptOption
from lifelong.commands.models_api import SPEC_HELP
from lifelong.core.errors import DataError

models_app = typer.Typer(
    help="Pretrained encoders: list them, describe one, extract features, predict ImageNet classes.",
    no_args_is_help=True,
)

SpecArgument = Annotated[str, typer.Argument(metavar="NAME", help=SPEC_HELP)]
ThreadsOption = Annotated[int, typer.Option("--threads", min=1, metavar="N", help="Torch CPU threads.")]
BatchOption = Annotated[int, typer.Option("--batch-size", min=1, metavar="B", help="Images per forward pass.")]


@models_app.command("list")
def list_command(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Every registered model: package, input side, feature size, head, weights sha256, licence."""
    from lifelong.commands.models_api import models_list
    from lifelong.commands.models_console import print_models_list

    result = models_list()
    if as_json:
        typer.echo(json.dumps(result.rows, indent=2))
        return
    print_models_list(result)


@models_app.command("info")
def info_command(
    spec: SpecArgument, as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False
) -> None:
    """One model: where its weights come from, its preprocessing, feature size, head and identity."""
    from lifelong.commands.models_api import ModelsInfoSpec, models_info
    from lifelong.commands.models_console import print_models_info

    result = models_info(ModelsInfoSpec(spec))
    if as_json:
        typer.echo(json.dumps(result.info, indent=2))
        return
    print_models_info(result)


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
    from lifelong.commands.models_api import ModelsFeaturesSpec, models_features
    from lifelong.commands.models_console import print_models_features

    request = ModelsFeaturesSpec(
        name=spec, source=source, out=out, overwrite=overwrite, skip_corrupt=skip_corrupt, threads=threads,
        batch_size=batch_size,
    )  # fmt: skip
    print_models_features(models_features(request, progress=True))


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
    from lifelong.commands.models_api import ModelsPredictSpec, models_predict
    from lifelong.commands.models_console import print_predictions, print_skipped

    request = ModelsPredictSpec(
        name=spec, images=images, top=top, skip_corrupt=skip_corrupt, threads=threads, batch_size=batch_size
    )
    result = models_predict(request)
    print_skipped(result)
    if not result.predictions:
        raise DataError("no readable image to predict")
    if as_json:
        typer.echo(json.dumps(result.predictions, indent=2))
        return
    print_predictions(result)
