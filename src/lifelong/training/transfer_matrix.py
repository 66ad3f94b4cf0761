"""Transfer matrix: how much starting task j from task i's best Independent model helps
(docs/protocols/nevis.md#transfer-matrix).

For every task i, the best Independent model (the Independent recipe and hyper-parameter search; with the same
seed, exactly the model an `independent` run trains) is evaluated on i's evaluation split. For every ordered pair
(i, j), i != j, task j is then trained again from i's backbone (fresh head, same recipe, search and seeds as j's
Independent model) and evaluated on j's evaluation split. `matrix[i][j]` = that accuracy - j's Independent
accuracy; the diagonal is 0 by definition (no transfer: j against itself) and is not trained. Accuracy is
1 - the task error: top-1 accuracy, or mAP for multi-label tasks. The pairs look both ways in time: the matrix is
an analysis (and an oracle), not a learner.

With `cache_dir`, each finished model and cell is written atomically, finished cells are skipped on a rerun, and
trials of the cell in progress resume (lifelong.training.hpsearch); the folder records the settings and refuses
a run with other ones.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lifelong.core.executors import Executor, make_executor
from lifelong.core.files import atomic_write_bytes
from lifelong.core.progress import Progress, progress_bar
from lifelong.core.streams import Stream
from lifelong.training.checkpoints import read_torch_file, write_torch_file
from lifelong.training.independent_recipe import IndependentConfig
from lifelong.training.loop import classification_error, derive_seed, predict_scores, torch_threads
from lifelong.training.models import make_model
from lifelong.training.relatedness import backbone_state

_SETTINGS = "settings.json"


def _write_json(path: Path, data: Any) -> None:
    atomic_write_bytes(path, json.dumps(data, indent=2, sort_keys=True).encode())


def _check_settings(cache_dir: Path, settings: dict[str, Any]) -> None:
    """Record `settings` in a new cache folder; raise if the folder holds results computed with other ones."""
    path = cache_dir / _SETTINGS
    if not path.exists():
        _write_json(path, settings)
        return
    stored = json.loads(path.read_text())
    differ = sorted(k for k in settings.keys() | stored.keys() if settings.get(k) != stored.get(k))
    if differ:
        raise ValueError(
            f"{cache_dir} holds a transfer matrix computed with other settings ({differ} differ: stored "
            f"{[stored.get(k) for k in differ]}, asked {[settings.get(k) for k in differ]}); run with the same "
            "settings to resume it, or pass --overwrite to start over"
        )


class _Cells:
    """Finished results by file name: in memory, and in `cache_dir` when given."""

    def __init__(self, cache_dir: Path | None) -> None:
        self.cache_dir = cache_dir
        self.memory: dict[str, Any] = {}

    def get(self, name: str) -> Any:
        if name in self.memory:
            return self.memory[name]
        if self.cache_dir is None or not (self.cache_dir / name).exists():
            return None
        value = read_torch_file(self.cache_dir / name, "cannot read the cached cell {path!r} ({cause}); delete it")
        self.memory[name] = value
        return value

    def put(self, name: str, value: Any) -> None:
        self.memory[name] = value
        if self.cache_dir is not None:
            write_torch_file(value, self.cache_dir / name)
            shutil.rmtree(self.trials_dir(name), ignore_errors=True)  # the cell is done: its trials are not needed

    def trials_dir(self, name: str) -> Path | None:
        return None if self.cache_dir is None else self.cache_dir / "trials" / name


def transfer_matrix(
    stream: Stream,
    *,
    architecture: str = "resnet_mini",
    epochs: int = 10,
    trials: int = 1,
    seed: int = 0,
    executor: Executor | str | None = None,
    cache_dir: str | Path | None = None,
    recipe: Mapping[str, Any] | None = None,
    progress: Progress = False,
) -> dict[str, Any]:
    """The transfer matrix of `stream` (see the module docstring) as a JSON-ready dict.

    `recipe`: further IndependentConfig options (resolution, lr, batch sizes, ...). `executor`: "local" / None
    (trials here), "ray", or an Executor. Returns task uids, `independent_accuracy` [j], `finetuned_accuracy`
    [i][j] (diagonal: the Independent accuracy), `matrix` [i][j] (differences), the training FLOPs of all runs,
    and the settings.
    """
    threads = torch_threads()
    clash = sorted(set(recipe or {}) & {"architecture", "epochs", "trials"})
    if clash:
        raise ValueError(f"recipe options {clash} are arguments of transfer_matrix: pass them as architecture=, ...")
    cfg = IndependentConfig(architecture=architecture, epochs=epochs, trials=trials, **dict(recipe or {}))
    if isinstance(executor, str):
        executor = None if executor == "local" else make_executor(executor, cpus_per_item=threads)
    uids = [task.key.uid for task in stream.tasks]
    settings = {
        "tasks": uids,
        "eval_split": stream.eval_split,
        "architecture": architecture,
        "epochs": epochs,
        "trials": trials,
        "seed": seed,
        "recipe": {k: v for k, v in sorted(dict(recipe or {}).items())},
    }
    cells = _Cells(None if cache_dir is None else Path(cache_dir))
    if cells.cache_dir is not None:
        cells.cache_dir.mkdir(parents=True, exist_ok=True)
        _check_settings(cells.cache_dir, json.loads(json.dumps(settings)))

    def fit(target: int, source: int | None) -> dict[str, Any]:
        """Train task `target` (from `source`'s Independent backbone, or random), evaluate it; cached."""
        name = f"independent-{target:03d}.pt" if source is None else f"cell-{source:03d}-{target:03d}.pt"
        done = cells.get(name)
        if done is not None:
            return done
        splits = stream.splits(target)
        task = splits.train.task
        init = None if source is None else fit(source, None)["backbone"]
        job = cfg.fit_job(
            task, splits.train, splits.dev, seed=derive_seed(seed, target), threads=threads, init_backbone=init
        )
        best, results = cfg.run_search(job, target, workdir=cells.trials_dir(name), executor=executor)
        model = make_model(architecture, task.num_classes, seed=0)
        model.load_state_dict(best.state_dict)
        evaluation = splits.get(stream.eval_split)
        scores = predict_scores(model, evaluation, task.kind, cfg.eval_batch_size, resolution=cfg.resolution)
        result = {
            "accuracy": 1.0 - classification_error(scores, evaluation.labels(), task.kind),
            "train_flops": float(sum(r.train_flops for r in results)),
            "backbone": backbone_state(best.state_dict) if source is None else None,
        }
        cells.put(name, result)
        return result

    n = len(uids)
    with progress_bar(progress, n * n, description="transfer matrix") as bar:
        independent = []
        for j in range(n):
            independent.append(fit(j, None))
            bar(1, f"independent {uids[j]}")
        accuracy = [[independent[j]["accuracy"] if i == j else None for j in range(n)] for i in range(n)]
        flops = sum(r["train_flops"] for r in independent)
        for i in range(n):
            for j in range(n):
                if i != j:
                    cell = fit(j, i)
                    accuracy[i][j] = cell["accuracy"]
                    flops += cell["train_flops"]
                    bar(1, f"{uids[i]} -> {uids[j]}")
    base = [r["accuracy"] for r in independent]
    return {
        **settings,
        "independent_accuracy": base,
        "finetuned_accuracy": accuracy,
        "matrix": [[0.0 if i == j else accuracy[i][j] - base[j] for j in range(n)] for i in range(n)],
        "train_flops": flops,
    }
