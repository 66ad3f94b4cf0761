"""Independent baseline (docs/protocols/nevis.md#baselines): a fresh, randomly initialised network for every task.

Each task's network comes from a hyper-parameter search (`lifelong.training.hpsearch`) over runs of the common
recipe (`lifelong.training.recipe.FitJob`): by default a single run with the configured lr and label smoothing;
with `trials` > 1, random search as in the paper (16 trials), the lowest dev error winning and every trial's
FLOPs counted.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from lifelong.core.events import PredictEvent, TrainEvent
from lifelong.core.resources import Resources
from lifelong.learners.options import configure
from lifelong.training.auxiliary import AuxiliaryTask
from lifelong.training.flops import architecture_forward_flops
from lifelong.training.hpsearch import TrialResult
from lifelong.training.independent_recipe import IndependentConfig
from lifelong.training.loop import derive_seed, predict_scores, torch_threads
from lifelong.training.models import count_parameters, make_model


class IndependentLearner:
    """Trains a fresh randomly initialised network on every task; keeps only the current task's model."""

    name = "independent"
    config_class: ClassVar[type[IndependentConfig]] = IndependentConfig

    def __init__(self, config: IndependentConfig | None = None, **options: Any) -> None:
        self.config = configure(self.config_class, config, options, type(self).__name__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config})"

    def init(self, seed: int) -> dict[str, Any]:
        """Initial state: the seed and no model yet."""
        if not isinstance(seed, int | np.integer) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        return {"seed": int(seed), "task_uid": None, "model": None, "past_tasks": []}

    def train(self, event: TrainEvent, state: dict[str, Any]) -> tuple[dict[str, Any], Resources]:
        """Search the task's hyper-parameters on `event.train` / `event.dev`; keep the winning trial's network.

        Finished trials are persisted in `event.workdir` (when given), so an interrupted event resumes without
        redoing them. FLOPs: every trial's; the dev curve: the winner's.
        """
        cfg, task = self.config, event.task
        best, flops = self.search_task(event, state, None, event.workdir)
        new_state = {"seed": state["seed"], **self.task_state(event, state, best)}
        resources = Resources(
            train_flops=flops,
            peak_parameters=count_parameters(make_model(cfg.architecture, task.num_classes, seed=0)),
            dev_curve=best.dev_curve,
        )
        return new_state, resources

    def search_task(
        self,
        event: TrainEvent,
        state: dict[str, Any],
        init_backbone: dict | None,
        workdir: Path | None,
        auxiliary: tuple[AuxiliaryTask, ...] = (),
    ) -> tuple[TrialResult, float]:
        """(best trial, FLOPs of all trials) of the configured search on `event`'s task from `init_backbone`, with
        `auxiliary` past tasks trained beside it (the multitask learner)."""
        threads = torch_threads()
        cfg = self.config
        job = cfg.fit_job(
            event.task,
            event.train,
            event.dev,
            seed=derive_seed(state["seed"], event.task_index),
            threads=threads,
            init_backbone=None if init_backbone is None else dict(init_backbone),
            auxiliary=auxiliary,
        )
        best, results = cfg.run_search(job, event.task_index, workdir=workdir, executor=cfg.trial_executor(threads))
        return best, float(sum(r.train_flops for r in results))

    def task_state(self, event: TrainEvent, state: dict[str, Any], best: TrialResult) -> dict[str, Any]:
        """The state entries that describe the model kept for `event`'s task (what predict needs)."""
        cfg, task = self.config, event.task
        return {
            "task_uid": task.uid,
            "task_index": event.task_index,
            "label_space": task.label_space,
            "architecture": cfg.architecture,
            "num_classes": task.num_classes,
            "resolution": cfg.resolution,
            "model": best.state_dict,
            "dev_error": best.dev_error,
            "trial": dataclasses.asdict(best.trial),
            "past_tasks": [*state.get("past_tasks", []), task.uid][-cfg.max_task_history :],
        }

    def predict(self, event: PredictEvent, state: dict[str, Any]) -> np.ndarray:
        """Scores [N, C] for `event.dataset` in stored order (logits, or probabilities for multi-label tasks)."""
        _check_can_predict(event, state)
        model = make_model(state["architecture"], state["num_classes"], seed=0)
        model.load_state_dict(state["model"])
        return predict_scores(
            model, event.dataset, event.task.kind, self.config.eval_batch_size, resolution=state["resolution"]
        )

    def predict_flops(self, event: PredictEvent, state: dict[str, Any]) -> float:
        """FLOPs of `predict(event, state)`: forward FLOPs per example (counted once per model shape) x items."""
        _check_can_predict(event, state)
        resolution = state["resolution"]
        height, width = (resolution, resolution) if resolution is not None else event.dataset.image_shape[:2]
        per_item = architecture_forward_flops(state["architecture"], state["num_classes"], height, width)
        return per_item * len(event.dataset)


def _check_can_predict(event: PredictEvent, state: dict[str, Any]) -> None:
    """Raise, saying why, unless `state` holds the model of `event`'s task or of one with the same label space."""
    uid = event.task.uid
    same_space = state.get("label_space") == event.task.label_space  # e.g. CLEAR: every bucket, one label space
    if state.get("model") is None or (state.get("task_uid") != uid and not same_space):
        seen = (
            "was trained on it earlier but keeps only the latest model"
            if uid in state.get("past_tasks", ())
            else ("was never trained on it")
        )
        raise ValueError(
            f"IndependentLearner cannot predict task {uid!r}: it {seen} (current model: "
            f"{state.get('task_uid')!r}); run the train event of {uid!r} before its predict events"
        )
