"""Lifelong fact learning as a stream (docs/protocols/facts.md): facts split into tasks.

Every task is of kind "fact": its images are labelled with the index of their fact among ALL the stream's facts
(`class_names`, each a fact's text), its metadata holds its own facts (`task_facts`, the standard top-5's
candidates) and every fact's word vectors t(f) (`fact_vectors` [C, 3, d]). Images follow their fact: a task owns
every image of its facts, and tasks share no fact. After each task the learner predicts every task's test split
(the accuracy matrix R), and before the first one too (b, for forward transfer). The stream's metadata carries the
facts, their training images, the split and its balance, and the task similarity, for the fact metrics and report.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lifelong.core.datasets import ArrayDataset
from lifelong.core.streams import Stream, StreamTask, TaskSplits
from lifelong.core.tasks import TaskKey, TaskKind
from lifelong.facts.centring import centre_facts
from lifelong.facts.facts import Fact
from lifelong.facts.split_choice import AUTO, chosen_semantic_split
from lifelong.facts.splits import Split, balance_rows, encode_facts, random_split
from lifelong.facts.vectors import cached_part_vectors, fact_matrix
from lifelong.metrics.fact_analysis import task_similarity
from lifelong.metrics.fact_scores import TOP_K
from lifelong.suites.options import stream_flag

SPLIT_METHODS = ("semantic", "random")
# `-s preset=NAME` of the facts-mini stream: the defaults it gives these options (explicit -s options win); full is
# FactsMiniOptions' own, quick fewer training images of the same 186 facts (the same 16 test images a fact)
PRESET_SIZES: dict[str, dict[str, int]] = {"full": {"n_images": 28_624}, "quick": {"n_images": 12_000}}
Images = Callable[[str], tuple[np.ndarray, np.ndarray]]  # split name -> (uint8 images [N, H, W, 3], fact index [N])


class SmallFactTaskWarning(UserWarning):
    """A task of the split holds no more facts than K: its standard top-K is trivially 100%."""


def split_facts(
    facts: Sequence[Fact],
    part_vectors: Sequence[np.ndarray],
    part_ids: np.ndarray,
    method: str,
    tasks: int,
    images_per_fact: np.ndarray,
    linkage: str = AUTO,
    seed: int = 0,
    distance: str = AUTO,
    test_images_per_fact: np.ndarray | None = None,
) -> Split:
    """The facts split into `tasks` tasks: by meaning (agglomerative clustering under `distance` and `linkage`, "auto"
    choosing by the balance criterion of `lifelong.facts.split_choice`) or at random (most balanced of 100)."""
    if method == "semantic":
        return chosen_semantic_split(
            part_ids, part_vectors, tasks, images_per_fact, TOP_K, distance=distance, linkage=linkage
        )
    if method == "random":
        return random_split(
            len(facts), tasks, images_per_fact=images_per_fact, seed=seed, test_images_per_fact=test_images_per_fact
        )
    raise ValueError(f"unknown split method {method!r}; choose one of {SPLIT_METHODS}")


def fact_stream(
    name: str,
    facts: Sequence[Fact],
    split: Split,
    fact_vectors: np.ndarray,
    images: Images,
    train_images_per_fact: np.ndarray,
    *,
    eval_split: str = "test",
    resolution: int | None = None,
    metadata: dict | None = None,
    centre: bool = False,
) -> Stream:
    """A stream of `split.tasks` fact tasks; `images(split)` loads every image of a split (called once per split).

    `centre`: the authors' SUBMEAN, t(f) minus the mean over the stream's facts after zero padding
    (`lifelong.facts.centring`); the centred vectors are the learners' targets and candidates and the task
    similarity's input alike, and `fact_mask` (which parts each fact defines) travels beside them."""
    facts = [Fact(*f) for f in facts]
    fact_vectors = np.asarray(fact_vectors, dtype=np.float32)
    if fact_vectors.shape[:2] != (len(facts), 3):
        raise ValueError(f"fact_vectors must be [{len(facts)}, 3, d], got {fact_vectors.shape}")
    fact_mask = np.array([[part is not None for part in f] for f in facts], dtype=bool).reshape(len(facts), 3)
    if centre:
        fact_vectors = centre_facts(fact_vectors)
    load = functools.lru_cache(maxsize=2)(images)
    names = tuple(f.text for f in facts)
    tasks = []
    for t in range(split.tasks):
        owned = np.flatnonzero(split.task == t)
        if len(owned) == 0:
            raise ValueError(f"stream {name!r}: task {t} of the split has no facts")
        meta = {"task_facts": tuple(int(i) for i in owned), "fact_vectors": fact_vectors, "fact_mask": fact_mask}
        if resolution is not None:
            meta["resolution"] = resolution
        key = TaskKey(f"{name}-task{t}", TaskKind.FACT, len(facts), names, domain="object", metadata=meta)
        tasks.append(StreamTask(key, functools.partial(_task_splits, key, owned, load), source=name))
    facts_per_task = np.bincount(split.task, minlength=split.tasks)
    small = [(t, int(count)) for t, count in enumerate(facts_per_task) if count <= TOP_K]
    for t, count in small:
        warnings.warn(
            SmallFactTaskWarning(
                f"stream {name!r}: task {t} ({name}-task{t}) holds {count} fact(s), no more than K = {TOP_K}, so its "
                f"standard top-{TOP_K} is trivially 100% (every own fact is among the top {TOP_K}); read its "
                f"generalized top-{TOP_K}, or split into fewer tasks"
            ),
            stacklevel=2,
        )
    vectors_flat = fact_vectors.reshape(len(facts), -1)
    similarity = task_similarity(vectors_flat, split.task, facts)
    info = {
        "facts": [list(f) for f in facts],
        "fact_train_images": [int(n) for n in train_images_per_fact],
        "fact_task": [int(t) for t in split.task],
        "split": {
            "method": split.method,
            "linkage": split.linkage,
            "distance": split.distance,
            "seed": split.seed,
            "score": split.score,
            **{k: split.info[k] for k in ("criterion", "variants", "deviations") if k in split.info},
            "balance": balance_rows(split.task, split.tasks, np.asarray(train_images_per_fact)),
        },
        "small_tasks": [t for t, _ in small],
        "centred": bool(centre),
        "task_similarity": {k: np.asarray(v).tolist() for k, v in similarity.items() if k in ("cosine", "spo_overlap")},
        **(metadata or {}),
    }
    return Stream(name, tasks, eval_split=eval_split, evaluation="all", initial_evaluation=True, metadata=info)


def _task_splits(key: TaskKey, owned: np.ndarray, load: Images) -> TaskSplits:
    """The task's images: every train and test image whose fact it owns (dev empty; dev_test = test)."""
    parts = {}
    for split in ("train", "test"):
        images, labels = load(split)
        rows = np.flatnonzero(np.isin(labels, owned))
        if len(rows) == 0:
            raise ValueError(f"task {key.uid!r}: its facts have no {split} images")
        parts[split] = ArrayDataset(key, split, images[rows], labels[rows])
    empty = parts["train"].subset(np.zeros(0, dtype=np.int64), "dev")
    test = parts["test"]
    dev_test = ArrayDataset(key, "dev_test", test.images, test.labels())
    return TaskSplits(parts["train"], empty, dev_test, test, notes={"split": "official"})


def vectors_for(
    facts: Sequence[Fact], vectors_path: str | os.PathLike | None = None, oov: str = "error"
) -> tuple[np.ndarray, list, np.ndarray]:
    """(part ids [C, 3], part vectors (one array per part), t(f) as [C, 3, d]) from a word-vector file, or from the
    offline sentence model without one; cached per vocabulary (`lifelong.facts.vectors.cached_part_vectors`)."""
    if vectors_path is None:
        require_sentence_model("or pass -s vectors=FILE (word2vec text/binary or GloVe) to use word vectors instead")
    part_ids, vocabularies = encode_facts(facts)
    parts, _ = cached_part_vectors(vocabularies, vectors_path, oov=oov)
    return part_ids, list(parts), fact_matrix(part_ids, parts).reshape(len(facts), 3, -1)


def require_sentence_model(instead: str) -> None:
    """Unless the offline sentence model (the `[text]` extra) is installed, raise TextModelMissingError (a ValueError)
    saying how to install it, then `instead`: what works without it, in the command's words."""
    from lifelong.concepts import text_similarity

    try:
        text_similarity.model_id()  # a light import of the model package: is it installed?
    except ImportError:
        raise text_similarity.TextModelMissingError(
            "fact vectors without a word-vector file come from the offline sentence model of the optional extra "
            f"[text], which is not installed: {text_similarity.INSTALL_HINT}; {instead}"
        ) from None


__all__ = ["SPLIT_METHODS", "fact_stream", "require_sentence_model", "split_facts", "vectors_for"]


def preset_options(preset: str | None, options: dict[str, Any]) -> dict[str, Any]:
    """`options` (facts-mini's -s options for FactsMiniOptions) with `preset`'s sizes for those not given (None:
    full); a ValueError in CLI words for an unknown preset."""
    name = "full" if preset is None else str(preset)
    if name not in PRESET_SIZES:
        raise ValueError(f"-s preset={preset}: unknown preset; give {' or '.join(PRESET_SIZES)}")
    return {**PRESET_SIZES[name], **options}


def facts_mini(
    data_root=None,
    allow_missing=None,
    eval_split="dev_test",
    skip_corrupt=None,
    split="semantic",
    tasks=4,
    linkage="auto",
    split_seed=0,
    distance="auto",
    centre=False,
    preset=None,
    **options,
):
    """offline lifelong fact learning on emoji compositions: 186 facts, 4 tasks, split=semantic|random"""
    from lifelong.data.sources.facts_mini import (
        FactsMiniOptions,
        check_artwork,
        load_facts_mini,
        plan_counts,
        plan_facts,
        shipped_vectors_path,
    )

    options = preset_options(preset, options)  # -s preset=quick|full: sizes, unless given
    opts = FactsMiniOptions(**{k: type(getattr(FactsMiniOptions(), k))(v) for k, v in options.items()})
    if allow_missing is not None:  # a run (None: `lifelong streams` lists it): no artwork, no run folder
        check_artwork(opts)
    facts = plan_facts(opts)
    counts = plan_counts(opts, len(facts))
    part_ids, part_vectors, vectors = vectors_for(facts, shipped_vectors_path())
    test_counts = np.full(len(facts), opts.test_per_fact, dtype=np.int64)
    chosen = split_facts(
        facts,
        part_vectors,
        part_ids,
        str(split),
        int(tasks),
        counts,
        str(linkage),
        int(split_seed),
        str(distance),
        test_counts,
    )

    def images(which: str) -> tuple[np.ndarray, np.ndarray]:
        data = load_facts_mini(opts, data_root=data_root)
        return (data.train_images, data.train_facts) if which == "train" else (data.test_images, data.test_facts)

    name = f"facts-mini-{split}"
    return fact_stream(
        name,
        facts,
        chosen,
        vectors,
        images,
        counts,
        eval_split=eval_split,
        resolution=opts.size,
        centre=stream_flag(centre, "centre"),
    )
