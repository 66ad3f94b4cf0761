"""`lifelong bench experiment`, `beyond`, `build-zoo` and `compare`: thin adapters over `commands.bench_experiments`
(the paper's experiments on matrices, the zoo of trained models) and `commands.bench_compare` (estimators from few
samples); each builds the spec from the flags, calls the workflow and prints its result."""

from __future__ import annotations

from pathlib import Path

import typer

from lifelong.cli.options import (
    ChannelsLastOption,
    CompileOption,
    DeviceOption,
    GpusPerTrialOption,
    PrecisionOption,
)
from lifelong.commands.presets import PRESET_HELP, preset_help

_BUDGETS_HELP = (
    "Budgets n' (m' with --transpose): comma-separated integers (8,32,300), or a geometric run a,b,...,z, each "
    "term the previous times b/a up to z (8,16,...,16384 is 8, 16, 32, ..., 16384)."
)


def _checked_budgets(value: str) -> str:
    """--budgets is checked as the flags are read, so a mistyped list is a usage error before any work."""
    from lifelong.commands.bench_inputs import parse_budgets

    try:
        parse_budgets(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    return value


def experiment(
    rank: Path = typer.Option(
        ..., "--rank", metavar="FILE", help="Ranking models' matrix .npy (uint8 0/1, rows = models)."
    ),
    evaluate: Path = typer.Option(
        ..., "--eval", metavar="FILE", help="Evaluated models' matrix .npy (same samples as --rank)."
    ),
    budgets: str = typer.Option(
        "8,16,...,2048", "--budgets", metavar="LIST", help=_BUDGETS_HELP, callback=_checked_budgets
    ),
    sort: str = typer.Option(
        "sum",
        "--sort",
        metavar="sum|confidence|recursive",
        help="How samples are ranked: sum, confidence or recursive.",
    ),
    sampling: str = typer.Option("uniform", "--sampling", metavar="uniform|random", help="uniform or random."),
    rank_confidence: Path = typer.Option(
        None,
        "--rank-confidence",
        metavar="FILE",
        help="The ranking models' true-class probabilities .npy (for --sort confidence).",
    ),
    transpose: bool = typer.Option(False, "--transpose", help="Insert samples instead of models."),
    as_json: bool = typer.Option(False, "--json", help="Print the rows as JSON."),
) -> None:
    """Reproduce the paper's experiments on any pair of matrices: errors, kappa and Pearson r per budget."""
    from lifelong.commands.bench_experiments import BenchExperimentSpec, bench_experiment
    from lifelong.commands.bench_reports import print_experiment

    spec = BenchExperimentSpec(rank, evaluate, budgets, sort, sampling, rank_confidence, transpose)
    print_experiment(bench_experiment(spec), as_json)


def beyond(
    matrix: Path = typer.Option(
        None,
        "--matrix",
        metavar="FILE",
        help="Dense uint8 0/1 .npy [models, samples], split half/half into ranking / held-out.",
    ),
    rank: Path = typer.Option(
        None, "--rank", metavar="FILE", help="Ranking models' matrix .npy (with --eval, instead of --matrix)."
    ),
    evaluate: Path = typer.Option(
        None, "--eval", metavar="FILE", help="Held-out models' matrix .npy (same samples as --rank)."
    ),
    samples: Path = typer.Option(
        None, "--samples", metavar="FILE", help="samples.csv with a domain column (domain-aware methods)."
    ),
    budgets: str = typer.Option(
        "1024,2048,4096",
        "--budgets",
        metavar="LIST",
        help=_BUDGETS_HELP.replace(" (m' with --transpose)", ""),
        callback=_checked_budgets,
    ),
    split_seed: int = typer.Option(0, "--split-seed", metavar="N", min=0, help="Seed of the --matrix half/half split."),
    as_json: bool = typer.Option(False, "--json", help="Print the tables as JSON."),
) -> None:
    """Compare rankings beyond sum-sort (clustered orders, domains, IRT) and the accuracy intervals' coverage, on one
    matrix split half/half (--matrix) or on a ranking and a held-out matrix (--rank, --eval), as `experiment` takes."""
    from lifelong.commands.bench_experiments import BenchBeyondSpec, bench_beyond
    from lifelong.commands.bench_reports import print_beyond

    spec = BenchBeyondSpec(matrix, rank, evaluate, samples, budgets, split_seed)
    print_beyond(bench_beyond(spec), as_json)


def build_zoo_cli(
    out: Path = typer.Argument(..., help="Output folder (models/ in it keeps each finished model)."),
    n_models: int = typer.Option(
        None, "--models", metavar="N", min=1, help=preset_help("bench build-zoo", "models", "Models in the zoo.")
    ),
    source: str = typer.Option(
        "fashion-mnist",
        "--source",
        metavar="SOURCE",
        help="Images: a source as `lifelong data inspect` takes (fashion-mnist, ...).",
    ),
    fallback_source: str = typer.Option(
        None,
        "--fallback-source",
        metavar="SOURCE",
        help="Build on this source instead (e.g. builtin:letters, rendered letters) when --source is not installed; "
        "without it a missing --source is an error.",
    ),
    n_test: int = typer.Option(
        None,
        "--test-samples",
        metavar="N",
        min=1,
        help=preset_help("bench build-zoo", "test_samples", "Clean test samples; each corruption adds a copy."),
    ),
    corruptions: str = typer.Option(
        "noise,blur,contrast,rotation,occlusion",
        "--corruptions",
        metavar="LIST",
        help="Comma-separated corruptions (or none: '').",
    ),
    severities: str = typer.Option(
        "1,2,3", "--severities", metavar="LIST", help="Comma-separated severities of each corruption."
    ),
    seed: int = typer.Option(0, "--seed", metavar="N", min=0, help="Seed of the models' settings and of the samples."),
    resume: bool = typer.Option(
        False, "--resume", help="Continue the zoo in OUT: reuse its finished models (a larger --models grows it)."
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Delete the zoo in OUT and build it from scratch."),
    skip_corrupt: bool = typer.Option(False, "--skip-corrupt", help="Skip (and count) corrupt images."),
    executor: str = typer.Option("local", "--executor", metavar="local|ray", help="local or ray."),
    num_cpus: int = typer.Option(None, "--num-cpus", metavar="N", help="CPUs for a local Ray (default: all)."),
    device: DeviceOption = "auto",
    precision: PrecisionOption = "auto",
    compile: CompileOption = False,
    channels_last: ChannelsLastOption = "auto",
    gpus_per_trial: GpusPerTrialOption = 0.0,
    preset: str = typer.Option(None, "--preset", metavar="quick|full", help=PRESET_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the whole summary (zoo.json) as JSON."),
) -> None:
    """Train and evaluate a zoo of varied models on clean + corrupted test samples (a real correctness matrix).

    Writes OUT/correctness.npy (models x samples), samples.csv and models.csv, the inputs of `lifelong bench
    import`, plus confidence.npy, images.npy and zoo.json (the settings that ran).
    """
    from lifelong.commands.bench_console import print_zoo
    from lifelong.commands.bench_experiments import BenchBuildZooSpec, bench_build_zoo
    from lifelong.commands.terminal import note

    spec = BenchBuildZooSpec(
        out,
        models=n_models,
        source=source,
        fallback_source=fallback_source,
        test_samples=n_test,
        corruptions=corruptions,
        severities=severities,
        seed=seed,
        resume=resume,
        overwrite=overwrite,
        skip_corrupt=skip_corrupt,
        executor=executor,
        num_cpus=num_cpus,
        device=device,
        precision=precision,
        compile=compile,
        channels_last=channels_last,
        gpus_per_trial=gpus_per_trial,
        preset=preset,
    )
    print_zoo(bench_build_zoo(spec, progress=True, on_note=note), as_json)


def compare(
    rank: Path = typer.Option(None, "--rank", metavar="FILE", help="Source models' matrix .npy (uint8 0/1)."),
    evaluate: Path = typer.Option(None, "--eval", metavar="FILE", help="Target models' matrix .npy (same samples)."),
    budget: int = typer.Option(100, "--budget", min=1, metavar="N", help="Samples each target is evaluated on."),
    seed: int = typer.Option(0, "--seed", min=0, metavar="S", help="Seed of the random draws."),
    zoo: Path = typer.Option(None, "--zoo", metavar="DIR", help="A zoo folder (`bench build-zoo`): the protocol."),
    matrix: Path = typer.Option(None, "--matrix", metavar="FILE", help="The protocol on this matrix .npy."),
    models: Path = typer.Option(None, "--models", metavar="FILE", help="models.csv (families, for --splits shift)."),
    samples: Path = typer.Option(None, "--samples", metavar="FILE", help="samples.csv (each sample's domain)."),
    splits: str = typer.Option(
        "interpolation,extrapolation,shift", "--splits", metavar="LIST", help="Splits of the models, comma-separated."
    ),
    seeds: int = typer.Option(
        None, "--seeds", min=1, metavar="N", help=preset_help("bench compare", "seeds", "Seeds per split.")
    ),
    budgets: str = typer.Option(
        None, "--budgets", metavar="LIST", help=preset_help("bench compare", "budgets", "Budgets of the protocol.")
    ),
    methods: str = typer.Option(None, "--methods", metavar="LIST", help="Methods (default: every registered one)."),
    family: str = typer.Option("architecture", "--family", metavar="COLUMN", help="models.csv column of families."),
    out: Path = typer.Option(None, "--out", metavar="DIR", help="Output folder of the protocol."),
    resume: bool = typer.Option(False, "--resume", help="Continue the comparison in --out."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Delete the comparison in --out and start again."),
    preset: str = typer.Option(None, "--preset", metavar="quick|full", help=PRESET_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="One line per record instead of a progress bar."),
) -> None:
    """Compare estimators of a model's accuracy from few samples: on --rank/--eval, or the protocol on a zoo."""
    from lifelong.commands.bench_compare import BenchCompareSpec, bench_compare
    from lifelong.commands.bench_console import print_compare, print_record

    spec = BenchCompareSpec(
        rank=rank,
        evaluate=evaluate,
        budget=budget,
        seed=seed,
        zoo=zoo,
        matrix=matrix,
        models=models,
        samples=samples,
        splits=splits,
        seeds=seeds,
        budgets=budgets,
        methods=methods,
        family=family,
        out=out,
        resume=resume,
        overwrite=overwrite,
        preset=preset,
    )
    protocol = rank is None and evaluate is None
    progress = False if as_json or not protocol else print_record if verbose else True
    print_compare(bench_compare(spec, progress=progress), as_json)
