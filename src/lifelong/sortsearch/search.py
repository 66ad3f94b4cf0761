"""Search: the DP threshold of Theorem 4.1, choosing n' of n ranked positions, extrapolating a threshold found on
them to all n, and the step predictions [1_k 0_{n-k}] (in ranked order) scattered back to sample order.

A threshold k means: the first k samples in ranked order are predicted correct, the rest wrong.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np

from lifelong.core.suggest import did_you_mean
from lifelong.sortsearch.bitmatrix import PackedRows, RowSource, as_rows, packed_width, popcount_rows

SAMPLING_METHODS = ("uniform", "random")
_DP_CELLS = 2**18  # cells per DP chunk in dp_threshold


class Thresholds(NamedTuple):
    """Best step thresholds `k` per row and their scores S(k) = (#ones - #zeros among the first k)."""

    k: np.ndarray
    score: np.ndarray


def check_order(order: Any, n: int | None = None) -> np.ndarray:
    """Validate a sample order (a permutation of 0..n-1) and return it as an int64 array."""
    arr = np.asarray(order)
    if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"an order must be a 1-D integer array; got dtype {arr.dtype}, shape {arr.shape}")
    size = arr.size if n is None else int(n)
    if arr.size != size:
        raise ValueError(f"the order has {arr.size} entries but the rows have {size} columns")
    arr = arr.astype(np.int64, copy=False)
    if size and (arr.min() < 0 or arr.max() >= size or np.bincount(arr, minlength=size).max() != 1):
        raise ValueError(f"the order must be a permutation of 0..{size - 1} (each sample exactly once)")
    return arr


def _check_thresholds(k: Any, n: int, rows: int | None = None) -> np.ndarray:
    """Validate thresholds as int64 values in [0, n] (one per row when `rows` is given)."""
    arr = np.asarray(k)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"thresholds must be integers; got dtype {arr.dtype}")
    arr = np.atleast_1d(arr).astype(np.int64)
    if arr.ndim != 1 or (rows is not None and arr.size != rows):
        raise ValueError(f"expected {rows if rows is not None else 'a 1-D array of'} thresholds; got shape {arr.shape}")
    if arr.size and (arr.min() < 0 or arr.max() > n):
        raise ValueError(f"thresholds must lie in [0, {n}]; got min {arr.min()}, max {arr.max()}")
    return arr


def best_step(scores: np.ndarray) -> Thresholds:
    """First maximum of S(0)=0, S(1..t) per row, where scores[:, t-1] = S(t)."""
    r, t = scores.shape
    if t == 0:
        return Thresholds(np.zeros(r, np.int64), np.zeros(r, np.int64))
    idx = scores.argmax(axis=1)
    best = scores[np.arange(r), idx].astype(np.int64)
    positive = best > 0  # S(0) = 0 comes first, so a maximum of 0 means k = 0
    return Thresholds(np.where(positive, idx + 1, 0).astype(np.int64), np.where(positive, best, 0))


def step_scores(ranked: np.ndarray) -> np.ndarray:
    """S(t) = #ones - #zeros among the first t entries, t = 1..k, of each 0/1 row: int32 [r, k]."""
    scores = np.cumsum(ranked, axis=1, dtype=np.int32)  # counts of ones (never 2b-1 on a bool or uint8 array)
    scores *= 2
    scores -= np.arange(1, ranked.shape[1] + 1, dtype=np.int32)
    return scores


def prefix_from_scores(scores: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Ones among the first k[i] entries of row i, read off S(k) = 2 * ones - k."""
    k = np.asarray(k, np.int64)
    at = scores[np.arange(scores.shape[0]), np.maximum(k - 1, 0)].astype(np.int64)
    return np.where(k > 0, (at + k) // 2, 0)


def _as_2d(x: Any, expected: str) -> tuple[np.ndarray, bool]:
    """`x` as a 2-D array (a 1-D row becomes one row) and whether it was 1-D; else an error: `expected`, the shape."""
    x = np.asarray(x)
    single = x.ndim == 1
    if single:
        x = x[None, :]
    if x.ndim != 2:
        raise ValueError(f"{expected}; got shape {x.shape}")
    return x, single


def _check_01_rows(B: np.ndarray) -> None:
    """Raise unless B holds only 0 and 1."""
    if B.dtype == np.bool_:
        return
    if not np.issubdtype(B.dtype, np.integer):
        raise TypeError(f"DP rows must be 0/1 integers or bools; got dtype {B.dtype}")
    if B.size and (B.min() < 0 or B.max() > 1):
        raise ValueError(f"DP rows must hold only 0 and 1; got values in [{B.min()}, {B.max()}]")


def as_sampled(sampled: Any) -> np.ndarray:
    """0/1 outcomes [rows, n'] as uint8 (a 1-D row becomes one row)."""
    B = np.asarray(sampled)
    if B.ndim == 1:
        B = B[None, :]
    if B.ndim != 2 or B.shape[1] == 0:
        raise ValueError(f"sampled outcomes must be [rows, n'] with n' >= 1; got shape {B.shape}")
    if B.dtype != np.bool_ and (not np.issubdtype(B.dtype, np.integer) or (B.size and (B.min() < 0 or B.max() > 1))):
        raise ValueError("sampled outcomes must hold only 0 and 1")
    return B.astype(np.uint8, copy=False)


def _torch_device(device: Any) -> Any:
    """The torch device a `device=` argument asks for, or None for the NumPy path (see device_search)."""
    if device is None:
        return None
    from lifelong.sortsearch.device_search import backend_device  # imports torch: only when a device is asked

    return backend_device(device)


def dp_threshold(B: Any, device: Any = None) -> np.ndarray | int:
    """Optimal step threshold per 0/1 row in ranked order ([r, k] -> int64 [r]; a 1-D row -> int).

    k* = argmax_t S(t), S(t) = sum_{j<=t}(2 b_j - 1), S(0) = 0 allowed; ties go to the first maximum (smallest k).
    `device`: None computes with NumPy; "auto", "cpu", "cuda[:N]" or a torch.device batch the rows on that device
    (identical thresholds; "auto" stays on NumPy unless the current accelerator is CUDA).
    """
    B, single = _as_2d(B, "dp_threshold expects [rows, k] 0/1 rows")
    _check_01_rows(B)
    if (torch_device := _torch_device(device)) is not None:
        from lifelong.sortsearch.device_search import dp_thresholds

        k = dp_thresholds(B, torch_device).k
        return int(k[0]) if single else k
    k = np.zeros(B.shape[0], np.int64)
    step = max(1, _DP_CELLS // max(1, B.shape[1]))  # rows per chunk: scores stay small and cache-resident
    for i0 in range(0, B.shape[0], step):
        k[i0 : i0 + step] = best_step(step_scores(B[i0 : i0 + step])).k
    return int(k[0]) if single else k


def ranked_chunks(A: Any, order: Any, rows_per_chunk: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
    """Yield (first row, dense uint8 chunk with columns in ranked order) over the rows of A."""
    rows = as_rows(A)
    order = check_order(order, rows.shape[1])
    step = rows.default_chunk(5 * max(1, rows.shape[1])) if rows_per_chunk is None else int(rows_per_chunk)
    for i0, block in rows.iter_chunks(step):
        yield i0, block[:, order]


def optimal_thresholds(A: Any, order: Any, rows_per_chunk: int | None = None, device: Any = None) -> Thresholds:
    """The DP threshold of every row of A on all n ranked samples (n' = n) and its score, streamed in chunks.

    `device`: as for `dp_threshold` (None: NumPy; with a device, `rows_per_chunk` counts rows per device chunk).
    """
    if (torch_device := _torch_device(device)) is not None:
        from lifelong.sortsearch.device_search import thresholds

        return thresholds(A, order, device=torch_device, rows_per_chunk=rows_per_chunk)
    rows = as_rows(A)
    k = np.zeros(rows.shape[0], np.int64)
    score = np.zeros(rows.shape[0], np.int64)
    for i0, ranked in ranked_chunks(rows, order, rows_per_chunk):
        best = best_step(step_scores(ranked))
        k[i0 : i0 + ranked.shape[0]] = best.k
        score[i0 : i0 + ranked.shape[0]] = best.score
    return Thresholds(k, score)


def sample_positions(
    n: int, n_prime: int, method: str = "uniform", seed: int | np.random.Generator | None = None
) -> np.ndarray:
    """Exactly n' sorted ranked positions out of n: "uniform" = midpoints of n' equal bins, "random" = seeded draw."""
    n, n_prime = int(n), int(n_prime)
    if n < 1:
        raise ValueError(f"cannot sample from n={n} positions")
    if not 1 <= n_prime <= n:
        raise ValueError(f"the budget n'={n_prime} must lie in [1, n={n}]; lower it or add samples")
    if method == "uniform":
        i = np.arange(n_prime, dtype=np.int64)
        return ((2 * i + 1) * n) // (2 * n_prime)  # floor of bin midpoints; bins >= 1 wide, so all distinct
    if method == "random":
        if seed is None:
            raise ValueError("random sampling needs a seed (an int or a numpy Generator) for reproducible runs")
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        return np.sort(rng.choice(n, size=n_prime, replace=False)).astype(np.int64)
    raise ValueError(
        f"unknown sampling method {method!r}{did_you_mean(str(method), SAMPLING_METHODS)}; "
        f"choose {' or '.join(SAMPLING_METHODS)}"
    )


def _check_positions(positions: Any, n: int) -> np.ndarray:
    """Validate sampled positions: strictly increasing integers in [0, n)."""
    pos = np.asarray(positions)
    if pos.ndim != 1 or pos.size == 0 or not np.issubdtype(pos.dtype, np.integer):
        raise ValueError(f"positions must be a non-empty 1-D integer array; got dtype {pos.dtype}, shape {pos.shape}")
    pos = pos.astype(np.int64)
    if pos[0] < 0 or pos[-1] >= n or (pos.size > 1 and np.diff(pos).min() <= 0):
        raise ValueError(f"positions must be strictly increasing and lie in [0, {n})")
    return pos


def extrapolate(k_sampled: Any, positions: Any, n: int) -> np.ndarray:
    """Map thresholds among n' sampled ranked positions to thresholds among all n positions.

    Convention: with k' sampled items included, every cut from lo = positions[k'-1] + 1 (0 when k' = 0) up to
    hi = positions[k'] (n when k' = n') agrees with all sampled items; take the midpoint k = (lo + hi) // 2.
    With all positions sampled (n' = n) this is the identity.
    """
    n = int(n)
    pos = _check_positions(positions, n)
    ks = np.asarray(k_sampled)
    kk = _check_thresholds(ks, pos.size)
    lo = np.where(kk > 0, pos[np.maximum(kk - 1, 0)] + 1, 0)
    hi = np.where(kk < pos.size, pos[np.minimum(kk, pos.size - 1)], n)
    k = (lo + hi) // 2
    return k.reshape(ks.shape) if ks.ndim else k[0]


def global_threshold(sampled: Any, positions: Any, n: int) -> np.ndarray:
    """The "global" estimator: c = correct among the n' sampled items, k = extrapolated position of the c-th one."""
    B = np.asarray(sampled)
    if B.ndim == 1:
        B = B[None, :]
    _check_01_rows(B)
    if B.shape[1] != np.asarray(positions).size:
        raise ValueError(f"{B.shape[1]} sampled outcomes per row but {np.asarray(positions).size} positions")
    return extrapolate(B.sum(axis=1, dtype=np.int64), positions, n)


def estimate_accuracies(thresholds: Any, n: int) -> np.ndarray:
    """Estimated accuracy of each row: k / n."""
    return _check_thresholds(thresholds, int(n)) / float(n)


def predict_rows(k: Any, n: int) -> np.ndarray:
    """Packed step rows [1_k 0_{n-k}] in RANKED order: uint8 [r, ceil(n/8)]."""
    n = int(n)
    k = _check_thresholds(k, n)
    byte = np.arange(packed_width(n), dtype=np.int64)[None, :]
    full, part = (k // 8)[:, None], (k % 8)[:, None]
    partial = ((0xFF00 >> part) & 0xFF).astype(np.uint8)  # the top `part` bits set
    return np.where(byte < full, np.uint8(0xFF), np.where(byte == full, partial, np.uint8(0))).astype(np.uint8)


def scatter(rows: Any, order: Any) -> np.ndarray:
    """Rows given in ranked order -> the same rows in original sample order (out[:, order] = rows).

    Dense [r, n] rows (or DenseRows) give dense rows, packed [r, ceil(n/8)] rows (or PackedRows) give packed rows;
    n = len(order), and a 1-D row gives a 1-D row.
    """
    order = check_order(order)
    n = order.size
    if isinstance(rows, RowSource):
        if rows.shape[1] != n:
            raise ValueError(f"rows have {rows.shape[1]} columns but the order has {n}")
        read = rows.packed_rows if isinstance(rows, PackedRows) else rows.rows
        return scatter(read(0, rows.shape[0]), order)
    x, single = _as_2d(rows, "scatter expects [rows, columns] rows")
    if x.shape[1] == n:
        out = np.empty_like(x)
        out[:, order] = x
    elif x.shape[1] == packed_width(n):
        out = np.empty_like(x)
        step = max(1, (16 * 2**20) // max(1, n))
        for i0 in range(0, x.shape[0], step):
            dense = np.unpackbits(x[i0 : i0 + step], axis=1, count=n)
            moved = np.empty_like(dense)
            moved[:, order] = dense
            out[i0 : i0 + step] = np.packbits(moved, axis=1)
    else:
        raise ValueError(f"rows of width {x.shape[1]} fit neither n={n} dense nor {packed_width(n)} packed columns")
    return out[0] if single else out


def prefix_ones(A: Any, order: Any, k: Any, rows_per_chunk: int | None = None) -> np.ndarray:
    """Ones of each row of A among its first k[i] samples in ranked order: int64 [m], without reordering any row."""
    return prefix_and_total_ones(A, order, k, rows_per_chunk)[0]


def prefix_and_total_ones(
    A: Any, order: Any, k: Any, rows_per_chunk: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(ones among the first k[i] ranked samples, ones in the row) per row of A, in one pass over packed rows.

    Per chunk of packed rows, rows are visited by increasing k while one packed mask of the first k ranked
    samples grows along `order`; each row costs an AND and a popcount over ceil(n/8) bytes.
    """
    rows = as_rows(A)
    m, n = rows.shape
    order = check_order(order, n)
    k = _check_thresholds(k, n, m)
    prefix, total = np.zeros(m, np.int64), np.zeros(m, np.int64)
    if m == 0 or n == 0:
        return prefix, total
    nb = packed_width(n)
    byte = (order >> 3).astype(np.intp)
    bit = np.right_shift(np.uint8(0x80), (order & 7).astype(np.uint8))
    words = (nb + 7) // 8
    mask = np.empty(nb, np.uint8)
    both = np.zeros(words * 8, np.uint8)  # zero tail: popcount on whole 64-bit words
    both_words, both_bytes = both.view(np.uint64), both[:nb]
    counts = np.empty(words, np.uint8)
    for i0, block in rows.scan_packed(rows_per_chunk):
        kc = k[i0 : i0 + block.shape[0]]
        total[i0 : i0 + block.shape[0]] = popcount_rows(block, n)
        mask[:] = 0
        filled = 0
        for i in np.argsort(kc, kind="stable"):
            if kc[i] > filled:
                np.bitwise_or.at(mask, byte[filled : kc[i]], bit[filled : kc[i]])
                filled = int(kc[i])
            np.bitwise_and(block[i], mask, out=both_bytes)
            np.bitwise_count(both_words, out=counts)
            prefix[i0 + i] = int(counts.sum(dtype=np.int64))
    return prefix, total
