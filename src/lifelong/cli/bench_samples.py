"""`lifelong bench plan-samples` / `add-samples` (the paper's insert_D): thin adapters over `commands.bench_samples`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def plan_samples_command(
    store: Annotated[Path, typer.Argument(help="The store.")],
    budget: Annotated[
        int, typer.Option("--budget", metavar="M", min=1, help="m': models to evaluate the new samples on.")
    ],
    sampling: Annotated[
        str,
        typer.Option(
            "--sampling",
            metavar="uniform|random",
            help="Spread evenly over the models ranked most accurate first (the paper's), or at random.",
        ),
    ] = "uniform",
    seed: Annotated[int, typer.Option("--seed", metavar="N", min=0, help="Seed of --sampling random.")] = 0,
    out: Annotated[
        Path | None,
        typer.Option("--out", metavar="PLAN", help="Write the plan (JSON, for add-samples --plan); print a summary."),
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing PLAN file.")] = False,
) -> None:
    """Print the models new samples must be evaluated on (one name per line, most accurate first)."""
    from lifelong.commands.bench_console import print_plan_samples
    from lifelong.commands.bench_samples import BenchPlanSamplesSpec, bench_plan_samples

    print_plan_samples(bench_plan_samples(BenchPlanSamplesSpec(store, budget, sampling, seed, out, overwrite)))


def add_samples_command(
    store: Annotated[Path, typer.Argument(help="The store.")],
    samples: Annotated[
        Path,
        typer.Option(
            "--samples",
            metavar="FILE",
            help="The new samples: a samples CSV as `bench import` takes (source, domain, label, content_hash).",
        ),
    ],
    results: Annotated[
        Path,
        typer.Option(
            "--results",
            metavar="FILE",
            help="CSV model,sample_id,correct (sample_id: the row of --samples, 0, 1, ...), or a 2-D .npy: the "
            "planned models (in plan order) x the new samples.",
        ),
    ],
    plan: Annotated[
        Path | None,
        typer.Option("--plan", metavar="PLAN", help="The plan from `plan-samples --out` (default: plan again)."),
    ] = None,
    sampling: Annotated[
        str,
        typer.Option("--sampling", metavar="uniform|random", help="The plan used, without --plan (see plan-samples)."),
    ] = "uniform",
    seed: Annotated[
        int, typer.Option("--seed", metavar="N", min=0, help="The seed the plan used, without --plan.")
    ] = 0,
) -> None:
    """Add samples from their outcomes on the planned models (the other models' cells estimated).

    Run it again after an interruption: it completes the add with the same plan.
    """
    from lifelong.commands.bench_console import print_add_samples
    from lifelong.commands.bench_samples import BenchAddSamplesSpec, bench_add_samples

    print_add_samples(bench_add_samples(BenchAddSamplesSpec(store, samples, results, plan, sampling, seed)))
