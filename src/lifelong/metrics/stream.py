"""Stream-level summary: mean error over evaluated tasks, cumulative FLOPs
(docs/protocols/nevis.md#stream-summary-e-and-cflop)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from lifelong.metrics.accuracy_matrix import accuracy_matrix
from lifelong.metrics.fact_metric import fact_metrics


@dataclass(frozen=True)
class _SummaryState:
    errors: tuple[tuple[str, float, bool], ...] = ()  # (task uid, error, meta_test) per predict event
    # each predict event's evaluated items (None when its record has none), in the order of `errors`; a state
    # checkpointed before this field existed has fewer entries: its earliest evaluations count as unknown
    items: tuple[int | None, ...] = ()
    train_flops: float = 0.0
    peak_parameters: int = 0
    skipped_labels: int = 0
    corrupt_skipped: int = 0
    inference_flops: float = 0.0
    duplicates_removed: int = 0


class StreamSummary:
    """E = unweighted mean of per-task errors (multi-class and multi-label pooled); cFLOP = sum of training FLOPs.

    `mean_error` averages every evaluated task, `meta_test_mean_error` only tasks of the meta-test part S^ts
    (None when the run evaluated none). A task evaluated twice (not the case in the standard protocol)
    counts once per evaluation; evaluations of the untrained learner (after_task_index -1) do not count. Beside
    them, `example_weighted_error` and `meta_test_example_weighted_error`
    weight each evaluation's error by its `num_items` (the items it scored: sum(e_t n_t) / sum(n_t), which for
    multi-class tasks is the error over all pooled examples); None when an evaluation's record has no
    `num_items`, or no evaluation has items.
    """

    name = "stream_summary"

    def init(self) -> _SummaryState:
        return _SummaryState()

    def add(self, state: _SummaryState, record: dict) -> _SummaryState:
        if record["type"] == "train":
            return replace(
                state,
                train_flops=state.train_flops + float(record["train_flops"]),
                peak_parameters=max(state.peak_parameters, int(record.get("peak_parameters") or 0)),
                corrupt_skipped=state.corrupt_skipped + int(record.get("corrupt_skipped") or 0),
                duplicates_removed=state.duplicates_removed + int(record.get("duplicates_removed") or 0),
            )
        if record.get("after_task_index") == -1:
            return state
        error = float(record["error"])
        if not math.isfinite(error):
            raise ValueError(f"record of event {record.get('event')} has a non-finite error {error!r}")
        num_items = record.get("num_items")
        if num_items is not None and (isinstance(num_items, bool) or int(num_items) != num_items or num_items < 0):
            raise ValueError(
                f"record of event {record.get('event')} has num_items {num_items!r}; expected a count >= 0"
            )
        return replace(
            state,
            errors=state.errors + ((record["task"], error, bool(record["meta_test"])),),
            items=_padded_items(state) + (None if num_items is None else int(num_items),),
            inference_flops=state.inference_flops + float(record.get("inference_flops") or 0.0),
            skipped_labels=state.skipped_labels + int(record.get("skipped_labels") or 0),
        )

    def compute(self, state: _SummaryState) -> dict:
        all_errors = [e for _, e, _ in state.errors]
        meta_test = [e for _, e, m in state.errors if m]
        weighted = list(zip(state.errors, _padded_items(state), strict=True))
        return {
            "mean_error": _mean(all_errors),
            "meta_test_mean_error": _mean(meta_test),
            "example_weighted_error": _weighted_mean([(e, n) for (_, e, _), n in weighted]),
            "meta_test_example_weighted_error": _weighted_mean([(e, n) for (_, e, m), n in weighted if m]),
            "num_evaluated_tasks": len(all_errors),
            "num_meta_test_tasks": len(meta_test),
            "cumulative_train_flops": state.train_flops,
            "peak_parameters": state.peak_parameters,
            "inference_flops": state.inference_flops,
            "skipped_labels": state.skipped_labels,
            "corrupt_skipped": state.corrupt_skipped,
            "duplicates_removed": state.duplicates_removed,
            "per_task_error": {uid: e for uid, e, _ in state.errors},
        }


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _padded_items(state: _SummaryState) -> tuple[int | None, ...]:
    """`state.items` aligned with `state.errors` (unknown counts first, for states saved before items existed)."""
    return (None,) * (len(state.errors) - len(state.items)) + state.items


def _weighted_mean(pairs: list[tuple[float, int | None]]) -> float | None:
    """sum(error * items) / sum(items); None without evaluations, with an unknown count, or with no items at all."""
    if not pairs or any(n is None for _, n in pairs):
        return None
    total = sum(n for _, n in pairs)
    return sum(e * n for e, n in pairs) / total if total else None


def stream_summary(stream=None) -> StreamSummary:
    """Mean error over evaluated and meta-test tasks, cumulative training FLOPs (every run reports it)."""
    return StreamSummary()


def default_metrics(stream=None) -> list:
    """Metrics every run reports: the stream summary, and the accuracy matrix on streams that evaluate every task
    (the fact metrics, with their own R on generalized top-5, on fact streams)."""
    facts = fact_metrics(stream)
    if facts is not None:
        return [stream_summary(stream), facts]
    matrix = accuracy_matrix(stream) if stream is not None else None
    return [stream_summary(stream)] + ([matrix] if matrix is not None else [])
