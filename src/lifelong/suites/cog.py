"""ImageNet-CoG as a stream: one probe task per (level, shots) over frozen features
(docs/protocols/cog.md#linear-probe).

Features are extracted beforehand (`lifelong cog run` does it; extraction needs torch, which suites never import)
into a features set, a folder laid out as

    cog.json                  format, dataset, encoder, and the levels in order: name, wnids (label k = wnids[k])
    <level>/<split>/          one features folder (`lifelong.data.feature_files`) per level and split (train,
                              test): features.npy [rows, D] float16, labels.npy [rows] int64, manifest.json

This module reads them with numpy alone, memory-mapped: a level never has to fit in memory. A task's `train`
split holds every training row (the probe makes its own stratified 20% validation split), `dev` is empty, and
`dev_test` and `test` are both the level's test rows (CoG has no development test split). Few-shot tasks carry
`shots` in their metadata: the learner draws the shots per seed, as the protocol draws them from the 80% split.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lifelong.core.datasets import ArrayDataset
from lifelong.core.errors import LifelongError
from lifelong.core.seeds import derive_seed
from lifelong.core.streams import Stream, StreamTask, TaskSplits
from lifelong.core.suggest import did_you_mean
from lifelong.core.tasks import TaskKey, TaskKind
from lifelong.data.feature_files import FeatureFileError, load_features
from lifelong.data.roots import resolve_data_root

FORMAT = "lifelong-cog-features-v1"
INDEX_FILE = "cog.json"
FEATURES_DIR = "cog-features"  # features sets named (not given as paths) live in <data root>/cog-features/<name>
SPLITS = ("train", "test")
ALL = "all"
SEEN = "seen"
SEEN_DRAWS = 5  # seeded draws of the seen concepts, each as many as the largest unseen level (0: the whole set)
_DRAW_TAG = 7919  # derive_seed tag of the seen draws


class CogFeaturesError(LifelongError, FileNotFoundError):
    """A features set that is missing, unfinished or inconsistent; the message says how to (re)make it."""


def features_root(data_root: str | os.PathLike | None = None) -> Path:
    """Where named features sets live: `<data root>/cog-features`."""
    return resolve_data_root(data_root) / FEATURES_DIR


def resolve_features(features: str | os.PathLike, data_root: str | os.PathLike | None = None) -> Path:
    """The folder of a features set given by name (under `features_root`) or by path."""
    text = os.fspath(features)
    path = Path(text) if (os.sep in text or "/" in text) else features_root(data_root) / text
    if not (path / INDEX_FILE).is_file():
        raise CogFeaturesError(
            f"no CoG features set at {str(path)!r} ({INDEX_FILE} missing); make one with "
            "`lifelong cog run --encoder FILE` (it extracts the features first), or pass -s features=DIR"
        )
    return path


def read_index(folder: str | os.PathLike) -> dict[str, Any]:
    """The features set's cog.json (checked: format and levels)."""
    path = Path(folder) / INDEX_FILE
    try:
        index = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CogFeaturesError(f"cannot read {path} ({exc}); extract the features again") from exc
    if index.get("format") != FORMAT or not index.get("levels"):
        raise CogFeaturesError(f"{path} is not a CoG features index (format {index.get('format')!r}, want {FORMAT!r})")
    return index


def read_split(folder: str | os.PathLike, level: str, split: str) -> tuple[np.ndarray, np.ndarray]:
    """(features [rows, D] as stored, memory-mapped read-only; int64 labels [rows]) of one level and split.

    Nothing but the labels is read into memory: the probes gather rows from the memmap batch by batch.
    """
    where = Path(folder) / level / split
    try:
        features, labels, _ = load_features(where)
    except (FileNotFoundError, FeatureFileError) as exc:
        raise CogFeaturesError(
            f"the {split} features of level {level!r} are not usable ({exc}); run `lifelong cog run` again to "
            "finish or redo the extraction"
        ) from exc
    return features, labels


def parse_shots(shots: str | int | Sequence[str | int] | None) -> list[int | None]:
    """'all,1,8' (or a list) -> [None, 1, 8]; None means every training row."""
    if shots is None:
        return [None]
    items = shots.split(",") if isinstance(shots, str) else [shots] if isinstance(shots, int) else list(shots)
    out: list[int | None] = []
    for item in items:
        text = str(item).strip()
        if text == ALL:
            out.append(None)
            continue
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise ValueError(f"shots {text!r} is neither 'all' nor a positive integer; give e.g. all,1,2,4,8")
        out.append(value)
    if len(set(out)) != len(out):
        raise ValueError(f"shots {','.join(str(i) for i in items)} repeat a value; give each once")
    return out


def level_name(value: str | int) -> str:
    """'1' or 1 -> 'L1'; 'seen', 'L3' stay as they are."""
    text = str(value).strip()
    return f"L{text}" if text.isdigit() else text


def level_label(level: str) -> str:
    """How a level reads in progress bars and messages: 'L1' -> 'level 1', 'seen' -> 'seen'."""
    return f"level {level[1:]}" if level[:1] == "L" and level[1:].isdigit() else level


def _typed(level: str) -> str:
    """'L1' -> '1' (as `--levels` takes it); other names as they are."""
    return level[1:] if level[:1] == "L" and level[1:].isdigit() else level


def parse_levels(levels: str | Sequence[str | int] | None, known: Sequence[str]) -> list[str]:
    """'seen,1,2' (or a list) -> ['seen', 'L1', 'L2'], checked against the known levels (unknown: did you mean)."""
    if levels is None:
        return list(known)
    items = levels.split(",") if isinstance(levels, str) else list(levels)
    names = [level_name(item) for item in items if str(item).strip()]
    typed = [_typed(k) for k in known]  # as a user types them: seen, 1, 2, ...
    if not names:
        raise ValueError(f"no level given; choose among {', '.join(typed)}")
    for name in names:
        if name not in known:
            word = _typed(name)
            raise ValueError(f"unknown level {word!r}{did_you_mean(word, typed)}; choose among {', '.join(typed)}")
    return list(dict.fromkeys(names))


def task_name(level: str, shots: int | None) -> str:
    """'cog-L1-all', 'cog-L1-8shot'."""
    return f"cog-{level}-{ALL if shots is None else f'{shots}shot'}"


def cog_stream(
    features: str | os.PathLike | None = None,
    *,
    levels: str | Sequence[str | int] | None = None,
    shots: str | int | Sequence[str | int] | None = ALL,
    data_root: str | os.PathLike | None = None,
    eval_split: str = "test",
    name: str = "cog",
    seen_draws: int | str = SEEN_DRAWS,
) -> Stream:
    """The CoG stream of a features set: tasks level by level (in the set's order), each level with every `shots`.

    The seen level, when it holds more concepts than the set's largest unseen level, is probed as `seen_draws`
    seeded draws of that many concepts (tasks cog-seen-d1-all, ...), so that seen and levels are compared at the
    same number of classes; `seen_draws=0` probes the whole seen set.
    """
    if features is None:
        raise CogFeaturesError(
            f"stream {name!r} needs a features set: run `lifelong cog run --encoder FILE` (it extracts features and "
            "runs this stream), or pass -s features=NAME|DIR of a set it made"
        )
    folder = resolve_features(features, data_root)
    index = read_index(folder)
    by_name = {level["name"]: level for level in index["levels"]}
    tasks = []
    try:
        chosen = parse_levels(levels, list(by_name))
    except ValueError as exc:
        raise ValueError(f"{exc} (the set's levels; `lifelong cog run --levels` extracts others)") from None
    counts = parse_shots(shots)
    draws = _seen_draws(by_name, int(seen_draws)) if SEEN in chosen else {}
    for level in chosen:
        groups = draws if level == SEEN and draws else {level: None}
        for task_level, chosen_labels in groups.items():
            all_wnids = tuple(by_name[level]["wnids"])
            wnids = all_wnids if chosen_labels is None else tuple(all_wnids[i] for i in chosen_labels)
            for count in counts:
                meta = {"suite": "cog", "level": task_level, "shots": count, "features": str(folder)}
                key = TaskKey(
                    task_name(task_level, count),
                    TaskKind.MULTI_CLASS,
                    len(wnids),
                    wnids,
                    domain="object",
                    metadata=meta,
                )
                loader = _loader(folder, level, key, chosen_labels)
                tasks.append(StreamTask(key, loader, source=f"{folder}/{level}"))
    metadata = {
        "suite": "cog",
        "dataset": index.get("dataset"),
        "encoder": index.get("encoder", {}).get("name"),
        "features": str(folder),
    }
    # the name says which features, levels and shots: runs of one name are seeds of one experiment
    shots_text = "+".join(ALL if c is None else str(c) for c in counts)
    label = f"{name}:{folder.name}:{'+'.join(chosen)}:{shots_text}"
    return Stream(label, tasks, eval_split=eval_split, metadata=metadata)


def _seen_draws(by_name: dict[str, dict], draws: int) -> dict[str, np.ndarray]:
    """{'seen-d1': label indices, ...}: `draws` seeded draws (sorted labels) of as many seen concepts as the
    largest unseen level; empty when there is no need (no draw asked, or the seen set is not larger)."""
    if draws < 0:
        raise ValueError(f"seen_draws is {draws}; give 0 (the whole seen set) or a number of draws")
    seen = len(by_name[SEEN]["wnids"])
    sizes = [len(level["wnids"]) for name, level in by_name.items() if name != SEEN]
    size = max(sizes, default=seen)
    if draws == 0 or size >= seen:
        return {}
    return {
        f"{SEEN}-d{k}": np.sort(np.random.default_rng(derive_seed(_DRAW_TAG, k)).choice(seen, size, replace=False))
        for k in range(1, draws + 1)
    }


def _loader(folder: Path, level: str, key: TaskKey, chosen_labels: np.ndarray | None = None):
    def load() -> TaskSplits:
        train_x, train_y = read_split(folder, level, "train")
        test_x, test_y = read_split(folder, level, "test")
        if chosen_labels is not None:  # a draw of the level's concepts: their rows, labels renumbered 0..k-1
            train_x, train_y = _only(train_x, train_y, chosen_labels)
            test_x, test_y = _only(test_x, test_y, chosen_labels)
        if train_x.shape[1] != test_x.shape[1]:
            raise CogFeaturesError(
                f"level {level!r}: train features are {train_x.shape[1]}-d, test {test_x.shape[1]}-d"
            )
        test = ArrayDataset(key, "test", test_x, test_y)
        return TaskSplits(
            train=ArrayDataset(key, "train", train_x, train_y),
            dev=ArrayDataset(key, "dev", np.zeros((0, train_x.shape[1]), train_x.dtype), np.zeros(0, np.int64)),
            dev_test=ArrayDataset(key, "dev_test", test_x, test_y),
            test=test,
            notes={"dev_test": "CoG has no development test split: dev_test is the test split"},
        )

    return load


def _only(features: np.ndarray, labels: np.ndarray, chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows whose label is in `chosen` (sorted), labels renumbered to their position in `chosen`."""
    rows = np.flatnonzero(np.isin(labels, chosen))
    return features[rows], np.searchsorted(chosen, labels[rows]).astype(np.int64)


def cog(features=None, data_root=None, eval_split="test", skip_corrupt=None, allow_missing=None, **options) -> Stream:
    """ImageNet-CoG probe tasks over a features set (-s features=NAME|DIR, levels=seen,1,2, shots=all,1,8)"""
    return cog_stream(features, data_root=data_root, eval_split=eval_split, **options)


def cog_mini(features=None, data_root=None, eval_split="test", skip_corrupt=None, allow_missing=None, **options):
    """offline ImageNet-CoG on emoji artwork: seen + L1..L5 probe tasks (features from `lifelong cog run`)"""
    stream = cog_stream(features, data_root=data_root, eval_split=eval_split, name="cog-mini", **options)
    dataset = stream.metadata.get("dataset")  # the name stays cog-mini:<features>:<levels>:<shots>
    if dataset != "cog-mini":
        raise CogFeaturesError(
            f"features set {features!r} was extracted from {dataset!r}, not cog-mini: use --stream cog"
        )
    return stream


def base_level(level: str) -> str:
    """The level a task level belongs to: 'seen-d3' (a draw of the seen concepts) -> 'seen'; others unchanged."""
    stem, _, draw = level.rpartition("-d")
    return stem if stem == SEEN and draw.isdigit() else level


def split_task_name(name: str) -> tuple[str, str]:
    """'cog-L1-8shot' -> ('L1', '8'); 'cog-seen-all' -> ('seen', 'all')."""
    if not name.startswith("cog-") or name.count("-") < 2:
        raise ValueError(f"{name!r} is not a CoG task name (cog-<level>-<all|Nshot>)")
    level, _, shots = name[4:].rpartition("-")
    return level, shots.removesuffix("shot")
