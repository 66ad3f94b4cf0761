"""The `lifelong` command: run learners over streams, inspect streams, learners, data and results."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from lifelong.commands.bench import bench_app
from lifelong.commands.cog import cog_app
from lifelong.commands.data_fetch import fetch_command
from lifelong.commands.device_options import (
    ChannelsLastOption,
    CompileOption,
    DeviceOption,
    GpusPerTrialOption,
    PrecisionOption,
)
from lifelong.commands.facts import facts_app
from lifelong.commands.models import models_app
from lifelong.commands.outputs import OverwriteOption, ResumeOption, SkipCorruptOption
from lifelong.commands.terminal import console, fail, note

app = typer.Typer(
    help="Lifelong benchmarking of visual learners: task streams, compute-aware results.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
data_app = typer.Typer(help="Look at data sources and fetch real datasets.", no_args_is_help=True)
app.add_typer(data_app, name="data")
data_app.command("fetch")(fetch_command)
DATA_ROOT_HELP = "Datasets folder (default: $LIFELONG_DATA, else ~/.lifelong/data)."
app.add_typer(bench_app, name="bench")
app.add_typer(cog_app, name="cog")
app.add_typer(facts_app, name="facts")
app.add_typer(models_app, name="models")


def parse_options(pairs: list[str]) -> dict:
    """KEY=VALUE pairs into a dict, values parsed as JSON when they are JSON (numbers, lists, booleans)."""
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise fail(f"option {pair!r} must look like KEY=VALUE, e.g. -o epochs=2 or -s split_seed=1")
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


@app.command("streams")
def streams_command(
    name: str = typer.Argument(None, metavar="[NAME]", help="A stream: show its -s options instead."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (every column)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Counts per part and years (no descriptions)."),
) -> None:
    """List the built-in streams with their task counts, or one stream's -s options."""
    from lifelong.suites import describe_stream, get_stream, stream_descriptions

    descriptions = stream_descriptions()
    if name is not None:
        _stream_options(name, descriptions, as_json)
        return
    rows = []
    for stream, desc in descriptions.items():
        try:  # listed by the name `--stream` takes (a temporal stream's own name adds its protocol)
            rows.append({**describe_stream(get_stream(stream)), "name": stream, "description": desc})
        except FileNotFoundError:  # a stream read from a data folder that is not there (e.g. clear)
            empty = dict.fromkeys(("tasks", "meta_train", "meta_test", "multi_label"), "-")
            rows.append({"name": stream, **empty, "missing": None, "years": None, "description": desc + " [no data]"})
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    title = "streams (train, test: meta-train, meta-test tasks; multi: multi-label)" if verbose else "streams"
    table = Table(title=title, title_justify="left")
    table.add_column("name", no_wrap=True)
    columns = ("tasks", "meta_train", "meta_test", "multi_label", "years") if verbose else ("tasks",)
    headers = {"meta_train": "train", "meta_test": "test", "multi_label": "multi"}
    for column in columns:
        table.add_column(headers.get(column, column), justify="right", no_wrap=True)
    if not verbose:
        table.add_column("description")
    for row in rows:
        years = "-".join(str(y) for y in row["years"] or () if y is not None) or "-"
        cells = [years if c == "years" else str(row[c]) for c in columns]
        table.add_row(row["name"], *cells, *([] if verbose else [escape(row["description"])]))
    console.print(table)
    console.print("One stream's -s options: lifelong streams NAME. More columns: -v or --json.")


def _stream_options(name: str, descriptions: dict[str, str], as_json: bool) -> None:
    """`lifelong streams NAME`: the stream's description and its -s options."""
    from lifelong.core.suggest import did_you_mean
    from lifelong.suites import stream_options

    if name not in descriptions:
        raise fail(f"unknown stream {name!r}{did_you_mean(name, descriptions)}; see `lifelong streams`")
    rows = stream_options(name)
    if as_json:
        typer.echo(json.dumps({"name": name, "description": descriptions[name], "options": rows}, indent=2))
        return
    console.print(f"[bold]{escape(name)}[/]: {escape(descriptions[name])}")
    _print_options(rows, f"lifelong run --stream {name} -s KEY=VALUE")


def _print_options(rows: list[dict], usage: str) -> None:
    """Options as `NAME: TYPE, default D` lines with their help indented below (whole words at any width)."""
    import textwrap

    console.print(escape(usage))
    if not rows:
        console.print("  (no options)")
        return
    width = max(console.width, 40)
    first_with: dict[str, str] = {}  # a help paragraph shared by several options is printed once
    for row in rows:
        default = "" if row["default"] == "-" else f", default {row['default']}"
        console.print(f"  [bold]{escape(row['name'])}[/]: {escape(row['type'])}{escape(default)}", soft_wrap=True)
        if row["help"] == "-":
            continue
        if row["help"] in first_with:
            console.print(f"      (see {escape(first_with[row['help']])} above)", soft_wrap=True)
            continue
        first_with[row["help"]] = row["name"]
        lines = textwrap.wrap(row["help"], width - 6, break_long_words=False, break_on_hyphens=False)
        console.print("\n".join("      " + escape(line) for line in lines), soft_wrap=True)


@app.command("learners")
def learners_command(
    name: str = typer.Argument(None, metavar="[NAME]", help="A learner: show its -o options instead."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List the learners `lifelong run --learner` accepts, or one learner's -o options."""
    from lifelong.learners import LEARNERS, describe_learners, learner_options

    if name is not None:
        from lifelong.core.suggest import did_you_mean

        names = LEARNERS.names()
        if name not in names:
            raise fail(f"unknown learner {name!r}{did_you_mean(name, names)}; see `lifelong learners`")
        rows = learner_options(name)
        if as_json:
            typer.echo(json.dumps({"name": name, "options": rows}, indent=2))
            return
        _print_options(rows, f"lifelong run --learner {name} -o KEY=VALUE")
        return
    described = describe_learners()
    if as_json:
        typer.echo(json.dumps([{"name": n, "description": d} for n, d in described], indent=2))
        return
    table = Table(title="learners", title_justify="left")
    table.add_column("name", no_wrap=True)
    table.add_column("description")
    for learner, description in described:
        table.add_row(learner, escape(description))
    console.print(table)
    console.print("One learner's -o options: lifelong learners NAME.")


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
    console.print(escape(source), soft_wrap=True)
    _print_fields(info)


def _plain(value: object) -> str:
    """A value in plain words: `-` for None, lists comma-separated, no Python reprs."""
    if value is None:
        return "-"
    if isinstance(value, list | tuple):
        return ", ".join(_plain(v) for v in value) or "-"
    if isinstance(value, dict):
        items = "; ".join(f"{k}={_plain(v)}" for k, v in value.items())
        return f"({items})" if items else "-"
    return str(value)


def _print_fields(info: dict, prefix: str = "") -> None:
    """`key: value` lines, nested dicts as `key.sub`, wrapped between words only (paths stay whole)."""
    import textwrap

    width = max(console.width, 40)
    for key, value in info.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value and name in ("notes", "image_size"):  # notes.source, ...
            _print_fields(value, f"{name}.")
            continue
        if isinstance(value, dict) and value:  # per_class: A=100, B=100
            shown = ", ".join(f"{k}={_plain(v)}" for k, v in value.items())
        else:
            shown = _plain(value)
        text = textwrap.fill(
            f"{name}: {shown}",
            width - 2,
            initial_indent="  ",
            subsequent_indent="      ",
            break_long_words=False,
            break_on_hyphens=False,
        )
        console.print(escape(text), soft_wrap=True)


@data_app.command("status")
def data_status_command(
    stream: str = typer.Option("nevis-full", "--stream", help="A stream name, e.g. nevis-full or nevis-short."),
    data_root: Path = typer.Option(None, "--data-root", help=DATA_ROOT_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Which tasks of a stream have data, which are missing, and what to provide for each."""
    from lifelong.core.suggest import did_you_mean
    from lifelong.data.roots import DATA_ENV, resolve_data_root
    from lifelong.suites.nevis import Variant, data_status, parse_variant

    try:
        parse_variant(stream)
    except ValueError:
        names = [f"nevis-{v.value}" for v in Variant]
        raise fail(
            f"data status covers the Nevis'22 streams, not {stream!r}{did_you_mean(stream, names)}: "
            f"{', '.join(names)} (offline streams such as mini need no data)"
        ) from None
    try:
        rows = data_status(stream, data_root)
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    if as_json:
        typer.echo(json.dumps(rows, indent=2, default=str))
        return
    root = resolve_data_root(data_root)
    console.print(f"data root: {escape(str(root))}", soft_wrap=True)
    if not root.is_dir():
        note(f"data root {root} does not exist; set --data-root or ${DATA_ENV}")
    available = sum(r["available"] for r in rows)
    table = Table(title=f"{stream}: {available}/{len(rows)} tasks have data", title_justify="left")
    table.add_column("task", no_wrap=True)
    table.add_column("year", no_wrap=True)
    table.add_column("data", no_wrap=True)
    table.add_column("dataset")
    for r in rows:
        state = "yes" if r["available"] else "[red]missing[/]"
        table.add_row(escape(r["uid"]), str(r["year"]), state, escape(r["published"]))
    console.print(table)
    if available:  # paths on lines of their own, never folded, so that they can be copied
        console.print("Found (task: source):")
        for r in rows:
            if r["available"]:
                console.print(f"  {escape(r['uid'])}: {escape(str(r['source']))}", soft_wrap=True)
    if available < len(rows):
        console.print("Missing (task: the folder to provide):")
        for r in rows:
            if not r["available"]:
                console.print(f"  {escape(r['uid'])}: {escape(str(r['expected']))}", soft_wrap=True)
        console.print("Each missing folder may hold any of these layouts:")
        for layout in rows[0]["layouts"]:
            console.print(f"  - {escape(layout)}")
        fetchable = sorted({r["name"] for r in rows if not r["available"] and r["fetch"]})
        if fetchable:
            console.print(f"lifelong data fetch gets {len(fetchable)} of the missing datasets (--dry-run first):")
            console.print(f"  lifelong data fetch {' '.join(fetchable)}", soft_wrap=True)


@app.command("report")
def report_command(
    run_dirs: list[Path] = typer.Argument(..., help="Run folders (runs/<run id>) to compare, or their parent."),
    out: Path = typer.Option(Path("report"), "--out", help="Folder for index.html and its figures."),
    reference: str = typer.Option(None, "--reference", help="Run id or learner for regret (default: independent)."),
    cog_baseline: str = typer.Option(
        None, "--cog-baseline", metavar="ENCODER", help="CoG: show encoders relative to this one (its features set)."
    ),
) -> None:
    """An HTML report comparing runs: an index and one page per system (task streams, CLEAR, CoG, facts)."""
    from lifelong.commands.terminal import note
    from lifelong.report.html import write_report
    from lifelong.results.runs import find_runs

    try:
        folders, skipped = find_runs(run_dirs)
        for line in skipped:
            note(line)
        if not folders:
            given = ", ".join(map(str, run_dirs))
            raise FileNotFoundError(f"no run in {given}; give folders written by `lifelong run`, or their parent")
        page = write_report(folders, out, reference=reference, cog_baseline=cog_baseline)
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    console.print(f"report: {page}", soft_wrap=True, highlight=False)


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
    resume: ResumeOption = False,
    overwrite: OverwriteOption = False,
    skip_corrupt: SkipCorruptOption = False,
    device: DeviceOption = "auto",
    precision: PrecisionOption = "auto",
    compile: CompileOption = False,
    channels_last: ChannelsLastOption = "auto",
) -> None:
    """Train a model on a dataset and save a checkpoint for `--learner pretrained -o checkpoint=PATH`."""
    from lifelong.commands.device_options import accelerator_from
    from lifelong.commands.pretraining import pretrain_command

    options = parse_options(option)
    try:
        accelerator_from(device, precision, compile, channels_last)
        info = pretrain_command(
            source,
            out,
            architecture,
            epochs,
            resolution,
            seed,
            options,
            threads=threads,
            resume=resume,
            overwrite=overwrite,
            skip_corrupt=skip_corrupt,
        )
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    except KeyboardInterrupt:
        from lifelong.commands.outputs import work_folder

        kept = "Finished trials are kept: add [bold]--resume[/] to continue." if work_folder(out).exists() else ""
        console.print(f"[yellow]Interrupted.[/] {kept}".rstrip())
        raise typer.Exit(130) from None
    console.print_json(json.dumps(info, default=str))


@app.command("matrix-summary")
def matrix_summary_cli(
    run_dirs: list[Path] = typer.Argument(..., help="Run folders of one stream, protocol and learner (one per seed)."),
    out: Path = typer.Option(Path("."), "--out", help="Folder for <group>-seeds.json and its heatmap."),
) -> None:
    """Mean ± std over seeds of accuracy-matrix (CLEAR) runs, e.g. seeds run by separate commands."""
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
    resume: ResumeOption = False,
    overwrite: OverwriteOption = False,
    skip_corrupt: SkipCorruptOption = False,
    device: DeviceOption = "auto",
    precision: PrecisionOption = "auto",
    compile: CompileOption = False,
    channels_last: ChannelsLastOption = "auto",
) -> None:
    """Self-supervised (SimCLR) pretraining on a bucket's unlabeled images, for `-o encoder=PATH` (linear regime).

    Interrupted? Run the same command with --resume: it continues from <OUT>.work after the last finished epoch.
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
            source_options=parse_options(stream_option),
            resume=resume,
            overwrite=overwrite,
            skip_corrupt=skip_corrupt,
        )
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    except KeyboardInterrupt:
        from lifelong.commands.outputs import work_folder

        kept = "Finished epochs are kept: add [bold]--resume[/] to continue." if work_folder(out).exists() else ""
        console.print(f"[yellow]Interrupted.[/] {kept}".rstrip())
        raise typer.Exit(130) from None
    console.print_json(json.dumps(info, default=str))


@app.command("transfer-matrix")
def transfer_matrix_cli(
    stream: str = typer.Option("nevis-mini", "--stream", help="A stream name or manifest."),
    out: Path = typer.Option(Path("transfer_matrix.json"), "--out", help="JSON file for the matrix."),
    epochs: int = typer.Option(10, "--epochs", min=1),
    trials: int = typer.Option(1, "--trials", min=1),
    seed: int = typer.Option(0, "--seed"),
    executor: str = typer.Option("local", "--executor", help="local or ray."),
    data_root: Path = typer.Option(None, "--data-root", help=DATA_ROOT_HELP),
    threads: int = typer.Option(
        1, "--threads", min=1, help="Torch threads per cell (same seed + threads = same matrix)."
    ),
    resume: ResumeOption = False,
    overwrite: OverwriteOption = False,
    skip_corrupt: SkipCorruptOption = False,
    device: DeviceOption = "auto",
    precision: PrecisionOption = "auto",
    compile: CompileOption = False,
    channels_last: ChannelsLastOption = "auto",
    gpus_per_trial: GpusPerTrialOption = 0.0,
) -> None:
    """Accuracy on task j after finetuning from task i's best Independent model, minus Independent on j.

    Finished cells are kept in <OUT>.work: interrupted, the same command with --resume continues from them.
    """
    from lifelong.commands.device_options import accelerator_from
    from lifelong.commands.outputs import dropping_empty_work, finish_output, prepare_output, work_folder
    from lifelong.core.executors import make_executor
    from lifelong.core.files import atomic_write_bytes
    from lifelong.suites import get_stream
    from lifelong.training.loop import set_torch_threads
    from lifelong.training.transfer_matrix import transfer_matrix

    set_torch_threads(threads)
    try:
        accelerator_from(device, precision, compile, channels_last)
        state = prepare_output(out, resume=resume, overwrite=overwrite, what="transfer matrix")
        if state == "done":
            result = json.loads(out.read_text())
        else:
            built = get_stream(
                stream,
                data_root=str(data_root) if data_root else None,
                allow_missing=False,
                skip_corrupt=skip_corrupt,
            )
            runner = None
            if executor != "local":
                runner = make_executor(executor, cpus_per_item=threads, gpus_per_item=gpus_per_trial)
            with dropping_empty_work(out):
                result = transfer_matrix(
                    built,
                    epochs=epochs,
                    trials=trials,
                    seed=seed,
                    executor=runner,
                    cache_dir=work_folder(out),
                    progress=True,
                )
            atomic_write_bytes(out, json.dumps(result, indent=2).encode())
            finish_output(out)
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    except KeyboardInterrupt:
        kept = "Finished cells are kept: add [bold]--resume[/] to continue." if work_folder(out).exists() else ""
        console.print(f"[yellow]Interrupted.[/] {kept}".rstrip())
        raise typer.Exit(130) from None
    table = Table(title=f"transfer matrix of {stream} (accuracy gain over Independent; row = source)")
    table.add_column("from \\ to", overflow="fold")
    for uid in result["tasks"]:
        table.add_column(uid, justify="right", overflow="fold")
    for uid, row in zip(result["tasks"], result["matrix"], strict=True):
        table.add_row(uid, *(f"{v:+.3f}" if v is not None else "-" for v in row))
    console.print(table)
    console.print(f"written to {escape(str(out))}")


@app.command("results")
def results_command(
    runs_dir: Path = typer.Argument(Path("runs"), metavar="[RUNS]", help="The runs folder (a `lifelong run --out`)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (every field of every run)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Also show each run's setup, folder and error."),
    provenance: bool = typer.Option(
        False, "--provenance", help="Also show each run's machine, thread count, versions and loaded files."
    ),
    output_format: str = typer.Option(
        "table",
        "--format",
        metavar="table|csv|parquet",
        help="table: one line per run; csv: every record's metrics, a row each, on stdout; parquet: them into --out.",
    ),
    out: Path = typer.Option(
        None,
        "--out",
        metavar="FILE",
        help="With --format parquet: the file to write. (Otherwise: the deprecated RUNS spelling.)",
    ),
) -> None:
    """List the runs recorded in a runs folder: status, mean error, training FLOPs (more with -v or --json).

    --format csv or parquet gives every run's records instead, one row per (run, event, metric): the DataFrame
    lifelong.api.results returns.
    """
    from lifelong.commands.run_console import print_provenance, print_results
    from lifelong.commands.terminal import note
    from lifelong.results import read_provenance
    from lifelong.results.runs import recorded_runs

    if output_format not in ("table", "csv", "parquet"):
        raise fail(f"--format {output_format!r}: give table, csv or parquet")
    if output_format == "parquet" and out is None:
        raise fail("--format parquet writes a file: name it with --out FILE, e.g. --out results.parquet")
    if output_format != "parquet" and out is not None:  # `--out` once named the runs folder
        note(f"`lifelong results --out DIR` is now `lifelong results DIR`; listing {out}")
        runs_dir = out
    if output_format != "table":
        if as_json or verbose or provenance:
            raise fail(f"--json, --verbose and --provenance apply to --format table, not --format {output_format}")
        _results_frame(runs_dir, output_format, out)
        return
    try:
        runs, skipped = recorded_runs(runs_dir)
    except FileNotFoundError as exc:
        raise fail(exc) from None
    for line in skipped:
        note(line)
    if provenance:
        runs = [{**run, "provenance": read_provenance(run["path"])} for run in runs]
    if as_json:
        typer.echo(json.dumps(runs, indent=2, default=str))
        return
    print_results(runs, runs_dir, verbose=verbose)
    if provenance:
        print_provenance(runs)


def _results_frame(runs_dir: Path, output_format: str, out: Path | None) -> None:
    """`lifelong results RUNS --format csv|parquet`: every run's records, as lifelong.api.results reads them."""
    from lifelong.api import results
    from lifelong.results.frame import write_parquet

    try:
        frame = results(runs_dir)
        for line in frame.attrs["notes"]:
            note(line)
        if frame.empty:
            raise FileNotFoundError(f"no run in {runs_dir}; give the folder `lifelong run --out` wrote, or run folders")
        if output_format == "csv":
            typer.echo(frame.to_csv(index=False), nl=False)
            return
        assert out is not None
        write_parquet(frame, out)
    except (FileNotFoundError, ValueError, ImportError) as exc:
        raise fail(exc) from None
    runs = frame["run"].nunique()
    what = f"{len(frame)} rows of {runs} run{'' if runs == 1 else 's'}"
    console.print(f"wrote {what} to {escape(str(out))}", soft_wrap=True, highlight=False)


def _readable_help(root: typer.Typer) -> None:
    """Help pages like a usual CLI's at any width: `--out OUT`, bare flags, no `<bool>`, words never cut."""
    from lifelong.commands.help_format import readable_help

    readable_help(root)


_readable_help(app)


def main(prog_name: str = "lifelong") -> None:
    """The `lifelong` command. Once a command has ended, its exit code stands: the output is flushed and a late
    Ctrl-C or SIGTERM is ignored while the interpreter shuts down (Python resets its own handlers then, so a
    signal during the teardown of torch and friends would otherwise kill a finished command with 130/143)."""
    try:
        app(prog_name=prog_name)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe or stream: nothing more can reach the reader
                pass
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)


if __name__ == "__main__":
    main()
