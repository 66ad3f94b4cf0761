"""The `lifelong` command: run learners over streams, inspect streams, learners, data and results."""

from __future__ import annotations

import inspect
import json
import signal
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from lifelong.commands.bench import bench_app
from lifelong.commands.cog import cog_app
from lifelong.commands.device_options import (
    ChannelsLastOption,
    CompileOption,
    DeviceOption,
    GpusPerTrialOption,
    PrecisionOption,
)
from lifelong.commands.facts import facts_app
from lifelong.commands.terminal import console, fail

app = typer.Typer(
    help="Lifelong benchmarking of visual learners: task streams, compute-aware results.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
data_app = typer.Typer(help="Look at data sources.", no_args_is_help=True)
app.add_typer(data_app, name="data")
DATA_ROOT_HELP = "Datasets folder (default: $LIFELONG_DATA, else ~/.lifelong/data)."
app.add_typer(bench_app, name="bench")
app.add_typer(cog_app, name="cog")
app.add_typer(facts_app, name="facts")


def _parse_options(pairs: list[str]) -> dict:
    """KEY=VALUE pairs into a dict, values parsed as JSON when they are JSON (numbers, lists, booleans)."""
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"option {pair!r} must look like KEY=VALUE, e.g. epochs=2")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@app.command("run")
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
    from lifelong.commands.runner import RunExistsError, RunSpec
    from lifelong.core.executors import WorkerLostError, make_executor
    from lifelong.results.lock import RunFolderBusyError
    from lifelong.run.environment import EventError
    from lifelong.suites import classify_stream
    from lifelong.suites.clear import PROTOCOLS

    stream_options = _parse_options(stream_option)
    try:
        temporal = classify_stream(stream).is_temporal
        accelerator = accelerator_specs(device, precision, compile, channels_last)
        check_ray_gpus(executor, device, gpus_per_trial)
    except ValueError as exc:
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
            learner_options=_parse_options(option),
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
    except KeyboardInterrupt:
        kept = "Every completed event is checkpointed." if executor == "local" else "Finished runs are in --out."
        console.print(f"[yellow]Interrupted.[/] {kept} Resume with the same command plus [bold]--resume[/].")
        raise typer.Exit(130) from None
    except (RunExistsError, RunFolderBusyError, EventError, FileNotFoundError, ValueError, ImportError) as exc:
        raise fail(exc) from None
    except WorkerLostError as exc:  # Ray lost a run's worker or node more often than it retries
        raise fail(exc) from None
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


@app.command("streams")
def streams_command(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the built-in streams with task, meta-train and meta-test counts."""
    from lifelong.suites import describe_stream, get_stream, stream_descriptions

    rows = []
    for name, desc in stream_descriptions().items():
        try:  # listed by the name `--stream` takes (a temporal stream's own name adds its protocol)
            rows.append({**describe_stream(get_stream(name)), "name": name, "description": desc})
        except FileNotFoundError:  # a stream read from a data folder that is not there (e.g. clear)
            empty = dict.fromkeys(("tasks", "meta_train", "meta_test", "multi_label"), "-")
            rows.append({"name": name, **empty, "missing": None, "years": None, "description": desc + " [no data]"})
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title="streams")
    columns = ("name", "tasks", "meta_train", "meta_test", "multi_label", "description")
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(
            *(str(row[c]) for c in ("name", "tasks", "meta_train", "meta_test", "multi_label", "description"))
        )
    console.print(table)


@app.command("learners")
def learners_command() -> None:
    """List the learners `lifelong run --learner` accepts."""
    from lifelong.learners import describe_learners

    table = Table(title="learners")
    table.add_column("name", overflow="fold")
    table.add_column("description", overflow="fold")
    for name, description in describe_learners():
        table.add_row(name, description)
    console.print(table)


@data_app.command("inspect")
def data_inspect_command(
    source: str = typer.Argument(..., help="builtin:NAME, idx:DIR, fashion-mnist, folder:DIR or csv:FILE."),
    skip_corrupt: bool = typer.Option(False, "--skip-corrupt", help="Skip (and count) corrupt images."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Load a data source and describe it: items, classes, sizes, channels."""
    from lifelong.data.sources import describe, load_source

    try:
        info = describe(load_source(source, skip_corrupt=skip_corrupt))
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    if as_json:
        typer.echo(json.dumps(info, indent=2, default=str))
        return
    table = Table(title=source, show_header=False)
    table.add_column("what", overflow="fold")
    table.add_column("value", overflow="fold")
    for key, value in info.items():
        table.add_row(escape(str(key)), escape(str(value)))
    console.print(table)


@data_app.command("status")
def data_status_command(
    stream: str = typer.Option("nevis-full", "--stream", help="A stream name, e.g. nevis-full or nevis-short."),
    data_root: Path = typer.Option(None, "--data-root", help=DATA_ROOT_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Which tasks of a stream have data, which are missing, and what to provide for each."""
    from lifelong.suites.nevis import data_status

    try:
        rows = data_status(stream, data_root)
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    if as_json:
        typer.echo(json.dumps(rows, indent=2, default=str))
        return
    available = sum(r["available"] for r in rows)
    table = Table(title=f"{stream}: {available}/{len(rows)} tasks have data")
    for column in ("task", "year", "data", "source, or the folder to provide", "dataset"):
        table.add_column(column, overflow="fold")
    for r in rows:
        where = r["source"] if r["available"] else r["expected"]
        state = "yes" if r["available"] else "[red]missing[/]"
        table.add_row(r["uid"], str(r["year"]), state, escape(str(where)), escape(r["published"]))
    console.print(table)
    if available < len(rows):
        console.print("Each missing folder may hold any of these layouts:")
        for layout in rows[0]["layouts"]:
            console.print(f"  - {escape(layout)}")


@app.command("report")
def report_command(
    run_dirs: list[Path] = typer.Argument(..., help="Run folders (runs/<run id>) to compare, or their parent."),
    out: Path = typer.Option(Path("report"), "--out", help="Folder for index.html and its figures."),
    reference: str = typer.Option(None, "--reference", help="Run id or learner for regret (default: independent)."),
) -> None:
    """One HTML page comparing runs: error vs cFLOP with the Pareto front, per-task error, regret, slices."""
    from lifelong.report.html import write_report

    try:
        page = write_report(run_dirs, out, reference=reference)
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    console.print(f"report: {page}")


@app.command("pretrain")
def pretrain_cli(
    source: str = typer.Argument(..., help="Data to pretrain on: builtin:NAME, fashion-mnist, idx:DIR, folder:DIR..."),
    out: Path = typer.Option(..., "--out", help="Checkpoint file to write (e.g. pretrained/chars.pt)."),
    architecture: str = typer.Option("resnet_mini", "--architecture", help="resnet_mini, resnet18 or resnet34."),
    epochs: int = typer.Option(10, "--epochs", min=1),
    resolution: int = typer.Option(32, "--resolution", min=1),
    seed: int = typer.Option(0, "--seed"),
    option: list[str] = typer.Option([], "--option", "-o", help="Source option KEY=VALUE, e.g. n_per_class=300."),
    threads: int = typer.Option(1, "--threads", min=1, help="Torch threads. Same seed + threads = same weights."),
    device: DeviceOption = "auto",
    precision: PrecisionOption = "auto",
    compile: CompileOption = False,
    channels_last: ChannelsLastOption = "auto",
) -> None:
    """Train a model on a dataset and save a checkpoint for `--learner pretrained -o checkpoint=PATH`."""
    from lifelong.commands.device_options import accelerator_from
    from lifelong.commands.pretraining import pretrain_command

    try:
        accelerator_from(device, precision, compile, channels_last)
        info = pretrain_command(
            source, out, architecture, epochs, resolution, seed, _parse_options(option), threads=threads
        )
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    console.print_json(json.dumps(info, default=str))


@app.command("matrix-summary")
def matrix_summary_cli(
    run_dirs: list[Path] = typer.Argument(..., help="Run folders of one stream, protocol and learner (one per seed)."),
    out: Path = typer.Option(Path("."), "--out", help="Folder for <group>-seeds.json and its heatmap."),
) -> None:
    """Mean +- std over seeds of accuracy-matrix (CLEAR) runs, e.g. seeds run by separate commands."""
    from lifelong.commands.accuracy_matrix_console import print_matrix_seeds
    from lifelong.results import load_matrix_runs

    try:
        print_matrix_seeds(load_matrix_runs(run_dirs), out)
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None


@app.command("pretrain-ssl")
def pretrain_ssl_cli(
    out: Path = typer.Option(..., "--out", help="Encoder file to write (e.g. encoders/clear-mini-simclr.pt)."),
    stream: str = typer.Option("clear-mini", "--stream", help="A temporal stream (clear-mini, clear, a .csv)."),
    bucket: int = typer.Option(0, "--bucket", min=0, help="Bucket whose unlabeled pool to learn from (CLEAR: 0)."),
    architecture: str = typer.Option("resnet_mini", "--architecture", help="resnet_mini, resnet18 or resnet34."),
    epochs: int = typer.Option(None, "--epochs", min=1, help="Epochs (default: the SimCLR recipe's)."),
    resolution: int = typer.Option(None, "--resolution", min=1, help="Input side (default: the stream's)."),
    seed: int = typer.Option(0, "--seed"),
    threads: int = typer.Option(1, "--threads", min=1, help="Torch threads. Same seed + threads = same weights."),
    data_root: Path = typer.Option(None, "--data-root", help="Datasets folder (for --stream clear)."),
    stream_option: list[str] = typer.Option([], "--stream-option", "-s", help="Source option KEY=VALUE."),
    device: DeviceOption = "auto",
    precision: PrecisionOption = "auto",
    compile: CompileOption = False,
    channels_last: ChannelsLastOption = "auto",
) -> None:
    """Self-supervised (SimCLR) pretraining on a bucket's unlabeled images, for `-o encoder=PATH` (linear regime).

    Interrupted? Run the same command again: it resumes from OUT.work after the last finished epoch.
    """
    from lifelong.commands.device_options import accelerator_from
    from lifelong.commands.pretraining import pretrain_ssl_command

    try:
        accelerator_from(device, precision, compile, channels_last)
        info = pretrain_ssl_command(
            stream,
            out,
            bucket=bucket,
            architecture=architecture,
            epochs=epochs,
            resolution=resolution,
            seed=seed,
            threads=threads,
            data_root=str(data_root) if data_root else None,
            source_options=_parse_options(stream_option),
        )
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    except KeyboardInterrupt:
        console.print("[yellow]Interrupted.[/] Finished epochs are saved: run the same command to resume.")
        raise typer.Exit(130) from None
    console.print_json(json.dumps(info, default=str))


@app.command("transfer-matrix")
def transfer_matrix_cli(
    stream: str = typer.Option("nevis-mini", "--stream", help="A stream name or manifest."),
    out: Path = typer.Option(Path("transfer_matrix.json"), "--out", help="JSON file for the matrix."),
    cache: Path = typer.Option(None, "--cache", help="Folder of finished cells, to resume (default: OUT.cache)."),
    epochs: int = typer.Option(10, "--epochs", min=1),
    trials: int = typer.Option(1, "--trials", min=1),
    seed: int = typer.Option(0, "--seed"),
    executor: str = typer.Option("local", "--executor", help="local or ray."),
    data_root: Path = typer.Option(None, "--data-root", help=DATA_ROOT_HELP),
    threads: int = typer.Option(
        1, "--threads", min=1, help="Torch threads per cell (same seed + threads = same matrix)."
    ),
    device: DeviceOption = "auto",
    precision: PrecisionOption = "auto",
    compile: CompileOption = False,
    channels_last: ChannelsLastOption = "auto",
    gpus_per_trial: GpusPerTrialOption = 0.0,
) -> None:
    """Accuracy on task j after finetuning from task i's best Independent model, minus Independent on j."""
    from lifelong.commands.device_options import accelerator_from
    from lifelong.core.executors import make_executor
    from lifelong.core.files import atomic_write_bytes
    from lifelong.suites import get_stream
    from lifelong.training.loop import set_torch_threads
    from lifelong.training.transfer_matrix import transfer_matrix

    set_torch_threads(threads)
    try:
        accelerator_from(device, precision, compile, channels_last)
        built = get_stream(stream, data_root=str(data_root) if data_root else None, allow_missing=False)
        result = transfer_matrix(
            built,
            epochs=epochs,
            trials=trials,
            seed=seed,
            executor=None
            if executor == "local"
            else make_executor(executor, cpus_per_item=threads, gpus_per_item=gpus_per_trial),
            cache_dir=cache or out.with_suffix(".cache"),
            progress=True,
        )
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    atomic_write_bytes(out, json.dumps(result, indent=2).encode())
    table = Table(title=f"transfer matrix of {stream} (accuracy gain over Independent; row = source)")
    table.add_column("from \\ to", overflow="fold")
    for uid in result["tasks"]:
        table.add_column(uid, justify="right", overflow="fold")
    for uid, row in zip(result["tasks"], result["matrix"], strict=True):
        table.add_row(uid, *(f"{v:+.3f}" if v is not None else "-" for v in row))
    console.print(table)
    console.print(f"written to {out}")


@app.command("results")
def results_command(
    out: Path = typer.Option(Path("runs"), "--out", help="Results directory."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    provenance: bool = typer.Option(
        False, "--provenance", help="Also show each run's machine, thread count, versions and loaded files."
    ),
) -> None:
    """List the runs recorded in a results directory, with their summaries."""
    from lifelong.commands.run_console import print_provenance, print_results
    from lifelong.results import read_provenance
    from lifelong.results.store import ResultsDB

    if not (out / "results.sqlite").exists():
        raise fail(f"no results database in {out}; run `lifelong run --out {out}` first")
    runs = ResultsDB(out).runs()
    if provenance:
        runs = [{**run, "provenance": read_provenance(run["path"])} for run in runs]
    if as_json:
        typer.echo(json.dumps(runs, indent=2, default=str))
        return
    print_results(runs, out)
    if provenance:
        print_provenance(runs)


def _readable_help(*groups: typer.Typer) -> None:
    """Usage lines like a usual CLI's: `--out OUT`, `-o OPTION`, bare flags (not `<str>`, `<bool>`, `{run_dirs}`)."""
    for group in groups:
        for command in group.registered_commands:
            for name, parameter in inspect.signature(command.callback).parameters.items():
                info = parameter.default
                if not isinstance(info, typer.models.ParameterInfo) or info.metavar is not None:
                    continue
                is_flag = parameter.annotation in (bool, "bool")
                info.metavar = "" if is_flag and isinstance(info, typer.models.OptionInfo) else name.upper()


_readable_help(app, data_app, bench_app)


if __name__ == "__main__":
    app()
