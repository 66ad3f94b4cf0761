"""`facts`: lifelong fact learning on any fact-annotated image folder (docs/protocols/facts.md).

The images and facts come from CSV manifests (`lifelong.data.sources.fact_manifest`: the toolkit's S,P,O,image,split
layout or the authors' released manifests); the stream is built exactly as `facts-mini`'s (`suites.facts`). The facts
split into tasks by meaning (semantic), at random (random, seeded), as a saved SPLIT.csv says (a path; see `lifelong
facts split`), or, for the authors' task folders, as the authors split them (authors); the last two carry their own
task count (`tasks` is for semantic and random).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from lifelong.core.streams import Stream
from lifelong.data.roots import resolve_data_root
from lifelong.facts.facts import Fact
from lifelong.facts.splits import Split, balance_rows, load_split
from lifelong.suites.facts import SPLIT_METHODS, fact_stream, split_facts, vectors_for
from lifelong.suites.options import stream_flag

AUTHORS_SPLIT = "authors"


def _resolve(path: str | os.PathLike | None, data_root, what: str) -> Path | None:
    """A path as given when it exists, else under the data root when it exists there; else an error naming both."""
    if path is None:
        return None
    given = Path(os.fspath(path)).expanduser()
    if given.exists() or given.is_absolute():
        return given
    under = resolve_data_root(data_root) / given
    if under.exists():
        return under
    raise FileNotFoundError(f"{what} {str(given)!r} not found (nor under the data root, as {under})")


def saved_split(path: Path, facts: list[Fact], images_per_fact: np.ndarray) -> Split:
    """The tasks of `facts` as a saved SPLIT.csv assigns them; every fact must be in it."""
    split, listed = load_split(path)
    task_of = {Fact(*f): int(t) for f, t in zip(listed, split.task, strict=True)}
    missing = [f for f in facts if f not in task_of]
    if missing:
        raise ValueError(
            f"{len(missing)} fact(s) of the data are not in the split {path}, the first {missing[0].text}; write the "
            "split from these facts (lifelong facts split FACTS.csv --out SPLIT.csv) or use split=semantic|random"
        )
    task = np.array([task_of[f] for f in facts], dtype=np.int64)
    balance = balance_rows(task, split.tasks, images_per_fact)
    info = {**split.info, "file": str(path), "facts_not_in_data": len(task_of) - len(facts)}
    return Split(task, split.tasks, split.method, split.linkage, split.seed, split.score, balance, info)


def authors_split(fact_task: np.ndarray | None, images_per_fact: np.ndarray, source: Path) -> Split:
    """The authors' tasks (their B<b> files) as a Split."""
    if fact_task is None:
        raise ValueError(
            f"split={AUTHORS_SPLIT} needs the authors' task folder (splits/<T>tasks_<split>/ with B<b>_*.csv); "
            f"{source} gives no tasks: use split=semantic|random or a SPLIT.csv"
        )
    tasks = int(fact_task.max()) + 1
    return Split(fact_task, tasks, AUTHORS_SPLIT, balance=balance_rows(fact_task, tasks, images_per_fact))


def facts(
    data_root=None,
    allow_missing=None,
    eval_split="dev_test",
    skip_corrupt=None,
    facts=None,
    test=None,
    images=None,
    vectors=None,
    split="semantic",
    tasks=4,
    linkage="auto",
    split_seed=0,
    distance="auto",
    centre=False,
    oov="error",
    resolution=64,
    layout="auto",
    fact_table=None,
    unseen_test="error",
) -> Stream:
    """lifelong fact learning on your images: -s facts=FACTS.csv (S,P,O,image,split) or the authors' manifests"""
    from lifelong.data.sources.fact_manifest import load_fact_manifest

    if facts is None:  # FileNotFoundError: `lifelong streams` lists it as a stream without data
        raise FileNotFoundError(
            "the facts stream needs its data: -s facts=FACTS.csv (columns S,P,O,image,split; image paths relative "
            "to the CSV's folder or -s images=DIR), or the authors' splits/<T>tasks_<split>/ folder"
        )
    source = _resolve(facts, data_root, "facts file")
    manifest = load_fact_manifest(
        source,
        _resolve(test, data_root, "test file"),
        images=_resolve(images, data_root, "images folder"),
        layout=str(layout),
        resolution=int(resolution),
        skip_corrupt=bool(skip_corrupt),
        fact_table=_resolve(fact_table, data_root, "facts table"),
        unseen_test=str(unseen_test),
    )
    counts = manifest.images_per_fact("train")
    part_ids, part_vectors, fact_vectors = vectors_for(
        manifest.facts, _resolve(vectors, data_root, "word-vector file"), str(oov)
    )
    split = str(split)
    if split in SPLIT_METHODS:
        chosen = split_facts(
            manifest.facts,
            part_vectors,
            part_ids,
            split,
            int(tasks),
            counts,
            str(linkage),
            int(split_seed),
            str(distance),
            manifest.images_per_fact("test"),
        )
        label = split
    elif split == AUTHORS_SPLIT:
        chosen, label = authors_split(manifest.fact_task, counts, source), split
    elif split.endswith(".csv") or Path(split).exists():
        path = _resolve(split, data_root, "split file")
        chosen, label = saved_split(path, manifest.facts, counts), path.stem
    else:
        raise ValueError(f"unknown split {split!r}; give semantic, random, {AUTHORS_SPLIT} or a saved SPLIT.csv path")
    name = f"facts-{source.stem}-{label}"
    notes = {"source": {"facts": str(source), "layout": manifest.layout, "vectors": str(vectors or "sentence model")}}
    return fact_stream(
        name,
        manifest.facts,
        chosen,
        fact_vectors,
        manifest.images,
        counts,
        eval_split=eval_split,
        resolution=manifest.resolution,
        metadata=notes,
        centre=stream_flag(centre, "centre"),
    )


__all__ = ["AUTHORS_SPLIT", "authors_split", "facts", "saved_split"]
