"""The best estimate of an estimated row's accuracy, with its interval, as the store keeps and reports it.

Sort & Search predicts a new model's row from a step with threshold k over the ranked samples; its own estimate of
the accuracy is k/n. The n' evaluated samples also measure the step's mean error there, so the store reports the
model-assisted estimate k/n + mean residual with its interval (`intervals.accuracy_interval`, method
`intervals.STORE_METHOD` for the sampling the plan used) and keeps k/n beside it (`Accuracy.threshold_accuracy`).
`row_intervals` computes them from a row's cells when the estimate is recorded (`packed_row_intervals` from the
packed rows, touching only their observed cells); `estimated_accuracy` carries them to the store's current samples
when the accuracy is read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NamedTuple

import numpy as np

from lifelong.sortsearch.bitmatrix import packed_width
from lifelong.sortsearch.intervals import STORE_CONFIDENCE, STORE_METHOD, accuracy_interval
from lifelong.sortsearch.registry import EstimateInterval, EstimateRecord
from lifelong.sortsearch.store_cells import bit_counts, read_packed, row_limit

if TYPE_CHECKING:
    import zarr


class Accuracy(NamedTuple):
    """A model's accuracy over all n samples, what it rests on, and the fraction of its cells that were evaluated.

    `accuracy` is the best estimate: exact for an observed row; for an estimated row the interval's centre (the
    threshold's k/n corrected by the step's mean error on the evaluated samples, `intervals`), with `low`/`high` its
    95% interval (`intervals.STORE_CONFIDENCE`); for a mixed row the share of correct cells. `threshold_accuracy`:
    Sort & Search's own estimate (the DP threshold's k/n, what the paper reports); `row_accuracy`: the share of
    correct stored cells (facts and predictions). Bounds are None where no interval exists (mixed rows).
    """

    accuracy: float
    kind: Literal["observed", "estimated", "mixed"]
    observed_fraction: float
    low: float | None = None
    high: float | None = None
    threshold_accuracy: float | None = None
    row_accuracy: float | None = None


def row_intervals(
    correct: np.ndarray, seen: np.ndarray, order: np.ndarray, thresholds: np.ndarray, method: str
) -> list[EstimateInterval]:
    """Per row, the best estimate and interval over the n_e = len(order) samples of a sort, from its cells.

    `correct`, `seen`: dense 0/1 [rows, n_e] (sample order) of the stored cells and of the observed mask; the
    observed cells, ranked by `order`, are the sampled outcomes, and `thresholds` the step thresholds k. An
    estimate whose `method` ends in "uniform" was sampled evenly over the order, any other at random. A row with no
    observed cell gets k/n_e and no bounds.
    """
    n_e = order.size
    rank = np.empty(n_e, np.int64)
    rank[order] = np.arange(n_e)
    sampling = "uniform" if method.endswith("uniform") else "random"
    out = []
    for row, mask, k in zip(correct, seen.astype(bool), np.asarray(thresholds).tolist(), strict=True):
        row_ones = int(row.sum(dtype=np.int64))
        facts = np.flatnonzero(mask)
        if facts.size == 0 or not 0 <= k <= n_e:
            out.append(EstimateInterval(k / n_e, None, None, STORE_CONFIDENCE, "none", row_ones))
            continue
        facts = facts[np.argsort(rank[facts], kind="stable")]
        interval = accuracy_interval(
            row[facts][None, :],
            rank[facts],
            n_e,
            k=[k],
            confidence=STORE_CONFIDENCE,
            method=STORE_METHOD,
            sampling=sampling,
        )
        out.append(
            EstimateInterval(
                float(interval.estimate[0]),
                float(interval.low[0]),
                float(interval.high[0]),
                STORE_CONFIDENCE,
                f"{STORE_METHOD}-{sampling}",
                row_ones,
            )
        )
    return out


def packed_row_intervals(
    correct: np.ndarray, seen: np.ndarray, rank: np.ndarray, thresholds: np.ndarray, method: str
) -> list[EstimateInterval]:
    """`row_intervals` of packed rows, the same numbers, without unpacking them: n_e = rank.size samples.

    `correct`, `seen`: packed uint8 [rows, >= ceil(n_e / 8)] (bit order big; bits beyond n_e ignored) of the stored
    cells and the observed mask; `rank`: each sample's ranked position (the inverse of the sort's order). Only the
    observed cells are unpacked (found from the mask's non-zero bytes), once per run of rows with the same mask, and
    such a run shares one `accuracy_interval` call (its per-row results do not depend on the other rows).
    """
    n_e = rank.size
    seen = seen[:, : packed_width(n_e)]
    ones = bit_counts(correct, n_e).tolist()
    thresholds = np.asarray(thresholds).tolist()
    sampling = "uniform" if method.endswith("uniform") else "random"
    out: list[EstimateInterval] = []
    start = 0
    while start < len(correct):
        stop = start + 1
        while stop < len(correct) and np.array_equal(seen[stop], seen[start]):
            stop += 1
        runs = slice(start, stop)
        out += _same_mask_intervals(correct[runs], seen[start], rank, thresholds[runs], ones[runs], sampling)
        start = stop
    return out


def _same_mask_intervals(
    correct: np.ndarray, mask: np.ndarray, rank: np.ndarray, thresholds: list[int], ones: list[int], sampling: str
) -> list[EstimateInterval]:
    """The intervals of rows observed on the same cells (packed `mask`), with their correct cells `ones`."""
    n_e = rank.size
    _, where = _nonzero_bytes(mask[None, :])
    bits = np.unpackbits(mask[where][:, None], axis=1).astype(bool)
    cells = (where[:, None] * 8 + np.arange(8))[bits]
    cells = cells[cells < n_e]  # the observed samples, by id
    positions = rank[cells]
    by_rank = np.argsort(positions, kind="stable")
    positions, cells = positions[by_rank], cells[by_rank]
    valid = [i for i, k in enumerate(thresholds) if positions.size and 0 <= k <= n_e]
    out = [
        EstimateInterval(k / n_e, None, None, STORE_CONFIDENCE, "none", o)
        for k, o in zip(thresholds, ones, strict=True)
    ]
    if valid:
        sampled = (correct[valid][:, cells >> 3] >> (7 - (cells & 7)).astype(np.uint8)) & 1
        ks = [thresholds[i] for i in valid]
        interval = accuracy_interval(
            sampled, positions, n_e, k=ks, confidence=STORE_CONFIDENCE, method=STORE_METHOD, sampling=sampling
        )
        for j, i in enumerate(valid):
            estimate, low, high = float(interval.estimate[j]), float(interval.low[j]), float(interval.high[j])
            out[i] = EstimateInterval(estimate, low, high, STORE_CONFIDENCE, f"{STORE_METHOD}-{sampling}", ones[i])
    return out


def _nonzero_bytes(block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.nonzero(block) of a uint8 [rows, bytes] block holding few set bytes, faster: 8-byte words first."""
    flat = np.ascontiguousarray(block).reshape(-1)
    whole = flat.size // 8 * 8
    words = np.flatnonzero(flat[:whole].view(np.uint64) != 0)
    word, byte = np.nonzero(flat[words[:, None] * 8 + np.arange(8)])
    found = np.concatenate([words[word] * 8 + byte, whole + np.flatnonzero(flat[whole:])])
    return np.divmod(found, max(1, block.shape[1]))


def stored_intervals(
    arrays: tuple[zarr.Array, zarr.Array],
    model_ids: np.ndarray,
    n: int,
    chunks: tuple[int, int],
    order: np.ndarray,
    thresholds: np.ndarray | list[int],
    method: str,
) -> list[EstimateInterval]:
    """`packed_row_intervals` of the rows `model_ids` of a store's (correct, observed) `arrays` over n samples
    (chunk shape `chunks`), ranked by the sort `order` (its n_e <= n samples), reading a few MB of rows at a time."""
    rank = np.empty(order.size, np.int64)
    rank[order] = np.arange(order.size)
    thresholds = np.asarray(thresholds, np.int64)
    step = row_limit(packed_width(n), chunks[0])
    out = []
    for i0 in range(0, model_ids.size, step):
        ids = model_ids[i0 : i0 + step]
        correct, seen = (read_packed(array, ids, n, chunks) for array in arrays)
        out += packed_row_intervals(correct, seen, rank, thresholds[i0 : i0 + step], method)
    return out


def estimated_accuracy(record: EstimateRecord, correct: int, observed: int, n: int) -> Accuracy:
    """An estimated row's Accuracy: its best estimate and interval over its sort's samples, carried to all n."""
    row = correct / n
    interval = record.interval
    if interval is None:  # a format-1 row not filled in yet: its cells, and k/n if nothing was added since
        threshold = record.threshold / n if record.n_samples == n else None
        return Accuracy(row, "estimated", observed / n, None, None, threshold, row)
    n_e = record.n_samples
    later = correct - interval.row_ones  # correct cells now, beyond what the estimate saw (new samples, facts)
    accuracy = min(1.0, max(0.0, (interval.estimate * n_e + later) / n))
    low = high = None
    if interval.low is not None and interval.high is not None:
        low = max(0.0, min(accuracy, (interval.low * n_e + later) / n))
        high = min(1.0, max(accuracy, (interval.high * n_e + later) / n))
    threshold = (record.threshold + later) / n
    return Accuracy(accuracy, "estimated", observed / n, low, high, threshold, row)
