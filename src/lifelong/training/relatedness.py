"""kNN task relatedness: how well a frozen backbone's features separate the current task
(docs/protocols/nevis.md#knn-relatedness).

A candidate backbone embeds a seeded subset of the current task's train split (up to `max_train` = 10,000
items) and dev split (up to `max_dev` = 5,000); a k-nearest-neighbour classifier (k = 5, uniform votes) fitted
on the train features predicts the dev items. Distances are euclidean between L2-normalised features, which
ranks neighbours exactly as cosine similarity does (scikit-learn's `KNeighborsClassifier(n_neighbors=k)` on the
normalised features gives the same predictions). The score (higher = more related) is 1 - the task error of
the kNN vote fractions: top-1 accuracy for multi-class tasks, mAP over labels (labels without a positive in
the dev subset skipped, as in lifelong.metrics) for multi-label tasks, where a label's score is the fraction
of the k neighbours carrying it. Random initialisation is always scored: its features come from a network
initialised with a given seed. Whether it may also be chosen is the caller's decision (`Relatedness.choice`):
the reference (dm_nevis `experiments_jax/learners/finetuning_dknn/finetuning_dknn_learner.py`,
`_init_from_knn_transfer` and `_init_from_transfer_matrix`) ranks it with the past models but only ever starts
from a past model, so random weights start a task only when there is no other candidate.

Features are computed in eval mode without gradients by the model's `features` (pooled backbone output).
Their forward FLOPs are reported apart: like the reference, relatedness scoring is not training compute.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from lifelong.core.datasets import ArrayDataset, Dataset
from lifelong.core.tasks import TaskKind
from lifelong.training.devices import current_accelerator
from lifelong.training.inputs import Size, prepare_batch
from lifelong.training.loop import classification_error, derive_seed
from lifelong.training.models import ResNet, make_model
from lifelong.training.recipe import materialize

RANDOM_INIT = "random-init"
K = 5
MAX_TRAIN = 10_000
MAX_DEV = 5_000
BackboneState = Mapping[str, torch.Tensor]

# derive_seed tags: the train and dev subsets and the random candidate draw from independent streams.
_TRAIN_SUBSET, _DEV_SUBSET, _RANDOM_NET = 0, 1, 2
_QUERY_CHUNK = 512  # dev rows per distance block: bounds the [rows, train] distance matrix


def backbone_state(model_state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The backbone part of a full model state_dict (keys without the `backbone.` prefix), as CPU tensors."""
    prefix = "backbone."
    backbone = {k[len(prefix) :]: v.detach().to("cpu") for k, v in model_state.items() if k.startswith(prefix)}
    if not backbone:
        raise ValueError(
            f"no `backbone.` entries in a state_dict with keys {sorted(model_state)[:5]}...; give the state_dict of a "
            "lifelong.training.models.ResNet"
        )
    return backbone


def subsample(dataset: Dataset, limit: int, seed: int) -> ArrayDataset:
    """At most `limit` items of `dataset`, drawn without replacement by `seed`, kept in stored order."""
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    data = materialize(dataset)
    if len(data) <= limit:
        return data
    rows = np.sort(np.random.default_rng(seed).choice(len(data), size=limit, replace=False))
    return data.subset(rows)


def backbone_model(architecture: str, backbone: BackboneState | None, *, random_seed: int = 0) -> ResNet:
    """A model of `architecture` whose backbone holds `backbone` (None: random weights from `random_seed`), on the
    current accelerator."""
    model = make_model(architecture, 1, seed=random_seed)
    if backbone is not None:
        try:
            model.backbone.load_state_dict(dict(backbone))
        except RuntimeError as exc:
            raise ValueError(
                f"backbone weights do not fit architecture {architecture!r}: {exc}; score candidates with the "
                "architecture they were trained with"
            ) from exc
    return current_accelerator().place(model)


@torch.no_grad()
def extract_features(
    model: ResNet, dataset: ArrayDataset, *, resolution: Size | None, batch_size: int = 256
) -> tuple[np.ndarray, float]:
    """(features [N, D] float32 from `model.backbone` in eval mode, their forward FLOPs), in stored order.

    FLOPs are counted (matmuls and convolutions, as training FLOPs are) on the first batch and scaled to N. The
    model runs on the current accelerator (moved there), under its autocast; features reach the host once.
    """
    if len(dataset) == 0:
        raise ValueError(f"{dataset!r} is empty: there is nothing to embed")
    acc = current_accelerator()
    acc.place(model)
    was_training = model.training
    model.eval()
    channels = int(getattr(model, "in_channels", 3))
    outputs: list[torch.Tensor] = []
    flops_per_item = 0.0
    try:
        for batch in dataset.batches(batch_size):
            x = acc.batch(prepare_batch(batch.images, channels=channels, size=resolution))
            if not outputs:
                counter = FlopCounterMode(display=False)
                with counter, acc.autocast():
                    outputs.append(model.backbone(x).float())
                flops_per_item = float(counter.get_total_flops()) / len(x)
            else:
                with acc.autocast():
                    outputs.append(model.backbone(x).float())
    finally:
        model.train(was_training)
    return torch.cat(outputs).cpu().numpy(), flops_per_item * len(dataset)


def _normalised(features: np.ndarray) -> np.ndarray:
    features = np.asarray(features, dtype=np.float64)
    if features.ndim != 2:
        raise ValueError(f"features must be a 2-d array [items, dims], got shape {features.shape}")
    if not np.isfinite(features).all():
        raise ValueError("features hold non-finite values: the backbone diverged; check its weights")
    norms = np.linalg.norm(features, axis=1, keepdims=True)
    return features / np.maximum(norms, 1e-12)


def knn_votes(
    train_features: np.ndarray,
    train_labels: np.ndarray,
    query_features: np.ndarray,
    *,
    kind: TaskKind | str,
    num_classes: int,
    k: int = K,
) -> np.ndarray:
    """Vote fractions [Q, C] of the k nearest train items (L2-normalised euclidean) of every query item.

    Multi-class: the fraction of neighbours of each class (argmax ties go to the lowest class, as in
    scikit-learn); multi-label: the fraction of neighbours carrying each label. With fewer than k train
    items, all of them vote.
    """
    kind = TaskKind(kind)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    train, query = _normalised(train_features), _normalised(query_features)
    if len(train) == 0 or train.shape[1] != query.shape[1]:
        raise ValueError(
            f"need a non-empty train set with the query's feature width; got train {train.shape}, query {query.shape}"
        )
    labels = np.asarray(train_labels)
    if len(labels) != len(train):
        raise ValueError(f"{len(train)} train features but {len(labels)} train labels")
    targets = labels.astype(np.float64) if kind is TaskKind.MULTI_LABEL else np.eye(num_classes)[labels]
    k = min(k, len(train))
    train_sq = np.einsum("ij,ij->i", train, train)
    votes = np.empty((len(query), targets.shape[1]))
    for start in range(0, len(query), _QUERY_CHUNK):
        block = query[start : start + _QUERY_CHUNK]
        distances = train_sq[None, :] - 2.0 * block @ train.T  # + |q|^2, constant per row: same order
        nearest = np.argpartition(distances, k - 1, axis=1)[:, :k]
        votes[start : start + len(block)] = targets[nearest].mean(axis=1)
    return votes


def knn_score(
    train_features: np.ndarray,
    train_labels: np.ndarray,
    dev_features: np.ndarray,
    dev_labels: np.ndarray,
    *,
    kind: TaskKind | str,
    num_classes: int,
    k: int = K,
) -> float:
    """1 - task error of the kNN votes on the dev items: accuracy, or mAP (multi-label; nan without positives)."""
    votes = knn_votes(train_features, train_labels, dev_features, kind=kind, num_classes=num_classes, k=k)
    return 1.0 - classification_error(votes, np.asarray(dev_labels), kind)


@dataclass(frozen=True)
class Relatedness:
    """Scores of every candidate, their order (as given, random init last) and what scoring them cost."""

    scores: dict[str, float]
    feature_flops: float
    num_train: int
    num_dev: int
    order: tuple[str, ...]

    def ranking(self) -> list[tuple[str, float]]:
        """(name, score) best first; nan scores last; ties keep the candidates' order."""
        position = {name: i for i, name in enumerate(self.order)}

        def key(item: tuple[str, float]) -> tuple[bool, float, int]:
            name, score = item
            return (math.isnan(score), 0.0 if math.isnan(score) else -score, position[name])

        return sorted(self.scores.items(), key=key)

    @property
    def best(self) -> str:
        """Name of the most related candidate (random init included)."""
        return self.ranking()[0][0]

    def choice(self, *, allow_random_init: bool) -> str:
        """The candidate to start from: `best`, or with allow_random_init=False the best other than random init
        whenever another candidate was scored (the reference's rule: random weights only without a past model)."""
        if allow_random_init:
            return self.best
        others = [name for name, _ in self.ranking() if name != RANDOM_INIT]
        return others[0] if others else self.best


def score_candidates(
    candidates: Mapping[str, BackboneState],
    train: Dataset,
    dev: Dataset,
    *,
    architecture: str,
    resolution: Size | None,
    seed: int,
    include_random: bool = True,
    k: int = K,
    max_train: int = MAX_TRAIN,
    max_dev: int = MAX_DEV,
    batch_size: int = 256,
) -> Relatedness:
    """kNN relatedness of every candidate backbone (plus random init, named RANDOM_INIT) to the current task.

    `seed` draws the train/dev subsets (shared by all candidates) and initialises the random candidate.
    """
    if RANDOM_INIT in candidates:
        raise ValueError(f"{RANDOM_INIT!r} names the random-init candidate; give past models other names")
    if not candidates and not include_random:
        raise ValueError("no candidates to score: give backbones or set include_random=True")
    train_subset = subsample(train, max_train, derive_seed(seed, _TRAIN_SUBSET))
    dev_subset = subsample(dev, max_dev, derive_seed(seed, _DEV_SUBSET))
    if len(train_subset) == 0 or len(dev_subset) == 0:
        raise ValueError(
            f"kNN relatedness needs non-empty train and dev splits, got {len(train_subset)} train and "
            f"{len(dev_subset)} dev items for task {train_subset.task.uid!r}"
        )
    task = train_subset.task
    named: list[tuple[str, BackboneState | None]] = list(candidates.items())
    if include_random:
        named.append((RANDOM_INIT, None))
    scores: dict[str, float] = {}
    flops = 0.0
    for name, backbone in named:
        model = backbone_model(architecture, backbone, random_seed=derive_seed(seed, _RANDOM_NET))
        train_features, train_flops = extract_features(
            model, train_subset, resolution=resolution, batch_size=batch_size
        )
        dev_features, dev_flops = extract_features(model, dev_subset, resolution=resolution, batch_size=batch_size)
        flops += train_flops + dev_flops
        scores[name] = knn_score(
            train_features,
            train_subset.labels(),
            dev_features,
            dev_subset.labels(),
            kind=task.kind,
            num_classes=task.num_classes,
            k=k,
        )
    return Relatedness(scores, flops, len(train_subset), len(dev_subset), tuple(name for name, _ in named))


def rank_candidates(
    candidates: Mapping[str, BackboneState], train: Dataset, dev: Dataset, **options: Any
) -> list[tuple[str, float]]:
    """[(name, score)] best first, from `score_candidates(candidates, train, dev, **options)`."""
    return score_candidates(candidates, train, dev, **options).ranking()
