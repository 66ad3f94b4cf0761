"""The lifelong fact learning page of the HTML report: standard vs generalized top-5, R heatmaps, long-tail curves.

Fact runs are runs whose tasks are of kind "fact". Their figures are recomputed from the predict records with the
fact metrics (`lifelong.metrics.fact_metric`) and the facts and training counts the stream recorded in run.json;
values are top-5 accuracy in %, mean and sample std over the seeds of each (stream, split, learner) group.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lifelong.metrics.base import compute_all
from lifelong.metrics.fact_metric import BY_RULE, HEADLINE, FactMetrics, summarize_fact_seeds
from lifelong.report.pages import write_page
from lifelong.report.plots import new_figure, outside_legend, plot_accuracy_matrix, save_png, wrap_label
from lifelong.report.runs import Run, legend_rows
from lifelong.report.systems import FACTS, SYSTEMS, is_fact_run
from lifelong.results import RunData

PAGE = SYSTEMS[FACTS].page
TEMPLATE = "facts.html.j2"


def fact_summary(data: RunData) -> dict[str, Any]:
    """The fact metrics of one run, recomputed from its records and the stream's recorded facts."""
    stream = data.info["stream"]
    meta = stream.get("metadata") or {}
    metric = FactMetrics(len(stream["tasks"]), meta.get("facts"), meta.get("fact_train_images"))
    return compute_all([metric], data.records)


def _group(data: RunData) -> tuple[str, str, str]:
    config = data.info.get("config", {})
    split = (data.info["stream"].get("metadata") or {}).get("split", {})
    how = ", ".join(str(split[k]) for k in ("distance", "linkage") if split.get(k))
    method = str(split.get("method", "?")) + (f" ({how})" if how else "")
    return str(data.info["stream"]["name"]), method, str(config.get("learner", "?"))


def fact_rows(groups: dict[tuple[str, str, str], list[dict]]) -> list[dict[str, Any]]:
    """One table row per (stream, split, learner): mean ± std (%) over the group's runs of the headline figures
    (`cells`) and of the authors' rule and chance (`rule_cells`), two tables that each fit the page."""
    rows = []
    for (stream, split, learner), summaries in sorted(groups.items()):
        stats = summarize_fact_seeds(summaries)
        cells = [_cell(stats.get(key)) for key, _ in HEADLINE]
        rule_cells = [_cell(stats.get(key)) for key, _ in BY_RULE]
        rows.append(
            {"stream": stream, "split": split, "learner": learner, "seeds": len(summaries), "cells": cells}
            | {"rule_cells": rule_cells}
        )
    return rows


def _cell(stats: dict | None) -> str:
    if stats is None:
        return "-"
    return f"{100 * stats['mean']:.2f}" + ("" if stats["std"] is None else f" ± {100 * stats['std']:.2f}")


def _plot_matrix(R: np.ndarray, title: str, path: Path) -> Path:
    """Heatmap of R (generalized top-5 after training task i on task j), tasks numbered from 1."""
    return plot_accuracy_matrix(
        np.clip(R, 0.0, 1.0), path, title=title, colorbar_label="generalized top-5 (%)", axis_names=("task", "task")
    )


def _plot_long_tail(groups: dict[tuple[str, str, str], list[dict]], path: Path) -> Path | None:
    fig, ax = new_figure(7.0)
    drawn = False
    for (stream, split, learner), summaries in sorted(groups.items()):
        tails = [s["fact_long_tail"] for s in summaries if s.get("fact_long_tail")]
        if not tails:
            continue
        lows = [row["low"] for row in tails[0]]
        means = [
            np.mean([t[i]["accuracy"] for t in tails if t[i]["accuracy"] is not None] or [np.nan])
            for i in range(len(lows))
        ]
        ax.plot(lows, 100 * np.asarray(means), marker="o", label=wrap_label(f"{learner}, {split} ({stream})", 32))
        drawn = True
    if not drawn:
        return None
    ax.set_xscale("log", base=2)
    ax.set_xlabel("training images of the fact (bin lower edge)")
    ax.set_ylabel("generalized top-5 (%)")
    ax.set_title("long tail: generalized top-5 by the fact's training images")
    outside_legend(ax, fontsize=8)
    return save_png(fig, path)


def write_fact_page(runs: Sequence[Run], out: str | Path, nav: list[tuple[str, str]]) -> Path | None:
    """Write facts.html and its figures into `out` for the fact runs among `runs`; None when there are none."""
    runs = [r for r in runs if is_fact_run(r.data)]
    if not runs:
        return None
    out = Path(out)
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for run in runs:
        groups.setdefault(_group(run.data), []).append(fact_summary(run.data))
    figures: list[tuple[str, str]] = []
    notes: list[str] = []
    for number, (key, summaries) in enumerate(sorted(groups.items()), start=1):
        matrices = [np.array(s["fact_R"], dtype=float) for s in summaries if s.get("fact_R") is not None]
        if matrices and not np.isnan(np.mean(matrices, axis=0)).all():
            title = f"{key[2]}, {key[1]} split ({key[0]}): R, mean over {len(matrices)} seed(s)"
            figures.append((_plot_matrix(np.mean(matrices, axis=0), title, out / f"facts_R_{number}.png").name, title))
        unfinished = sum(1 for s in summaries if s.get("fact_generalized_mean_over_tasks") is None)
        if unfinished:
            notes.append(f"{key[2]}, {key[1]} ({key[0]}): {unfinished} unfinished run(s) left out of the means")
    tail = _plot_long_tail(groups, out / "facts_long_tail.png")
    if tail is not None:
        figures.append((tail.name, "long tail: generalized top-5 by the fact's training images (mean over seeds)"))
    return write_page(
        out,
        PAGE,
        TEMPLATE,
        nav,
        columns=HEADLINE,
        rule_columns=BY_RULE,
        rows=fact_rows(groups),
        figures=figures,
        notes=notes,
        legend=legend_rows(runs),
    )


__all__ = ["fact_rows", "fact_summary", "write_fact_page"]
