"""`lifelong run`: a learner over a stream, one run per seed, locally or on Ray."""

from __future__ import annotations

import signal
from pathlib import Path

import typer

from lifelong.cli.common import DATA_ROOT_HELP, parse_options
from lifelong.commands.device_options import (
    ChannelsLastOption,
    CompileOption,
    DeviceOption,
    GpusPerTrialOption,
    PrecisionOption,
)
from lifelong.commands.terminal import console, fail


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
    from lifelong.commands.device_options import accelerator_specs, check_ray_gpus
    from lifelong.commands.remote_runs import run_specs
    from lifelong.commands.run_console import print_run, print_seed_summary
    from lifelong.commands.runner import RunExistsError, RunSpec, finished_means_exit_0
    from lifelong.core.executors import WorkerLostError, make_executor
    from lifelong.results.lock import RunFolderBusyError
    from lifelong.results.loggers import LoggerError, load_loggers, parse_names
    from lifelong.run.environment import EventError
    from lifelong.suites import classify_stream
    from lifelong.suites.clear import PROTOCOLS

    stream_options = parse_options(stream_option)
    try:
        temporal = classify_stream(stream).is_temporal
        accelerator = accelerator_specs(device, precision, compile, channels_last)
        check_ray_gpus(executor, device, gpus_per_trial)
        loggers = parse_names(log)
        load_loggers(loggers)  # an unknown logger, or its package missing: said before any run starts
    except (ValueError, ImportError) as exc:
        raise fail(exc) from None
    if temporal:
        stream_options.setdefault("protocol", protocol or "iid")
        if stream_options["protocol"] not in PROTOCOLS:
            raise fail(f"unknown protocol {stream_options['protocol']!r}; choose one of {PROTOCOLS}")
    elif protocol is not None:
        raise fail(f"--protocol applies to temporal streams (clear-mini, clear, a timestamped CSV), not {stream!r}")
    specs = [
        RunSpec(
            stream=stream,
            learner=learner,
            seed=s,
            out=str(out),
            learner_options=parse_options(option),
            eval_split="test" if final else "dev_test",
            skip_corrupt=skip_corrupt,
            resume=resume,
            overwrite=overwrite,
            progress=(executor == "local"),
            threads=threads,
            data_root=str(data_root) if data_root else None,
            allow_missing=allow_missing,
            stream_options=stream_options,
            metrics=tuple(metric),
            save_predictions=predictions,
            loggers=loggers,
            **accelerator,
        )
        for s in range(seed, seed + seeds)
    ]
    signal.signal(signal.SIGTERM, _interrupt)  # a polite kill marks the run interrupted, like Ctrl-C
    try:
        runner = make_executor(
            executor, address=ray_address, num_cpus=num_cpus, cpus_per_item=threads, gpus_per_item=gpus_per_trial
        )
        results = run_specs(runner, specs)  # on Ray, each run's folder and records land in --out as it ends
        shutdown = getattr(runner, "shutdown", None)
        if shutdown is not None:
            shutdown()
    except KeyboardInterrupt:
        kept = "Every completed event is checkpointed." if executor == "local" else "Finished runs are in --out."
        console.print(f"[yellow]Interrupted.[/] {kept} Resume with the same command plus [bold]--resume[/].")
        raise typer.Exit(130) from None
    except (RunExistsError, RunFolderBusyError, EventError, FileNotFoundError, ValueError, ImportError) as exc:
        raise fail(exc) from None
    except WorkerLostError as exc:  # Ray lost a run's worker or node more often than it retries
        raise fail(exc) from None
    except LoggerError as exc:  # a --log logger failed; the message says what of the run is kept
        raise fail(exc) from None
    finished_means_exit_0()  # the work is saved: a signal from now on ends the command with success
    from lifelong.commands.fact_console import is_fact_result

    if results and is_fact_result(results[0]):
        from lifelong.commands.fact_console import print_fact_run, print_fact_seeds

        for result in results:
            print_fact_run(result)
        if len(results) > 1:
            print_fact_seeds(results, out)
        return
    if results and results[0].get("accuracy_matrix") is not None:
        from lifelong.commands.accuracy_matrix_console import print_matrix_run, print_matrix_seeds

        for result in results:
            print_matrix_run(result)
        if len(results) > 1:
            print_matrix_seeds(results, out)
        return
    for result in results:
        print_run(result)
    if len(results) > 1:
        print_seed_summary(results)
