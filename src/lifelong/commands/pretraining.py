"""What `lifelong pretrain` and `lifelong pretrain-ssl` do: train an encoder or backbone, save it, summarise it."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lifelong.commands.outputs import SETTINGS_FILE, dropping_empty_work, finish_output, prepare_output, work_folder
from lifelong.core.files import atomic_write_bytes
from lifelong.core.progress import Progress, progress_bar
from lifelong.suites import check_stream_options
from lifelong.suites.clear import temporal_source
from lifelong.training.encoders import save_encoder
from lifelong.training.independent_recipe import IndependentConfig
from lifelong.training.loop import TrainProgress, set_torch_threads
from lifelong.training.pretrain import load_pretrained, pretrain
from lifelong.training.ssl import pretrain_simclr


def pretrain_command(
    source: str,
    out: str | Path,
    architecture: str = "resnet_mini",
    epochs: int = 10,
    resolution: int = 32,
    seed: int = 0,
    options: Mapping[str, Any] | None = None,
    recipe: Mapping[str, Any] | None = None,
    show_progress: Progress = True,
    threads: int = 1,
    *,
    resume: bool = False,
    overwrite: bool = False,
    skip_corrupt: bool = False,
) -> dict[str, Any]:
    """What `lifelong pretrain` runs: pretrain with a progress bar (`show_progress`: True, False or a callback),
    then return the checkpoint's summary.

    Torch uses `threads` threads (default 1, as `lifelong run`): float reductions depend on the thread count, so
    the same seed and threads give the same weights on any machine, and a default of all cores would not.
    An existing `out` needs `resume` (keep it; an interrupted one continues from the finished trials kept in
    `<OUT>.work`) or `overwrite` (start over); see lifelong.commands.outputs.
    """
    options = {**dict(options or {}), **({"skip_corrupt": True} if skip_corrupt else {})}
    state = prepare_output(out, resume=resume, overwrite=overwrite, what="pretraining")
    if state == "done":
        return load_pretrained(out).summary()
    settings = {
        "source": source,
        "architecture": architecture,
        "epochs": epochs,
        "resolution": resolution,
        "seed": seed,
        "options": options,
        "recipe": dict(recipe or {}),
        "threads": threads,
    }
    workdir = _work_with_settings(out, settings, "lifelong pretrain")
    set_torch_threads(threads)
    trials = int(dict(recipe or {}).get("trials", IndependentConfig.trials))
    bar_context = progress_bar(show_progress, trials * epochs, description=f"pretrain {architecture} on {source}")
    with dropping_empty_work(out), bar_context as bar:

        def progress(record: TrainProgress) -> None:
            bar(1, f"epoch {record.epoch}/{epochs} loss {record.train_loss:.3f}")

        path = pretrain(
            source,
            architecture=architecture,
            epochs=epochs,
            resolution=resolution,
            seed=seed,
            out=out,
            options=options,
            recipe=recipe,
            progress=progress,
            workdir=workdir / "trials",
        )
    finish_output(out)
    return load_pretrained(path).summary()


def _work_with_settings(out: str | Path, settings: dict[str, Any], command: str) -> Path:
    """The work folder of `out`, recording `settings`; a work folder of other settings is an error (not mixed)."""
    workdir = work_folder(out)
    settings = json.loads(json.dumps(settings, default=str))
    path = workdir / SETTINGS_FILE
    if path.exists():
        stored = json.loads(path.read_text())
        differ = sorted(k for k in settings.keys() | stored.keys() if settings.get(k) != stored.get(k))
        if differ:
            raise ValueError(
                f"{workdir} holds an interrupted `{command}` with other settings ({', '.join(differ)} differ); "
                "run it with the same settings to resume it, or pass --overwrite to start over"
            )
    else:
        workdir.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, json.dumps(settings, indent=2, sort_keys=True).encode())
    return workdir


def pretrain_ssl_command(
    stream: str,
    out: str | os.PathLike,
    *,
    bucket: int = 0,
    architecture: str = "resnet_mini",
    epochs: int | None = None,
    resolution: int | None = None,
    seed: int = 0,
    threads: int = 1,
    data_root: str | None = None,
    source_options: dict | None = None,
    resume: bool = False,
    overwrite: bool = False,
    skip_corrupt: bool = False,
    progress: Progress = True,
) -> dict:
    """SimCLR on `stream`'s bucket `bucket` unlabeled pool (CLEAR: bucket 0), saved as an encoder at `out`.

    Resumable: finished epochs are kept in `<OUT>.work`; with `resume` a rerun continues from them (an existing
    `out` needs `resume` or `overwrite`, see lifelong.commands.outputs).
    """
    check_stream_options(stream, dict(source_options or {}))
    state = prepare_output(out, resume=resume, overwrite=overwrite, what="pretraining")
    if state == "done":
        return _encoder_summary(stream, out)
    set_torch_threads(threads)
    source = temporal_source(stream, data_root=data_root, skip_corrupt=skip_corrupt, **dict(source_options or {}))
    if not 0 <= bucket < source.num_buckets:
        raise ValueError(f"bucket {bucket} is out of range: {source.name!r} has buckets 0..{source.num_buckets - 1}")
    images = source.unlabeled(bucket)
    if len(images) == 0:
        raise ValueError(f"bucket {bucket} of {source.name!r} has no unlabeled images to pretrain on")
    resolution = resolution or getattr(source, "resolution", None) or int(images.shape[1])
    out = Path(out)
    workdir = work_folder(out)
    options = {"epochs": epochs} if epochs else {}
    description = f"SimCLR on {source.name} bucket {bucket} ({len(images)} images)"
    with progress_bar(progress, epochs or 1, description=description) as bar:

        def progress(epoch: int, total: int, loss: float) -> None:
            bar(completed=epoch, total=total, description=f"SimCLR epoch {epoch}/{total} loss {loss:.3f}")

        checkpoint = pretrain_simclr(
            images,
            architecture=architecture,
            resolution=resolution,
            seed=seed,
            progress=progress,
            workdir=workdir,
            source=f"{source.name} bucket {bucket}",
            **options,
        )
    path = save_encoder(checkpoint, out)
    finish_output(out)
    return {
        "encoder": str(path),
        "images": len(images),
        "epochs": checkpoint.epochs,
        "feature_dim": checkpoint.feature_dim,
        "resolution": checkpoint.resolution,
        "train_flops": checkpoint.train_flops,
        "final_loss": checkpoint.history[-1]["loss"] if checkpoint.history else None,
        "use": f"lifelong run --stream {stream} --learner finetune -o encoder={path}",
    }


def _encoder_summary(stream: str, out: str | os.PathLike) -> dict:
    """The summary of an encoder `pretrain-ssl` finished before (`--resume` on a complete output)."""
    from lifelong.training.encoders import load_encoder

    checkpoint = load_encoder(str(out))
    return {
        "encoder": str(out),
        "complete": "already finished; nothing to resume",
        "epochs": getattr(checkpoint, "epochs", None),
        "feature_dim": getattr(checkpoint, "feature_dim", None),
        "resolution": getattr(checkpoint, "resolution", None),
        "use": f"lifelong run --stream {stream} --learner finetune -o encoder={out}",
    }
