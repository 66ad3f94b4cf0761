"""What `lifelong pretrain` and `lifelong pretrain-ssl` do: train an encoder or backbone, save it, summarise it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lifelong.core.progress import progress_bar
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
    show_progress: bool = True,
    threads: int = 1,
) -> dict[str, Any]:
    """What `lifelong pretrain` runs: pretrain with a progress bar, then return the checkpoint's summary.

    Torch uses `threads` threads (default 1, as `lifelong run`): float reductions depend on the thread count, so
    the same seed and threads give the same weights on any machine, and a default of all cores would not.
    """
    set_torch_threads(threads)
    trials = int(dict(recipe or {}).get("trials", IndependentConfig.trials))
    with progress_bar(show_progress, trials * epochs, description=f"pretrain {architecture} on {source}") as bar:

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
        )
    return load_pretrained(path).summary()


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
) -> dict:
    """SimCLR on `stream`'s bucket `bucket` unlabeled pool (CLEAR: bucket 0), saved as an encoder at `out`.

    Resumable: finished epochs are kept in OUT.work and a rerun of the same command continues from them.
    """
    set_torch_threads(threads)
    source = temporal_source(stream, data_root=data_root, **dict(source_options or {}))
    if not 0 <= bucket < source.num_buckets:
        raise ValueError(f"bucket {bucket} is out of range: {source.name!r} has buckets 0..{source.num_buckets - 1}")
    images = source.unlabeled(bucket)
    if len(images) == 0:
        raise ValueError(f"bucket {bucket} of {source.name!r} has no unlabeled images to pretrain on")
    resolution = resolution or getattr(source, "resolution", None) or int(images.shape[1])
    out = Path(out)
    workdir = out.with_name(out.name + ".work")
    options = {"epochs": epochs} if epochs else {}
    description = f"SimCLR on {source.name} bucket {bucket} ({len(images)} images)"
    with progress_bar(True, epochs or 1, description=description) as bar:

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
    shutil.rmtree(workdir, ignore_errors=True)
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
