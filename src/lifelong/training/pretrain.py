"""Pretraining (docs/protocols/nevis.md#baselines, "Pretrained"): train one network on a data source, save its backbone.

`pretrain` loads a source (lifelong.data.sources: "builtin:chars", "fashion-mnist", "folder:DIR", ...), splits it
as a task (de-duplicated, the protocol's splits, resized to `resolution`), trains it with the Independent recipe
and hyper-parameter search (the dev split picks the winner), and writes a checkpoint atomically: architecture,
backbone state_dict, source and its options, class names, pretraining FLOPs (all trials), seed and recipe.
The `pretrained` learners start from it; whether its FLOPs count is their choice (the paper shows both).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from lifelong.core.executors import Executor
from lifelong.core.tasks import TaskKey
from lifelong.data.build import build_task_splits
from lifelong.data.sources import load_source
from lifelong.training.checkpoints import format_tag, read_torch_file, write_torch_file
from lifelong.training.independent_recipe import IndependentConfig
from lifelong.training.loop import TrainProgress, derive_seed, torch_threads
from lifelong.training.relatedness import backbone_state

FORMAT = "lifelong-pretrained-v1"


@dataclass(frozen=True)
class PretrainedCheckpoint:
    """A loaded pretraining checkpoint: the backbone to start from and how it was made."""

    path: Path
    architecture: str
    backbone: dict[str, torch.Tensor]
    source: str
    class_names: tuple[str, ...]
    pretraining_flops: float
    seed: int
    dev_error: float | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """JSON-ready description (no weights)."""
        return {
            "path": str(self.path),
            "architecture": self.architecture,
            "source": self.source,
            "num_classes": len(self.class_names),
            "pretraining_flops": self.pretraining_flops,
            "seed": self.seed,
            "dev_error": self.dev_error,
            **self.details,
        }


def _task_name(source_spec: str) -> str:
    """A task name for the source (task names may not contain '/' or '#')."""
    return "pretrain-" + re.sub(r"[/#]", "_", source_spec)


def pretrain(
    source_spec: str,
    *,
    architecture: str = "resnet_mini",
    epochs: int = 10,
    resolution: int = 32,
    seed: int = 0,
    out: str | Path,
    options: Mapping[str, Any] | None = None,
    recipe: Mapping[str, Any] | None = None,
    executor: Executor | None = None,
    progress: Callable[[TrainProgress], None] | None = None,
    workdir: str | Path | None = None,
) -> Path:
    """Train `architecture` on `source_spec` (loader `options`, e.g. n_per_class) and save a checkpoint at `out`.

    `recipe`: further IndependentConfig options (lr, label_smoothing, trials, batch sizes, ...). Trials run
    through `executor` (None: here, one after the other). `progress(record)` is called after every epoch of every
    trial run here (trials x epochs calls). With `workdir`, finished trials are kept there and a rerun with the
    same arguments loads them instead of training them again. Returns the checkpoint's path.
    """
    out = Path(out)
    if out.is_dir():
        raise IsADirectoryError(
            f"out {str(out)!r} is a folder; give a file path such as {str(out / 'pretrained.pt')!r}"
        )
    recipe = dict(recipe or {})
    clash = sorted(set(recipe) & {"architecture", "epochs", "resolution"})
    if clash:
        raise ValueError(f"recipe options {clash} are arguments of pretrain: pass them as architecture=, epochs=, ...")
    cfg = IndependentConfig(architecture=architecture, epochs=epochs, resolution=resolution, **recipe)
    threads = torch_threads()
    labeled = load_source(source_spec, **dict(options or {}))
    key = TaskKey(_task_name(source_spec), labeled.kind, labeled.num_classes, labeled.class_names)
    splits = build_task_splits(key, labeled, resolution=resolution, seed=seed)
    job = cfg.fit_job(key, splits.train, splits.dev, seed=derive_seed(seed, 0), threads=threads)
    if progress is not None and executor is None:
        job = dataclasses.replace(job, progress=progress)
    best, results = cfg.run_search(job, 0, executor=executor, workdir=None if workdir is None else Path(workdir))
    contents = {
        "format": FORMAT,
        "architecture": architecture,
        "backbone": backbone_state(best.state_dict),
        "source": source_spec,
        "source_options": dict(options or {}),
        "class_names": list(labeled.class_names),
        "kind": labeled.kind.value,
        "pretraining_flops": float(sum(r.train_flops for r in results)),
        "seed": int(seed),
        "threads": int(threads),
        "epochs": int(epochs),
        "resolution": int(resolution),
        "trials": len(results),
        "trial": {"lr": best.trial.lr, "label_smoothing": best.trial.label_smoothing},
        "dev_error": best.dev_error,
        "split_sizes": {name: len(getattr(splits, name)) for name in ("train", "dev")},
    }
    write_torch_file(contents, out)
    return out


def load_pretrained(path: str | Path) -> PretrainedCheckpoint:
    """Read a checkpoint written by `pretrain` (tensors and plain values only: nothing is executed on load)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"pretrained checkpoint {str(path)!r} not found; create one with `lifelong pretrain SOURCE --out PATH`"
        )
    contents = read_torch_file(path, "{path!r} is not a readable pretrained checkpoint ({cause})")
    if format_tag(contents) != FORMAT:
        found = format_tag(contents)
        raise ValueError(
            f"{str(path)!r} is not a {FORMAT} checkpoint (format {found!r}); create one with `lifelong pretrain`"
        )
    main = {"format", "architecture", "backbone", "source", "class_names", "pretraining_flops", "seed", "dev_error"}
    return PretrainedCheckpoint(
        path=path,
        architecture=contents["architecture"],
        backbone=dict(contents["backbone"]),
        source=contents["source"],
        class_names=tuple(contents["class_names"]),
        pretraining_flops=float(contents["pretraining_flops"]),
        seed=int(contents["seed"]),
        dev_error=contents.get("dev_error"),
        details={k: v for k, v in contents.items() if k not in main},
    )
