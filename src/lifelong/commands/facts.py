"""`lifelong facts ...`: lifelong fact learning's facts <S,P,O> and their split into tasks (docs/protocols/facts.md)."""

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
        str,
        typer.Option(
            "--linkage",
            metavar="single|average|complete|ward|auto",
            help="Semantic split's linkage; auto: the most balanced variant whose tasks each hold more than 5 facts.",
        ),
    ] = "auto",
    distance: Annotated[
        str,
        typer.Option(
            "--distance",
            metavar="eq2|padded|auto",
            help="Semantic split's fact distance: eq2 (parts defined in both facts), padded (zero-padded, centred "
            "fact vectors: undefined parts count), or auto (as --linkage auto).",
        ),
    ] = "auto",
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
    from lifelong.facts.split_choice import CRITERION, chosen_semantic_split
    from lifelong.facts.splits import balance_score, balance_table, encode_facts, random_split, save_split
    from lifelong.facts.vectors import OOV_MODES, cached_part_vectors
    from lifelong.metrics.fact_scores import TOP_K

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
            split = chosen_semantic_split(
                part_ids, part_vectors, tasks, images, TOP_K, distance=distance.lower(), linkage=linkage.lower()
            )
        save_split(split, facts, out)
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    if report and report.get("oov_words"):
        words = report["oov_words"]
        done = "left out of their phrases" if oov == "skip" else f"given random vectors (seed {seed})"
        listed = ", ".join(words[:20]) + (" ..." if len(words) > 20 else "")
        note(f"{len(words)} word(s) not in the word vectors, {done}: {listed}")
    if "variants" in split.info:
        console.print(escape(variants_table(split.info["variants"], split)), soft_wrap=True)
        console.print(escape(f"chosen by the criterion: {CRITERION} (K = {split.info['k']})"))
    console.print(escape(balance_table(split)))
    score = split.score if split.score is not None else balance_score(split.task, tasks, images)
    how = (
        f"{split.distance} distance, {split.linkage} linkage"
        if method == "semantic"
        else f"seed {seed}, best of {candidates}"
    )
    console.print(
        f"{method} split ({how}): {len(facts)} facts ({len(table.facts)} images) in {tasks} tasks; balance score "
        f"{score:.3f} (the largest relative deviation from the mean of facts and images per task, lower is "
        f"better); wrote {escape(str(out))} in {time.perf_counter() - started:.1f} s"
    )


def variants_table(rows: list[dict], chosen) -> str:
    """One line per distance x linkage variant: facts and training images per task, image deviation, the choice."""
    lines = [f"{'distance':<8} {'linkage':<9} {'facts per task':<18} {'training images per task':<28} {'dev':>6}"]
    for row in rows:
        mark = "chosen" if (row["distance"], row["linkage"]) == (chosen.distance, chosen.linkage) else ""
        mark = mark or ("" if row["eligible"] else f"task of {row['smallest_task']} facts")
        facts = "/".join(str(f) for f in row["facts"])
        images = "/".join(str(i) for i in row["images"])
        lines.append(
            f"{row['distance']:<8} {row['linkage']:<9} {facts:<18} {images:<28} {row['image_deviation']:>6.3f}  {mark}"
        )
    return "\n".join(lines)
