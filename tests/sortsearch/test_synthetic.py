"""The item-response generator: block determinism, packing, and the structure the paper's matrices show."""

from __future__ import annotations

import numpy as np
import pytest

from lifelong.sortsearch.synthetic import ItemResponseParams, SyntheticBenchmark, lifelong_cifar10_shape


def small(**kwargs) -> SyntheticBenchmark:
    """A benchmark with a tiny chunk grid, so that blocks cross many chunk borders."""
    options = {"n_domains": 3, "seed": 7, "chunk_models": 8, "chunk_samples": 64} | kwargs
    return SyntheticBenchmark(50, 1003, **options)


def test_blocks_are_deterministic_and_consistent_with_larger_blocks() -> None:
    bench = small()
    full = bench.block()
    assert full.dtype == np.uint8 and full.shape == (50, 1003) and set(np.unique(full)) == {0, 1}
    assert np.array_equal(full, small().block())
    for rows, cols in [(slice(3, 29), slice(70, 900)), (slice(49, 50), slice(0, 1003)), (slice(0, 8), slice(64, 128))]:
        assert np.array_equal(bench.block(rows, cols), full[rows, cols])
    assert not np.array_equal(full, small(seed=8).block())


def test_packed_rows_equal_packbits_of_blocks() -> None:
    bench = small()
    full = bench.block()
    assert np.array_equal(bench.packed_rows(), np.packbits(full, axis=1))
    out = np.zeros((20, 126), np.uint8)
    packed = bench.packed_rows(slice(5, 25), out=out)
    assert packed is out and np.array_equal(out, np.packbits(full[5:25], axis=1))
    with pytest.raises(ValueError, match="out must be uint8"):
        bench.packed_rows(slice(0, 2), out=np.zeros((2, 10), np.uint8))


def test_larger_benchmark_keeps_the_smaller_ones_cells() -> None:
    smaller = SyntheticBenchmark(20, 300, n_domains=1, seed=2, chunk_models=8, chunk_samples=64)
    larger = SyntheticBenchmark(45, 700, n_domains=1, seed=2, chunk_models=8, chunk_samples=64)
    assert np.array_equal(smaller.block(), larger.block(slice(0, 20), slice(0, 300)))


def test_true_accuracies_match_the_drawn_rows() -> None:
    bench = SyntheticBenchmark(40, 5000, seed=1, chunk_models=16, chunk_samples=1024)
    cells = bench.block()
    acc = bench.true_accuracies()
    assert np.allclose(acc.observed, cells.mean(axis=1))
    assert np.allclose(acc.expected, bench.probabilities().mean(axis=1, dtype=np.float64), atol=1e-6)
    assert np.abs(acc.expected - acc.observed).max() < 0.04
    part = bench.true_accuracies(slice(10, 30))
    assert np.allclose(part.observed, acc.observed[10:30]) and np.allclose(part.expected, acc.expected[10:30])


def test_accuracies_spread_and_difficulty_order_is_recoverable() -> None:
    bench = SyntheticBenchmark(300, 2000, n_domains=2, seed=0)
    cells = bench.block()
    accuracy = cells.mean(axis=1)
    assert accuracy.std() > 0.1 and accuracy.min() < 0.35 and accuracy.max() > 0.8
    column_sums = cells.sum(axis=0)
    # rank correlation of column sums with -difficulty
    ranks = np.argsort(np.argsort(column_sums)), np.argsort(np.argsort(-bench.difficulties))
    assert np.corrcoef(*ranks)[0, 1] > 0.85


def test_domains_are_correlated_but_distinct() -> None:
    bench = SyntheticBenchmark(3000, 600, n_domains=3, seed=4, params=ItemResponseParams(domain_correlation=0.6))
    offsets = np.corrcoef(bench.domain_offsets, rowvar=False)
    assert np.allclose(offsets[np.triu_indices(3, 1)], 0.6, atol=0.08)
    domains = bench.sample_domains()
    assert np.array_equal(np.bincount(domains), [200, 200, 200])
    cells = bench.block()
    per_domain = np.stack([cells[:, domains == d].mean(axis=1) for d in range(3)], axis=1)
    corr = np.corrcoef(per_domain, rowvar=False)[np.triu_indices(3, 1)]
    assert (corr > 0.5).all() and (corr < 0.99).all()


def test_lifelong_cifar10_shape_and_domain_layout() -> None:
    shape = lifelong_cifar10_shape()
    assert shape.n_models == 31_250 and shape.n_samples == 1_697_682
    assert list(shape.domains) == ["CIFAR10", "CIFAR10.1", "CIFAR10.2", "CINIC10", "CIFAR10-W", "CIFAR10-C"]
    bench = SyntheticBenchmark(shape.n_models, shape.n_samples, domain_sizes=shape.domains)
    assert bench.domain_names == tuple(shape.domains)
    assert bench.domain_bounds[-1] == shape.n_samples
    corner = bench.block(slice(31_240, 31_250), slice(1_697_600, 1_697_682))
    assert corner.shape == (10, 82)
    assert bench.packed_rows(slice(0, 1)).shape == (1, 212_211)


def test_invalid_arguments_are_explained() -> None:
    with pytest.raises(ValueError, match="multiple of 8"):
        SyntheticBenchmark(4, 10, chunk_samples=100)
    with pytest.raises(ValueError, match="summing to n_samples"):
        SyntheticBenchmark(4, 10, domain_sizes=[3, 3])
    with pytest.raises(ValueError, match="step 1"):
        small().block(slice(0, 10, 2))
    with pytest.raises(ValueError, match="domain_correlation"):
        ItemResponseParams(domain_correlation=1.5)
