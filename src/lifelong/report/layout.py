"""Checks of a figure's layout at save time: it fits the report page, and no text overlaps another or the edge.

Every figure of the report is saved through `lifelong.report.plots.save_png`, which calls `fit_layout`: the text
artists drawn (titles, axis labels, tick labels in view, legend texts, annotations, colorbar labels) are measured
on the renderer; where tick labels collide they are shrunk (down to `MIN_TICK_FONT` points), and any overlap or
text beyond the figure's edge that remains raises `LayoutError`, naming the texts. A figure wider than
`MAX_WIDTH_PX` at the saved resolution is narrowed to it first, so that every image fits the page's content width.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import NullFormatter

DPI = 100
MAX_WIDTH_PX = 1150  # the pages' content width is 1,180 px (see templates/base.html.j2): a figure never overflows it
MAX_WIDTH_IN = MAX_WIDTH_PX / DPI
MIN_TICK_FONT = 5.0
TOLERANCE_PX = 1.0  # glyph boxes of neighbouring tick labels may touch


class LayoutError(ValueError):
    """A figure whose texts overlap each other or run off its edge."""


@dataclass(frozen=True)
class Placed:
    """A drawn text and its box on the canvas (pixels)."""

    text: Text
    x0: float
    y0: float
    x1: float
    y1: float

    def describe(self) -> str:
        words = " ".join(self.text.get_text().split())
        return f"{words[:40]!r} at ({self.x0:.0f}, {self.y0:.0f})-({self.x1:.0f}, {self.y1:.0f}) px"


def _tick_texts(fig: Figure) -> tuple[set[int], set[int]]:
    """(ids of the tick labels drawn, ids of every tick label): ticks outside the view limits are not drawn."""
    drawn, every = set(), set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for tick in [*axis.majorTicks, *axis.minorTicks]:
                every.update({id(tick.label1), id(tick.label2)})
            for tick in axis._update_ticks():  # noqa: SLF001 - the ticks a draw draws (in view, current labels)
                drawn.update({id(tick.label1), id(tick.label2)})
    return drawn, every


def drawn_texts(fig: Figure) -> list[Placed]:
    """Every text the figure draws, with its box on the canvas after layout (the figure is drawn once first)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    drawn_ticks, tick_texts = _tick_texts(fig)
    placed = []
    for text in fig.findobj(Text):
        if not text.get_text().strip() or not text.get_visible():
            continue
        if id(text) in tick_texts and id(text) not in drawn_ticks:
            continue
        if text.axes is not None and not text.axes.get_visible():
            continue
        legend = getattr(text, "_legend", None) or _legend_of(fig, text)
        if legend is not None and not legend.get_visible():
            continue
        box = text.get_window_extent(renderer)
        if box.width <= 0 or box.height <= 0:
            continue
        placed.append(Placed(text, box.x0, box.y0, box.x1, box.y1))
    return placed


def _legend_of(fig: Figure, text: Text) -> Any:
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is not None and (text in legend.get_texts() or text is legend.get_title()):
            return legend
    return None


def overlaps(placed: list[Placed]) -> list[tuple[Placed, Placed]]:
    """Pairs of texts whose boxes overlap by more than `TOLERANCE_PX` in both directions."""
    if len(placed) < 2:
        return []
    box = np.array([(p.x0, p.y0, p.x1, p.y1) for p in placed])
    dx = np.minimum(box[:, None, 2], box[None, :, 2]) - np.maximum(box[:, None, 0], box[None, :, 0])
    dy = np.minimum(box[:, None, 3], box[None, :, 3]) - np.maximum(box[:, None, 1], box[None, :, 1])
    hit = np.triu((dx > TOLERANCE_PX) & (dy > TOLERANCE_PX), k=1)
    return [(placed[i], placed[j]) for i, j in zip(*np.nonzero(hit), strict=True)]


def outside(fig: Figure, placed: Iterable[Placed]) -> list[Placed]:
    """Texts that reach beyond the figure's edge."""
    width, height = fig.canvas.get_width_height()
    t = TOLERANCE_PX
    return [p for p in placed if p.x0 < -t or p.y0 < -t or p.x1 > width + t or p.y1 > height + t]


def problems(fig: Figure) -> list[str]:
    """What is wrong with the figure's layout: overlapping texts and texts off the figure, in words."""
    placed = drawn_texts(fig)
    found = [f"{a.describe()} overlaps {b.describe()}" for a, b in overlaps(placed)]
    found += [
        f"{p.describe()} lies outside the {fig.canvas.get_width_height()} px figure" for p in outside(fig, placed)
    ]
    return found


def _shrink_colliding_ticks(fig: Figure, placed: list[Placed]) -> bool:
    """Where tick labels of an axis collide: drop its minor labels if one of them is minor, else turn its x labels
    upright, else make its labels one point smaller; False when nothing could change."""
    shrunk = False
    for a, b in overlaps(placed):
        for ax in fig.axes:
            for axis in (ax.xaxis, ax.yaxis):
                minor = axis.get_ticklabels(minor=True)
                if (a.text in minor or b.text in minor) and {a.text, b.text} <= {*minor, *axis.get_ticklabels()}:
                    axis.set_minor_formatter(NullFormatter())
                    shrunk = True
                    continue
                labels = axis.get_ticklabels()
                if a.text in labels and b.text in labels and axis is ax.xaxis and labels[0].get_rotation() == 0:
                    axis.set_tick_params(labelrotation=90)  # first upright: each label takes a font's height
                    shrunk = True
                    continue
                if a.text in labels and b.text in labels:
                    size = labels[0].get_fontsize()
                    if size > MIN_TICK_FONT:
                        axis.set_tick_params(labelsize=max(MIN_TICK_FONT, size - 1.0))
                        shrunk = True
    return shrunk


def _lay_out_once(fig: Figure, engine: Any) -> None:
    """Run the layout engine once, then keep its result: repeated constrained layouts of an equal-aspect axes with
    a colorbar drift (each pass moves the axes a little), so the figure is checked and saved as laid out here."""
    if engine is None:
        return
    fig.set_layout_engine(engine)
    engine.execute(fig)
    fig.set_layout_engine("none")


def fit_layout(fig: Figure) -> None:
    """Narrow the figure to the page, shrink colliding tick labels, then raise `LayoutError` if texts still
    overlap or leave the figure."""
    width, height = fig.get_size_inches()
    if width > MAX_WIDTH_IN:
        fig.set_size_inches(MAX_WIDTH_IN, height)
    engine = fig.get_layout_engine()
    for _ in range(8):
        _lay_out_once(fig, engine)
        if not _shrink_colliding_ticks(fig, drawn_texts(fig)):
            break
    found = problems(fig)
    if found:
        shown = "; ".join(found[:5]) + (f"; and {len(found) - 5} more" if len(found) > 5 else "")
        title = next((ax.get_title() for ax in fig.axes if ax.get_title()), "") or "untitled"
        raise LayoutError(f"figure {title!r}: {len(found)} layout problem(s): {shown}")
