"""The plain-text tables of `lifelong bench compare`'s protocol (errors in accuracy points), fitting 80 columns.

One section per split and budget, each two narrow tables of every method (the estimate's error; then its time,
interval, per-sample scores and `lifelong` against it) under a legend printed once; table.json keeps every figure.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

LEGEND = (
    "Per split and budget n' (the samples each target model is evaluated on), every method on the same draws; "
    "errors of the estimated accuracy in points. MAE: mean absolute error [95% bootstrap interval]; x random: MAE "
    "over random-mean's [paired interval]; RMSE: root-mean-square error; max: the largest error; tau: Kendall's "
    "rank correlation with the true accuracies. sec: seconds per fit and estimate; cover: share of true accuracies "
    "inside the method's 95% interval, width: its mean width; s-err, brier: per-sample error and Brier score of "
    "its per-sample predictions; lifelong - it: lifelong's mean |error| minus the method's [95% bootstrap "
    "interval], negative when lifelong is closer, * when the interval excludes 0. -: the method has none."
)


def _points(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


def _interval(value: float | None, low: float | None, high: float | None, scale: float = 1.0) -> str:
    """`value [low,high]`, or `-` without a value."""
    if value is None:
        return "-"
    return f"{scale * value:.2f} [{scale * low:.2f},{scale * high:.2f}]"


def _grid(head: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> list[str]:
    """Columns sized to their widest cell, the first left-aligned and the others right-aligned, two spaces apart
    (one when two do not fit `width`)."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    gap = 2 if sum(widths) + 2 * (len(widths) - 1) <= width else 1

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        return (first + "".join(" " * gap + c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))).rstrip()

    return [line(head)] + [line(r) for r in rows]


def _versus(v: dict[str, Any] | None) -> str:
    """`lifelong - method [low,high]` in points, starred when the interval excludes zero."""
    if v is None:
        return "-"
    lo, hi = v["interval"]
    star = "*" if hi < 0 or lo > 0 else ""
    return f"{100 * v['difference']:+.2f} [{100 * lo:+.2f},{100 * hi:+.2f}]{star}"


def table_lines(rows: Sequence[dict[str, Any]], versus: Sequence[dict[str, Any]], width: int = 80) -> list[str]:
    """The legend (wrapped to `width`), then per split and budget: the error table (MAE [CI], x random [CI], RMSE,
    max, tau) and the table of seconds, coverage and width, per-sample error and Brier, and `lifelong` against
    each method, every method by increasing MAE."""
    lines = textwrap.wrap(LEGEND, max(width, 40), break_long_words=False, break_on_hyphens=False)
    against = {(v["split"], v["budget"], v["other"]): v for v in versus}
    sections: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in sorted(rows, key=lambda r: (r["split"], r["budget"], r["mae"])):
        sections.setdefault((r["split"], r["budget"]), []).append(r)
    for (split, budget), group in sections.items():
        seeds = max(r.get("seeds", 0) for r in group)
        estimates = max(r.get("models", 0) for r in group)
        lines += ["", f"{split}, n' = {budget}: {estimates} target estimates over {seeds} seeds"]
        errors = [
            (
                r["method"],
                _interval(r["mae"], *r["mae_interval"], scale=100),
                _interval(r.get("ratio"), *r.get("ratio_interval", (None, None))),
                _points(r["rmse"]),
                _points(r["max_error"]),
                f"{r['kendall_tau']:.2f}",
            )
            for r in group
        ]
        lines += _grid(("method", "MAE [95% CI]", "x random [CI]", "RMSE", "max", "tau"), errors, width)
        lines.append("")
        head = ("method", "sec", "cover", "width", "s-err", "brier") + (("lifelong - it",) if versus else ())
        rest = []
        for r in group:
            cover = "-" if "coverage" not in r else f"{100 * r['coverage']:.0f}%"
            brier = "-" if r.get("brier") is None else f"{r['brier']:.3f}"
            cells = (r["method"], f"{r['seconds']:.3f}", cover, _points(r.get("width")), _points(r.get("sample_error")))
            cells += (brier,)
            if versus:
                cells += (_versus(against.get((split, budget, r["method"]))),)
            rest.append(cells)
        lines += _grid(head, rest, width)
    return lines
