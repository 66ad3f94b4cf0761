"""The fact-embedding learners: masked distance loss, cosine scoring, MAS, runs over a small fact stream."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest
import torch
from sklearn.metrics.pairwise import cosine_similarity

from lifelong import testing
from lifelong.facts.facts import Fact
from lifelong.facts.splits import random_split
from lifelong.learners.fact_embedding import (
    FactDistanceLoss,
    FactJointLearner,
    FactLearner,
    FactMASLearner,
    cosine_scores,
    fact_space,
)
from lifelong.learners.penalties import output_sensitivity
from lifelong.run.environment import run
from lifelong.suites.facts import fact_stream
from lifelong.training.continual_loop import model_inputs
from lifelong.training.models import make_model

FACTS = [
    Fact("cat"),
    Fact("dog"),
    Fact("ball"),
    Fact("cat", "red"),
    Fact("dog", "red"),
    Fact("ball", "blue"),
    Fact("cat", "above", "ball"),
    Fact("dog", "above", "cat"),
    Fact("ball", "left", "dog"),
    Fact("cat", "left", "dog"),
]
DIM = 6


def _vectors() -> np.ndarray:
    rng = np.random.default_rng(0)
    words = sorted({w for f in FACTS for w in f if w is not None})
    table = {w: rng.normal(size=DIM).astype(np.float32) for w in words}
    out = np.zeros((len(FACTS), 3, DIM), dtype=np.float32)
    for i, fact in enumerate(FACTS):
        for part, word in enumerate(fact):
            if word is not None:
                out[i, part] = table[word]
    return out


def _images(split: str) -> tuple[np.ndarray, np.ndarray]:
    """Per fact a fixed colour pattern plus noise; 12 train and 4 test images per fact, ordered by fact."""
    rng = np.random.default_rng(1 if split == "train" else 2)
    per = 12 if split == "train" else 4
    patterns = np.random.default_rng(0).integers(0, 256, size=(len(FACTS), 4, 4, 3))
    labels = np.repeat(np.arange(len(FACTS)), per)
    base = np.kron(patterns[labels], np.ones((1, 4, 4, 1))).astype(float)
    images = np.clip(base + rng.normal(0, 20, size=base.shape), 0, 255).astype(np.uint8)
    return images, labels


def make_stream(seed: int = 0, split_seed: int = 0, tasks: int = 2, centre: bool = False):
    counts = np.full(len(FACTS), 12)
    split = random_split(len(FACTS), tasks, images_per_fact=counts, seed=split_seed)
    return fact_stream("toy-facts", FACTS, split, _vectors(), _images, counts, resolution=16, centre=centre)


FAST = {"epochs": 2, "batch_size": 16, "resolution": 16, "lr": 0.05}  # the default model: a frozen Lite0 trunk
CNN = {**FAST, "encoder": "none"}  # the small CNN trained from scratch, on the images themselves


def test_loss_sums_defined_parts_and_masks_undefined_ones():
    targets = _vectors()
    mask = np.abs(targets).sum(-1) > 0
    loss = FactDistanceLoss(targets, mask)
    labels = torch.tensor([0, 3, 6, 9])
    outputs = torch.randn(4, 3 * DIM, requires_grad=True)
    value = loss(outputs, labels)
    direct = 0.0
    for row, label in enumerate(labels.tolist()):
        for part in range(3):
            if mask[label, part]:
                diff = outputs[row, part * DIM : (part + 1) * DIM].detach().numpy() - targets[label, part]
                direct += np.sqrt((diff**2).sum())
    assert value.item() == pytest.approx(direct / 4, rel=1e-5)
    value.backward()
    assert torch.all(outputs.grad[0, DIM:] == 0)  # <cat>: P and O are unknown, never pulled anywhere
    assert torch.all(outputs.grad[1, 2 * DIM :] == 0)  # <cat, red>: O unknown
    assert torch.any(outputs.grad[2] != 0)


def test_cosine_scores_match_scikit_learn():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(7, 9)), rng.normal(size=(5, 9))
    np.testing.assert_allclose(cosine_scores(a, b), cosine_similarity(a, b), rtol=1e-5, atol=1e-6)


def test_mas_importance_is_the_mean_absolute_gradient_of_the_squared_output_norm():
    model = make_model("resnet_mini", 3, seed=0)
    items = np.random.default_rng(0).integers(0, 256, size=(3, 16, 16, 3), dtype=np.uint8)
    omega, flops = output_sensitivity(model, items, lambda x: model_inputs(x), chunk=2)
    model.eval()
    expected = {k: torch.zeros_like(p) for k, p in model.named_parameters()}
    for item in items:
        model.zero_grad()
        model(model_inputs(item[None])).square().sum().backward()
        for k, p in model.named_parameters():
            expected[k] += p.grad.abs() / len(items)
    for k in expected:
        torch.testing.assert_close(omega[k], expected[k], rtol=1e-4, atol=1e-6)
    assert flops > 0


def test_fact_learner_passes_the_protocol_checks():
    summary = testing.check_learner(FactMASLearner(**FAST), stream=make_stream)  # raises listing failed rules
    assert summary["fact_generalized_mean_over_tasks"] is not None


def test_a_fact_run_reports_standard_and_generalized_top5_and_transfer():
    stream = make_stream()
    result = run(FactLearner(**FAST), stream, seed=0)
    summary = result.summary
    tasks = len(stream.tasks)
    assert len(result.records) == tasks + tasks + tasks * tasks  # b, then per task: train + every task
    assert sum(r.get("after_task_index") == -1 for r in result.records) == tasks
    for key in ("fact_standard_mean_over_tasks", "fact_generalized_mean_over_examples", "fact_bwt", "fact_fwt"):
        assert summary[key] is not None
    assert summary["fact_standard_mean_over_tasks"] >= summary["fact_generalized_mean_over_tasks"]
    assert summary["num_evaluated_tasks"] == tasks * tasks  # the untrained evaluations do not count in E


def test_joint_gives_identical_generalized_accuracy_on_two_different_splits():
    """The union of test examples is the same and Joint's last model trains on the same union: the paper's identity."""
    a, b = make_stream(split_seed=0), make_stream(split_seed=5)
    assert [t.key.metadata["task_facts"] for t in a.tasks] != [t.key.metadata["task_facts"] for t in b.tasks]
    first = run(FactJointLearner(**FAST), a, seed=1).summary
    second = run(FactJointLearner(**FAST), b, seed=1).summary
    assert first["fact_generalized_mean_over_examples"] == second["fact_generalized_mean_over_examples"]


def test_fact_learner_refuses_a_stream_without_facts():
    with pytest.raises(ValueError, match="needs fact tasks"):
        FactLearner().check_tasks([t.key for t in testing.tiny_stream().tasks])


def test_a_task_with_no_more_facts_than_k_is_warned_about_by_name():
    from lifelong.suites.facts import SmallFactTaskWarning

    counts = np.full(len(FACTS), 12)
    task = np.zeros(len(FACTS), dtype=np.int64)
    task[:3] = 1  # task 1 holds 3 facts: its standard top-5 cannot miss
    split = replace(random_split(len(FACTS), 2, images_per_fact=counts, seed=0), task=task)
    with pytest.warns(SmallFactTaskWarning, match=r"task 1 \(toy-facts-task1\) holds 3 fact\(s\)") as caught:
        stream = fact_stream("toy-facts", FACTS, split, _vectors(), _images, counts, resolution=16)
    assert len(caught) == 1 and stream.metadata["small_tasks"] == [1]
    one_task = replace(split, task=np.zeros(len(FACTS), dtype=np.int64), tasks=1)  # all 10 facts: more than K
    with warnings.catch_warnings():
        warnings.simplefilter("error", SmallFactTaskWarning)
        assert fact_stream("toy-facts", FACTS, one_task, _vectors(), _images, counts).metadata["small_tasks"] == []


def test_a_centred_stream_keeps_which_parts_are_defined_and_trains_on_them_only():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stream = make_stream(centre=True)
    key = stream.tasks[0].key
    vectors, mask = fact_space(key)
    np.testing.assert_allclose(vectors.mean(axis=0), 0.0, atol=1e-6)  # SUBMEAN over the stream's facts
    np.testing.assert_array_equal(mask, [[p is not None for p in f] for f in FACTS])
    assert np.abs(vectors[0, 1]).sum() > 0  # <cat>'s undefined P is -mean, not zero: the mask says it is undefined
    plain = make_stream()
    assert stream.metadata["centred"] and not plain.metadata["centred"]
    assert stream.metadata["task_similarity"]["cosine"] != plain.metadata["task_similarity"]["cosine"]
    result = run(FactLearner(**FAST), stream, seed=0)
    assert np.isfinite(result.summary["fact_generalized_mean_over_examples"])
