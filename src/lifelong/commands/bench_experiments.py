"""`lifelong bench experiment`, `beyond` and `build-zoo`: the paper's experiments on matrices, and the zoo of
trained models that gives them a real correctness matrix."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from lifelong.commands.bench_inputs import _fail, _one_of
from lifelong.commands.device_options import (
    ChannelsLastOption,
    CompileOption,
    DeviceOption,
    GpusPerTrialOption,
    PrecisionOption,
)
from lifelong.commands.terminal import console, fail, note
from lifelong.core.suggest import did_you_mean

_BUDGETS_HELP = (
    "Budgets n' (m' with --transpose): comma-separated integers (8,32,300), or a geometric run a,b,...,z, each "
    "term the previous times b/a up to z (8,16,...,16384 is 8, 16, 32, ..., 16384)."
)


def _checked_budgets(value: str) -> str:
    """--budgets is checked as the flags are read, so a mistyped list is a usage error before any work."""
    from lifelong.commands.bench_reports import parse_budgets

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
    from lifelong.commands.bench_reports import experiment_command

    try:
        experiment_command(rank, evaluate, budgets, sort, sampling, rank_confidence, transpose, as_json)
    except (FileNotFoundError, ValueError, TypeError) as exc:
        raise _fail(exc) from None


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
    from lifelong.commands.bench_reports import beyond_command

    if (matrix is None) == (rank is None and evaluate is None) or (
        matrix is None and (rank is None or evaluate is None)
    ):
        raise fail("give either --matrix FILE, or both --rank FILE and --eval FILE")
    try:
        beyond_command(
            matrix, samples, budgets, split_seed=split_seed, as_json=as_json, rank_path=rank, eval_path=evaluate
        )
    except (FileNotFoundError, ValueError, TypeError, KeyError) as exc:
        raise _fail(exc) from None


def _names(text: str) -> tuple[str, ...]:
    """Names from a comma-separated list ("noise,blur"), blanks dropped."""
    return tuple(c.strip() for c in text.split(",") if c.strip())


def _severities(text: str) -> tuple[int, ...]:
    """Severities from a comma-separated list of integers ("1,2,3")."""
    try:
        return tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise ValueError(f"severities must be comma-separated integers such as 1,2,3, got {text!r}") from None


def _zoo_output(out: Path, resume: bool, overwrite: bool) -> None:
    """Refuse an existing non-empty OUT without --resume or --overwrite (or with both)."""
    _one_of(resume, overwrite)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out} exists and is not a folder: pick another output folder")
    if out.is_dir() and any(out.iterdir()) and not (resume or overwrite):
        raise ValueError(
            f"{out} already holds files; pass --resume to continue the zoo there (finished models are reused, and "
            "a larger --models grows it), --overwrite to build it again from scratch, or pick another folder"
        )


def build_zoo_cli(
    out: Path = typer.Argument(..., help="Output folder (models/ in it keeps each finished model)."),
    n_models: int = typer.Option(120, "--models", metavar="N", min=1, help="Models in the zoo."),
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
        2000, "--test-samples", metavar="N", min=1, help="Clean test samples; each corruption adds a copy."
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
    as_json: bool = typer.Option(False, "--json", help="Print the whole summary (zoo.json) as JSON."),
) -> None:
    """Train and evaluate a zoo of varied models on clean + corrupted test samples (a real correctness matrix).

    Writes OUT/correctness.npy (models x samples), samples.csv and models.csv, the inputs of `lifelong bench
    import`, plus confidence.npy, images.npy and zoo.json (the settings that ran).
    """
    from lifelong.commands.device_options import accelerator_from
    from lifelong.sortsearch.zoo import FALLBACK_SOURCE, SourceMissing, ZooSettings, build_zoo

    try:
        accelerator_from(device, precision, compile, channels_last)
        settings = ZooSettings(
            n_models=n_models,
            source=source,
            n_test=n_test,
            corruptions=_names(corruptions),
            severities=_severities(severities),
            seed=seed,
            source_options={"skip_corrupt": True} if skip_corrupt else None,
            fallback_source=fallback_source,
        )
        if executor not in ("local", "ray"):
            raise ValueError(f"unknown --executor {executor!r}{did_you_mean(executor, ('local', 'ray'))}: local or ray")
        _zoo_output(out, resume, overwrite)
        info = build_zoo(
            out,
            settings,
            executor=executor,
            num_cpus=num_cpus,
            gpus_per_model=gpus_per_trial,
            on_note=note,
            start_over=overwrite,
        )
    except SourceMissing as exc:
        raise fail(f"{exc}; or pass --fallback-source {FALLBACK_SOURCE} to build on rendered letters instead") from None
    except (FileNotFoundError, ValueError, OSError) as exc:
        raise _fail(exc) from None
    if as_json:
        typer.echo(json.dumps(info, indent=2, default=str))
        return
    clean = info["clean_accuracy"]
    for line in (
        f"{out}: {info['n_models']} models x {info['n_samples']} samples of {info['source']} "
        f"({info['trained']} trained, {info['reused']} reused, {info['wall_seconds']:.1f} s)",
        f"clean accuracy: min {clean['min']:.3f}, median {clean['median']:.3f}, max {clean['max']:.3f}",
        f"next, import it into a store (the settings that ran are in {out / 'zoo.json'}):",
        f"  lifelong bench import STORE --matrix {out / 'correctness.npy'} \\",
        f"    --samples {out / 'samples.csv'} --models {out / 'models.csv'}",
    ):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
