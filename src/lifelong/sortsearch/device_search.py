"""Sort & Search's two heavy operations on a torch device, with results identical to the NumPy path.

`sort_by_sum` counts the ranking models' correct answers per sample on the device (packed rows travel as bytes
and are counted bit plane by bit plane there), then orders samples by a stable descending sort whose ties follow
`tie_keys`, as `sort.descending_order` does. `thresholds` finds every row's best step threshold over its ranked
(or sampled) outcomes: S(t) = 2 * ones(t) - t, first maximum, S(0) = 0 allowed, as `best_step(step_scores(.))`.

Everything compared is an integer (int32 counts, int64 keys): no float ever decides an order or a threshold, so
CPU and CUDA give the same bits as NumPy. Rows stream through in chunks of about `CHUNK_BYTES` of working memory,
so device memory stays bounded whatever the matrix size. On the CPU the NumPy path is faster: the public entry
points (`sort.sort_by_sum`, `search.dp_threshold`, `search.optimal_thresholds`) come here only when given a
`device=` (see `backend_device`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from lifelong.sortsearch.bitmatrix import PackedRows, RowSource, as_rows, packed_width
from lifelong.sortsearch.search import Thresholds, _as_2d, _check_01_rows, check_order
from lifelong.sortsearch.sort import _index_dtype, tie_keys
from lifelong.training.devices import AUTO, check_device_spec, current_device, device_for

CHUNK_BYTES = 256 * 2**20  # device working memory of one row chunk (input, counts and int64 DP keys)
_DP_BYTES = 13  # per DP cell: the 0/1 outcome (1), its running count (int32: 4), its int64 key (8)
_SIGN = np.uint64(1 << 63)  # uint64 -> int64 with the same order: flip the sign bit


def backend_device(device: Any) -> torch.device | None:
    """Where a public entry point's `device=` runs: None for NumPy, else the torch device.

    None: NumPy (the default). "auto": the current accelerator's device when it is CUDA, else NumPy (faster on
    the CPU). "cpu", "cuda", "cuda:N" or a torch.device: torch on that device (an error if the machine lacks it).
    """
    if device is None:
        return None
    if not isinstance(device, torch.device) and check_device_spec(device) == AUTO:
        found = current_device()
        return found if found.type == "cuda" else None
    return device_for(device)


def _rows_per_chunk(bytes_per_row: int, rows_per_chunk: int | None) -> int:
    """Rows per device chunk: the given count, else as many as fit in CHUNK_BYTES."""
    if rows_per_chunk is not None:
        if int(rows_per_chunk) < 1:
            raise ValueError(f"rows_per_chunk must be >= 1; got {rows_per_chunk}")
        return int(rows_per_chunk)
    return max(1, CHUNK_BYTES // max(1, bytes_per_row))


def _tensor(block: np.ndarray, device: torch.device) -> torch.Tensor:
    """A uint8 host block on `device` (a read-only block, e.g. from a memory map, is copied first)."""
    block = np.ascontiguousarray(block).view(np.uint8)
    return torch.from_numpy(block if block.flags.writeable else block.copy()).to(device)


def _chunks(rows: RowSource, step: int, device: torch.device) -> Iterator[tuple[int, torch.Tensor, bool]]:
    """(first row, chunk on the device, whether it is packed): PackedRows travel as packed bytes, others dense.

    A chunk may share a host buffer with the next one (scan_packed): use it before asking for the next.
    """
    packed = isinstance(rows, PackedRows)
    for i0, block in rows.scan_packed(step) if packed else rows.iter_chunks(step):
        yield i0, _tensor(block, device), packed


def _columns(block: torch.Tensor, packed: bool, cols: torch.Tensor) -> torch.Tensor:
    """Cells of a chunk's rows at column ids `cols` (int64, on the device), in that order: uint8 [r, len(cols)]."""
    if not packed:
        return block[:, cols]
    shift = (7 - (cols & 7)).to(torch.uint8)
    return (block[:, cols >> 3] >> shift) & 1


def column_sums(A: Any, device: Any = None, rows_per_chunk: int | None = None) -> np.ndarray:
    """Ones per column of a 0/1 matrix (dense or PackedRows), counted on `device`: int64 [n]."""
    rows, dev = as_rows(A), device_for(device)
    n, nb = rows.shape[1], packed_width(rows.shape[1])
    if rows.shape[0] >= 2**31:
        raise ValueError(f"{rows.shape[0]} rows overflow the int32 column counts; split the ranking models")
    packed = isinstance(rows, PackedRows)
    total = torch.zeros(8 * nb if packed else n, dtype=torch.int64, device=dev)
    planes = total.view(nb, 8) if packed else total  # column 8 * byte + bit of a packed row
    for _, block, _ in _chunks(rows, _rows_per_chunk(5 * (nb if packed else n), rows_per_chunk), dev):
        if not packed:
            total += block.sum(dim=0, dtype=torch.int32)
            continue
        for bit in range(8):  # one bit plane at a time: no unpacked copy of the chunk
            planes[:, bit] += ((block >> (7 - bit)) & 1).sum(dim=0, dtype=torch.int32)
    return total[:n].cpu().numpy()


def descending_order(sums: np.ndarray | torch.Tensor, device: Any = None) -> np.ndarray:
    """`sort.descending_order` of integer keys, sorted on `device`: largest first, ties in `tie_keys` order."""
    dev = device_for(device)
    keys = torch.as_tensor(np.asarray(sums, np.int64) if not isinstance(sums, torch.Tensor) else sums).to(dev)
    n = int(keys.numel())
    if keys.dim() != 1:
        raise ValueError(f"sort keys must be 1-D; got shape {tuple(keys.shape)}")
    if n == 0:
        return np.zeros(0, np.int32)
    ties = torch.from_numpy((tie_keys(n) ^ _SIGN).view(np.int64)).to(dev)
    first = torch.sort(ties).indices  # tie keys are distinct: the permutation that sorts them
    flipped = (keys.max() - keys.to(torch.int64))[first]  # ascending max - key = descending key
    order = first[torch.sort(flipped, stable=True).indices]
    return order.cpu().numpy().astype(_index_dtype(n))


def sort_by_sum(A: Any, device: Any = None, rows_per_chunk: int | None = None) -> np.ndarray:
    """`sort.sort_by_sum` on `device` (None: the current accelerator's): the same order, bit for bit."""
    dev = device_for(device)
    return descending_order(torch.from_numpy(column_sums(A, dev, rows_per_chunk)), dev)


def _best_steps(bits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(k, S(k)) per 0/1 row [r, t] on its device: first maximum of S(0)=0, S(1..t), all in integers."""
    r, t = bits.shape
    if t == 0:
        zeros = torch.zeros(r, dtype=torch.int64, device=bits.device)
        return zeros, zeros
    steps = torch.arange(1, t + 1, dtype=torch.int64, device=bits.device)
    keys = torch.cumsum(bits, dim=1, dtype=torch.int32).to(torch.int64)  # ones among the first t
    keys.mul_(2).sub_(steps)  # S(t) = 2 * ones - t
    keys.mul_(t + 1).sub_(steps).add_(t + 1)  # S(t) * (t+1) + (t+1 - t): the unique maximum is the first one
    best = keys.max(dim=1).values
    score = torch.div(best, t + 1, rounding_mode="floor")
    k = t + 1 - (best - score * (t + 1))
    positive = score > 0  # S(0) = 0 comes first, so a maximum of 0 means k = 0
    return torch.where(positive, k, 0), torch.where(positive, score, 0)


def thresholds(
    A: Any,
    order: Any,
    positions: Any = None,
    device: Any = None,
    rows_per_chunk: int | None = None,
) -> Thresholds:
    """Best step threshold of every row of A over its ranked outcomes, batched on `device`.

    Row i's outcomes are A[i, order[positions]] (all n ranked samples when `positions` is None); k counts
    positions, as `search.optimal_thresholds` (n' = n) or `search.dp_threshold` of the sampled outcomes
    (extrapolate k to all n samples with `search.extrapolate`). Thresholds are identical to the NumPy path.
    """
    rows, dev = as_rows(A), device_for(device)
    m, n = rows.shape
    ranked = check_order(order, n)
    if positions is not None:
        pos = np.asarray(positions, np.int64)
        if pos.ndim != 1 or (pos.size and (pos.min() < 0 or pos.max() >= n)):
            raise ValueError(f"positions must be a 1-D array of ranked positions in [0, {n})")
        ranked = ranked[pos]
    cols = torch.from_numpy(ranked).to(dev)
    k, score = np.zeros(m, np.int64), np.zeros(m, np.int64)
    row_bytes = packed_width(n) if isinstance(rows, PackedRows) else n
    for i0, block, packed in _chunks(rows, _rows_per_chunk(row_bytes + _DP_BYTES * cols.numel(), rows_per_chunk), dev):
        best_k, best_score = _best_steps(_columns(block, packed, cols))
        k[i0 : i0 + block.shape[0]] = best_k.cpu().numpy()
        score[i0 : i0 + block.shape[0]] = best_score.cpu().numpy()
    return Thresholds(k, score)


def dp_thresholds(B: Any, device: Any = None, rows_per_chunk: int | None = None) -> Thresholds:
    """Best step threshold per dense 0/1 row [r, t] already in ranked order (`search.dp_threshold`), on `device`."""
    dense, _ = _as_2d(B, "dp_thresholds expects [rows, t] 0/1 rows")
    _check_01_rows(dense)
    dense, dev = dense.astype(np.uint8, copy=False), device_for(device)
    k, score = np.zeros(dense.shape[0], np.int64), np.zeros(dense.shape[0], np.int64)
    step = _rows_per_chunk(_DP_BYTES * dense.shape[1], rows_per_chunk)
    for i0 in range(0, dense.shape[0], step):
        best_k, best_score = _best_steps(_tensor(dense[i0 : i0 + step], dev))
        k[i0 : i0 + best_k.numel()] = best_k.cpu().numpy()
        score[i0 : i0 + best_k.numel()] = best_score.cpu().numpy()
    return Thresholds(k, score)
