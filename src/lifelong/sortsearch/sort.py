"""Sort: rank samples easy -> hard from the ranking models, and order models for sample insertion
(docs/protocols/sort-and-search.md#sort).

Every order is a permutation of sample (or model) ids, int32 while it fits, and the same matrix gives the same
order. Ties between samples are broken by a fixed pseudo-random key of each sample id (`tie_keys`, splitmix64 of the
id), not by the id itself: samples with equal keys are exchangeable for the ranking models, while ids carry the
dataset's layout (e.g. corrupted copies of one test set stored domain after domain), which an id-ordered tie puts
in step with the evenly spread positions of uniform sampling and biases the systematic-sample variance of the
intervals (measured in benchmarks/bench_beyond.py). The key of an id never changes, so the relative order of two
tied samples survives the benchmark growing. Model orders (models as the columns) follow the same rule.
The ids in tie-key order are computed once per process for the largest count asked so far (`ids_in_tie_order`): a
smaller count is the subsequence of ids below it, so later sorts pay only a filter, not a 64-bit argsort.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from lifelong.sortsearch.bitmatrix import as_rows
from lifelong.sortsearch.search import _torch_device, best_step, ranked_chunks, step_scores

ConfidenceChunks = Callable[[], Iterable[np.ndarray]]


def _index_dtype(n: int) -> type[np.signedinteger]:
    """int32 for orders that fit in it, else int64."""
    return np.int32 if n <= np.iinfo(np.int32).max else np.int64


_MIX1, _MIX2, _GOLDEN = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB), np.uint64(0x9E3779B97F4A7C15)


def tie_keys(n: int) -> np.ndarray:
    """The tie-break key of sample ids 0..n-1: splitmix64(id), uint64 (a fixed bijection of the id)."""
    z = (np.arange(int(n), dtype=np.uint64) + np.uint64(1)) * _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


_tie_order: np.ndarray = np.zeros(0, np.int32)  # ids 0..N-1 in tie-key order, N the largest count asked so far
_tie_lock = threading.Lock()


def ids_in_tie_order(n: int) -> np.ndarray:
    """Ids 0..n-1 sorted by their `tie_keys` (read-only). Computed once per process for the largest n asked; a
    smaller n is the subsequence of ids below n (the key of an id does not depend on n)."""
    global _tie_order
    n = int(n)
    cached = _tie_order
    if cached.size < n:
        with _tie_lock:
            if _tie_order.size < n:  # tie keys are distinct: any sort gives this permutation
                _tie_order = np.argsort(tie_keys(n)).astype(_index_dtype(n))
                _tie_order.flags.writeable = False
            cached = _tie_order
    return cached if cached.size == n else cached[cached < n]


def descending_order(keys: Any) -> np.ndarray:
    """Ids sorted by key, largest first; equal keys in the order of their ids' `tie_keys` (deterministic)."""
    keys = np.asarray(keys)
    if keys.ndim != 1:
        raise ValueError(f"sort keys must be 1-D; got shape {keys.shape}")
    if keys.size == 0:
        return np.zeros(0, np.int32)
    first = ids_in_tie_order(keys.size)
    if np.issubdtype(keys.dtype, np.integer) or keys.dtype == np.bool_:
        keys = keys.astype(np.int64, copy=False)
        top = int(keys.max())
        span = top - int(keys.min())
        dtype = np.uint16 if span < 2**16 else np.uint32 if span < 2**32 else np.uint64
        flipped = (top - keys).astype(dtype)[first]  # ascending sort of max - key = descending key
        order = np.argsort(flipped, kind="stable")  # radix sort for 16-bit keys
    else:
        if not np.all(np.isfinite(keys)):
            raise ValueError("sort keys must be finite (found NaN or infinity)")
        order = np.argsort(-keys.astype(np.float64)[first], kind="stable")
    return first[order].astype(_index_dtype(keys.size), copy=False)


def sort_by_sum(A: Any, device: Any = None) -> np.ndarray:
    """Sample order by column sums of the ranking models' 0/1 matrix (dense or PackedRows), easiest first.

    `device`: None counts and sorts with NumPy; "auto", "cpu", "cuda[:N]" or a torch.device do both on that device
    (the same order; "auto" stays on NumPy unless the current accelerator is CUDA).
    """
    if (torch_device := _torch_device(device)) is not None:
        from lifelong.sortsearch.device_search import sort_by_sum as sort_on_device

        return sort_on_device(A, torch_device)
    return descending_order(as_rows(A).column_sums())


def _confidence_chunks(C: Any, chunk: int | None) -> Iterable[np.ndarray]:
    """Row chunks of a confidence matrix given as an array-like [m, n] or a callable returning chunks."""
    if callable(C):
        yield from C()
        return
    shape = tuple(getattr(C, "shape", ()))
    if len(shape) != 2:
        raise ValueError(f"a confidence matrix must be 2-D [models, samples]; got shape {shape}")
    step = max(1, (16 * 2**20) // (8 * max(1, shape[1]))) if chunk is None else int(chunk)
    for i0 in range(0, shape[0], step):
        yield np.asarray(C[i0 : i0 + step])


def sort_by_confidence(C: Any, chunk: int | None = None) -> np.ndarray:
    """Sample order by summed probability of the true class, highest first.

    C is a float [m, n] array-like (ndarray, memmap, zarr) read in row chunks, or a zero-argument callable that
    returns an iterable of float [rows, n] chunks.
    """
    total: np.ndarray | None = None
    for block in _confidence_chunks(C, chunk):
        block = np.asarray(block)
        if block.ndim != 2 or not (np.issubdtype(block.dtype, np.floating) or np.issubdtype(block.dtype, np.integer)):
            raise ValueError(
                f"confidence chunks must be numeric [rows, n]; got dtype {block.dtype}, shape {block.shape}"
            )
        if total is None:
            total = np.zeros(block.shape[1], np.float64)
        elif block.shape[1] != total.size:
            raise ValueError(f"confidence chunks disagree on n: {block.shape[1]} vs {total.size}")
        if block.size and not (np.all(np.isfinite(block)) and block.min() >= 0 and block.max() <= 1):
            raise ValueError("confidences must be finite probabilities in [0, 1] (probability of the true class)")
        total += block.sum(axis=0, dtype=np.float64)
    if total is None:
        raise ValueError("the confidence matrix has no rows; at least one ranking model is needed")
    return descending_order(total)


def sort_recursive(A: Any, levels: int = 2) -> np.ndarray:
    """Recursive sort by sum: refine the order inside blocks of equal keys, `levels - 1` times
    (docs/protocols/sort-and-search.md#sort).

    Each refinement computes every ranking model's DP threshold on the current order; inside each block of
    samples with equal keys so far, samples are re-sorted by their sum over only the models whose threshold
    falls strictly inside that block (a cut at a block edge is unaffected by the order inside). A block with no
    such model keeps its order. Thresholds use the ranking models only: nothing held out leaks into the order.
    `levels=1` is plain sort by sum.
    """
    if int(levels) < 1:
        raise ValueError(f"levels must be >= 1; got {levels}")
    rows = as_rows(A)
    n = rows.shape[1]
    keys = [rows.column_sums()]
    order = descending_order(keys[0])
    for _ in range(int(levels) - 1):
        ranked_keys = np.stack([key[order] for key in keys])
        change = np.flatnonzero(np.any(ranked_keys[:, 1:] != ranked_keys[:, :-1], axis=0)) + 1
        starts = np.concatenate(([0], change)).astype(np.int64)
        ends = np.concatenate((change, [n])).astype(np.int64)
        extra = np.zeros(n, np.int64)  # in ranked positions
        for _, ranked in ranked_chunks(rows, order):
            k = best_step(step_scores(ranked)).k
            block = np.searchsorted(starts, k, side="right") - 1
            inside = (k > starts[block]) & (k < ends[block])
            for b in np.unique(block[inside]):
                s, e = starts[b], ends[b]
                extra[s:e] += ranked[inside & (block == b), s:e].sum(axis=0, dtype=np.int64)
        if not extra.any():
            break  # no threshold splits a block: further levels cannot change the order
        key = np.empty(n, np.int64)
        key[order] = extra
        keys.append(key)
        order = np.lexsort([tie_keys(n), *(-key for key in reversed(keys))]).astype(order.dtype)  # ties: tie_keys
    return order


def model_order(accuracies: Any) -> np.ndarray:
    """Model order for sample insertion: most accurate first (ties by the models' `tie_keys`)."""
    acc = np.asarray(accuracies)
    if acc.ndim != 1:
        raise ValueError(f"accuracies must be 1-D (one per model); got shape {acc.shape}")
    return descending_order(acc)


def ranked_positions(order: np.ndarray) -> np.ndarray:
    """Ranked position of every sample id: inv[order[p]] = p."""
    inv = np.empty(order.size, np.int64)
    inv[order] = np.arange(order.size, dtype=np.int64)
    return inv
