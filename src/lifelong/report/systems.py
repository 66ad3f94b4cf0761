"""Which system a run belongs to, and each system's page of the report.

The report gives each system its own page: its runs are measured differently and are never drawn on another's
axes (a CLEAR accuracy matrix, a fact top-5 or a CoG top-1 is no Nevis error E against compute). A run is
  - `cog`: a run of the `cog` or `cog-mini` stream (one linear probe per level and shots);
  - `facts`: a run whose tasks are all of kind "fact";
  - `clear`: a run that evaluates every task after each training event (an accuracy matrix);
  - `nevis`: any other run (a stream of tasks, each evaluated once after training: error vs compute).
"""

from __future__ import annotations

from dataclasses import dataclass

from lifelong.results import RunData

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
