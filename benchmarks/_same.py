"""Shared by the benchmarks (not one itself): a baseline's output must equal lifelong's, else the run exits non-zero.

A ratio against a baseline that computes something else measures nothing, so every comparison checks this first.
"""

from __future__ import annotations

import numpy as np


def require_same(what: str, ours: object, base: object, *, atol: float = 0.0, rtol: float = 0.0) -> str:
    """Exit non-zero unless `base` equals `ours` (exactly, or within atol + rtol |ours|); returns the verdict."""
    a, b = _array(ours), _array(base)
    if a.shape != b.shape:
        raise SystemExit(f"{what}: baseline output has shape {b.shape}, lifelong's {a.shape}; they must be equal")
    exact = atol == 0 and rtol == 0
    same = np.array_equal(a, b, equal_nan=a.dtype.kind == "f") if exact else np.allclose(b, a, rtol, atol, True)
    if not same:
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
        where = np.unravel_index(int(np.nanargmax(diff)), diff.shape) if diff.size else ()
        raise SystemExit(
            f"{what}: baseline output differs from lifelong's ({int((diff > 0).sum())} of {diff.size} values, largest "
            f"|difference| {np.nanmax(diff):.3g} at {tuple(int(i) for i in where)}; allowed atol={atol:g}, "
            f"rtol={rtol:g}): the comparison is not like for like"
        )
    return "identical" if exact else f"equal ({_tolerance(atol, rtol)})"


def _array(value: object) -> np.ndarray:
    """A NumPy view of an array, a CPU or device torch tensor, or a number."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def _tolerance(atol: float, rtol: float) -> str:
    if atol == rtol:
        return f"{atol:g}"
    return ", ".join(f"{name} {v:g}" for name, v in (("atol", atol), ("rtol", rtol)) if v)
