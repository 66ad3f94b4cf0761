"""`lifelong facts ...`: lifelong fact learning's facts <S,P,O> and their split into tasks (spec/fact_learning.md)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.markup import escape

from lifelong.commands.outputs import OverwriteOption, ResumeOption, prepare_output
from lifelong.commands.terminal import console, fail, note

facts_app = typer.Typer(help="Lifelong fact learning: facts <S,P,O> and their split into tasks.", no_args_is_help=True)

METHODS = ("semantic", "random")


@facts_app.command("split")
def split_command(
    facts_csv: Annotated[
        Path,
        typer.Argument(
            metavar="FACTS.csv",
            help="One row per image: columns S,P,O ('*' or empty = undefined) and optionally image (paths relative "
            "to the CSV's folder; each must exist). Or one 'fact' column of '<S, P, O>' texts.",
        ),
    ],
    out: Annotated[
        Path, typer.Option("--out", metavar="SPLIT.csv", help="Write S,P,O,task (one row per distinct fact).")
    ],
    tasks: Annotated[int, typer.Option("--tasks", metavar="T", help="Number of tasks.")],
    method: Annotated[
        str, typer.Option("--method", metavar="semantic|random", help="Cluster by meaning, or most balanced random.")
    ] = "semantic",
    vectors: Annotated[
        Path | None,
        typer.Option(
            "--vectors",
            metavar="FILE",
            help="Word vectors: word2vec text or binary, or GloVe (.gz too). Default: the offline sentence model "
            "(optional extra 'text'). Not used by --method random.",
        ),
    ] = None,
    linkage: Annotated[
        str, typer.Option("--linkage", metavar="single|average|complete", help="Semantic split's linkage.")
    ] = "single",
    seed: Annotated[int, typer.Option("--seed", metavar="N", help="Seed of the random split (and --oov random).")] = 0,
    oov: Annotated[
        str,
        typer.Option(
            "--oov",
            metavar="error|skip|random",
            help="Words missing from --vectors: fail listing them, leave them out of their phrase, or give each a "
            "seeded random vector.",
        ),
    ] = "error",
    candidates: Annotated[
        int, typer.Option("--candidates", metavar="N", help="Random split: draws, the most balanced one is kept.")
    ] = 100,
    cache_dir: Annotated[
        Path | None,
        typer.Option("--cache-dir", metavar="DIR", help="Cache folder of part vectors (default: see README)."),
    ] = None,
    resume: ResumeOption = False,
    overwrite: OverwriteOption = False,
) -> None:
    """Split the distinct facts of FACTS.csv into tasks; images per fact (its rows) weigh the balance."""
    from lifelong.facts.facts import distinct_facts, read_facts_csv
    from lifelong.facts.splits import (
        balance_score,
        balance_table,
        encode_facts,
        random_split,
        save_split,
        semantic_split,
    )
    from lifelong.facts.vectors import OOV_MODES, cached_part_vectors

    started = time.perf_counter()
    try:
        if method not in METHODS:
            raise ValueError(f"unknown --method {method!r}; choose one of {', '.join(METHODS)}")
        if oov not in OOV_MODES:
            raise ValueError(f"unknown --oov {oov!r}; choose one of {', '.join(OOV_MODES)}")
        if prepare_output(out, resume=resume, overwrite=overwrite, what="split") == "done":
            console.print(f"{escape(str(out))} already holds a split: nothing to resume (--overwrite redoes it)")
            return
        table = read_facts_csv(facts_csv)
        facts, index = distinct_facts(table.facts)
        images = np.bincount(index, minlength=len(facts))
        if not 1 <= tasks <= len(facts):
            raise ValueError(
                f"cannot split the {len(facts)} distinct facts of {facts_csv} into {tasks} tasks: every task needs "
                f"at least one fact; use --tasks between 1 and {len(facts)}"
            )
        report = None
        if method == "random":
            if vectors is not None:
                note("--vectors is not used by --method random")
            split = random_split(len(facts), tasks, images_per_fact=images, seed=seed, candidates=candidates)
        else:
            part_ids, vocabularies = encode_facts(facts)
            part_vectors, report = cached_part_vectors(
                vocabularies, vectors, oov=oov, seed=seed, cache_dir=cache_dir, progress=None
            )
            split = semantic_split(part_ids, part_vectors, tasks, linkage=linkage, images_per_fact=images)
        save_split(split, facts, out)
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    if report and report.get("oov_words"):
        words = report["oov_words"]
        done = "left out of their phrases" if oov == "skip" else f"given random vectors (seed {seed})"
        listed = ", ".join(words[:20]) + (" ..." if len(words) > 20 else "")
        note(f"{len(words)} word(s) not in the word vectors, {done}: {listed}")
    console.print(escape(balance_table(split)))
    score = split.score if split.score is not None else balance_score(split.task, tasks, images)
    how = f"{split.linkage} linkage" if method == "semantic" else f"seed {seed}, best of {candidates}"
    console.print(
        f"{method} split ({how}): {len(facts)} facts ({len(table.facts)} images) in {tasks} tasks; balance score "
        f"images {score[0]:.3f}, facts {score[1]:.3f} (max deviation from the mean, lower is better); wrote "
        f"{escape(str(out))} in {time.perf_counter() - started:.1f} s"
    )
