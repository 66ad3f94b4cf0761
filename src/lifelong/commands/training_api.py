"""`lifelong pretrain`, `pretrain-ssl` and `transfer-matrix` as functions: resumable training outside a run.

Each writes OUT, keeping finished work in `<OUT>.work` (lifelong.commands.outputs): interrupted, it raises
Interrupted saying what is kept, and the same spec with `resume=True` continues from it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lifelong.commands.device_options import accelerator_from
from lifelong.commands.outputs import interrupted
from lifelong.core.errors import UsageError
from lifelong.core.progress import Progress


def _at_least_one(**values: int | None) -> None:
    for name, value in values.items():
        if value is not None and value < 1:
            raise UsageError(f"--{name} must be >= 1, got {value}")


@dataclass(frozen=True)
class PretrainSpec:
    """`lifelong pretrain SOURCE --out OUT`: supervised pretraining on `source` (builtin:NAME, fashion-mnist, idx:DIR,
    folder:DIR, ...; `options` its KEY=VALUE options), saved as a checkpoint for `learner="pretrained"`."""

    source: str
    out: str | Path
    architecture: str = "resnet_mini"
    epochs: int = 10
    resolution: int = 32
    seed: int = 0
    options: Mapping[str, Any] = field(default_factory=dict)
    threads: int = 1
    resume: bool = False
    overwrite: bool = False
    skip_corrupt: bool = False
    device: str = "auto"
    precision: str = "auto"
    compile: bool = False
    channels_last: bool | str | None = "auto"

    def __post_init__(self) -> None:
        _at_least_one(epochs=self.epochs, resolution=self.resolution, threads=self.threads)


@dataclass(frozen=True)
class PretrainResult:
    """The checkpoint written (`path`) and its summary (what `lifelong pretrain` prints, one line per entry)."""

    path: Path
    summary: dict[str, Any]


def pretrain(spec: PretrainSpec, *, progress: Progress = False) -> PretrainResult:
    """Pretrain and save the checkpoint; interrupted, finished trials are kept for `resume=True`."""
    from lifelong.commands.pretraining import pretrain_command

    accelerator_from(spec.device, spec.precision, spec.compile, spec.channels_last)
    try:
        summary = pretrain_command(
            spec.source,
            spec.out,
            spec.architecture,
            spec.epochs,
            spec.resolution,
            spec.seed,
            dict(spec.options),
            show_progress=progress,
            threads=spec.threads,
            resume=spec.resume,
            overwrite=spec.overwrite,
            skip_corrupt=spec.skip_corrupt,
        )
    except KeyboardInterrupt:
        raise interrupted(spec.out, "Finished trials") from None
    return PretrainResult(Path(spec.out), summary)


@dataclass(frozen=True)
class PretrainSslSpec:
    """`lifelong pretrain-ssl --out OUT`: SimCLR on the unlabeled pool of a temporal stream's bucket, saved as an
    encoder for `-o encoder=OUT`; `epochs` None: the SimCLR recipe's, `resolution` None: the stream's."""

    out: str | Path
    stream: str = "clear-mini"
    bucket: int = 0
    architecture: str = "resnet_mini"
    epochs: int | None = None
    resolution: int | None = None
    seed: int = 0
    threads: int = 1
    data_root: str | Path | None = None
    stream_options: Mapping[str, Any] = field(default_factory=dict)
    resume: bool = False
    overwrite: bool = False
    skip_corrupt: bool = False
    device: str = "auto"
    precision: str = "auto"
    compile: bool = False
    channels_last: bool | str | None = "auto"

    def __post_init__(self) -> None:
        _at_least_one(epochs=self.epochs, resolution=self.resolution, threads=self.threads)
        if self.bucket < 0:
            raise UsageError(f"--bucket must be >= 0, got {self.bucket}")


@dataclass(frozen=True)
class PretrainSslResult:
    """The encoder written (`path`) and its summary (what `lifelong pretrain-ssl` prints, one line per entry)."""

    path: Path
    summary: dict[str, Any]


def pretrain_ssl(spec: PretrainSslSpec, *, progress: Progress = False) -> PretrainSslResult:
    """Train and save the SimCLR encoder; interrupted, finished epochs are kept for `resume=True`."""
    from lifelong.commands.pretraining import pretrain_ssl_command

    accelerator_from(spec.device, spec.precision, spec.compile, spec.channels_last)
    try:
        summary = pretrain_ssl_command(
            spec.stream,
            spec.out,
            bucket=spec.bucket,
            architecture=spec.architecture,
            epochs=spec.epochs,
            resolution=spec.resolution,
            seed=spec.seed,
            threads=spec.threads,
            data_root=str(spec.data_root) if spec.data_root else None,
            source_options=dict(spec.stream_options),
            resume=spec.resume,
            overwrite=spec.overwrite,
            skip_corrupt=spec.skip_corrupt,
            progress=progress,
        )
    except KeyboardInterrupt:
        raise interrupted(spec.out, "Finished epochs") from None
    return PretrainSslResult(Path(spec.out), summary)


@dataclass(frozen=True)
class TransferMatrixSpec:
    """`lifelong transfer-matrix`: accuracy on task j after finetuning from task i's best Independent model, minus
    Independent on j, for every pair of `stream`'s tasks; `executor` local or ray (`gpus_per_trial` for Ray)."""

    stream: str = "nevis-mini"
    out: str | Path = "transfer_matrix.json"
    epochs: int = 10
    trials: int = 1
    seed: int = 0
    executor: str = "local"
    data_root: str | Path | None = None
    threads: int = 1
    resume: bool = False
    overwrite: bool = False
    skip_corrupt: bool = False
    device: str = "auto"
    precision: str = "auto"
    compile: bool = False
    channels_last: bool | str | None = "auto"
    gpus_per_trial: float = 0.0

    def __post_init__(self) -> None:
        _at_least_one(epochs=self.epochs, trials=self.trials, threads=self.threads)


@dataclass(frozen=True)
class TransferMatrixResult:
    """The matrix written to `path`: `tasks` (uids), `matrix` (row: the source task, column: the target; accuracy
    gain over Independent) and `data` (the whole JSON: accuracies, training FLOPs, settings)."""

    stream: str
    path: Path
    tasks: list[str]
    matrix: list[list[float | None]]
    data: dict[str, Any]


def transfer_matrix(spec: TransferMatrixSpec, *, progress: Progress = False) -> TransferMatrixResult:
    """Compute (or, with `resume=True` on a finished OUT, read) the transfer matrix; finished cells are kept in
    `<OUT>.work` when interrupted."""
    from lifelong.commands.outputs import dropping_empty_work, finish_output, prepare_output, work_folder
    from lifelong.core import files
    from lifelong.core.executors import make_executor
    from lifelong.suites import get_stream
    from lifelong.training import transfer_matrix as matrices
    from lifelong.training.loop import set_torch_threads

    out = Path(spec.out)
    set_torch_threads(spec.threads)
    accelerator_from(spec.device, spec.precision, spec.compile, spec.channels_last)
    try:
        state = prepare_output(out, resume=spec.resume, overwrite=spec.overwrite, what="transfer matrix")
        if state == "done":
            data = json.loads(out.read_text())
        else:
            built = get_stream(
                spec.stream,
                data_root=str(spec.data_root) if spec.data_root else None,
                allow_missing=False,
                skip_corrupt=spec.skip_corrupt,
            )
            runner = None
            if spec.executor != "local":
                runner = make_executor(spec.executor, cpus_per_item=spec.threads, gpus_per_item=spec.gpus_per_trial)
            with dropping_empty_work(out):
                data = matrices.transfer_matrix(
                    built,
                    epochs=spec.epochs,
                    trials=spec.trials,
                    seed=spec.seed,
                    executor=runner,
                    cache_dir=work_folder(out),
                    progress=progress,  # type: ignore[arg-type]  # progress_bar takes a callback too
                )
            files.atomic_write_bytes(out, json.dumps(data, indent=2).encode())
            finish_output(out)
    except KeyboardInterrupt:
        raise interrupted(out, "Finished cells") from None
    return TransferMatrixResult(spec.stream, out, list(data["tasks"]), data["matrix"], data)


__all__ = [
    "PretrainResult",
    "PretrainSpec",
    "PretrainSslResult",
    "PretrainSslSpec",
    "TransferMatrixResult",
    "TransferMatrixSpec",
    "pretrain",
    "pretrain_ssl",
    "transfer_matrix",
]
