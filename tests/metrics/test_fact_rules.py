"""The authors' top-K rule and both rules' chance levels in a fact task's record and in the run's fact metrics."""

from __future__ import annotations

import numpy as np
import pytest

from lifelong.core.tasks import TaskKey, TaskKind
from lifelong.facts.facts import parse_fact
from lifelong.facts.topk import topk_chance, topk_correct
from lifelong.metrics.fact_metric import FactMetrics
from lifelong.metrics.fact_scores import fact_record

FACTS = ("<lion>", "<lion, eating>", "<lion, eating, meat>", "<lion, *, meat>", "<tiger, jumping>", "<zebra>")
FACTS += ("<zebra, running>", "<tiger>")


def task() -> TaskKey:
    meta = {"task_facts": [0, 1, 2, 3, 5, 6]}
    return TaskKey("facts-t0", TaskKind.MULTI_CLASS, len(FACTS), FACTS, metadata=meta)


def test_the_record_counts_both_rules_and_their_chance():
    rng = np.random.default_rng(0)
    labels = np.array([0, 1, 2, 3, 5, 6] * 5)
    scores = rng.normal(size=(len(labels), len(FACTS)))
    record = fact_record(task(), labels, scores)
    facts = [parse_fact(f) for f in FACTS]
    truths = [facts[i] for i in labels]
    owned = [0, 1, 2, 3, 5, 6]
    own = [facts[i] for i in owned]
    assert record["fact_generalized_correct_authors"] == topk_correct(scores, facts, truths, 5, "authors").sum()
    assert record["fact_standard_correct_authors"] == topk_correct(scores[:, owned], own, truths, 5, "authors").sum()
    assert record["fact_generalized_chance"] == pytest.approx(topk_chance(facts, truths, 5).sum())
    assert record["fact_standard_chance_authors"] == pytest.approx(topk_chance(own, truths, 5, "authors").sum())
    assert record["fact_generalized_correct"] == topk_correct(scores, facts, truths, 5).sum()  # ours unchanged

    metrics = FactMetrics(num_tasks=1)
    state = metrics.add(
        metrics.init(), {**record, "type": "predict", "after_task_index": 0, "task_index": 0, "num_items": len(labels)}
    )
    summary = metrics.compute(state)
    n = len(labels)
    assert summary["fact_generalized_mean_over_examples_authors"] == pytest.approx(
        record["fact_generalized_correct_authors"] / n
    )
    assert summary["fact_generalized_chance_over_examples"] == pytest.approx(record["fact_generalized_chance"] / n)
    assert 0 < summary["fact_generalized_chance_over_examples"] < summary["fact_standard_chance_over_examples"] <= 1

    old = {k: v for k, v in record.items() if "authors" not in k and "chance" not in k}  # a record from before
    state = metrics.add(
        metrics.init(), {**old, "type": "predict", "after_task_index": 0, "task_index": 0, "num_items": n}
    )
    summary = metrics.compute(state)
    assert "fact_generalized_mean_over_examples_authors" not in summary
    assert summary["fact_generalized_mean_over_examples"] == pytest.approx(record["fact_generalized_correct"] / n)


def test_the_summary_sums_training_steps_and_keeps_each_fits_final_loss_and_ending():
    metric = FactMetrics(2)
    state = metric.init()
    fits = [(0, 120, [0.9, 0.5, 0.41], "converged"), (1, 300, [0.8, 0.6], "cap")]
    for task, steps, losses, stopped in fits:
        record = {"type": "train", "task_index": task, "train_steps": steps, "train_losses": losses}
        state = metric.add(state, {**record, "stopped": stopped})
    state = metric.add(state, {"type": "train", "task_index": 1, "train_steps": 0})  # a learner that reports none
    out = metric.compute(state)
    assert out["fact_train_steps"] == 420
    assert out["fact_train_final_losses"] == [0.41, 0.6]
    assert out["fact_train_capped"] == 1
