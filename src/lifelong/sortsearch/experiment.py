"""The paper's Sort & Search experiments on any pair of 0/1 matrices (rows = models, columns = samples).

`rank` holds the ranking models, `evaluate` the held-out models whose rows are estimated from n' sampled
columns per budget and compared with their true rows. With `transpose`, samples are inserted instead: both
matrices share their models (rows), the ranking samples' columns order the models (most accurate first), and
each held-out sample's column is estimated from m' models. One pass over the held-out rows serves all budgets.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lifelong.core.suggest import did_you_mean
from lifelong.sortsearch.bitmatrix import DenseRows, RowSource
from lifelong.sortsearch.row_metrics import Agreement, epistemic_error, pearson
from lifelong.sortsearch.search import (
    SAMPLING_METHODS,
    best_step,
    dp_threshold,
    extrapolate,
    global_threshold,
    prefix_from_scores,
    ranked_chunks,
    sample_positions,
    step_scores,
)
from lifelong.sortsearch.sort import model_order, sort_by_confidence, sort_by_sum, sort_recursive

SORTS = ("sum", "confidence", "recursive")
_SCAN_BYTES = 64 * 2**20


def shape_words(shape: Sequence[int]) -> str:
    """An array shape in words: "a 1-D array of 300 values", "a 3-D array 2 x 3 x 4" (no tuple reprs)."""
    shape = tuple(int(s) for s in shape)
    if len(shape) == 0:
        return "a single number"
    if len(shape) == 1:
        return f"a 1-D array of {shape[0]} values"
    return f"a {len(shape)}-D array " + " x ".join(str(s) for s in shape)


def matrix_size(shape: Sequence[int]) -> str:
    """A [models, samples] matrix's size the one way the toolkit writes it: "M models x N samples"."""
    return f"{int(shape[0])} models x {int(shape[1])} samples"


def check_matrix(matrix: Any, name: str) -> None:
    """Raise unless `matrix` is a 2-D uint8/bool array of 0/1, naming `name` and the first offending cell."""
    shape = tuple(getattr(matrix, "shape", ()))
    if len(shape) != 2:
        raise ValueError(f"{name}: expected a 2-D matrix (rows = models, columns = samples); got {shape_words(shape)}")
    dtype = np.dtype(getattr(matrix, "dtype", None))
    if dtype == np.bool_:
        return
    if dtype != np.uint8:
        raise TypeError(
            f"{name} holds {dtype} values; a correctness matrix is uint8 0/1 (rows = models, columns = samples): "
            "save it as uint8 after checking it holds only 0 and 1"
        )
    step = max(1, _SCAN_BYTES // max(1, shape[1]))
    for i0 in range(0, shape[0], step):
        block = np.asarray(matrix[i0 : i0 + step])
        if block.size and block.max() > 1:
            r, c = np.argwhere(block > 1)[0]
            raise ValueError(
                f"{name}: cell [row {i0 + r}, column {c}] holds {block[r, c]}; "
                "a correctness matrix holds only 0 (wrong) and 1 (correct)"
            )


def open_npy(path: str | Path, *, mmap: bool = True, what: str = "a .npy matrix") -> np.ndarray:
    """A numeric array from a .npy file (memory-mapped read-only with `mmap`), or an error naming the file and
    saying what is wrong with it in plain words (never numpy's advice to unpickle: arrays of objects are refused)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (expected {what})")
    try:
        with path.open("rb") as handle:
            magic = handle.read(6)
    except OSError as err:
        raise ValueError(f"{path}: cannot be read ({err.strerror or err})") from None
    if magic != b"\x93NUMPY":
        why = "it is empty" if not magic else "it does not start with the .npy header"
        raise ValueError(f"{path} is not a NumPy .npy file ({why}); expected {what} saved with numpy.save")
    try:
        array = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        why = "it holds Python objects, not numbers" if "object" in str(err).lower() else "it is truncated or damaged"
        raise ValueError(f"{path} is not a readable .npy array ({why}); expected {what}") from None
    if array.dtype.hasobject:
        raise ValueError(f"{path} holds Python objects, not numbers; expected {what}")
    return array


def open_zero_one(path: str | Path, *, ndim: int, what: str, needs: str) -> np.ndarray:
    """0/1 outcomes (uint8) from a .npy of `ndim` dimensions, integers or bools; an error naming the file says what
    is wrong in plain words (`needs`: what the option wants, said when the shape is wrong)."""
    outcomes = np.asarray(open_npy(path, mmap=False, what=what))
    if outcomes.ndim != ndim:
        raise ValueError(f"{path} holds {shape_words(outcomes.shape)}; {needs}")
    if outcomes.dtype != np.bool_ and not np.issubdtype(outcomes.dtype, np.integer):
        raise ValueError(f"{path} holds {outcomes.dtype} values; outcomes are integers 0 (wrong) or 1 (correct)")
    bad = np.argwhere(~np.isin(outcomes, (0, 1)))
    if bad.size:
        where = tuple(int(v) for v in bad[0])
        shown = where[0] if ndim == 1 else list(where)
        raise ValueError(f"{path}: entry {shown} is {outcomes[where]}; outcomes must be 0 or 1")
    return outcomes.astype(np.uint8)


def load_matrix(path: str | Path) -> np.ndarray:
    """A dense 0/1 correctness matrix from a .npy file (memory-mapped, read-only), validated."""
    matrix = open_npy(path)
    check_matrix(matrix, str(path))
    return matrix


def load_confidence(path: str | Path) -> np.ndarray:
    """A float [models, samples] matrix of true-class probabilities from a .npy file, validated."""
    conf = open_npy(path)
    if conf.ndim != 2 or not np.issubdtype(conf.dtype, np.floating):
        raise ValueError(
            f"{path}: expected a 2-D float matrix of true-class probabilities; got {conf.dtype} values in "
            f"{shape_words(conf.shape)}"
        )
    step = max(1, _SCAN_BYTES // (conf.itemsize * max(1, conf.shape[1])))
    for i0 in range(0, conf.shape[0], step):
        block = np.asarray(conf[i0 : i0 + step])
        bad = ~np.isfinite(block) | (block < 0) | (block > 1)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise ValueError(
                f"{path}: cell [row {i0 + r}, column {c}] holds {block[r, c]}; probabilities lie in [0, 1]"
            )
    return conf


def _rows(matrix: Any, transpose: bool, name: str, validate: bool) -> RowSource:
    """The rows the experiment works on: the matrix itself, or its transpose (samples as rows)."""
    if isinstance(matrix, RowSource):
        if transpose:
            raise TypeError(f"{name}: transpose needs a dense array (ndarray or memmap), not {type(matrix).__name__}")
        return matrix
    if validate:
        check_matrix(matrix, name)
    return DenseRows(matrix.T if transpose else matrix)


def _check_budgets(budgets: Sequence[int], n: int, what: str) -> list[int]:
    """Validate budgets: positive integers no larger than the columns of each estimated row."""
    out = [int(b) for b in budgets]
    if not out:
        raise ValueError("no budgets given; give budgets such as 8,16,32")
    if any(b != float(x) for b, x in zip(out, budgets, strict=True)):
        raise ValueError(f"budgets must be integers; got {', '.join(str(b) for b in budgets)}")
    bad = [b for b in out if not 1 <= b <= n]
    if bad:
        raise ValueError(
            f"budgets {', '.join(map(str, bad))} lie outside 1..{n} ({n} = {what} per estimated row); "
            "drop or lower them"
        )
    return out


def _order(rank: RowSource, sort: str, confidence: Any, transpose: bool) -> np.ndarray:
    """The ranking order of the columns of the estimated rows."""
    if sort == "confidence":
        if confidence is None:
            raise ValueError("sort='confidence' needs rank_confidence (true-class probabilities of the ranking models)")
        return sort_by_confidence(confidence.T if transpose else confidence)
    if sort == "recursive":
        return sort_recursive(rank)
    if transpose:  # models by accuracy on the ranking samples, most accurate first (equal to sort_by_sum of rank.T)
        return model_order(rank.column_sums() / max(1, rank.shape[0]))
    return sort_by_sum(rank)


def run_experiment(
    rank: Any,
    evaluate: Any,
    *,
    budgets: Sequence[int],
    sort: str = "sum",
    sampling: str = "uniform",
    rank_confidence: Any = None,
    transpose: bool = False,
    seed: int = 0,
    validate: bool = True,
) -> list[dict[str, Any]]:
    """Per budget n' (m' with transpose): mean sample-level error, aggregate error, kappa, Pearson r of estimated
    vs true accuracies, and mean aleatoric / epistemic errors (all errors are fractions), over the held-out rows.

    Random sampling draws each budget's positions from `np.random.default_rng([seed, budget])`.
    """
    if sort not in SORTS:
        raise ValueError(f"unknown sort {sort!r}{did_you_mean(str(sort), SORTS)}; choose one of {', '.join(SORTS)}")
    if sampling not in SAMPLING_METHODS:
        raise ValueError(
            f"unknown sampling {sampling!r}{did_you_mean(str(sampling), SAMPLING_METHODS)}; "
            f"choose {' or '.join(SAMPLING_METHODS)}"
        )
    ranking = _rows(rank, transpose, "rank", validate)
    held_out = _rows(evaluate, transpose, "evaluate", validate)
    what = "models" if transpose else "samples"
    if ranking.shape[1] != held_out.shape[1]:
        shared = "models (rows)" if transpose else "samples (columns)"
        raise ValueError(f"rank and evaluate must share their {shared}: {ranking.shape[1]} vs {held_out.shape[1]}")
    if held_out.shape[0] == 0 or ranking.shape[0] == 0:
        raise ValueError("both the ranking and the held-out set need at least one row")
    if rank_confidence is not None and tuple(rank_confidence.shape) != tuple(np.shape(rank)):
        raise ValueError(f"rank_confidence has shape {rank_confidence.shape}; rank has {np.shape(rank)}")
    m, n = held_out.shape
    budgets = _check_budgets(budgets, n, what)
    order = _order(ranking, sort, rank_confidence, transpose)
    positions = [sample_positions(n, b, sampling, seed=np.random.default_rng([seed, b])) for b in budgets]

    ones, k_star, both_star = (np.zeros(m, np.int64) for _ in range(3))
    k_est, k_glob, both = (np.zeros((len(budgets), m), np.int64) for _ in range(3))
    for i0, ranked in ranked_chunks(held_out, order):
        rows = slice(i0, i0 + ranked.shape[0])
        scores = step_scores(ranked)
        best = best_step(scores)
        k_star[rows], both_star[rows] = best.k, (best.score + best.k) // 2
        ones[rows] = (scores[:, -1].astype(np.int64) + n) // 2
        for b, pos in enumerate(positions):
            sampled = ranked[:, pos]
            k_est[b, rows] = extrapolate(dp_threshold(sampled), pos, n)
            k_glob[b, rows] = global_threshold(sampled, pos, n)
            both[b, rows] = prefix_from_scores(scores, k_est[b, rows])

    optimal = Agreement(n, ones, k_star, both_star)
    results = []
    for b, budget in enumerate(budgets):
        est = Agreement(n, ones, k_est[b], both[b])
        kappa = est.kappa
        defined = ~np.isnan(kappa)
        results.append(
            {
                "budget": budget,
                "n": n,
                "rows": m,
                "sort": sort,
                "sampling": sampling,
                "transpose": bool(transpose),
                "error": float(est.error.mean()),
                "aggregate_error": float(est.aggregate_error.mean()),
                "kappa": float(kappa[defined].mean()) if defined.any() else math.nan,
                "kappa_undefined": int((~defined).sum()),
                "pearson": pearson(k_est[b] / n, ones / n) if m >= 2 else math.nan,
                "aleatoric": float(optimal.error.mean()),
                "epistemic": float(epistemic_error(k_est[b], k_star, n).mean()),
                "global_aggregate_error": float((np.abs(k_glob[b] - ones) / n).mean()),
            }
        )
    return results
