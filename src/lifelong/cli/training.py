"""`lifelong pretrain`, `pretrain-ssl` and `transfer-matrix`: resumable training outside a run."""

from __future__ import annotations

from pathlib import Path

import typer

from lifelong.cli.common import DATA_ROOT_HELP, parse_options
from lifelong.cli.options import (
    ChannelsLastOption,
    CompileOption,
    DeviceOption,
    GpusPerTrialOption,
    OverwriteOption,
    PrecisionOption,
    ResumeOption,
    SkipCorruptOption,
)


def pretrain_cli(
    source: str = typer.Argument(..., help="Data to pretrain on: builtin:NAME, fashion-mnist, idx:DIR, folder:DIR..."),
    out: Path = typer.Option(..., "--out", help="Checkpoint file to write (e.g. pretrained/chars.pt)."),
    architecture: str = typer.Option("resnet_mini", "--architecture", help="resnet_mini, resnet18 or resnet34."),
    epochs: int = typer.Option(10, "--epochs", min=1),
    resolution: int = typer.Option(32, "--resolution", min=1),
    seed: int = typer.Option(0, "--seed"),
    option: list[str] = typer.Option([], "--option", "-o", help="Source option KEY=VALUE, e.g. n_per_class=300."),
    threads: int = typer.Option(1, "--threads", min=1, help="Torch threads. Same seed + threads = same weights."),
    resume: ResumeOption = False,
    overwrite: OverwriteOption = False,
    skip_corrupt: SkipCorruptOption = False,
    device: DeviceOption = "auto",
    precision: PrecisionOption = "auto",
    compile: CompileOption = False,
    channels_last: ChannelsLastOption = "auto",
) -> None:
    """Train a model on a dataset and save a checkpoint for `--learner pretrained -o checkpoint=PATH`."""
    from lifelong.commands.training_api import PretrainSpec, pretrain
    from lifelong.commands.training_console import print_summary

    spec = PretrainSpec(
        source=source,
        out=out,
        architecture=architecture,
        epochs=epochs,
        resolution=resolution,
        seed=seed,
        options=parse_options(option),
        threads=threads,
        resume=resume,
        overwrite=overwrite,
        skip_corrupt=skip_corrupt,
        device=device,
        precision=precision,
        compile=compile,
        channels_last=channels_last,
    )
    print_summary(pretrain(spec, progress=True).summary)


def pretrain_ssl_cli(
    out: Path = typer.Option(..., "--out", help="Encoder file to write (e.g. encoders/clear-mini-simclr.pt)."),
    stream: str = typer.Option("clear-mini", "--stream", help="A temporal stream (clear-mini, clear, a .csv)."),
    bucket: int = typer.Option(0, "--bucket", min=0, help="Bucket whose unlabeled pool to learn from (CLEAR: 0)."),
    architecture: str = typer.Option("resnet_mini", "--architecture", help="resnet_mini, resnet18 or resnet34."),
    epochs: int = typer.Option(None, "--epochs", min=1, help="Epochs (default: the SimCLR recipe's)."),
    resolution: int = typer.Option(None, "--resolution", min=1, help="Input side (default: the stream's)."),
    seed: int = typer.Option(0, "--seed"),
    threads: int = typer.Option(1, "--threads", min=1, help="Torch threads. Same seed + threads = same weights."),
    data_root: Path = typer.Option(None, "--data-root", help="Datasets folder (for --stream clear)."),
    stream_option: list[str] = typer.Option([], "--stream-option", "-s", help="Source option KEY=VALUE."),
    resume: ResumeOption = False,
    overwrite: OverwriteOption = False,
    skip_corrupt: SkipCorruptOption = False,
    device: DeviceOption = "auto",
    precision: PrecisionOption = "auto",
    compile: CompileOption = False,
    channels_last: ChannelsLastOption = "auto",
) -> None:
    """Self-supervised (SimCLR) pretraining on a bucket's unlabeled images, for `-o encoder=PATH` (linear regime).

    Interrupted? Run the same command with --resume: it continues from <OUT>.work after the last finished epoch.
    """
    from lifelong.commands.training_api import PretrainSslSpec, pretrain_ssl
    from lifelong.commands.training_console import print_summary

    spec = PretrainSslSpec(
        out=out,
        stream=stream,
        bucket=bucket,
        architecture=architecture,
        epochs=epochs,
        resolution=resolution,
        seed=seed,
        threads=threads,
        data_root=data_root,
        stream_options=parse_options(stream_option),
        resume=resume,
        overwrite=overwrite,
        skip_corrupt=skip_corrupt,
        device=device,
        precision=precision,
        compile=compile,
        channels_last=channels_last,
    )
    print_summary(pretrain_ssl(spec, progress=True).summary)


def transfer_matrix_cli(
    stream: str = typer.Option("nevis-mini", "--stream", help="A stream name or manifest."),
    out: Path = typer.Option(Path("transfer_matrix.json"), "--out", help="JSON file for the matrix."),
    epochs: int = typer.Option(10, "--epochs", min=1),
    trials: int = typer.Option(1, "--trials", min=1),
    seed: int = typer.Option(0, "--seed"),
    executor: str = typer.Option("local", "--executor", help="local or ray."),
    data_root: Path = typer.Option(None, "--data-root", help=DATA_ROOT_HELP),
    threads: int = typer.Option(
        1, "--threads", min=1, help="Torch threads per cell (same seed + threads = same matrix)."
    ),
    resume: ResumeOption = False,
    overwrite: OverwriteOption = False,
    skip_corrupt: SkipCorruptOption = False,
    device: DeviceOption = "auto",
    precision: PrecisionOption = "auto",
    compile: CompileOption = False,
    channels_last: ChannelsLastOption = "auto",
    gpus_per_trial: GpusPerTrialOption = 0.0,
) -> None:
    """Accuracy on task j after finetuning from task i's best Independent model, minus Independent on j.

    Finished cells are kept in <OUT>.work: interrupted, the same command with --resume continues from them.
    """
    from lifelong.commands.training_api import TransferMatrixSpec, transfer_matrix
    from lifelong.commands.training_console import print_transfer_matrix

    spec = TransferMatrixSpec(
        stream=stream,
        out=out,
        epochs=epochs,
        trials=trials,
        seed=seed,
        executor=executor,
        data_root=data_root,
        threads=threads,
        resume=resume,
        overwrite=overwrite,
        skip_corrupt=skip_corrupt,
        device=device,
        precision=precision,
        compile=compile,
        channels_last=channels_last,
        gpus_per_trial=gpus_per_trial,
    )
    print_transfer_matrix(transfer_matrix(spec, progress=True))
