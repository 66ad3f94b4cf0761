"""`lifelong pretrain`, `pretrain-ssl` and `transfer-matrix`: resumable training outside a run."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from lifelong.cli.common import DATA_ROOT_HELP, interrupted, parse_options
from lifelong.commands.device_options import (
    ChannelsLastOption,
    CompileOption,
    DeviceOption,
    GpusPerTrialOption,
    PrecisionOption,
)
from lifelong.commands.outputs import OverwriteOption, ResumeOption, SkipCorruptOption
from lifelong.commands.terminal import console, fail


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
    from lifelong.commands.device_options import accelerator_from
    from lifelong.commands.pretraining import pretrain_command

    options = parse_options(option)
    try:
        accelerator_from(device, precision, compile, channels_last)
        info = pretrain_command(
            source,
            out,
            architecture,
            epochs,
            resolution,
            seed,
            options,
            threads=threads,
            resume=resume,
            overwrite=overwrite,
            skip_corrupt=skip_corrupt,
        )
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    except KeyboardInterrupt:
        raise interrupted(out, "Finished trials") from None
    console.print_json(json.dumps(info, default=str))


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
    from lifelong.commands.device_options import accelerator_from
    from lifelong.commands.pretraining import pretrain_ssl_command

    try:
        accelerator_from(device, precision, compile, channels_last)
        info = pretrain_ssl_command(
            stream,
            out,
            bucket=bucket,
            architecture=architecture,
            epochs=epochs,
            resolution=resolution,
            seed=seed,
            threads=threads,
            data_root=str(data_root) if data_root else None,
            source_options=parse_options(stream_option),
            resume=resume,
            overwrite=overwrite,
            skip_corrupt=skip_corrupt,
        )
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    except KeyboardInterrupt:
        raise interrupted(out, "Finished epochs") from None
    console.print_json(json.dumps(info, default=str))


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
    from lifelong.commands.device_options import accelerator_from
    from lifelong.commands.outputs import dropping_empty_work, finish_output, prepare_output, work_folder
    from lifelong.core.executors import make_executor
    from lifelong.core.files import atomic_write_bytes
    from lifelong.suites import get_stream
    from lifelong.training.loop import set_torch_threads
    from lifelong.training.transfer_matrix import transfer_matrix

    set_torch_threads(threads)
    try:
        accelerator_from(device, precision, compile, channels_last)
        state = prepare_output(out, resume=resume, overwrite=overwrite, what="transfer matrix")
        if state == "done":
            result = json.loads(out.read_text())
        else:
            built = get_stream(
                stream,
                data_root=str(data_root) if data_root else None,
                allow_missing=False,
                skip_corrupt=skip_corrupt,
            )
            runner = None
            if executor != "local":
                runner = make_executor(executor, cpus_per_item=threads, gpus_per_item=gpus_per_trial)
            with dropping_empty_work(out):
                result = transfer_matrix(
                    built,
                    epochs=epochs,
                    trials=trials,
                    seed=seed,
                    executor=runner,
                    cache_dir=work_folder(out),
                    progress=True,
                )
            atomic_write_bytes(out, json.dumps(result, indent=2).encode())
            finish_output(out)
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    except KeyboardInterrupt:
        raise interrupted(out, "Finished cells") from None
    table = Table(title=f"transfer matrix of {stream} (accuracy gain over Independent; row = source)")
    table.add_column("from \\ to", overflow="fold")
    for uid in result["tasks"]:
        table.add_column(uid, justify="right", overflow="fold")
    for uid, row in zip(result["tasks"], result["matrix"], strict=True):
        table.add_row(uid, *(f"{v:+.3f}" if v is not None else "-" for v in row))
    console.print(table)
    console.print(f"written to {escape(str(out))}")
