"""The lifelong fact learning page of the HTML report: standard vs generalized top-5, R heatmaps, long-tail curves.

Fact runs are runs whose tasks are of kind "fact". Their figures are recomputed from the predict records with the
fact metrics (`lifelong.metrics.fact_metric`) and the facts and training counts the stream recorded in run.json;
values are top-5 accuracy in %, mean and sample std over the seeds of each (stream, split, learner) group.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2
import numpy as np

from lifelong.core.files import atomic_write_bytes
from lifelong.metrics.base import compute_all
from lifelong.metrics.fact_metric import HEADLINE, FactMetrics, summarize_fact_seeds
from lifelong.report.plots import new_figure, plain_legend, save_png
from lifelong.results import RunData

PAGE = "facts.html"
COLUMNS = HEADLINE

_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Lifelong fact learning</title>
<style>body{font-family:sans-serif;margin:2em;max-width:75em}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}th:first-child,td:first-child{text-align:left}
.note{color:#555}</style></head><body>
<h1>Lifelong fact learning</h1>
<p>Top-5 accuracy (%) after the last task, wildcard-aware: <i>standard</i> ranks the facts of the image's own task,
<i>generalized</i> every fact of the stream. Means over tasks and over test examples, the drop (standard -
generalized), and backward / forward transfer on generalized accuracy (BWT, FWT, in points). Mean &plusmn; sample
std (ddof=1) over seeds.</p>
<table><thead><tr><th>stream</th><th>split</th><th>learner</th><th>seeds</th>
{% for _, title in columns %}<th>{{ title }}</th>{% endfor %}</tr></thead>
<tbody>{% for row in rows %}<tr><td>{{ row.stream }}</td><td>{{ row.split }}</td><td>{{ row.learner }}</td>
<td>{{ row.seeds }}</td>{% for cell in row.cells %}<td>{{ cell }}</td>{% endfor %}</tr>{% endfor %}</tbody></table>
{% for file, alt in figures %}<figure><img src="{{ file }}" alt="{{ alt }}"><figcaption>{{ alt }}</figcaption></figure>
{% endfor %}{% for text in notes %}<p class="note">{{ text }}</p>{% endfor %}
<p><a href="index.html">back to the report</a></p>
</body></html>
"""


def is_fact_run(data: RunData) -> bool:
    """Whether a run's tasks are fact tasks."""
    tasks = data.info.get("stream", {}).get("tasks", [])
    return bool(tasks) and all(t.get("kind") == "fact" for t in tasks)


def fact_summary(data: RunData) -> dict[str, Any]:
    """The fact metrics of one run, recomputed from its records and the stream's recorded facts."""
    stream = data.info["stream"]
    meta = stream.get("metadata") or {}
    metric = FactMetrics(len(stream["tasks"]), meta.get("facts"), meta.get("fact_train_images"))
    return compute_all([metric], data.records)


def _group(data: RunData) -> tuple[str, str, str]:
    config = data.info.get("config", {})
    split = (data.info["stream"].get("metadata") or {}).get("split", {})
    method = str(split.get("method", "?")) + (f" ({split['linkage']})" if split.get("linkage") else "")
    return str(data.info["stream"]["name"]), method, str(config.get("learner", "?"))


def fact_rows(groups: dict[tuple[str, str, str], list[dict]]) -> list[dict[str, Any]]:
    """One table row per (stream, split, learner): mean ± std (%) of every column over the group's runs."""
    rows = []
    for (stream, split, learner), summaries in sorted(groups.items()):
        stats = summarize_fact_seeds(summaries)
        cells = [_cell(stats.get(key)) for key, _ in COLUMNS]
        rows.append({"stream": stream, "split": split, "learner": learner, "seeds": len(summaries), "cells": cells})
    return rows


def _cell(stats: dict | None) -> str:
    if stats is None:
        return "-"
    return f"{100 * stats['mean']:.2f}" + ("" if stats["std"] is None else f" ± {100 * stats['std']:.2f}")


def _plot_matrix(R: np.ndarray, title: str, path: Path) -> Path:
    fig, ax = new_figure(4.5)
    image = ax.imshow(100 * R, vmin=0, vmax=max(1.0, float(np.nanmax(100 * R))), cmap="viridis")
    for (i, j), value in np.ndenumerate(R):
        ax.text(j, i, f"{100 * value:.1f}", ha="center", va="center", color="w", fontsize=8)
    ax.set_xlabel("evaluated task j")
    ax.set_ylabel("after training task i")
    ax.set_title(title, fontsize=9)
    fig.colorbar(image, ax=ax, label="generalized top-5 (%)")
    return save_png(fig, path)


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
        ax.plot(lows, 100 * np.asarray(means), marker="o", label=f"{learner}, {split} ({stream})")
        drawn = True
    if not drawn:
        return None
    ax.set_xscale("log", base=2)
    ax.set_xlabel("training images of the fact (bin lower edge)")
    ax.set_ylabel("generalized top-5 (%)")
    plain_legend(ax)
    return save_png(fig, path)


def write_fact_page(runs: Sequence[RunData], out: str | Path) -> Path | None:
    """Write facts.html and its figures into `out` for the fact runs among `runs`; None when there are none."""
    fact_runs = [r for r in runs if is_fact_run(r)]
    if not fact_runs:
        return None
    out = Path(out)
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for data in fact_runs:
        groups.setdefault(_group(data), []).append(fact_summary(data))
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
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    page = env.from_string(_TEMPLATE).render(columns=COLUMNS, rows=fact_rows(groups), figures=figures, notes=notes)
    path = out / PAGE
    atomic_write_bytes(path, page.encode("utf-8"))
    return path


__all__ = ["fact_rows", "fact_summary", "is_fact_run", "write_fact_page"]
