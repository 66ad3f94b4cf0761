"""One evaluation of a fact task (docs/protocols/facts.md#top-k-correctness): standard and generalized top-K, per fact.

A fact task's learner scores every fact of the stream ([N, C], C = len(task.class_names), each class name a
fact's text). Generalized top-K takes all C facts as candidates; standard top-K only the task's own facts
(`task.metadata["task_facts"]`, indices into the C). Both are wildcard-aware (`lifelong.facts.topk_correct`).
The record keeps per-fact counts so that every breakdown (long tail, few-shot, compositional) can be recomputed
from the records alone.
"""

from __future__ import annotations

import functools

import numpy as np

from lifelong.core.tasks import TaskKey
from lifelong.facts.facts import Fact, parse_fact
from lifelong.facts.topk import topk_chance, topk_correct

TOP_K = 5  # K of the paper's top-K accuracies, everywhere


@functools.lru_cache(maxsize=8)
def _facts(class_names: tuple[str, ...]) -> tuple[Fact, ...]:
    return tuple(parse_fact(name, where=f"fact class {i}: ") for i, name in enumerate(class_names))


@functools.lru_cache(maxsize=64)
def _chance_fields(class_names: tuple[str, ...], owned: bytes, labels: bytes, k: int) -> tuple[tuple[str, float], ...]:
    """Expected hits of a random ranking, standard and generalized, under both rules. They depend on the task's
    facts and items alone, not on the scores, so a task evaluated after every training task computes them once."""
    facts = _facts(class_names)
    truths = [facts[i] for i in np.frombuffer(labels, dtype=np.int64)]
    own_facts = [facts[i] for i in np.frombuffer(owned, dtype=np.int64)]
    fields = []
    for rule, suffix in (("strict", ""), ("authors", "_authors")):
        fields.append(
            (f"fact_standard_chance{suffix}", float(topk_chance(own_facts, truths, min(k, len(own_facts)), rule).sum()))
        )
        fields.append(
            (f"fact_generalized_chance{suffix}", float(topk_chance(facts, truths, min(k, len(facts)), rule).sum()))
        )
    return tuple(fields)


def task_facts(task: TaskKey) -> np.ndarray:
    """Indices (into the stream's facts) of the facts `task` owns, from its metadata; a ValueError without them."""
    owned = task.metadata.get("task_facts")
    if owned is None or len(owned) == 0:
        raise ValueError(f"fact task {task.uid!r} has no metadata['task_facts'] (the indices of its own facts)")
    owned = np.asarray(owned, dtype=np.int64)
    if owned.min() < 0 or owned.max() >= task.num_classes:
        raise ValueError(f"fact task {task.uid!r}: task_facts must index its {task.num_classes} facts")
    return owned


def fact_record(task: TaskKey, labels: np.ndarray, scores: np.ndarray, k: int = TOP_K) -> dict:
    """Record fields of one evaluation: `error` = 1 - generalized top-K, the correct counts, and per-fact counts.

    `fact_items` lists [fact index, items, standard correct, generalized correct] for every fact with items.
    Standard top-K uses min(K, the task's facts) candidates (`fact_standard_k`). The `..._authors` counts use the
    authors' top-K rule (`topk_correct(rule="authors")`); the `..._chance` fields are the expected hits of a random
    ranking under each rule (`topk_chance`).
    """
    labels = np.asarray(labels, dtype=np.int64)
    scores = np.asarray(scores)
    if len(labels) == 0:
        raise ValueError(f"fact task {task.uid!r}: nothing to evaluate (no items)")
    facts = _facts(tuple(task.class_names))
    truths = [facts[i] for i in labels]
    generalized_k = min(k, len(facts))
    generalized = topk_correct(scores, facts, truths, k=generalized_k)
    owned = task_facts(task)
    standard_k = min(k, len(owned))
    own_facts = [facts[i] for i in owned]
    standard = topk_correct(scores[:, owned], own_facts, truths, k=standard_k)
    by_rule = {  # the authors' rule beside ours, and both rules' chance (expected hits under a random ranking)
        "fact_standard_correct_authors": int(
            topk_correct(scores[:, owned], own_facts, truths, k=standard_k, rule="authors").sum()
        ),
        "fact_generalized_correct_authors": int(
            topk_correct(scores, facts, truths, k=generalized_k, rule="authors").sum()
        ),
        **dict(_chance_fields(tuple(task.class_names), owned.tobytes(), labels.tobytes(), k)),
    }
    fact_ids, inverse = np.unique(labels, return_inverse=True)
    items = np.bincount(inverse, minlength=len(fact_ids))
    std = np.bincount(inverse, weights=standard, minlength=len(fact_ids))
    gen = np.bincount(inverse, weights=generalized, minlength=len(fact_ids))
    return {
        "error": 1.0 - float(generalized.mean()),
        "fact_k": int(k),
        "fact_standard_k": int(standard_k),
        "fact_standard_correct": int(standard.sum()),
        "fact_generalized_correct": int(generalized.sum()),
        "fact_items": [[int(f), int(n), int(s), int(g)] for f, n, s, g in zip(fact_ids, items, std, gen, strict=True)],
        **by_rule,
    }


__all__ = ["TOP_K", "fact_record", "task_facts"]
