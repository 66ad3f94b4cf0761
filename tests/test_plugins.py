"""Extension without editing the package: a third-party package registers a learner, a stream, a temporal source,
a metric and an encoder through entry points, is installed with pip, and `lifelong run` / `lifelong models` use
them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

LIFELONG = Path(sys.executable).with_name("lifelong")

PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "lifelong-theirs"
version = "0.1.0"

[project.entry-points."lifelong.learners"]
theirs = "lifelong_theirs:FrequencyLearner"

[project.entry-points."lifelong.streams"]
theirs = "lifelong_theirs:bars"

[project.entry-points."lifelong.temporal_sources"]
theirs-drift = "lifelong_theirs:drift"

[project.entry-points."lifelong.metrics"]
theirs = "lifelong_theirs:count_events"

[project.entry-points."lifelong.encoders"]
theirs-encoder = "lifelong_theirs:glyph_encoder"
"""

MODULE = '''
"""A third party's learner, stream, temporal source and metric; nothing here is part of lifelong."""

import numpy as np

from lifelong.core.resources import Resources
from lifelong.testing import tiny_stream


class FrequencyLearner:
    """Predicts every item as the training labels' class frequencies (a baseline without a model)."""

    name = "theirs"

    def init(self, seed):
        return {}

    def train(self, event, state):
        labels = np.asarray(event.train_and_dev.labels())
        classes = event.task.num_classes
        frequency = labels.mean(axis=0) if labels.ndim == 2 else np.bincount(labels, minlength=classes) / len(labels)
        return {**state, event.task.uid: frequency.astype(float)}, Resources(train_flops=float(labels.size))

    def predict(self, event, state):
        return np.tile(state[event.task.uid], (len(event.dataset.labels()), 1))


def bars(eval_split="dev_test", skip_corrupt=False, data_root=None, allow_missing=None, **options):
    """their bars: three tiny in-memory tasks"""
    return tiny_stream(**options)


def drift(data_root=None, **options):
    """their drifting glyphs (lifelong's clear-mini source, registered again by a third party)"""
    from lifelong.data.sources.drifting import ClearMini

    return ClearMini(**options)


class EventCount:
    name = "theirs"

    def init(self):
        return 0

    def add(self, state, record):
        return state + 1

    def compute(self, state):
        return {"theirs_events": state}


def count_events(stream):
    """How many events the run recorded."""
    return EventCount()


def glyph_encoder():
    """Their encoder: a fixed 3x3 edge filter, pooled, at 24 pixels with their own normalisation."""
    import torch
    from torch import nn

    from lifelong.training.encoders import Encoder, Preprocessing

    conv = nn.Conv2d(3, 6, 3)
    with torch.no_grad():
        conv.weight.copy_(torch.linspace(-1, 1, conv.weight.numel()).view_as(conv.weight))
        conv.bias.zero_()
    module = nn.Sequential(conv, nn.AdaptiveAvgPool2d(1), nn.Flatten())
    pre = Preprocessing(resolution=24, mean=(0.5, 0.4, 0.3), std=(0.25, 0.25, 0.25))
    return Encoder(module, feature_dim=6, preprocessing=pre, description="their glyph encoder", licence="MIT")
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """`lifelong-theirs` built from its own pyproject and installed with pip into a folder of its own."""
    root = tmp_path_factory.mktemp("theirs")
    project = root / "project"
    (project / "lifelong_theirs").mkdir(parents=True)
    (project / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT))
    (project / "lifelong_theirs" / "__init__.py").write_text(textwrap.dedent(MODULE))
    target = root / "site"
    command = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run([*command, "--target", str(target), str(project)], check=True, capture_output=True, text=True)
    return target


def _lifelong(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site), "COLUMNS": "200"}
    return subprocess.run([str(LIFELONG), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_their_learner_stream_and_metric_run_through_lifelong_run(site, tmp_path):
    done = _lifelong(site, "run", "--learner", "theirs", "--stream", "theirs", "--metric", "theirs", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "runs" / "theirs-theirs-seed0" / "summary.json").read_text())
    assert summary["events_done"] == summary["events_total"] == 6
    assert summary["theirs_events"] == 6  # their metric saw every event
    assert summary["num_evaluated_tasks"] == 3 and 0.0 <= summary["mean_error"] <= 1.0


def test_their_names_are_listed_beside_the_builtins(site, tmp_path):
    learners = _lifelong(site, "learners", cwd=tmp_path)
    assert learners.returncode == 0, learners.stderr
    assert "theirs" in learners.stdout and "independent" in learners.stdout
    streams = _lifelong(site, "streams", "--json", cwd=tmp_path)
    assert streams.returncode == 0, streams.stderr
    rows = {row["name"]: row for row in json.loads(streams.stdout)}
    assert rows["theirs"]["tasks"] == 3  # listed under the name `--stream` takes
    assert rows["theirs"]["description"] == "their bars: three tiny in-memory tasks"
    assert rows["theirs-drift"]["tasks"] == 10  # a temporal source becomes a stream of its labeled buckets
    assert "mini" in rows and "clear-mini" in rows


def test_an_unknown_learner_names_the_entry_point_group(site, tmp_path):
    done = _lifelong(site, "run", "--learner", "nobody", "--stream", "theirs", cwd=tmp_path)
    assert done.returncode == 2
    assert "unknown learner 'nobody'" in done.stderr and "lifelong.learners" in done.stderr


def test_their_encoder_is_listed_and_extracts_features(site, tmp_path):
    listed = _lifelong(site, "models", "list", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    theirs = rows["theirs-encoder"]
    assert (theirs["package"], theirs["resolution"], theirs["feature_dim"], theirs["head"]) == (
        "lifelong-theirs",
        24,
        6,
        False,
    )
    assert "efficientnet-lite0" in rows  # beside the built-ins
    from PIL import Image

    Image.new("RGB", (30, 40), (200, 10, 90)).save(tmp_path / "red.png")
    done = _lifelong(site, "models", "features", "theirs-encoder", "red.png", "--out", "f.npy", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    import numpy as np

    features = np.load(tmp_path / "f.npy")
    assert features.shape == (1, 6) and np.abs(features).sum() > 0
    refused = _lifelong(site, "models", "predict", "theirs-encoder", "red.png", cwd=tmp_path)
    assert refused.returncode == 2 and "has no classifier head" in refused.stderr
