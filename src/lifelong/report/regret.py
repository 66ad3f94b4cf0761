"""Which run each run's regret is measured against, and why.

R(t) compares a run with a reference run of the same stream and evaluation split, task by task. By default the
reference of a run is the run of learner 'independent' (the Nevis'22 baseline: a fresh model per task) of the same
stream and seed, else the first 'independent' run of the stream, else the stream's first run. `--reference` names a
run id or a learner; where the named run or learner has no run over a stream, the default rule applies there and
the page says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lifelong.report.runs import Run, group_label, group_runs

REFERENCE_LEARNER = "independent"


@dataclass(frozen=True)
class Pairing:
    """A run, the run its regret is measured against (None: no regret curve), and why."""

    run: Run
    reference: Run | None
    why: str


def check_reference(runs: Sequence[Run], reference: str | None) -> None:
    """Raise when `reference` is neither a run id nor a learner of the runs."""
    if reference is None or any(reference in (r.id, r.row["learner"]) for r in runs):
        return
    raise ValueError(
        f"reference {reference!r} is neither a run id nor a learner of the runs given; "
        f"run ids: {', '.join(r.id for r in runs)}; learners: {', '.join(sorted({r.row['learner'] for r in runs}))}"
    )


def _pick(run: Run, members: Sequence[Run], reference: str | None) -> tuple[Run | None, str]:
    """The reference of `run` among the runs of its stream, and why it was chosen."""
    by_id = next((r for r in members if r.id == reference), None)
    if by_id is not None:
        return by_id, "named by --reference"
    learner = reference if any(r.row["learner"] == reference for r in members) else REFERENCE_LEARNER
    told = " (named by --reference)" if learner == reference else ""
    if reference is not None and not told:
        told = f" (--reference {reference} has no run over this stream)"
    candidates = [r for r in members if r.row["learner"] == learner]
    same_seed = next((r for r in candidates if r.row["seed"] == run.row["seed"]), None)
    if same_seed is not None:
        return same_seed, f"the {learner} run of the same stream and seed{told}"
    if candidates:
        return candidates[0], f"the first {learner} run of the same stream, none has seed {run.row['seed']}{told}"
    return members[0], f"the first run of the stream: no {learner} run over {group_label(run.group)}{told}"


def pair_runs(runs: Sequence[Run], reference: str | None = None) -> list[Pairing]:
    """For each run, the run its regret is measured against, stream by stream (see the module's docstring)."""
    check_reference(runs, reference)
    pairings = []
    for members in group_runs(runs).values():
        for run in members:
            if len(members) == 1:
                pairings.append(Pairing(run, None, f"the only run over {group_label(run.group)}: nothing to compare"))
                continue
            chosen, why = _pick(run, members, reference)
            if chosen is run:
                pairings.append(Pairing(run, None, "a reference: other runs of its stream are measured against it"))
            else:
                pairings.append(Pairing(run, chosen, why))
    return pairings
