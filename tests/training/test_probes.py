"""ImageNet-CoG linear probes: splits, few-shot draws, memmap streaming, the reference recipe, the fast probe."""

import math

import numpy as np
import optuna
import pytest
import torch

from lifelong.core.seeds import derive_seed
from lifelong.training import probe_reference
from lifelong.training.probe_data import FeatureRows, few_shot_capacity, prepare_probe
from lifelong.training.probe_fast import Heads, fast_epochs, train_heads
from lifelong.training.probe_reference import cosine_lr, train_linear
from lifelong.training.probes import (
    COG_SEEDS,
    ProbeResult,
    fast_probe,
    few_shot_indices,
    population_std,
    probe_seeds,
    reference_probe,
    stratified_split,
)


def blobs(classes=5, per_class=40, test_per_class=20, dim=16, noise=0.35, seed=0, dtype=np.float32):
    """Class means on the unit sphere plus Gaussian noise, l2-normalised (as a level's features are)."""
    rng = np.random.default_rng(seed)
    means = rng.standard_normal((classes, dim))
    means /= np.linalg.norm(means, axis=1, keepdims=True)

    def draw(n):
        y = np.repeat(np.arange(classes), n)
        x = means[y] + rng.standard_normal((y.size, dim)) * noise
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(dtype), y

    return (*draw(per_class), *draw(test_per_class))


def test_stratified_split_puts_exactly_a_fifth_of_every_class_in_validation():
    labels = np.repeat(np.arange(4), [10, 25, 7, 100])
    train, val = stratified_split(labels, seed=3)
    assert np.intersect1d(train, val).size == 0 and np.union1d(train, val).size == labels.size
    assert [int((labels[val] == c).sum()) for c in range(4)] == [2, 5, 1, 20]
    again = stratified_split(labels, seed=3)
    assert np.array_equal(val, again[1]) and not np.array_equal(val, stratified_split(labels, seed=4)[1])


def test_few_shot_draws_exactly_n_per_class_from_the_given_rows():
    labels = np.repeat(np.arange(3), 9)
    picked = few_shot_indices(labels, 4, seed=1)
    assert np.bincount(labels[picked]).tolist() == [4, 4, 4] and np.unique(picked).size == 12
    assert np.array_equal(picked, few_shot_indices(labels, 4, seed=1))


def test_few_shot_above_a_concepts_count_names_the_concept_and_its_count():
    labels = np.repeat(np.arange(3), [9, 3, 9])
    with pytest.raises(ValueError, match=r"n02084071 has only 3"):
        few_shot_indices(labels, 4, seed=0, names=["n01", "n02084071", "n03"])
    with pytest.raises(ValueError, match=r"class 1 has only 3"):
        few_shot_indices(labels, 8, seed=0)
    x, y, tx, ty = blobs(per_class=10)
    with pytest.raises(ValueError, match=r"64-shot .* class 0 has only 8"):
        fast_probe(x, y, tx, ty, seed=0, shots=64)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda x, y: (x[:-3], y), r"197 rows but train labels have 200"),
        (lambda x, y: (np.where(np.arange(x.size).reshape(x.shape) == 50, np.nan, x), y), r"NaN .* row 3"),
        (lambda x, y: (x[:, :4], y), r"4-d but test features are 16-d"),
        (lambda x, y: (x.ravel(), y), r"2-D"),
    ],
)
def test_bad_inputs_are_clear_errors(mutate, message):
    x, y, tx, ty = blobs()
    bad_x, bad_y = mutate(x, y)
    with pytest.raises(ValueError, match=message):
        fast_probe(bad_x, bad_y, tx, ty, seed=0)


def test_cosine_schedule_decays_from_lr_to_zero():
    assert cosine_lr(2.0, 0, 100) == 2.0
    assert math.isclose(cosine_lr(2.0, 50, 100), 1.0)
    assert 0 < cosine_lr(2.0, 99, 100) < 1e-3


def test_reference_recipe_searches_the_spec_ranges_with_multivariate_tpe(monkeypatch):
    samplers, optimizers = [], []

    class SpyTPE(optuna.samplers.TPESampler):
        def __init__(self, **kwargs):
            samplers.append(kwargs)
            super().__init__(**kwargs)

    class SpySGD(torch.optim.SGD):
        def __init__(self, params, **kwargs):
            super().__init__(params, **kwargs)
            self.lrs = []
            optimizers.append(self)

        def step(self, closure=None):
            self.lrs.append(self.param_groups[0]["lr"])
            return super().step(closure)

    monkeypatch.setattr(optuna.samplers, "TPESampler", SpyTPE)
    monkeypatch.setattr(torch.optim, "SGD", SpySGD)
    x, y, tx, ty = blobs(per_class=30)
    result = reference_probe(x, y, tx, ty, seed=22, trials=5, epochs=4, batch_size=64)
    assert samplers == [{"multivariate": True, "seed": 22}]
    assert len(result.trials) == 5 and result.method == "reference" and result.epochs == 4
    assert all(0.1 <= t.lr <= 100 and 1e-12 <= t.weight_decay <= 1e-4 for t in result.trials)
    best = max(result.trials, key=lambda t: t.val_top1)
    assert (result.lr, result.weight_decay) == (best.lr, best.weight_decay)
    assert len(optimizers) == 6  # 5 trials + the retrain
    for optimizer, trial in zip(optimizers, result.trials, strict=False):
        group = optimizer.param_groups[0]
        assert group["momentum"] == 0.9 and group["weight_decay"] == trial.weight_decay
        per_epoch = np.array(optimizer.lrs).reshape(4, -1)  # 120 training rows / 64 = 2 steps an epoch
        assert np.allclose(per_epoch[:, 0], [cosine_lr(trial.lr, e, 4) for e in range(4)])
    assert optimizers[-1].param_groups[0]["initial_lr"] == result.lr
    assert np.array(optimizers[-1].lrs).size == 4 * 3  # retrain on all 150 rows: 3 steps an epoch


def test_batched_heads_train_exactly_like_the_reference_linear_layer():
    x, y, tx, ty = blobs(per_class=50)
    splits = prepare_probe(x, y, tx, ty, seed=0, shots=None, device=torch.device("cpu"))
    model = train_linear(splits, splits.tune_rows, lr=3.0, weight_decay=1e-4, epochs=3, batch_size=32, seed=9)
    seed = derive_seed(9, probe_reference._INIT)
    heads = Heads.create(16, 5, [3.0, 0.5], [1e-4, 0.0], seed, "cpu")
    train_heads(splits, splits.tune_rows, heads, epochs=3, batch_size=32, seed=9)
    assert torch.allclose(heads.weight[0].T, model.weight.detach(), atol=1e-5)
    assert torch.allclose(heads.bias[0], model.bias.detach(), atol=1e-5)


def test_fast_probe_matches_the_reference_on_a_small_separable_problem():
    x, y, tx, ty = blobs(classes=8, per_class=60, test_per_class=100, noise=0.3)
    reference = reference_probe(x, y, tx, ty, seed=22, trials=8, epochs=30)
    fast = fast_probe(x, y, tx, ty, seed=22)
    assert isinstance(fast, ProbeResult) and fast.method == "fast" and len(fast.trials) == 27
    assert 60 < reference.test_top1 < 99
    assert abs(fast.test_top1 - reference.test_top1) <= 2.0  # 800 test images: 1 point = 8 images


def test_fast_probe_reads_a_float16_memmap_like_the_same_array_in_memory(tmp_path):
    x, y, tx, ty = blobs(per_class=30, dtype=np.float16)
    path = tmp_path / "train.f16"
    mapped = np.memmap(path, dtype=np.float16, mode="w+", shape=x.shape)
    mapped[:] = x
    mapped.flush()
    mapped = np.memmap(path, dtype=np.float16, mode="r", shape=x.shape)
    options = dict(seed=5, epochs=2, min_steps=0, lr_points=2, weight_decays=(1e-5,), batch_size=16)
    from_disk = fast_probe(mapped, y, tx, ty, **options)
    in_memory = fast_probe(np.array(x), y, tx, ty, **options)
    assert from_disk.test_top1 == in_memory.test_top1
    assert [t.val_top1 for t in from_disk.trials] == [t.val_top1 for t in in_memory.trials]


def test_few_shot_probe_trains_on_the_shots_and_tests_on_everything():
    x, y, tx, ty = blobs(per_class=40, test_per_class=30)
    result = fast_probe(x, y, tx, ty, seed=1, shots=2, lr_points=2, weight_decays=(1e-12,))
    assert result.shots == 2 and result.epochs == 100  # 10 training rows: one step an epoch, capped at 100
    assert fast_epochs(40_000, 1024, 10, 100, 100) == 10 and fast_epochs(1_000, 1024, 10, 100, 100) == 100


def test_seed_summary_reports_the_mean_and_the_population_std():
    assert population_std([1.0, 3.0]) == 1.0
    scores = dict(zip(COG_SEEDS, [60.0, 61.0, 62.0, 63.0, 64.0], strict=True))

    def fake_probe(train_x, train_y, test_x, test_y, *, seed, **options):
        return ProbeResult("fake", seed, scores[seed], 1.0, 0.0, 1, 0.0, ())

    summary = probe_seeds(fake_probe, None, None, None, None)
    assert [r.seed for r in summary.results] == [22, 37, 45, 77, 93]
    assert summary.mean == 62.0 and math.isclose(summary.std, math.sqrt(2.0))


@pytest.mark.parametrize("header_bytes", [0, 96])
def test_memmap_rows_are_read_from_the_file_exactly_views_included(tmp_path, header_bytes):
    x = np.random.default_rng(0).standard_normal((300, 8)).astype(np.float16)
    path = tmp_path / "features.f16"
    path.write_bytes(b"\0" * header_bytes + x.tobytes())
    mapped = np.memmap(path, dtype=np.float16, mode="r", offset=header_bytes, shape=x.shape)
    rng = np.random.default_rng(1)
    for array, expected in ((mapped, x), (mapped[100:250], x[100:250])):
        rows = FeatureRows(array, np.zeros(len(expected), np.int64), torch.device("cpu"))
        order = rng.permutation(len(expected))
        got = np.concatenate([b.numpy() for b, _ in rows.batches(order, 64, rng=None)])
        assert np.array_equal(got, expected[order].astype(np.float32))


def test_few_shot_capacity_is_what_the_validation_split_leaves_the_smallest_class():
    rng = np.random.default_rng(0)
    for _ in range(20):
        counts = rng.integers(1, 40, size=int(rng.integers(1, 8)))
        labels = rng.permutation(np.repeat(np.arange(counts.size), counts))
        train, _ = stratified_split(labels, seed=1)
        left = np.bincount(labels[train], minlength=counts.size)  # brute force: split, then count per class
        most, limiting = few_shot_capacity(labels)
        assert most == left.min() and left[limiting] == most
        few_shot_indices(labels[train], most, seed=0)  # the capacity can be drawn; one more cannot
        with pytest.raises(ValueError, match="use at most"):
            few_shot_indices(labels[train], most + 1, seed=0)
