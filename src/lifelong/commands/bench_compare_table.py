"""The plain-text table of `lifelong bench compare`'s protocol (errors in accuracy points)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _points(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


def table_lines(rows: Sequence[dict[str, Any]], versus: Sequence[dict[str, Any]]) -> list[str]:
    """Per split and budget, one line per method: MAE [95% CI], ratio to random-mean [CI], RMSE, max, tau,
    coverage and width, per-sample error and Brier, seconds; then the paired differences against `lifelong`."""
    head = (
        f"{'split':<13} {'n_':>5} {'method':<16} {'MAE pts [95% CI]':>20} {'x random [CI]':>19} {'RMSE':>6} "
        f"{'max':>6} {'tau':>5} {'cover':>6} {'width':>6} {'s-err':>6} {'brier':>6} {'sec':>7}"
    )
    lines = [head, "-" * len(head)]
    for r in sorted(rows, key=lambda r: (r["split"], r["budget"], r["mae"])):
        lo, hi = r["mae_interval"]
        ratio = r.get("ratio")
        rlo, rhi = r.get("ratio_interval", (None, None))
        ratio_text = "-" if ratio is None else f"{ratio:.2f} [{rlo:.2f},{rhi:.2f}]"
        cover = "-" if "coverage" not in r else f"{100 * r['coverage']:.0f}%"
        lines.append(
            f"{r['split']:<13} {r['budget']:>5} {r['method']:<16} "
            f"{100 * r['mae']:>6.2f} [{100 * lo:.2f},{100 * hi:.2f}]".ljust(58)
            + f" {ratio_text:>19} {100 * r['rmse']:>6.2f} {100 * r['max_error']:>6.2f} {r['kendall_tau']:>5.2f} "
            f"{cover:>6} {_points(r.get('width')):>6} {_points(r.get('sample_error')):>6} "
            f"{r.get('brier', float('nan')):>6.3f} {r['seconds']:>7.3f}"
        )
    if versus:
        lines += ["", "lifelong against each method: mean |error| difference in points [95% bootstrap CI]"]
        for v in sorted(versus, key=lambda v: (v["split"], v["budget"], v["other"])):
            lo, hi = v["interval"]
            verdict = "lifelong closer" if hi < 0 else "other closer" if lo > 0 else "no clear difference"
            lines.append(
                f"{v['split']:<13} {v['budget']:>5} vs {v['other']:<16} {100 * v['difference']:>+7.2f} "
                f"[{100 * lo:+.2f},{100 * hi:+.2f}]  {verdict}"
            )
    return lines
