"""A linear probe on pre-extracted features (ImageNet-CoG, docs/protocols/cog.md#linear-probe), fresh for every task.

`train` runs a probe of `lifelong.training.probes` (`-o probe=fast|reference`: (lr, weight decay) tuned on the
probe's own stratified 20% validation split, few-shot rows drawn from the other 80%, then the final classifier
retrained on all training rows or the same shots) and keeps the probe's classifier, with which `predict` scores
any evaluation split. The run seed is the protocol seed (22, 37, 45, 77, 93).
The task's `metadata["shots"]` (None: all data) selects the few-shot protocol.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from lifelong.core.datasets import ArrayDataset, LazyDataset
from lifelong.core.events import PredictEvent, TrainEvent
from lifelong.core.resources import Resources
from lifelong.learners.options import configure

PROBES = ("fast", "reference")
PREDICT_ROWS = 65_536


@dataclass(frozen=True)
class ProbeConfig:
    """The linear probe of ImageNet-CoG: which probe, its budget and its device."""

    probe: str = "reference"
    """Which probe: reference (naver/cog's 30 Optuna TPE trials x 100 epochs) or fast (a grid trained together on a
    short schedule; not validated within 0.3 points on real features, see docs/cog.md)."""
    trials: int | None = None
    """The reference probe's trials (unset: the protocol's 30)."""
    epochs: int | None = None
    """The reference probe's epochs per trial (unset: the protocol's 100)."""
    device: str | None = None
    """Where the probe trains: auto, cpu, cuda or cuda:N (unset: the current accelerator, as every model)."""

    def __post_init__(self) -> None:
        if self.device is not None:
            from lifelong.training.devices import check_device_spec

            object.__setattr__(self, "device", check_device_spec(self.device))
        if self.probe not in PROBES:
            raise ValueError(f"probe must be one of {PROBES}, got {self.probe!r}; e.g. -o probe=reference")
        for name in ("trials", "epochs"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be >= 1 (or unset), got {value}")


class LinearProbeLearner:
    """Linear probe on frozen features (CoG): tune lr/wd on a 20% split, retrain, score; `-o probe=fast|reference`."""

    name = "linear-probe"

    def __init__(self, config: ProbeConfig | None = None, **options: Any) -> None:
        self.config = configure(ProbeConfig, config, options, "linear-probe")

    def init(self, seed: int) -> dict[str, Any]:
        return {"seed": int(seed), "task": None, "weight": None, "bias": None, "probe": None}

    def check_tasks(self, tasks) -> None:
        multi_label = [t.uid for t in tasks if t.is_multi_label]
        if multi_label:
            raise ValueError(f"linear-probe handles multi-class tasks only; {multi_label[:3]} are multi-label")

    def train(self, event: TrainEvent, state: dict[str, Any]) -> tuple[dict[str, Any], Resources]:
        from lifelong.training.probes import fast_probe, reference_probe

        x, y = _features(event.train_and_dev, "linear-probe trains")
        shots = event.task.metadata.get("shots")
        seed = state["seed"]
        names = event.task.class_names or None
        options: dict[str, Any] = {"seed": seed, "shots": shots, "class_names": names, "device": self.config.device}
        if self.config.probe == "reference":
            options |= {k: v for k in ("trials", "epochs") if (v := getattr(self.config, k)) is not None}
        probe = fast_probe if self.config.probe == "fast" else reference_probe
        # the probes need a test split; the training rows stand in (their top-1 is kept as a diagnostic)
        result = probe(x, y, x, y, **options)
        weight, bias = result.weight, result.bias  # the probe's own final classifier
        final_rows = len(y) if shots is None else int(shots) * event.task.num_classes
        runs = len(result.trials) * (0.8 if shots is None else 1.0) + 1
        flops = 6.0 * final_rows * x.shape[1] * event.task.num_classes * result.epochs * runs  # fwd + bwd per row
        probe_record = {
            "method": result.method,
            "lr": result.lr,
            "weight_decay": result.weight_decay,
            "epochs": result.epochs,
            "trials": len(result.trials),
            "best_val_top1": max((t.val_top1 for t in result.trials), default=None),
            "train_top1": result.test_top1,
            "shots": shots,
            "config": asdict(self.config),
        }
        new_state = {"seed": seed, "task": event.task.uid, "weight": weight, "bias": bias, "probe": probe_record}
        return new_state, Resources(train_flops=flops, peak_parameters=int(weight.size + bias.size))

    def predict(self, event: PredictEvent, state: dict[str, Any]) -> np.ndarray:
        if state["task"] != event.task.uid:
            raise ValueError(
                f"linear-probe was trained on {state['task']!r} but asked to predict {event.task.uid!r}: a probe "
                "predicts the task it was just trained on"
            )
        x, _ = _features(event.dataset, "linear-probe predicts")
        weight, bias = state["weight"], state["bias"]
        logits = np.empty((len(x), weight.shape[1]), np.float32)
        for start in range(0, len(x), PREDICT_ROWS):  # block by block: a memory-mapped split is never loaded whole
            block = np.asarray(x[start : start + PREDICT_ROWS], dtype=np.float32)
            logits[start : start + len(block)] = block @ weight + bias
        return logits

    def predict_flops(self, event: PredictEvent, state: dict[str, Any]) -> float:
        return 2.0 * len(event.dataset) * float(state["weight"].size)


def _features(dataset, doing: str) -> tuple[np.ndarray, np.ndarray]:
    """(features [N, D], labels) of a dataset of pre-extracted features; images are an error.

    An in-memory or memory-mapped split is handed over as stored (float16 or float32, not copied): the probes
    read it batch by batch. Other datasets are gathered into float32.
    """
    if not getattr(dataset, "is_features", False):
        raise ValueError(
            f"{doing} on pre-extracted features [N, D], but {dataset!r} holds images: use a features stream such "
            "as cog (`lifelong cog run --encoder FILE`)"
        )
    if isinstance(dataset, LazyDataset):
        dataset = dataset.materialize()
    if isinstance(dataset, ArrayDataset):
        if len(dataset) == 0:
            raise ValueError(f"{doing}: {dataset!r} is empty")
        return dataset.images, dataset.labels()
    parts = [(b.images, b.labels) for b in dataset.batches(65_536)]
    if not parts:
        raise ValueError(f"{doing}: {dataset!r} is empty")
    return np.concatenate([p[0] for p in parts]).astype(np.float32), np.concatenate([p[1] for p in parts])
