"""Run folders of every system for the report tests: CoG probe runs (made by `lifelong cog run`'s code on a toy
features set, or written as it writes them for every level, with saved predictions) and two fact-learning runs
(recorded from `lifelong run --stream facts-mini`, checked in)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from suites.test_cog import write_features_set

from lifelong.commands.cog_runs import cog_run_specs, run_cog_specs
from lifelong.results import RunFolder
from lifelong.results.store import PREDICTIONS_DIR, predictions_file

COG_LEVELS = ("seen", "L1", "L2", "L3", "L4", "L5")

FACT_RUNS = Path(__file__).parent / "data" / "facts"


def write_cog_runs(root: Path, *, levels: str = "seen,L1", seeds: int = 1) -> list[Path]:
    """CoG runs of a toy encoder (one per level and seed, all training data) under root/runs."""
    write_features_set(root / "data" / "cog-features" / "toy", levels=("seen", "L1"))
    options = dict(levels=levels, shots="all", seeds=seeds, probe="fast", out=root / "runs", resume=False)
    options |= dict(overwrite=False, data_root=root / "data", threads=1, progress=False)
    specs = cog_run_specs("toy", "cog-mini", **options)
    run_cog_specs(specs)
    return [Path(s.folder) for s in specs]


def copy_fact_runs(root: Path) -> list[Path]:
    """The two checked-in facts-mini runs (seeds 0 and 1), copied under root."""
    out = []
    for folder in sorted(FACT_RUNS.iterdir()):
        shutil.copytree(folder, root / folder.name)
        out.append(root / folder.name)
    return out


def write_cog_level_runs(root: Path, features: str, *, seed: int = 22, classes: int = 12) -> list[Path]:
    """One CoG run folder per level (seen, L1 .. L5; all training data) of the encoder `features`, as `lifelong
    cog run` writes them: run.json, the train and predict records and the saved test predictions (for the intervals
    over concepts). Written, not probed: top-1 falls level by level, so that the page's widest tables are full."""
    rng = np.random.default_rng(seed)
    folders = []
    for number, level in enumerate(COG_LEVELS):
        task, run_id = f"cog-{level}-all", f"cog-mini-{level}-all-linear-probe-{features}-seed{seed}"
        folder = RunFolder(root / run_id)
        options = {"features": features, "levels": level, "shots": "all"}
        config = {"stream": "cog-mini", "learner": "linear-probe", "seed": seed, "eval_split": "test"}
        config |= {"learner_options": {"probe": "fast"}, "stream_options": options}
        key = {"uid": task, "name": task, "kind": "multi-class", "num_classes": classes, "year": None}
        key |= {"domain": "object", "occurrence": 0}
        stream = {"name": f"cog-mini:{features}:{level}:all", "tasks": [key], "eval_split": "test"}
        stream |= {"meta_test_from_year": None, "evaluation": "own", "metadata": {"suite": "cog", "encoder": features}}
        folder.write_json("run.json", {"run_id": run_id, "config": config, "seed": seed, "stream": stream})
        labels = np.repeat(np.arange(classes), 5)
        scores = rng.normal(size=(len(labels), classes))
        scores[np.arange(len(labels)), labels] += 3.0 - 0.4 * number
        error = float((scores.argmax(axis=1) != labels).mean())
        common = {"run_id": run_id, "task": task, "task_name": task, "task_index": 0, "after_task_index": 0}
        common |= {"task_kind": "multi-class", "year": None, "domain": "object", "occurrence": 0, "meta_test": True}
        train = {**common, "event": 0, "type": "train", "split": "train", "error": None, "num_items": 10 * classes}
        folder.append_record(train | {"train_flops": 1e6, "cumulative_train_flops": 1e6, "dev_curve": []})
        predict = {**common, "event": 1, "type": "predict", "split": "test", "error": error, "num_items": len(labels)}
        folder.append_record(predict | {"train_flops": 0.0, "cumulative_train_flops": 1e6})
        (folder.path / PREDICTIONS_DIR).mkdir()
        np.savez(folder.path / PREDICTIONS_DIR / predictions_file(predict), scores=scores, labels=labels)
        folder.write_json("summary.json", {"run_id": run_id, "events_done": 2, "events_total": 2})
        folders.append(folder.path)
    return folders
