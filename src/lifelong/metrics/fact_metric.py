"""The lifelong fact learning metrics of a run (docs/protocols/facts.md), folded from its predict records.

Reads the fields `fact_record` writes. R[i, j] is generalized top-5 accuracy on task j after training task i; b_j the
untrained learner's (records with after_task_index -1). The headline figures are the final row's: standard and
generalized top-5, mean over tasks and over examples, and the drop (standard - generalized). The long-tail, few-shot
and compositional breakdowns pool the final row's per-fact counts (generalized top-5), binned by the training images
of each fact (`stream.metadata["fact_train_images"]`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from lifelong.metrics.fact_analysis import compositional, fact_transfer, few_shot, long_tail
from lifelong.metrics.statistics import mean_std

FEW_SHOT_THRESHOLD = 10  # a fact with 1..10 training images is few-shot
RARE, FREQUENT = 10, 50  # compositional: an SPO fact with <= RARE images whose S, P and O each had >= FREQUENT
HEADLINE = (  # (summary key, short label) of a run's headline figures, all fractions
    ("fact_standard_mean_over_tasks", "standard, tasks"),
    ("fact_generalized_mean_over_tasks", "generalized, tasks"),
    ("fact_standard_mean_over_examples", "standard, examples"),
    ("fact_generalized_mean_over_examples", "generalized, examples"),
    ("fact_drop_mean_over_tasks", "drop, tasks"),
    ("fact_bwt", "BWT"),
    ("fact_fwt", "FWT"),
)
BY_RULE = (  # the authors' top-K rule beside ours, and the chance level of a random ranking under each
    ("fact_standard_mean_over_examples_authors", "standard, examples, authors' rule"),
    ("fact_generalized_mean_over_examples_authors", "generalized, examples, authors' rule"),
    ("fact_generalized_chance_over_examples", "chance, generalized, examples"),
    ("fact_generalized_chance_over_examples_authors", "chance, generalized, examples, authors' rule"),
)
_RULE_FIELDS = (  # record field -> summary key (a share of the examples)
    ("fact_standard_correct_authors", "fact_standard_mean_over_examples_authors"),
    ("fact_generalized_correct_authors", "fact_generalized_mean_over_examples_authors"),
    ("fact_standard_chance", "fact_standard_chance_over_examples"),
    ("fact_generalized_chance", "fact_generalized_chance_over_examples"),
    ("fact_standard_chance_authors", "fact_standard_chance_over_examples_authors"),
    ("fact_generalized_chance_authors", "fact_generalized_chance_over_examples_authors"),
)


@dataclass(frozen=True)
class _FactState:
    # (after_task_index, task_index), items, standard correct, generalized correct, per-fact counts, the
    # _RULE_FIELDS values (None where a record has none)
    cells: tuple = ()
    fits: tuple = ()  # per train record: (task_index, optimizer steps, last epoch's mean loss, how the fit ended)


class FactMetrics:
    """Standard / generalized top-5 (means over tasks and examples, drop), R with BWT / FWT, tail breakdowns."""

    name = "fact_metrics"

    def __init__(self, num_tasks: int, facts: list[tuple] | None = None, train_images: list[int] | None = None):
        if num_tasks < 1:
            raise ValueError(f"num_tasks must be >= 1, got {num_tasks}")
        self.num_tasks = num_tasks
        self.facts = [tuple(f) for f in facts] if facts is not None else None
        self.train_images = None if train_images is None else np.asarray(train_images, dtype=np.int64)

    def init(self) -> _FactState:
        return _FactState()

    def add(self, state: _FactState, record: dict) -> _FactState:
        if record.get("type") == "train" and record.get("train_steps"):
            losses = record.get("train_losses") or [None]
            fit = (int(record["task_index"]), int(record["train_steps"]), losses[-1], record.get("stopped"))
            return replace(state, fits=state.fits + (fit,))
        if record.get("type") != "predict" or "fact_items" not in record:
            return state
        after, task = int(record["after_task_index"]), int(record["task_index"])
        if not (-1 <= after < self.num_tasks and 0 <= task < self.num_tasks):
            raise ValueError(
                f"record of event {record.get('event')}: cell ({after}, {task}) is outside a {self.num_tasks}-task run"
            )
        if any(c[0] == (after, task) for c in state.cells):
            raise ValueError(f"record of event {record.get('event')}: task {task} evaluated twice after task {after}")
        cell = (
            (after, task),
            int(record["num_items"]),
            int(record["fact_standard_correct"]),
            int(record["fact_generalized_correct"]),
            tuple(tuple(int(v) for v in row) for row in record["fact_items"]),
            tuple(float(record[field]) if field in record else None for field, _ in _RULE_FIELDS),
        )
        return replace(state, cells=state.cells + (cell,))

    def compute(self, state: _FactState) -> dict:
        cells = {c[0]: c for c in state.cells}
        last = max((after for after, _ in cells), default=-1)
        out: dict = {"fact_tasks_trained": last + 1}
        if state.fits:  # how each task's training went (steps, final training loss, converged or capped)
            out["fact_train_steps"] = sum(f[1] for f in state.fits)
            out["fact_train_final_losses"] = [f[2] for f in state.fits]
            out["fact_train_capped"] = sum(f[3] == "cap" for f in state.fits)
        if last < 0:
            return out
        final = [cells.get((last, j)) for j in range(self.num_tasks)]
        if any(c is None for c in final):
            return out  # an interrupted evaluation row: the headline figures wait for it
        items = np.array([c[1] for c in final], dtype=float)
        standard = np.array([c[2] for c in final], dtype=float)
        generalized = np.array([c[3] for c in final], dtype=float)
        out.update(
            fact_standard_mean_over_tasks=float(np.mean(standard / items)),
            fact_generalized_mean_over_tasks=float(np.mean(generalized / items)),
            fact_standard_mean_over_examples=float(standard.sum() / items.sum()),
            fact_generalized_mean_over_examples=float(generalized.sum() / items.sum()),
            fact_standard_per_task=[float(v) for v in standard / items],
            fact_generalized_per_task=[float(v) for v in generalized / items],
        )
        out["fact_drop_mean_over_tasks"] = (
            out["fact_standard_mean_over_tasks"] - out["fact_generalized_mean_over_tasks"]
        )
        out["fact_drop_mean_over_examples"] = (
            out["fact_standard_mean_over_examples"] - out["fact_generalized_mean_over_examples"]
        )
        for column, (_, key) in enumerate(_RULE_FIELDS):
            counts = [c[5][column] for c in final]
            if all(v is not None for v in counts):  # records written before these fields have none
                out[key] = float(sum(counts) / items.sum())
        out.update(self._transfer(cells, last))
        out.update(self._breakdowns(final))
        return out

    def _transfer(self, cells: dict, last: int) -> dict:
        """R (generalized accuracy, rows trained so far), and BWT / FWT once the stream is done and b is known."""
        T = self.num_tasks
        R = np.full((T, T), np.nan)
        for (after, task), n, _, g, *_ in cells.values():
            if after >= 0:
                R[after, task] = g / n
        out: dict = {"fact_R": [[None if np.isnan(v) else float(v) for v in row] for row in R]}
        b = [cells.get((-1, j)) for j in range(T)]
        if last == T - 1 and T >= 2 and not np.isnan(R).any() and all(c is not None for c in b):
            b_acc = np.array([c[3] / c[1] for c in b])
            transfer = fact_transfer(R, b_acc)
            out.update(fact_bwt=transfer["bwt"], fact_fwt=transfer["fwt"], fact_b=[float(v) for v in b_acc])
        return out

    def _breakdowns(self, final: list) -> dict:
        """Long tail, few-shot and compositional accuracy of the final row (needs the stream's training counts)."""
        if self.train_images is None:
            return {}
        n_facts = len(self.train_images)
        items = np.zeros(n_facts, dtype=np.int64)
        correct = np.zeros(n_facts, dtype=np.int64)
        for cell in final:
            for fact, n, _, g in cell[4]:
                items[fact] += n
                correct[fact] += g
        out = {
            "fact_long_tail": long_tail(self.train_images, items, correct),
            "fact_few_shot": few_shot(self.train_images, items, correct, threshold=FEW_SHOT_THRESHOLD),
        }
        if self.facts is not None:
            comp = compositional(self.facts, self.train_images, items, correct, rare=RARE, frequent=FREQUENT)
            comp.pop("fact_indices", None)
            out["fact_compositional"] = comp
        return out


def summarize_fact_seeds(summaries: list[dict]) -> dict[str, dict]:
    """{key: {"mean", "std" (ddof=1; None for one seed), "n", "values"}} of every headline figure over the runs'
    summaries that have it (an unfinished run has none)."""
    stats = {}
    for key, _ in HEADLINE + BY_RULE:
        values = [float(s[key]) for s in summaries if s.get(key) is not None]
        if values:
            mean, std = mean_std(values)
            stats[key] = {"mean": mean, "std": std, "n": len(values), "values": values}
    return stats


def fact_metrics(stream=None) -> FactMetrics | None:
    """The fact metrics of a fact stream (tasks of kind "fact"); None for any other stream."""
    if stream is None or not stream.tasks or not stream.tasks[0].key.is_fact:
        return None
    meta = stream.metadata
    return FactMetrics(len(stream.tasks), meta.get("facts"), meta.get("fact_train_images"))


__all__ = ["HEADLINE", "FactMetrics", "fact_metrics", "summarize_fact_seeds"]
