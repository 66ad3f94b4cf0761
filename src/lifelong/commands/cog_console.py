"""What `lifelong cog run`, `cog pretrain` and `cog install-art` print: the CoG tables (top-1 per level and shots,
one per held-out style then pooled, each fitting the console's width), the intervals over concepts, the encoder's
summary, the install plan and its outcome."""

from __future__ import annotations

import shlex

from rich.markup import escape
from rich.table import Table

from lifelong.commands.cog_install import CogInstallArtPlan, CogInstallArtResult
from lifelong.commands.cog_pretrain import CogPretrainResult
from lifelong.commands.cog_run import CogRunResult
from lifelong.commands.cog_runs import cog_top1
from lifelong.commands.terminal import console, error_console, note
from lifelong.commands.training_console import summary_lines


def print_run_result(result: CogRunResult) -> None:
    """`cog run`'s report: the tables, the intervals over concepts, where the runs are and the time taken."""
    print_fold_tables(result.results, result.fold_sizes, result.styles, result.features, title=result.title)
    print_concept_intervals(result.intervals)
    out = escape(str(result.out))
    console.print(f"results: {out} (see `lifelong results {out}`)", soft_wrap=True)
    console.print(f"time: {result.seconds:.1f} s")


def print_fold_tables(
    results: list[dict], fold_sizes: list[int], styles: list[str | None], features: list[str], *, title: str
) -> None:
    """The CoG table of `results` (consecutive runs of each fold, `fold_sizes` of them); with several held-out
    styles, one table per style first (their differences are the styles' difficulty), then the pooled one."""
    if len(fold_sizes) > 1:
        start = 0
        for style, size, name in zip(styles, fold_sizes, features, strict=True):
            print_cog_table(results[start : start + size], title=f"{title}, {style} held out", features=name)
            start += size
    print_cog_table(results, title=title, features=", ".join(features))
    if len(fold_sizes) > 1:
        console.print(
            f"pooled over {len(fold_sizes)} held-out artwork styles and the seeds: the std mixes the styles' "
            "difficulty (the tables above) with the seeds'"
        )


def print_cog_table(results: list[dict], *, title: str, features: str | None = None) -> None:
    """Top-1 per level (rows) and shots (columns): mean ± population std over seeds, and relative to seen.

    Shot columns that do not fit the console's width go on to a further table, so every table fits (80 columns).
    """
    import numpy as np

    table = cog_top1(results)
    if not table:
        console.print("no CoG results to show")
        return
    levels = list(dict.fromkeys(level for level, _ in table))
    shots = list(dict.fromkeys(s for _, s in table))
    cells = {key: f"{np.mean(values):.2f} ± {np.std(values):.2f}" if values else "-" for key, values in table.items()}
    counts = {len(values) for values in table.values()}
    seeds_column = len(counts) > 1
    header = {count: "all" if count == "all" else f"{count}-shot" for count in shots}
    n = counts.pop() if not seeds_column else None
    over = "seeds" if n is None else f"{n} seed" if n == 1 else f"{n} seeds"
    chunks = _column_chunks(shots, levels, cells, header, seeds_column)
    for number, chunk in enumerate(chunks, start=1):
        part = f" ({number}/{len(chunks)})" if len(chunks) > 1 else ""
        console.print(f"[italic]{escape(title)}: mean ± std over {over}{part}[/]")
        out = Table()
        out.add_column("level", no_wrap=True)
        for count in chunk:
            out.add_column(header[count], justify="right", no_wrap=True)
        if seeds_column:
            out.add_column("seeds", justify="right", no_wrap=True)
        for level in levels:
            row = [cells.get((level, count), "-") for count in chunk]
            if seeds_column:
                row.append(str(max(len(table.get((level, c), [])) for c in shots)))
            out.add_row(level, *row)
        console.print(out)
    if features:
        console.print(f"features: {escape(features)}", soft_wrap=True)
    first = shots[0]
    if ("seen", first) in table:
        seen = float(np.mean(table[("seen", first)]))
        relative = ", ".join(
            f"{level}={100 * np.mean(table[(level, first)]) / seen:.1f}%" for level in levels if (level, first) in table
        )
        console.print(f"relative to seen ({header[first]}; mean level top-1 / mean seen top-1): {relative}")
    console.print("std: population std over seeds (divisor n), as the protocol reports it")
    draws = {
        (r["task"], r.get("num_classes"))
        for result in results
        for r in result["records"]
        if r["type"] == "predict" and r["task"].startswith("cog-seen-d")
    }
    if draws:
        tasks = {task.rsplit("-", 1)[0] for task, _ in draws}
        console.print(
            f"seen: {len(tasks)} seeded draws of as many seen concepts as the largest level, pooled with the seeds "
            "(--seen-draws 0: the whole seen set)"
        )


def _column_chunks(
    shots: list[str], levels: list[str], cells: dict, header: dict, seeds_column: bool
) -> list[list[str]]:
    """The shot columns in groups that each fit the console's width beside the level (and seeds) column."""
    widths = {c: max([len(header[c])] + [len(cells.get((lv, c), "-")) for lv in levels]) for c in shots}
    fixed = 4 + max(len("level"), *(len(level) for level in levels)) + (10 if seeds_column else 0)
    chunks, current, used = [], [], fixed
    for count in shots:
        if current and used + widths[count] + 3 > console.width:
            chunks.append(current)
            current, used = [], fixed
        current.append(count)
        used += widths[count] + 3
    chunks.append(current)
    return chunks


def print_concept_intervals(intervals: dict[tuple[str, str], tuple[float, float]]) -> None:
    """One line per shots column: each level's 95% bootstrap interval over its concepts (see cog_intervals)."""
    for shots in dict.fromkeys(s for _, s in intervals):
        label = "all" if shots == "all" else f"{shots}-shot"
        cells = ", ".join(f"{lv} [{lo:.1f}, {hi:.1f}]" for (lv, s), (lo, hi) in intervals.items() if s == shots)
        console.print(f"95% interval over concepts (bootstrap, {label}): {cells}", soft_wrap=True)


def print_pretrain_result(result: CogPretrainResult) -> None:
    """`cog pretrain`'s report: a kept encoder's note, then a `label: value` line per summary entry (the training
    images with what they show, numbers in words: see `summary_lines`) and the time taken."""
    if result.kept:
        note(f"{result.encoder} is already trained; kept (--overwrite trains it again)")
    summary = {key: result.summary[key] for key in ("encoder", "kind") if key in result.summary} | result.summary
    if summary.get("path") == summary.get("encoder"):
        summary.pop("path")
    if "images" in summary:
        concepts = summary.pop("concepts", None)
        shown = "every level's concepts" if concepts == "all" else f"the {concepts} concepts" if concepts else ""
        summary["images"] = f"{summary['images']:,} training images" + (f" of {shown}" if shown else "")
    for line in summary_lines(summary):
        console.print(line, soft_wrap=True, markup=False, highlight=False)
    console.print(f"time: {result.seconds:.1f} s")


def print_install_plan(plan: CogInstallArtPlan) -> None:
    """Each step and its commands (or why none), as a user would type them; a note first when run under sudo."""
    if plan.under_sudo:
        note("running under sudo: the npm packages go to root's cache; run it as yourself (it uses sudo itself)")
    for number, step in enumerate(plan.steps, start=1):
        if step.done:
            console.print(f"{number}. {escape(step.name)}: nothing to do ({escape(step.done)})", soft_wrap=True)
        elif step.by_hand:
            console.print(f"{number}. {escape(step.name)}: by hand: {escape(step.by_hand)}", soft_wrap=True)
        else:
            console.print(f"{number}. {escape(step.name)}:")
            for command in step.commands:
                console.print(f"   {escape(shlex.join(command))}", soft_wrap=True)


def print_command(description: str) -> None:
    """A command about to run, as `$ COMMAND`."""
    console.print(f"$ {escape(description)}", soft_wrap=True)


def print_install_result(result: CogInstallArtResult) -> None:
    """The outcome: a dry run's line, each failed command, the styles still missing, or where the artwork is."""
    if result.dry_run:
        console.print("dry run: nothing was installed")
        return
    for run in result.ran:
        if run.failed:
            command = escape(shlex.join(run.command))
            error_console.print(f"[red]error:[/] {command} failed ({run.code}); run it by hand", soft_wrap=True)
    if result.missing:
        not_done = f" (steps not done: {'; '.join(result.not_done)})" if result.not_done else ""
        error_console.print(
            f"[red]error:[/] emoji style(s) {', '.join(result.missing)} still missing" + not_done, soft_wrap=True
        )
        return
    where = escape(str(result.plan.emoji_dir))
    console.print(f"cog-mini artwork installed (npm packages in {where})", soft_wrap=True)
