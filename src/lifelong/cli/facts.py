"""`lifelong facts ...`: lifelong fact learning's facts <S,P,O> and their split into tasks (docs/protocols/facts.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from lifelong.cli.options import OverwriteOption, ResumeOption

facts_app = typer.Typer(help="Lifelong fact learning: facts <S,P,O> and their split into tasks.", no_args_is_help=True)


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
    from lifelong.commands.facts_api import FactsSplitSpec, facts_split
    from lifelong.commands.facts_console import print_facts_split

    spec = FactsSplitSpec(
        facts_csv=facts_csv, out=out, tasks=tasks, method=method, vectors=vectors, linkage=linkage, distance=distance,
        seed=seed, oov=oov, candidates=candidates, cache_dir=cache_dir, resume=resume, overwrite=overwrite,
    )  # fmt: skip
    print_facts_split(facts_split(spec, progress=sys.stdout.isatty()))
