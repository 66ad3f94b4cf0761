"""Terminal output of fact learning runs: R, standard vs generalized top-5, transfer, mean ± std over seeds."""

from __future__ import annotations

import json
from pathlib import Path

from rich.table import Table

from lifelong.commands.terminal import console, counted, matrix_table, print_path, print_title
from lifelong.core.files import atomic_write_bytes
from lifelong.metrics.fact_metric import BY_RULE, HEADLINE, summarize_fact_seeds
from lifelong.results.runs import group_id


def is_fact_result(result: dict) -> bool:
    """True for the result of a run over a fact stream (its summary carries the fact metrics)."""
    return "fact_tasks_trained" in result


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


def print_fact_run(result: dict) -> None:
    """R[i, j] (generalized top-5 % on task j after task i, with b: the untrained model) and the headline figures.

    Tasks are numbered from 1, as in the paper and the report's facts page (records keep 0-based task indices)."""
    R = result.get("fact_R") or []
    print_title(f"{result['run_id']}: generalized top-5 %, R[after, on]")
    table = matrix_table("after \\ on", [str(j) for j in range(1, len(R) + 1)])
    if result.get("fact_b") is not None:
        table.add_row("untrained", *(_percent(v) for v in result["fact_b"]))
    for i, row in enumerate(R, start=1):
        table.add_row(str(i), *(_percent(v) for v in row))
    console.print(table)
    figures = [f"{label} {_percent(result.get(key))}%" for key, label in HEADLINE if result.get(key) is not None]
    if figures:
        console.print("; ".join(figures) + f"; cumulative training FLOPs {result['cumulative_train_flops']:.3e}")
    by_rule = [f"{label} {_percent(result.get(key))}%" for key, label in BY_RULE if result.get(key) is not None]
    if by_rule:
        console.print("; ".join(by_rule))
    if result.get("fact_train_steps"):
        losses = "/".join("-" if v is None else f"{v:.3f}" for v in result["fact_train_final_losses"])
        capped = result.get("fact_train_capped", 0)
        console.print(
            f"training: {result['fact_train_steps']:,} steps, final loss per task {losses}"
            + (f"; [yellow]{capped} fit(s) stopped at the epoch cap before converging[/]" if capped else "; converged")
        )
    few = (result.get("fact_few_shot") or {}).get("accuracy")
    if few is not None:
        console.print(f"few-shot facts (generalized top-5): {_percent(few)}%")
    if result["events_done"] < result["events_total"]:
        console.print(f"[yellow]stopped after {result['events_done']}/{result['events_total']} events[/]")
    print_path("records, plots and checkpoint:", result["path"])


def print_fact_seeds(results: list[dict], out: Path) -> Path | None:
    """Mean ± std over seeds of the headline figures; written to OUT/<group>-seeds.json."""
    stats = summarize_fact_seeds(results)  # over the finished runs
    if not stats:
        console.print("[yellow]no run finished its fact evaluation: nothing to summarise over seeds[/]")
        return None
    finished = [r for r in results if r.get("fact_generalized_mean_over_tasks") is not None]
    name = group_id(finished[0]["run_id"])
    print_title(f"{name}: {counted(len(finished), 'seed')}, mean ± std (%)")
    table = Table()
    table.add_column("figure", overflow="fold")
    table.add_column("mean ± std", justify="right")
    labels = dict(HEADLINE + BY_RULE)
    for key, s in stats.items():
        std = "" if s["std"] is None else f" ± {100 * s['std']:.2f}"
        table.add_row(labels[key], f"{100 * s['mean']:.2f}{std}")
    console.print(table)
    document = {"group": name, "runs": [r["run_id"] for r in finished], "seeds": [r.get("seed") for r in finished]}
    path = Path(out) / f"{name}-seeds.json"
    atomic_write_bytes(path, (json.dumps({**document, "metrics": stats}, indent=2) + "\n").encode())
    print_path("seed summary:", path)
    return path


__all__ = ["is_fact_result", "print_fact_run", "print_fact_seeds"]
