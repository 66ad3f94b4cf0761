"""`lifelong run`: a learner over a stream, one run per seed, locally or on Ray."""

from __future__ import annotations

import signal
from pathlib import Path

import typer

from lifelong.cli.common import DATA_ROOT_HELP, parse_options
from lifelong.cli.options import (
    ChannelsLastOption,
    CompileOption,
    DeviceOption,
    GpusPerTrialOption,
    PrecisionOption,
)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run_command(
    stream: str = typer.Option("mini", "--stream", help="A stream name (see `lifelong streams`) or a manifest file."),
    learner: str = typer.Option("independent", "--learner", help="A learner name (see `lifelong learners`)."),
    out: Path = typer.Option(Path("runs"), "--out", help="Results directory; each run gets a folder in it."),
    seed: int = typer.Option(0, "--seed", help="Seed of the (first) run."),
    seeds: int = typer.Option(1, "--seeds", min=1, help="Number of runs, with seeds seed, seed+1, ..."),
    executor: str = typer.Option("local", "--executor", help="local, or ray to fan runs out over Ray."),
    ray_address: str = typer.Option(None, "--ray-address", help="Join this Ray cluster instead of a local Ray."),
    num_cpus: int = typer.Option(None, "--num-cpus", help="CPUs for a local Ray (default: all)."),
    resume: bool = typer.Option(False, "--resume", help="Continue an interrupted run from its last event."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Delete an existing run folder and start over."),
    final: bool = typer.Option(False, "--final", help="Evaluate on the test split instead of dev_test."),
    skip_corrupt: bool = typer.Option(False, "--skip-corrupt", help="Skip (and count) corrupt images."),
    option: list[str] = typer.Option([], "--option", "-o", help="Learner option KEY=VALUE, repeatable."),
    threads: int = typer.Option(
        1, "--threads", min=1, help="Torch threads per run. Same seed + same threads = identical numbers."
    ),
    portable: bool = typer.Option(
        False,
        "--portable",
        envvar="LIFELONG_PORTABLE",
        help="The same numbers on any x86-64 CPU with AVX2, Intel or AMD (slower; docs/run.md).",
    ),
    data_root: Path = typer.Option(None, "--data-root", help=DATA_ROOT_HELP),
    allow_missing: bool = typer.Option(False, "--allow-missing", help="Run only the tasks whose data exists."),
    stream_option: list[str] = typer.Option(
        [], "--stream-option", "-s", help="Stream option KEY=VALUE, e.g. ablation=remove-first-30, shuffle_seed=1."
    ),
    protocol: str = typer.Option(
        None, "--protocol", help="Temporal (CLEAR) streams: iid (70/30 per bucket, default) or streaming."
    ),
    metric: list[str] = typer.Option(
        [], "--metric", help="Also report this registered metric (entry point group lifelong.metrics), repeatable."
    ),
    predictions: bool = typer.Option(
        True, "--predictions/--no-predictions", help="Save raw test scores per evaluation under predictions/."
    ),
    log: list[str] = typer.Option(
        [],
        "--log",
        metavar="NAME[,NAME]",
        help="Also log each record to tensorboard, wandb (offline) or mlflow (files), in the run folder.",
    ),
    device: DeviceOption = "auto",
    precision: PrecisionOption = "auto",
    compile: CompileOption = False,
    channels_last: ChannelsLastOption = "auto",
    gpus_per_trial: GpusPerTrialOption = 0.0,
) -> None:
    """Run a learner over a stream; print per-task errors (or the accuracy matrix) and the stream summary."""
    from lifelong.commands.run_console import print_next_steps, print_runs
    from lifelong.commands.runner import finished_means_exit_0
    from lifelong.commands.runs_api import RunsSpec, run

    spec = RunsSpec(
        stream=stream,
        learner=learner,
        seed=seed,
        seeds=seeds,
        out=out,
        learner_options=parse_options(option),
        eval_split="test" if final else "dev_test",
        skip_corrupt=skip_corrupt,
        resume=resume,
        overwrite=overwrite,
        threads=threads,
        data_root=data_root,
        allow_missing=allow_missing,
        stream_options=parse_options(stream_option),
        protocol=protocol,
        metrics=tuple(metric),
        save_predictions=predictions,
        loggers=tuple(log),
        device=device,
        precision=precision,
        channels_last=channels_last,
        compile=compile,
        executor=executor,
        ray_address=ray_address,
        num_cpus=num_cpus,
        gpus_per_trial=gpus_per_trial,
        portable=portable,
    )
    signal.signal(signal.SIGTERM, _interrupt)  # a polite kill marks the run interrupted, like Ctrl-C
    results = run(spec, progress=True)  # a bar for local runs
    finished_means_exit_0()  # the work is saved: a signal from now on ends the command with success
    print_runs(results, out)
    print_next_steps(out)
