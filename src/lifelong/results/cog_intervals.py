"""Per-level uncertainty over concepts of ImageNet-CoG runs: a bootstrap over the concepts of each level.

A level's top-1 depends on which concepts were drawn into it far more than on the probe's seed; the seed spread
the protocol reports does not show that. Each concept's accuracy is read from the runs' saved test predictions
(`predictions/event<index>-<task>.npz`: scores and labels), averaged over the seeds, and the level's mean over
concepts is bootstrapped (`lifelong.metrics.statistics.bootstrap_interval`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lifelong.results.store import PREDICTIONS_DIR, predictions_file


def concept_accuracy(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Top-1 accuracy of each class (row k: class k) from scores [N, C] and labels [N]; NaN for a class with no
    test image."""
    scores, labels = np.asarray(scores), np.asarray(labels, dtype=np.int64)
    correct = (scores.argmax(axis=1) == labels).astype(np.float64)
    classes = scores.shape[1]
    hits = np.bincount(labels, weights=correct, minlength=classes)
    counts = np.bincount(labels, minlength=classes)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, hits / np.maximum(counts, 1), np.nan)


def run_concept_accuracy(folder: Path, records: list[dict]) -> dict[str, np.ndarray]:
    """{task: per-concept accuracy} of the predict records of one run whose predictions were saved."""
    out = {}
    for record in records:
        if record.get("type") != "predict" or record.get("error") is None:
            continue
        path = Path(folder) / PREDICTIONS_DIR / predictions_file(record)
        if path.is_file():
            with np.load(path, allow_pickle=False) as saved:
                out[record["task"]] = concept_accuracy(saved["scores"], saved["labels"])
    return out


def level_intervals(
    results: list[dict], folders: list[Path], *, confidence: float = 0.95, resamples: int = 2000
) -> dict[tuple[str, str], tuple[float, float]]:
    """{(level, shots): (low %, high %)}: the bootstrap interval over concepts of each level's top-1. Each concept's
    accuracy is averaged over the seeds first; the seen level's draws (cog-seen-d1, ...) pool their drawn concepts.
    Levels whose predictions were not saved are left out."""
    from lifelong.metrics.statistics import bootstrap_interval
    from lifelong.suites.cog import base_level, split_task_name

    per_task: dict[tuple[str, str], list[np.ndarray]] = {}
    for result, folder in zip(results, folders, strict=True):
        for task, accuracy in run_concept_accuracy(folder, result.get("records", [])).items():
            per_task.setdefault(split_task_name(task), []).append(accuracy)
    pooled: dict[tuple[str, str], list[np.ndarray]] = {}
    for (level, shots), runs in per_task.items():
        if len({len(a) for a in runs}) != 1:
            continue  # runs of one task with different concept counts: nothing to average
        pooled.setdefault((base_level(level), shots), []).append(np.nanmean(np.stack(runs), axis=0))
    intervals = {}
    for key, parts in pooled.items():
        per_concept = np.concatenate(parts)
        per_concept = per_concept[~np.isnan(per_concept)]
        if per_concept.size:
            low, high = bootstrap_interval(per_concept, confidence=confidence, resamples=resamples)
            intervals[key] = (100.0 * low, 100.0 * high)
    return intervals
