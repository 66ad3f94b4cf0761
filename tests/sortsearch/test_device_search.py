"""Sort & Search on a torch device: orders and thresholds identical to the NumPy path, on every device here."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lifelong.sortsearch import device_search
from lifelong.sortsearch.bitmatrix import NpyRows, PackedRows, pack
from lifelong.sortsearch.search import dp_threshold, extrapolate, optimal_thresholds, sample_positions
from lifelong.sortsearch.sort import sort_by_sum
from lifelong.training.devices import Accelerator, accelerator_scope, available_devices

DEVICES = pytest.mark.parametrize("device", available_devices())


def matrix(m: int, n: int, seed: int) -> np.ndarray:
    """A 0/1 matrix with many tied column sums (few rows, coarse difficulties) and all-zero / all-one rows."""
    rng = np.random.default_rng(seed)
    ability, difficulty = rng.random(m)[:, None], rng.integers(0, 4, n)[None, :] / 4
    A = (rng.random((m, n)) < np.clip(ability + 0.5 - difficulty, 0, 1)).astype(np.uint8)
    A[0], A[-1] = 0, 1
    return A


SHAPES = [(1, 1), (3, 7), (17, 1000), (64, 4099), (200, 333)]


@DEVICES
@pytest.mark.parametrize("m, n", SHAPES)
def test_sort_by_sum_is_the_numpy_order(device: str, m: int, n: int) -> None:
    A = matrix(m, n, seed=m * n)
    expected = sort_by_sum(A)
    assert len(np.unique(A.sum(axis=0))) < n or n == 1  # ties are exercised
    for source in (A, PackedRows(pack(A), n)):
        got = sort_by_sum(source, device=device)
        assert got.dtype == expected.dtype and np.array_equal(got, expected)
        chunked = device_search.sort_by_sum(source, device, rows_per_chunk=5)  # m not a multiple of the chunk
        assert np.array_equal(chunked, expected)


@DEVICES
def test_all_equal_sums_follow_the_tie_keys(device: str) -> None:
    for A in (np.zeros((4, 999), np.uint8), np.ones((4, 999), np.uint8)):
        assert np.array_equal(sort_by_sum(A, device=device), sort_by_sum(A))
    assert device_search.descending_order(np.zeros(0, np.int64), device).size == 0


@DEVICES
@pytest.mark.parametrize("m, n", SHAPES)
def test_optimal_thresholds_equal_numpy(device: str, m: int, n: int) -> None:
    A = matrix(m, n, seed=m + n)
    order = sort_by_sum(A)
    expected = optimal_thresholds(A, order)
    assert {0, n} <= set(expected.k.tolist()) or n == 1  # an all-zero row (k = 0) and an all-one row (k = n)
    for source in (A, PackedRows(pack(A), n)):
        for chunk in (None, 7):
            got = optimal_thresholds(source, order, rows_per_chunk=chunk, device=device)
            assert np.array_equal(got.k, expected.k) and np.array_equal(got.score, expected.score)


@DEVICES
def test_sampled_search_and_dp_threshold_equal_numpy(device: str) -> None:
    A = matrix(150, 5000, seed=3)
    order = sort_by_sum(A)
    pos = sample_positions(A.shape[1], 257)
    sampled = A[:, order[pos]]
    expected = dp_threshold(sampled)
    assert np.array_equal(dp_threshold(sampled, device=device), expected)
    assert np.array_equal(device_search.dp_thresholds(sampled.astype(bool), device, rows_per_chunk=11).k, expected)
    packed = PackedRows(pack(A), A.shape[1])
    got = device_search.thresholds(packed, order, pos, device, rows_per_chunk=16)
    assert np.array_equal(got.k, expected)
    assert np.array_equal(extrapolate(got.k, pos, A.shape[1]), extrapolate(expected, pos, A.shape[1]))


@DEVICES
def test_rows_read_from_a_file_in_reused_buffers(device: str, tmp_path) -> None:
    A = matrix(70, 1234, seed=5)
    np.save(tmp_path / "packed.npy", pack(A))
    rows = PackedRows(NpyRows(tmp_path / "packed.npy"), A.shape[1])  # scan_packed refills one buffer per chunk
    order = sort_by_sum(A)
    assert np.array_equal(device_search.sort_by_sum(rows, device, rows_per_chunk=8), order)
    got = device_search.thresholds(rows, order, device=device, rows_per_chunk=8)
    assert np.array_equal(got.k, optimal_thresholds(A, order).k)


@DEVICES
def test_dp_ties_go_to_the_first_maximum(device: str) -> None:
    rows = [[0, 1], [1, 0, 1, 0], [1, 1, 1, 1], [0, 0, 0, 0], [1, 0, 0, 1, 1, 0, 1, 1]]
    for row in rows:
        b = np.array(row, np.uint8)
        assert dp_threshold(b, device=device) == dp_threshold(b)
    assert dp_threshold(np.zeros((2, 0), np.uint8), device=device).tolist() == [0, 0]
    with pytest.raises(ValueError, match="only 0 and 1"):
        dp_threshold(np.array([[0, 2]]), device=device)


def test_auto_stays_on_numpy_on_the_cpu_and_explicit_devices_use_torch() -> None:
    with accelerator_scope(Accelerator(device="cpu")):
        assert device_search.backend_device("auto") is None
        assert device_search.backend_device(None) is None
        assert device_search.backend_device("cpu") == torch.device("cpu")
        assert device_search.backend_device(torch.device("cpu")) == torch.device("cpu")
    with pytest.raises(ValueError, match="auto, cpu, cuda or cuda:N"):
        sort_by_sum(np.ones((2, 3), np.uint8), device="gpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine: the CUDA path runs only there")
def test_cuda_auto_uses_the_gpu_and_matches_numpy() -> None:
    with accelerator_scope(Accelerator(device="cuda")):
        assert device_search.backend_device("auto").type == "cuda"
        A = matrix(300, 20_011, seed=9)
        order = sort_by_sum(A)
        assert np.array_equal(sort_by_sum(PackedRows(pack(A), A.shape[1]), device="auto"), order)
        assert np.array_equal(optimal_thresholds(A, order, device="auto").k, optimal_thresholds(A, order).k)
