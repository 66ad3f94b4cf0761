"""Terminal output of `lifelong run` and `lifelong results`: per-task tables, stream summaries, run listings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from rich.markup import escape
from rich.table import Table

from lifelong.commands.terminal import console, counted, print_path, print_title


def print_run(result: dict) -> None:
    """The per-task table of one run (error and cumulative training FLOPs per evaluated task) and its summary."""
    print_title(result["run_id"])
    table = Table()
    for column in ("#", "task", "year", "kind", "meta-test", "error", "train FLOPs (cum.)"):
        table.add_column(
            column, justify="right" if column in ("#", "error", "train FLOPs (cum.)") else "left", overflow="fold"
        )
    for record in result["records"]:
        if record["type"] != "predict":
            continue
        table.add_row(
            str(record["event"] // 2),
            escape(record["task"]),
            str(record["year"] or "-"),
            record["task_kind"],
            "yes" if record["meta_test"] else "",
            number(record["error"]),
            number(record["cumulative_train_flops"], "e"),
        )
    console.print(table)
    mean, meta = result["mean_error"], result["meta_test_mean_error"]
    meta_text = ""
    if meta is not None:
        meta_text = f"; meta-test mean error {meta:.4f} over {counted(result['num_meta_test_tasks'], 'task')}"
    console.print(
        f"mean error {number(mean)} over {counted(result['num_evaluated_tasks'], 'task')}"
        + meta_text
        + f"; cumulative training FLOPs {number(result['cumulative_train_flops'], 'e')}"
    )
    if result.get("tasks_missing"):
        missing = result["tasks_missing"]
        listed = ", ".join(missing[:8]) + (", ..." if len(missing) > 8 else "")
        console.print(f"[yellow]{len(missing)} task(s) without data were left out[/] (--allow-missing): {listed}")
    if result["corrupt_skipped"]:
        console.print(f"[yellow]{result['corrupt_skipped']} corrupt image(s) skipped[/] (per task: events.jsonl)")
    if result["skipped_labels"]:
        console.print(f"{result['skipped_labels']} label(s) had no positive in their split (left out of mAP)")
    if result["events_done"] < result["events_total"]:
        console.print(f"[yellow]stopped after {result['events_done']}/{result['events_total']} events[/]")
    print_path("records, plots and checkpoint:", result["path"])


def number(value: float | None, style: str = "f") -> str:
    """A number as the consoles write it: `0.1234`, `1.234e+12` (style "e"), `-` when missing."""
    if value is None:
        return "-"
    return f"{value:.3e}" if style == "e" else f"{value:.4f}"


def mean_std(values: list[float], digits: int = 4, style: str = "f", scale: float = 1.0) -> str:
    """`0.1234 ± 0.0040` over the values (sample std, ddof=1); the mean alone for one value."""
    present = [v for v in values if v is not None]
    if not present:
        return "-"
    array = np.asarray(present, dtype=float) * scale
    spec = f".{digits}{style}"
    if len(array) < 2:
        return format(float(array.mean()), spec)
    return f"{format(float(array.mean()), spec)} ± {format(float(array.std(ddof=1)), spec)}"


def print_seed_summary(results: list[dict]) -> None:
    """Mean ± std (ddof=1) over seeds of a task stream's headline first, E (the mean error over the meta-test tasks,
    the figure the docs quote), then the mean error over all tasks and the cumulative training FLOPs."""
    meta_test, every = _count(results, "num_meta_test_tasks"), _count(results, "num_evaluated_tasks")
    lines = [(f"E: mean error over the{meta_test} meta-test tasks", [r["meta_test_mean_error"] for r in results])]
    if all(r["num_meta_test_tasks"] == r["num_evaluated_tasks"] for r in results):  # no meta-train part
        lines = [(f"E: mean error over all{every} tasks (all meta-test)", lines[0][1])]
    else:
        lines.append((f"mean error over all{every} tasks", [r["mean_error"] for r in results]))
    cells = [(label, mean_std(values)) for label, values in lines]
    cells.append(("cumulative training FLOPs", mean_std([r["cumulative_train_flops"] for r in results], 3, "e")))
    width = max(len(label) for label, _ in cells)
    console.print(f"over {len(results)} seeds (mean ± std, ddof=1):", highlight=False)
    for label, value in cells:
        console.print(f"  {label.ljust(width)}  {value}", highlight=False, markup=False)


def _count(results: list[dict], key: str) -> str:
    """' 5' when every run counted the same number of tasks under `key`, else '' (a run stopped early)."""
    counts = {r.get(key) for r in results}
    return f" {counts.pop()}" if len(counts) == 1 else ""


RESULT_COLUMNS = ("run", "status", "metric", "value", "train FLOPs")


def print_results(runs: list[dict], folder: Path, *, verbose: bool = False) -> None:
    """One line per run of a results folder (as `results_list` returns them): id, status, its system's headline
    metric and value, training FLOPs (details with `verbose`); under the table, what each metric shown is.

    Fits the console's width: a run id too long for its column goes on a line of its own, never broken.
    """
    from lifelong.report.systems import HEADLINES

    rows = []
    for run in runs:
        s, headline = run.get("summary") or {}, HEADLINES[run["system"]]
        figure = headline.text(run["headline"]["value"])
        rows.append((run["run_id"], run["status"], headline.name, figure, number(s.get("cumulative_train_flops"), "e")))
    print_path(f"{len(rows)} run{'s' * (len(rows) != 1)} in", folder)
    if not rows:
        return
    rest = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(RESULT_COLUMNS) if i]
    gap = 2
    room = max(len(RESULT_COLUMNS[0]), console.width - sum(rest) - gap * len(rest))
    width = min(room, max(len(RESULT_COLUMNS[0]), *(len(r[0]) for r in rows)))

    def line(cells: tuple[str, ...]) -> str:
        out = cells[0].ljust(width)
        for i, (cell, w) in enumerate(zip(cells[1:], rest, strict=True)):
            out += " " * gap + (cell.ljust(w) if i < 2 else cell.rjust(w))  # status and metric: words
        return out.rstrip()

    console.print(line(RESULT_COLUMNS), style="bold", soft_wrap=True, markup=False, highlight=False)
    for run, row in zip(runs, rows, strict=True):
        if len(row[0]) > width:
            console.print(row[0], soft_wrap=True, markup=False, highlight=False)
            row = ("", *row[1:])
        console.print(line(row), soft_wrap=True, markup=False, highlight=False)
        if verbose:
            for key, value in _details(run):
                print_path(f"    {key}:", value, indent=6)
    for system in dict.fromkeys(run["system"] for run in runs):
        console.print(HEADLINES[system].meaning, style="dim", markup=False, highlight=False)


def _details(run: dict) -> list[tuple[str, str]]:
    """What `lifelong results -v` adds under a run: setup, meta-test error, events, folder, and any failure."""
    s = run.get("summary") or {}
    details = [
        ("stream", str(run["stream"])),
        ("learner", str(run["learner"])),
        ("seed", str(run["seed"])),
    ]
    if run.get("system") == "nevis":  # beside E (the metric column): the mean over every task
        details.append(("mean error over all tasks", number(s.get("mean_error"))))
    options = (run.get("config") or {}).get("learner_options") or {}
    if options:
        details.append(("learner options", ", ".join(f"{k}={v}" for k, v in sorted(options.items()))))
    options = (run.get("config") or {}).get("stream_options") or {}
    if options:
        details.append(("stream options", ", ".join(f"{k}={v}" for k, v in sorted(options.items()))))
    if s.get("events_total"):
        details.append(("events", f"{s.get('events_done', 0)}/{s['events_total']}"))
    details.append(("folder", str(run["path"])))
    if s.get("error"):
        details.append(("error", str(s["error"])))
    return details


def print_provenance(runs: list[dict]) -> None:
    """Per run: CPU, threads, torch and numpy versions, python, and the files it loaded with their sha256."""
    for run in runs:
        found = run.get("provenance") or {}
        machine, versions = found.get("machine") or {}, found.get("versions") or {}
        print_path("provenance of", run["run_id"])
        lines = [
            ("cpu:", f"{machine.get('cpu') or '-'}, {machine.get('threads') or '-'} thread(s)"),
            ("versions:", f"torch {versions.get('torch') or '-'}, numpy {versions.get('numpy') or '-'}"),
            ("python:", str(found.get("python") or "-")),
        ]
        files = found.get("files") or {}
        lines += [(f"file {Path(p).name}", f"sha256 {h[:12]}") for p, h in files.items()] or [("files:", "-")]
        for label, value in lines:
            print_path(f"    {label}", value, indent=6)


def print_runs(results: list[dict], out: str | Path) -> None:
    """What `lifelong run` prints once its runs are done: each run's table (fact runs: R; accuracy-matrix runs: the
    matrix; else per-task errors) and, over several seeds, their mean ± std (fact and matrix runs also write it to
    OUT/<group>-seeds.json)."""
    from lifelong.commands.fact_console import is_fact_result

    if results and is_fact_result(results[0]):
        from lifelong.commands.fact_console import print_fact_run, print_fact_seeds

        for result in results:
            print_fact_run(result)
        if len(results) > 1:
            print_fact_seeds(results, Path(out))
        return
    if results and results[0].get("accuracy_matrix") is not None:
        from lifelong.commands.accuracy_matrix_console import print_matrix_run, print_matrix_seeds

        for result in results:
            print_matrix_run(result)
        if len(results) > 1:
            print_matrix_seeds(results, Path(out))
        return
    for result in results:
        print_run(result)
    if len(results) > 1:
        _print_seeds(results)


def _print_seeds(results: list[dict]) -> None:
    """The seed summary of task-stream runs (`print_seed_summary`), or of CoG probe runs: top-1 per level."""
    from lifelong.report.systems import COG, system_of_folder

    if system_of_folder(results[0]["path"]) != COG:
        print_seed_summary(results)
        return
    from lifelong.commands.cog_console import print_cog_table
    from lifelong.results.runs import group_id

    print_cog_table(results, title=f"{group_id(results[0]['run_id'])}: test top-1 (%)")


def print_next_steps(out: str | Path) -> None:
    """One dim line after `lifelong run`'s tables: the commands that list and compare the runs of OUT (each
    command whole on a line of its own when both do not fit the console's width)."""
    import shlex

    folder = shlex.quote(str(out))
    steps = [f"lifelong results {folder}", f"lifelong report {folder} --out report"]
    text = "next: " + "  |  ".join(steps)
    lines = [text] if len(text) <= console.width else ["next:", *(f"  {step}" for step in steps)]
    for line in lines:
        console.print(line, style="dim", soft_wrap=True, markup=False, highlight=False)
