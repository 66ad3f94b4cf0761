"""Nearest class mean on raw pixels: a training-free baseline that needs no torch and runs in milliseconds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lifelong.core.events import PredictEvent, TrainEvent
from lifelong.core.resources import Resources


@dataclass(frozen=True)
class NearestMeanLearner:
    """Scores class c by -||x - mean_c||^2 over pixels scaled to [0, 1] (or over pre-extracted features).

    Predicts the task it was trained last on, or any task with the same label space (a CLEAR bucket).

    Multi-label tasks: per label, the distance to the mean of its positives against the mean of its
    negatives, squashed to a probability. Training FLOPs: one add per pixel per image for the means
    (2 per multiply-add is the convention elsewhere; summing is 1 FLOP per element).
    """

    name: str = "nearest-mean"
    """The learner's name, as its runs record it."""
    batch_size: int = 1024
    """Images per batch when summing the class means and when predicting."""

    def init(self, seed: int) -> dict:
        return {"seed": seed, "task": None, "label_space": None, "means": None}

    def train(self, event: TrainEvent, state: dict) -> tuple[dict, Resources]:
        data = event.train_and_dev
        classes = event.task.num_classes
        sums = np.zeros((2 if event.task.is_multi_label else 1, classes, int(np.prod(data.image_shape))))
        counts = np.zeros((sums.shape[0], classes))
        for batch in data.batches(self.batch_size):
            x = _flat(batch.images)
            hot = batch.labels.astype(np.float64) if event.task.is_multi_label else np.eye(classes)[batch.labels]
            sums[0] += hot.T @ x
            counts[0] += hot.sum(0)
            if event.task.is_multi_label:
                sums[1] += (1 - hot).T @ x
                counts[1] += (1 - hot).sum(0)
        means = sums / np.maximum(counts, 1)[..., None]
        flops = float(len(data) * sums.shape[-1] * sums.shape[0])
        new_state = {
            "seed": state["seed"],
            "task": event.task.uid,
            "label_space": event.task.label_space,
            "means": means.astype(np.float32),
        }
        return new_state, Resources(train_flops=flops, peak_parameters=int(means.size))

    def predict(self, event: PredictEvent, state: dict) -> np.ndarray:
        if state["task"] != event.task.uid and state.get("label_space") != event.task.label_space:
            raise ValueError(
                f"nearest-mean was last trained on {state['task']!r}, asked to predict {event.task.uid!r}, whose "
                "label space differs"
            )
        means = state["means"].astype(np.float64)
        out = []
        for batch in event.dataset.batches(self.batch_size):
            x = _flat(batch.images)
            # squared distances via |x|^2 - 2 x.m + |m|^2, without a [B, C, D] intermediate
            d = (x**2).sum(1)[:, None, None] - 2 * np.einsum("bd,kcd->bkc", x, means) + (means**2).sum(-1)[None]
            d /= x.shape[1]  # [B, 1 or 2, C]
            if event.task.is_multi_label:
                out.append(1.0 / (1.0 + np.exp(np.clip((d[:, 0] - d[:, 1]) * 50.0, -50, 50))))
            else:
                out.append(-d[:, 0])
        return np.concatenate(out)


def _flat(items: np.ndarray) -> np.ndarray:
    """Rows of float64: pixels scaled to [0, 1], or features as they are."""
    flat = items.reshape(len(items), -1).astype(np.float64)
    return flat / 255.0 if items.dtype == np.uint8 else flat
