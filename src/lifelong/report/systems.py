"""Which system a run belongs to, and each system's page of the report.

The report gives each system its own page: its runs are measured differently and are never drawn on another's
axes (a CLEAR accuracy matrix, a fact top-5 or a CoG top-1 is no Nevis error E against compute). A run is
  - `cog`: a run of the `cog` or `cog-mini` stream (one linear probe per level and shots);
  - `facts`: a run whose tasks are all of kind "fact";
  - `clear`: a run that evaluates every task after each training event (an accuracy matrix);
  - `nevis`: any other run (a stream of tasks, each evaluated once after training: error vs compute).

Each system also has its headline figure (`Headline`), the one number a one-line listing shows for a run
(`lifelong results`): E for task streams, next-domain accuracy for CLEAR, top-1 for CoG, generalized top-5 for facts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lifelong.results import RUN_FILE, RunData

NEVIS, CLEAR, COG, FACTS = "nevis", "clear", "cog", "facts"
COG_STREAMS = ("cog", "cog-mini")


@dataclass(frozen=True)
class System:
    """A system's page: file name, title, short name (navigation, tables) and what it shows (for the index)."""

    key: str
    page: str
    title: str
    short: str
    shows: str


SYSTEMS = {
    NEVIS: System(
        NEVIS,
        "nevis.html",
        "Task streams (Nevis'22 protocol)",
        "Task streams",
        "error vs compute with the Pareto front, error per task, regret, slices by domain, size and resolution, "
        "forward transfer",
    ),
    CLEAR: System(
        CLEAR,
        "clear.html",
        "Accuracy matrices (CLEAR protocol)",
        "CLEAR",
        "accuracy of the model after each bucket on every bucket, its metrics, and each bucket's error over training",
    ),
    COG: System(
        COG,
        "cog.html",
        "ImageNet-CoG (concept generalization)",
        "ImageNet-CoG",
        "top-1 per level, relative to seen, few-shot curves",
    ),
    FACTS: System(
        FACTS,
        "facts.html",
        "Lifelong fact learning",
        "Facts",
        "standard vs generalized top-5, accuracy matrices R, long-tail curves",
    ),
}


@dataclass(frozen=True)
class Headline:
    """A system's headline figure: its short `name` (a table cell), what it is (`meaning`, a legend line, within 80
    columns), how it is read from a run's summary (`value`: None when the run has not measured it) and shown."""

    name: str
    meaning: str
    value: Callable[[Mapping[str, Any]], float | None]
    scale: float = 1.0
    digits: int = 4

    def figure(self, summary: Mapping[str, Any] | None) -> float | None:
        """The run's figure in the headline's unit (errors as fractions, accuracies in %); None when not measured."""
        found = self.value(summary or {})
        return None if found is None else self.scale * float(found)

    def text(self, figure: float | None) -> str:
        """A figure as the listing prints it ('0.3317', '91.04'), '-' when there is none."""
        return "-" if figure is None else f"{figure:.{self.digits}f}"


def _next_domain(summary: Mapping[str, Any]) -> float | None:
    return (summary.get("clear_metrics") or {}).get("next_domain")


def _top1(summary: Mapping[str, Any]) -> float | None:
    error = summary.get("mean_error")
    return None if error is None else 1.0 - float(error)


HEADLINES = {  # docs/protocols: nevis.md (E), clear.md (both protocols report next-domain), cog.md, facts.md
    NEVIS: Headline(
        "E",
        "E: mean error over the meta-test tasks (Nevis'22), lower is better",
        lambda s: s.get("meta_test_mean_error"),
    ),
    CLEAR: Headline(
        "next-domain %", "next-domain %: CLEAR accuracy on the next bucket, higher is better", _next_domain, 100.0, 2
    ),
    COG: Headline(
        "top-1 %", "top-1 %: CoG probe's test top-1 on the run's level(s), higher is better", _top1, 100.0, 2
    ),
    FACTS: Headline(
        "gen. top-5 %",
        "gen. top-5 %: facts' generalized top-5 over tasks, higher is better",
        lambda s: s.get("fact_generalized_mean_over_tasks"),
        100.0,
        2,
    ),
}


def is_cog_run(data: RunData) -> bool:
    """Whether a run probes CoG levels (stream cog or cog-mini)."""
    return data.info.get("config", {}).get("stream") in COG_STREAMS


def is_fact_run(data: RunData) -> bool:
    """Whether a run's tasks are fact tasks."""
    tasks = data.info.get("stream", {}).get("tasks", [])
    return bool(tasks) and all(t.get("kind") == "fact" for t in tasks)


def is_matrix_run(data: RunData) -> bool:
    """Whether a run evaluates every task after each training event (CLEAR-style: an accuracy matrix)."""
    return data.info.get("stream", {}).get("evaluation") == "all"


def system_of(data: RunData) -> str:
    """The key of the system whose page shows the run (see the module's docstring)."""
    if is_cog_run(data):
        return COG
    if is_fact_run(data):
        return FACTS
    if is_matrix_run(data):
        return CLEAR
    return NEVIS


def system_of_folder(folder: str | Path) -> str:
    """The system of the run in `folder`, from its run.json alone (NEVIS when it cannot be read)."""
    try:
        info = json.loads((Path(folder) / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return NEVIS
    return system_of(RunData(Path(folder), info, [])) if isinstance(info, dict) else NEVIS
