"""Per-concept accuracy from saved predictions (against scikit-learn's per-class recall) and the bootstrap interval
of each level over its concepts, pooled over seeds."""

from __future__ import annotations

import io

import numpy as np
from sklearn.metrics import recall_score

from lifelong.metrics.statistics import bootstrap_interval
from lifelong.results.cog_intervals import concept_accuracy, level_intervals


def test_concept_accuracy_is_each_classs_recall():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 6, 200)
    scores = rng.normal(size=(200, 7))
    scores[np.arange(200), labels] += rng.normal(1.0, 1.0, 200)
    got = concept_accuracy(scores, labels)
    expected = recall_score(labels, scores.argmax(1), labels=range(6), average=None, zero_division=0)
    assert np.allclose(got[:6], expected) and np.isnan(got[6])  # class 6 has no test image


def _save(folder, event, task, scores, labels):
    (folder / "predictions").mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    np.savez(buffer, scores=scores, labels=labels)
    (folder / "predictions" / f"event{event:04d}-{task}.npz").write_bytes(buffer.getvalue())
    return {"type": "predict", "event": event, "task": task, "error": 0.5}


def test_level_intervals_pool_the_seeds_per_concept(tmp_path):
    rng = np.random.default_rng(1)
    labels = np.repeat(np.arange(10), 5)
    results, folders, accuracies = [], [], []
    for seed in range(2):
        scores = rng.normal(size=(50, 10))
        folder = tmp_path / f"run{seed}"
        record = _save(folder, 1, "cog-L1-all", scores, labels)
        results.append({"records": [{"type": "train", "event": 0, "task": "cog-L1-all"}, record]})
        folders.append(folder)
        accuracies.append(concept_accuracy(scores, labels))
    intervals = level_intervals(results, folders, resamples=500)
    expected = bootstrap_interval(np.mean(accuracies, axis=0), resamples=500)
    assert intervals == {("L1", "all"): (100 * expected[0], 100 * expected[1])}
    assert level_intervals([{"records": []}], [tmp_path / "none"]) == {}
