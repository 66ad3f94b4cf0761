"""Fine-tuning baselines of Nevis'22 (docs/protocols/nevis.md#baselines; paper section 4.2 "Finetuning").

Every task's network is trained with the Independent recipe and hyper-parameter search (IndependentConfig: the
same options, the same trials, the same seeds), but its backbone starts from an earlier model instead of random
weights; the head is always fresh. What differs is the choice of that earlier model:

- `finetune-prev` (FT-prev): the previous task's selected model; the first task starts from random weights.
- `finetune-knn` (FT-s, FT-d): the past task whose model is most related to the current task by kNN relatedness
  (lifelong.training.relatedness: k = 5 on frozen features of a seeded subset of up to 10,000 train / 5,000 dev
  items), measured once per task before training. Random initialisation is always scored but, as in the
  reference (dm_nevis `finetuning_dknn_learner.py`: `_init_from_transfer_matrix` only returns states of past
  tasks, so the randomly initialised candidate it ranks is never chosen once one exists), it starts a task only
  when there is no other candidate (the first task); `allow_random_init=True` lets it win whenever it scores
  best (this package's earlier rule). The paper: "an
  offline or static version (FT-s) where the features are computed using pretrained independent predictors as
  in Indep above, and a dynamic version (FT-d) where features are computed online using the actual predictors
  trained so far (which could have been finetuned themselves on other tasks)".
  - mode="dynamic" (FT-d): a past task is scored with the features of the learner's own model of that task, as
    trained (possibly itself a fine-tuned chain), and the winner's own model initialises the new one.
  - mode="static" (FT-s): a past task is scored with the features of an independent model of that task (trained
    from random weights on that task alone, then frozen), so a task's relatedness scores never depend on the
    learner's history; the initialisation is the learner's own model of the winning task (as in the reference,
    whose static variant ranks source tasks by a transfer matrix computed offline from independent models and
    then restores the learner's own train state of the chosen source). The learner builds these independent
    models itself: a task whose selected model started from random weights already is one (no extra cost);
    otherwise an Independent search on that task runs after its main training, its FLOPs counted in the task's
    train_flops unless `count_independent_flops=False` (the paper took them from an offline Independent run).

Not counted as training FLOPs (docs/protocols/nevis.md#knn-relatedness): kNN scoring; its forward FLOPs are
recorded in the state (`selections`). `peak_parameters`: the parameters of the network being trained plus those of
every model the state holds while it trains (the past backbones kept for initialisation and scoring; see
`max_past_models`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import torch

from lifelong.core.events import TrainEvent
from lifelong.core.resources import Resources
from lifelong.learners.independent import IndependentConfig, IndependentLearner
from lifelong.training.auxiliary import AuxiliaryTask
from lifelong.training.hpsearch import TrialResult
from lifelong.training.loop import derive_seed
from lifelong.training.models import check_architecture, count_parameters, make_model
from lifelong.training.relatedness import (
    MAX_DEV,
    MAX_TRAIN,
    RANDOM_INIT,
    BackboneState,
    backbone_state,
    score_candidates,
)

MODES = ("static", "dynamic")
TASK_PREFIX = "task:"  # candidate names: "task:<uid>" for past tasks, RANDOM_INIT, PRETRAINED
PRETRAINED = "pretrained"

# derive_seed(task seed, tag): relatedness subsets and its random network draw apart from training.
_RELATEDNESS = 7


def _workdir(event: TrainEvent, name: str) -> Path | None:
    return None if event.workdir is None else Path(event.workdir) / name


@dataclass(frozen=True)
class InitChoice:
    """Where a task's backbone starts: `source` (a candidate name, RANDOM_INIT for random weights) and its weights.

    `record` is what the learner keeps about the choice (scores, scoring FLOPs); `held_backbones` is how many
    backbones the state holds while the task trains (for peak_parameters); `extra_flops` is training compute of
    the choice itself (only pretraining, when counted).
    """

    source: str
    backbone: BackboneState | None
    record: dict[str, Any]
    held_backbones: int
    extra_flops: float = 0.0


class Kept(NamedTuple):
    """What a learner adds to its state after a task's search, and what that cost (extra FLOPs, extra models)."""

    entries: dict[str, Any]
    extra_flops: float = 0.0
    extra_models: int = 0


class TransferLearner(IndependentLearner):
    """Independent's recipe and search, with the backbone initialised by `choose_init` (subclasses decide)."""

    name = "transfer"

    def __init__(self, config: IndependentConfig | None = None, **options: Any) -> None:
        super().__init__(config, **options)
        # a factory network must have the backbone and linear head this learner transfers: say so before training
        check_architecture(self.config.architecture, resolution=self.config.resolution, transfer=True)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config})"

    def init(self, seed: int) -> dict[str, Any]:
        """Initial state: Independent's, plus the record of initialisation choices."""
        return {**super().init(seed), "init_from": None, "selections": []}

    def choose_init(self, event: TrainEvent, state: dict[str, Any]) -> InitChoice:
        """Where the backbone of `event`'s task starts (random weights here)."""
        return InitChoice(RANDOM_INIT, None, {}, held_backbones=0)

    def remember(self, event: TrainEvent, state: dict[str, Any], best: TrialResult, choice: InitChoice) -> Kept:
        """State entries to add once the task is trained (nothing here)."""
        return Kept({})

    def auxiliary(self, event: TrainEvent, state: dict[str, Any], choice: InitChoice) -> tuple[AuxiliaryTask, ...]:
        """Past tasks trained beside `event`'s task (none here; the multitask learner chooses some)."""
        return ()

    def train(self, event: TrainEvent, state: dict[str, Any]) -> tuple[dict[str, Any], Resources]:
        """Choose the initial backbone, search the task's hyper-parameters from it, keep the winner."""
        cfg, task = self.config, event.task
        choice = self.choose_init(event, state)
        auxiliary = self.auxiliary(event, state, choice)
        best, flops = self.search_task(event, state, choice.backbone, _workdir(event, "trials"), auxiliary)
        kept = self.remember(event, state, best, choice)
        selection = {"task": task.uid, "init": choice.source, **choice.record}
        new_state = {
            **state,
            **self.task_state(event, state, best),
            "init_from": choice.source,
            "selections": [*state.get("selections", []), selection][-cfg.max_task_history :],
            **kept.entries,
        }
        model_parameters = count_parameters(make_model(cfg.architecture, task.num_classes, seed=0))
        resources = Resources(
            train_flops=flops + kept.extra_flops + choice.extra_flops,
            peak_parameters=(1 + kept.extra_models) * model_parameters
            + choice.held_backbones * self.backbone_parameters(),
            dev_curve=best.dev_curve,
        )
        return new_state, resources

    def backbone_parameters(self) -> int:
        """Parameters of one backbone of the configured architecture."""
        return count_parameters(make_model(self.config.architecture, 2, seed=0).backbone)


class FinetunePrevLearner(TransferLearner):
    """Fine-tunes every task's network from the previous task's selected model (FT-prev); the first from random."""

    name = "finetune-prev"

    def choose_init(self, event: TrainEvent, state: dict[str, Any]) -> InitChoice:
        """The previous task's model (held in the state's `model`), else random weights."""
        if state.get("model") is None:
            return InitChoice(RANDOM_INIT, None, {}, held_backbones=0)
        return InitChoice(TASK_PREFIX + state["task_uid"], backbone_state(state["model"]), {}, held_backbones=1)


@dataclass(frozen=True)
class FinetuneKnnConfig(IndependentConfig):
    """The Independent recipe's options plus the kNN choice of the past model each task starts from."""

    mode: str = "dynamic"
    """How past tasks are scored: dynamic (FT-d: with the learner's own model of each task) or static (FT-s: with
    an independent model of each task, trained from random weights on that task alone)."""
    k: int = 5
    """The neighbours of kNN relatedness (the paper: 5)."""
    knn_max_train: int = MAX_TRAIN
    """The most training items kNN relatedness reads per task, a seeded subset (the paper: 10,000)."""
    knn_max_dev: int = MAX_DEV
    """The most dev items kNN relatedness scores per task, a seeded subset (the paper: 5,000)."""
    max_past_models: int | None = None
    """The past tasks kept as candidates, the most recent (unset: all)."""
    count_independent_flops: bool = True
    """With mode=static, count the FLOPs of the independent models trained for scoring as training FLOPs."""
    allow_random_init: bool = False
    """Let random weights win the kNN choice whenever they score best (false: as the reference, only when there is
    no past task)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.allow_random_init, bool):
            raise ValueError(f"allow_random_init must be true or false, got {self.allow_random_init!r}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.k < 1 or self.knn_max_train < 1 or self.knn_max_dev < 1:
            raise ValueError(
                f"k, knn_max_train and knn_max_dev must be >= 1, got {self.k}, {self.knn_max_train}, {self.knn_max_dev}"
            )
        if self.max_past_models is not None and self.max_past_models < 1:
            raise ValueError(f"max_past_models must be >= 1 or None (keep all), got {self.max_past_models}")


class FinetuneKnnLearner(TransferLearner):
    """Fine-tunes from the past model most related by kNN on frozen features (FT-s static / FT-d dynamic)."""

    name = "finetune-knn"
    config_class = FinetuneKnnConfig
    config: FinetuneKnnConfig

    def init(self, seed: int) -> dict[str, Any]:
        """Initial state: no past models; `backbones` and (static mode) `references` fill as tasks are learned.

        `backbones`: [(uid, backbone)] of the learner's own models, oldest first; `references` (static mode):
        [(uid, backbone or None)], the independent model scoring each task, None when it is the task's own.
        """
        return {**super().init(seed), "backbones": [], "references": []}

    def extra_candidates(self) -> dict[str, BackboneState]:
        """Candidates besides past tasks and random init (a pretrained backbone in a subclass)."""
        return {}

    def choose_init(self, event: TrainEvent, state: dict[str, Any]) -> InitChoice:
        """Score past models (most recent first), extra candidates and random init; start from the best (random
        init only when it is the sole candidate, unless `allow_random_init`)."""
        cfg = self.config
        own = dict(state["backbones"])
        scoring = dict(own)
        if cfg.mode == "static":
            if [uid for uid, _ in state["references"]] != [uid for uid, _ in state["backbones"]]:
                raise ValueError(
                    f"{event.name}: the state has no independent reference model for some past tasks (it was not "
                    "built in static mode); resume a run with the mode it was started with"
                )
            scoring = {uid: own[uid] if ref is None else ref for uid, ref in state["references"]}
        candidates = {TASK_PREFIX + uid: scoring[uid] for uid, _ in reversed(state["backbones"])}
        extra = self.extra_candidates()
        candidates.update(extra)
        held = len(own) + sum(ref is not None for _, ref in state["references"]) + len(extra)
        if not candidates:
            return InitChoice(RANDOM_INIT, None, {"scores": {}, "mode": cfg.mode}, held_backbones=0)
        result = score_candidates(
            candidates,
            event.train,
            event.dev,
            architecture=cfg.architecture,
            resolution=cfg.resolution,
            seed=derive_seed(state["seed"], event.task_index, _RELATEDNESS),
            k=cfg.k,
            max_train=cfg.knn_max_train,
            max_dev=cfg.knn_max_dev,
            batch_size=cfg.eval_batch_size,
        )
        source = result.choice(allow_random_init=cfg.allow_random_init)
        if source == RANDOM_INIT:
            backbone = None
        elif source.startswith(TASK_PREFIX):
            backbone = own[source[len(TASK_PREFIX) :]]
        else:
            backbone = extra[source]
        record = {
            "scores": dict(result.scores),
            "feature_flops": result.feature_flops,
            "knn_items": (result.num_train, result.num_dev),
            "mode": cfg.mode,
            "best_scored": result.best,  # differs from the choice when random init scored best but was not allowed
        }
        return InitChoice(source, backbone, record, held_backbones=held)

    def remember(self, event: TrainEvent, state: dict[str, Any], best: TrialResult, choice: InitChoice) -> Kept:
        """Keep the new model's backbone (and, static mode, its independent reference), bounded by max_past_models."""
        cfg = self.config
        uid = event.task.uid
        keep = cfg.max_past_models
        backbones = [*state["backbones"], (uid, backbone_state(best.state_dict))]
        entries: dict[str, Any] = {"backbones": backbones[-keep:] if keep else backbones}
        if cfg.mode != "static":
            return Kept(entries)
        reference: dict[str, torch.Tensor] | None = None
        extra_flops, extra_models = 0.0, 0
        if choice.source != RANDOM_INIT:  # its own model is not independent: train one for future scoring
            independent, flops = self.search_task(event, state, None, _workdir(event, "independent"))
            reference = backbone_state(independent.state_dict)
            extra_flops, extra_models = (flops if cfg.count_independent_flops else 0.0), 1
        references = [*state["references"], (uid, reference)]
        entries["references"] = references[-keep:] if keep else references
        return Kept(entries, extra_flops, extra_models)
