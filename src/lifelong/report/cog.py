"""The ImageNet-CoG page of the HTML report: top-1 per level per encoder with its interval over concepts, relative
to a baseline encoder (the paper's main view) and to seen, and few-shot curves.

CoG runs are runs of the `cog` or `cog-mini` stream (one probe task per level and shots). Each encoder is named by
the run's features set; values are test top-1 = 100 x (1 - error) of the predict records, mean and population std
over the runs' seeds (the seen level's draws pooled with them). Relative to seen = mean level top-1 / mean seen
top-1 x 100; relative to the baseline = mean level top-1 - the baseline encoder's, in points, per level and shots.
Intervals: 95% bootstrap over each level's concepts (`lifelong.results.cog_intervals`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lifelong.learners.probe import ProbeConfig
from lifelong.report.pages import write_page
from lifelong.report.plots import new_figure, outside_legend, save_png, wrap_label
from lifelong.report.runs import Run, legend_rows
from lifelong.report.systems import COG, SYSTEMS, is_cog_run
from lifelong.results import RunData
from lifelong.results.cog_intervals import level_intervals
from lifelong.suites.cog import base_level, split_task_name

PAGE = SYSTEMS[COG].page
TEMPLATE = "cog.html.j2"
RELATIVE = (
    "Relative top-1 = (mean top-1 on the level) / (mean top-1 on the seen concepts) x 100, per encoder and shots, "
    "means over seeds. Levels have different numbers of concepts than the seen set, so chance differs too: read the "
    "absolute numbers beside it."
)


def _encoder(data: RunData) -> tuple[str, str]:
    config = data.info.get("config", {})
    features = str(config.get("stream_options", {}).get("features", "?"))
    return features, str(config.get("learner_options", {}).get("probe", ProbeConfig.probe))


def cog_values(runs: Sequence[RunData]) -> dict[tuple[str, str, str, str], list[float]]:
    """{(encoder, probe, level, shots): [top-1 % per run]} over the predict records of CoG runs."""
    values: dict[tuple[str, str, str, str], list[float]] = {}
    for data in runs:
        encoder, probe = _encoder(data)
        for record in data.records:
            if record.get("type") == "predict" and record.get("error") is not None:
                level, shots = split_task_name(str(record["task"]))
                key = (encoder, probe, base_level(level), shots)
                values.setdefault(key, []).append(100.0 * (1.0 - float(record["error"])))
    return values


def cog_intervals(runs: Sequence[RunData]) -> dict[tuple[str, str, str, str], tuple[float, float]]:
    """{(encoder, probe, level, shots): (low, high) %}: 95% bootstrap intervals over concepts, per encoder."""
    groups: dict[tuple[str, str], list[RunData]] = {}
    for data in runs:
        groups.setdefault(_encoder(data), []).append(data)
    out = {}
    for (encoder, probe), members in groups.items():
        found = level_intervals([{"records": d.records} for d in members], [d.path for d in members])
        out |= {(encoder, probe, level, shots): interval for (level, shots), interval in found.items()}
    return out


def resolve_baseline(values: dict, baseline: str | None) -> str | None:
    """The encoder `baseline` names: exactly, else the only encoder containing it; a ValueError listing the encoders
    when it names none or several."""
    if baseline is None:
        return None
    encoders = sorted({k[0] for k in values})
    if baseline in encoders:
        return baseline
    matches = [e for e in encoders if baseline in e]
    if len(matches) == 1:
        return matches[0]
    what = "names several encoders" if matches else "names no encoder"
    raise ValueError(f"--cog-baseline {baseline!r} {what}; the CoG runs' encoders: {', '.join(encoders)}")


def baseline_rows(values: dict, levels: list[str], shots: str, baseline: str) -> list[dict[str, Any]]:
    """Per (encoder, probe) other than the baseline: mean level top-1 minus the baseline's (same probe), points."""
    rows = []
    for encoder, probe in sorted({k[:2] for k in values if k[3] == shots and k[0] != baseline}):
        cells = []
        for level in levels:
            mine, base = values.get((encoder, probe, level, shots)), values.get((baseline, probe, level, shots))
            cells.append(f"{np.mean(mine) - np.mean(base):+.2f}" if mine and base else "-")
        rows.append({"encoder": encoder, "probe": probe, "cells": cells})
    return rows


def _level_order(level: str) -> tuple[int, str]:
    return (0, "") if level == "seen" else (1, level.zfill(8))


def level_table(values: dict, shots: str, intervals: dict | None = None) -> tuple[list[str], list[dict[str, Any]]]:
    """(levels, rows): per (encoder, probe) the (mean ± std, interval over concepts or '') cells and the
    relative-to-seen cells."""
    intervals = intervals or {}
    levels = sorted({k[2] for k in values if k[3] == shots}, key=_level_order)
    rows = []
    for encoder, probe in sorted({k[:2] for k in values if k[3] == shots}):
        means = {lv: float(np.mean(v)) for lv in levels if (v := values.get((encoder, probe, lv, shots)))}
        stds = {lv: float(np.std(values[(encoder, probe, lv, shots)])) for lv in means}
        seen = means.get("seen")
        rows.append(
            {
                "encoder": encoder,
                "probe": probe,
                "cells": [_cell(means, stds, intervals.get((encoder, probe, lv, shots)), lv) for lv in levels],
                "relative": [f"{100 * means[lv] / seen:.1f}%" if lv in means and seen else "-" for lv in levels],
                "means": means,
            }
        )
    return levels, rows


def _cell(means: dict, stds: dict, interval: tuple[float, float] | None, level: str) -> tuple[str, str]:
    """(mean ± std, the interval's 'low, high' or ''): the page shows '65.80 ± 1.20 [60.1, 70.2]' on one line, or
    breaks it before the bracket where the table needs the room."""
    if level not in means:
        return "-", ""
    text = f"{means[level]:.2f} ± {stds[level]:.2f}"
    return text, "" if interval is None else f"{interval[0]:.1f}, {interval[1]:.1f}"


def _plot_levels(levels: list[str], rows: list[dict], values: dict, shots: str, path: Path) -> Path:
    fig, ax = new_figure(7.0)
    for row in rows:
        xs = [i for i, lv in enumerate(levels) if lv in row["means"]]
        ys = [row["means"][levels[i]] for i in xs]
        errs = [np.std(values[(row["encoder"], row["probe"], levels[i], shots)]) for i in xs]
        ax.errorbar(xs, ys, yerr=errs, marker="o", capsize=3, label=f"{row['encoder']} ({row['probe']})")
    ax.set_title(f"test top-1 per level ({shots} training data)")
    ax.set_xticks(range(len(levels)), levels)
    ax.set_xlabel("level (seen, then L1 closest .. farthest)")
    ax.set_ylabel("test top-1 (%)")
    outside_legend(ax, fontsize=8)
    return save_png(fig, path)


def _plot_few_shot(values: dict, encoder: str, probe: str, path: Path) -> Path | None:
    keys = [k for k in values if k[:2] == (encoder, probe) and k[3] != "all"]
    if not keys:
        return None
    fig, ax = new_figure(7.0)
    for level in sorted({k[2] for k in keys}, key=_level_order):
        shots = sorted(int(k[3]) for k in keys if k[2] == level)
        ax.plot(shots, [np.mean(values[(encoder, probe, level, str(s))]) for s in shots], marker="o", label=level)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("training images per concept (shots)")
    ax.set_ylabel("test top-1 (%)")
    ax.set_title(wrap_label(f"few-shot: {encoder} ({probe})", 70), parse_math=False)
    outside_legend(ax, fontsize=8)
    return save_png(fig, path)


def write_cog_page(
    runs: Sequence[Run], out: str | Path, nav: list[tuple[str, str]], baseline: str | None = None
) -> Path | None:
    """Write cog.html and its figures into `out` for the CoG runs among `runs`; None when there are none.
    `baseline`: the encoder (features set name, or a unique part of it) the others are shown relative to."""
    runs = [r for r in runs if is_cog_run(r.data)]
    if not runs:
        return None
    cog = [r.data for r in runs]
    out = Path(out)
    values = cog_values(cog)
    chosen = resolve_baseline(values, baseline)
    against: list[dict[str, Any]] = []
    if not values:
        levels, rows, figures, shots = [], [], [], "-"
    else:
        shots = "all" if any(k[3] == "all" for k in values) else min({k[3] for k in values}, key=int)
        levels, rows = level_table(values, shots, cog_intervals(cog))
        against = baseline_rows(values, levels, shots, chosen) if chosen else []
        figures = [(_plot_levels(levels, rows, values, shots, out / "cog_levels.png").name, "top-1 per level")]
    for number, (encoder, probe) in enumerate(sorted({k[:2] for k in values})):
        path = _plot_few_shot(values, encoder, probe, out / f"cog_few_shot_{number}.png")
        if path is not None:
            figures.append((path.name, f"few-shot curves of {encoder} ({probe}): top-1 vs shots per level"))
    classes, draws = {}, set()
    for data in cog:
        for task in data.info["stream"]["tasks"]:
            level = split_task_name(task["uid"])[0]
            classes[base_level(level)] = task["num_classes"]
            if level != base_level(level):
                draws.add(level)
    notes = ["concepts per level: " + ", ".join(f"{lv} {classes[lv]}" for lv in sorted(classes, key=_level_order))]
    if draws:
        notes.append(f"seen: {len(draws)} seeded draws of that many seen concepts, pooled with the seeds")
    if not values:
        notes.append("no CoG run has evaluated a level yet")
    return write_page(
        out,
        PAGE,
        TEMPLATE,
        nav,
        levels=levels,
        rows=rows,
        relative=RELATIVE,
        baseline=chosen,
        against=against,
        figures=figures,
        notes=notes,
        shots=shots,
        legend=legend_rows(runs),
    )
