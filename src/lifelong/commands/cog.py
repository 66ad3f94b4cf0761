"""`lifelong cog ...`: ImageNet-CoG's concept levels (unseen concepts ranked by similarity to the seen ones)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from lifelong.commands.cog_levels import levels_command
from lifelong.commands.cog_prepare import check_test_style, extract_levels, plan_features, pretrain_cog_encoder
from lifelong.commands.device_options import (
    ChannelsLastOption,
    CompileOption,
    DeviceOption,
    GpusPerTrialOption,
    PrecisionOption,
    accelerator_from,
    accelerator_specs,
    check_ray_gpus,
)
from lifelong.commands.outputs import OverwriteOption, ResumeOption
from lifelong.commands.terminal import console, fail, note
from lifelong.suites.cog import SEEN_DRAWS

cog_app = typer.Typer(help="ImageNet-CoG: concept generalization levels built from WordNet.", no_args_is_help=True)

cog_app.command("levels")(levels_command)


# -- `lifelong cog run` and `lifelong cog pretrain` ---------------------------------------------------------------

SHOTS_HELP = "Comma-separated: all (every training image) and/or shots per concept, e.g. all,1,2,4,8,16,32."
SEED_HELP = (
    "First run's seed, one of the protocol's seeds 22, 37, 45, 77, 93 (default 22; alone: that seed's run only)."
)
SEEDS_HELP = (
    "Number of runs per level and shots: the protocol's seeds 22, 37, 45, 77, 93 in that order, from --seed "
    "(default: all 5; 1 with --seed)."
)
EXECUTORS = ("local", "ray")


def held_out_style_folds(encoder: str, data: str, test_style: str | None) -> list[tuple[str | None, str]]:
    """[(held-out style or None, encoder spec)]: one fold without --test-style; every style family with "all",
    "{style}" in the encoder spec replaced by each family (an encoder trained on that fold's training styles)."""
    from lifelong.data.sources.emoji_art import HOLDOUT_FAMILIES

    if test_style is None:
        if "{style}" in encoder:
            raise ValueError("--encoder has {style} in it: give --test-style all (or one style) to fill it")
        return [(None, encoder)]
    if test_style != "all":
        check_test_style(test_style)
    if data != "cog-mini":
        raise ValueError("--test-style goes with --data cog-mini (the held-out artwork family of its test images)")
    styles = list(HOLDOUT_FAMILIES) if test_style == "all" else [test_style]
    if len(styles) > 1 and "{style}" not in encoder and Path(encoder).is_file():
        note(
            f"one encoder file for every held-out style: if {encoder} was trained on cog-mini, its seen level is "
            "tested on artwork styles it trained on; give --encoder 'enc/sup-{style}.pt' (one per fold, `cog "
            "pretrain --test-style STYLE`)"
        )
    return [(style, encoder.replace("{style}", style)) for style in styles]


def protocol_seeds(seed: int | None, seeds: int | None) -> list[int]:
    """The protocol seeds of `--seed N --seeds K` (as `lifelong run`: K runs from N, on COG_SEEDS' order)."""
    from lifelong.training.probes import COG_SEEDS

    listed = ", ".join(str(s) for s in COG_SEEDS)
    if seed is None:
        first = 0
    elif seed in COG_SEEDS:
        first = COG_SEEDS.index(seed)
    else:
        raise ValueError(f"--seed {seed} is not a protocol seed; ImageNet-CoG's seeds are {listed}")
    count = seeds if seeds is not None else (len(COG_SEEDS) if seed is None else 1)
    chosen = list(COG_SEEDS[first : first + count])
    if len(chosen) < count:
        raise ValueError(
            f"--seeds {count} from --seed {COG_SEEDS[first]} asks for more than the protocol's seeds ({listed}); "
            f"give --seeds {len(chosen)} or less, or an earlier --seed"
        )
    return chosen


@cog_app.command("run")
def run_command(
    encoder: Annotated[
        str,
        typer.Option(
            "--encoder",
            metavar="SPEC",
            help="Encoder: a model name (`lifelong models list`), a toolkit checkpoint, torchscript:FILE, "
            "hf:FOLDER or package.module:factory.",
        ),
    ],
    data: Annotated[
        str, typer.Option("--data", metavar="cog-mini|DIR", help="cog-mini, or ImageNet-style DIR/<wnid>/* folders.")
    ] = "cog-mini",
    levels_file: Annotated[
        Path | None,
        typer.Option(
            "--levels-file",
            metavar="FILE",
            help="With --data DIR: `cog levels` CSV output, or the authors' cog_levels_mapping_file.pkl.",
        ),
    ] = None,
    split_file: Annotated[
        Path | None,
        typer.Option(
            "--split-file",
            metavar="FILE",
            help="With --data DIR: the authors' cog_concepts_split_file.pkl (each unseen concept's train and test "
            "images, paths under DIR).",
        ),
    ] = None,
    seen_train: Annotated[
        Path | None,
        typer.Option(
            "--seen-train",
            metavar="DIR",
            help="With --data DIR: the IN-1K training images, <wnid>/ folders (default: the IN-1K folders of --data).",
        ),
    ] = None,
    seen_val: Annotated[
        Path | None,
        typer.Option(
            "--seen-val",
            metavar="DIR",
            help="With --data DIR: the official IN-1K validation images in <wnid>/ folders: the seen level's test set.",
        ),
    ] = None,
    test_style: Annotated[
        str | None,
        typer.Option(
            "--test-style",
            metavar="STYLE|all",
            help="cog-mini: the artwork family held out for testing (noto, twemoji, openmoji: the ones that draw "
            "every concept; default twemoji), or all: each in turn, pooled ('{style}' in --encoder is replaced by "
            "each).",
        ),
    ] = None,
    min_images: Annotated[
        int,
        typer.Option(
            "--min-images",
            metavar="N",
            help="With --data DIR and no --split-file: images a concept needs (50 test, the rest training, at most "
            "1,300 of them).",
        ),
    ] = 782,
    levels: Annotated[
        str,
        typer.Option(
            "--levels", metavar="LIST", help="Levels to extract and probe, e.g. seen,1,2 (default: every level)."
        ),
    ] = "",
    shots: Annotated[str, typer.Option("--shots", metavar="LIST", help=SHOTS_HELP)] = "all",
    seed: Annotated[int | None, typer.Option("--seed", metavar="N", help=SEED_HELP, show_default=False)] = None,
    seeds: Annotated[
        int | None, typer.Option("--seeds", metavar="K", min=1, max=5, help=SEEDS_HELP, show_default=False)
    ] = None,
    probe: Annotated[
        str,
        typer.Option(
            "--probe",
            metavar="reference|fast",
            help="Probe recipe: reference (naver/cog's) or fast (a grid on a short schedule; not validated on real "
            "features, docs/cog.md).",
        ),
    ] = "reference",
    seen_draws: Annotated[
        int,
        typer.Option(
            "--seen-draws",
            metavar="K",
            min=0,
            help="Probe the seen level as K seeded draws of as many concepts as the largest level (0: all of it).",
        ),
    ] = SEEN_DRAWS,
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Results folder (one run folder per run).")] = Path(
        "runs"
    ),
    executor: Annotated[str, typer.Option("--executor", metavar="local|ray", help="Fan runs out over Ray.")] = "local",
    num_cpus: Annotated[
        int | None, typer.Option("--num-cpus", metavar="N", help="CPUs for a local Ray (default: all).")
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option("--ray-address", metavar="HOST:PORT", help="Join this Ray cluster (with --executor ray)."),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume", help="Continue interrupted runs in --out; finished ones are read back (features always resume)."
        ),
    ] = False,
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite", help="Delete the existing runs in --out and the asked levels' features, and start over."
        ),
    ] = False,
    skip_corrupt: Annotated[
        bool, typer.Option("--skip-corrupt", help="Leave unreadable images out of the features (and count them).")
    ] = False,
    data_root: Annotated[
        Path | None, typer.Option("--data-root", metavar="DIR", help="Data root (cog-mini cache, feature sets).")
    ] = None,
    threads: Annotated[int, typer.Option("--threads", metavar="N", min=1, help="Torch threads per run.")] = 1,
    device: DeviceOption = "auto",
    precision: PrecisionOption = "auto",
    compile: CompileOption = False,
    channels_last: ChannelsLastOption = "auto",
    gpus_per_trial: GpusPerTrialOption = 0.0,
) -> None:
    """Probe a frozen encoder level by level (one run per level, shots and seed).

    Extracts the asked levels' features once (kept in the data root's cog-features/), then runs the CoG stream for
    every level, shots and seed, one run folder each in --out.

    Seeds: the protocol fixes five (22, 37, 45, 77, 93); --seeds K runs the first K of them from --seed, as
    `lifelong run --seed N --seeds K` runs K seeds from N. Existing runs in --out need --resume or --overwrite.
    """
    from lifelong.commands.runner import RunExistsError, check_folder, finished_means_exit_0
    from lifelong.core.suggest import did_you_mean
    from lifelong.learners.probe import PROBES
    from lifelong.results.lock import RunFolderBusyError
    from lifelong.suites.cog import parse_levels, parse_shots

    started = time.perf_counter()
    try:
        if probe not in PROBES:
            raise ValueError(f"unknown --probe {probe!r}{did_you_mean(probe, PROBES)}; choose reference or fast")
        if executor not in EXECUTORS:
            raise ValueError(f"unknown --executor {executor!r}{did_you_mean(executor, EXECUTORS)}; choose local or ray")
        chosen_seeds = protocol_seeds(seed, seeds)
        counts = parse_shots(shots)
        check_ray_gpus(executor, device, gpus_per_trial)
        accelerator_from(device, precision, compile, channels_last)  # feature extraction runs here
        common = dict(
            seeds=chosen_seeds,
            probe=probe,
            seen_draws=seen_draws,
            out=out,
            resume=resume,
            overwrite=overwrite,
            data_root=data_root,
            threads=threads,
            progress=executor == "local",
            accelerator=accelerator_specs(device, precision, compile, channels_last),
        )
        folds = []  # (encoder spec, features plan) per held-out style: one fold without --test-style
        style_folds = held_out_style_folds(encoder, data, test_style)
        for style, spec in style_folds:
            plan = plan_features(
                spec,
                data,
                levels_file=levels_file,
                split_file=split_file,
                seen_train=seen_train,
                seen_val=seen_val,
                min_images=min_images,
                test_style=style,
                data_root=data_root,
            )
            chosen = parse_levels(levels or None, list(plan.levels))
            for run_spec in _specs(plan.name, data, chosen, counts, **common):  # before any extraction
                check_folder(run_spec)
            folds.append((plan, chosen))
        specs, features, fold_sizes = [], [], []
        for plan, chosen in folds:
            features.append(
                extract_levels(plan, chosen, threads=threads, skip_corrupt=skip_corrupt, overwrite=overwrite)
            )
            fold_specs = cog_run_specs(features[-1], data, levels=",".join(chosen), shots=shots, **common)
            specs += fold_specs
            fold_sizes.append(len(fold_specs))
        results = run_cog_specs(
            specs,
            executor=executor,
            num_cpus=num_cpus,
            threads=threads,
            gpus_per_trial=gpus_per_trial,
            address=ray_address,
        )
    except KeyboardInterrupt:
        console.print(
            "[yellow]Interrupted.[/] Every finished event is checkpointed: rerun the same command plus "
            "[bold]--resume[/]."
        )
        raise typer.Exit(130) from None
    except (RunExistsError, RunFolderBusyError) as exc:
        raise fail(exc) from None
    except (OSError, ValueError, ImportError, RuntimeError) as exc:
        raise fail(exc) from None
    finished_means_exit_0()  # the runs are saved: a late signal ends the command with success, as `lifelong run`
    styles = [style for style, _ in style_folds]
    print_fold_tables(results, fold_sizes, styles, features, title=f"ImageNet-CoG top-1 (%), {probe} probe")
    print_concept_intervals(results, [spec.folder for spec in specs])
    console.print(f"results: {escape(str(out))} (see `lifelong results {escape(str(out))}`)", soft_wrap=True)
    console.print(f"time: {time.perf_counter() - started:.1f} s")


@cog_app.command("install-art")
def install_art_command(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the steps; install nothing.")] = False,
) -> None:
    """Install the emoji artwork cog-mini renders (fonts, npm packages, cairosvg).

    Skips what is there: the Debian packages fonts-noto-color-emoji, fonts-symbola, libcairo2 (and npm) with
    apt-get, as root or through sudo; the npm packages emoji-datasource-twitter and openmoji (pinned) into
    $LIFELONG_EMOJI_DIR (default ~/.cache/lifelong/emoji); cairosvg with pip into this Python. Run it as yourself,
    not with sudo. A step this machine cannot do is printed with what to run by hand.
    """
    from lifelong.commands.cog_install import install_art

    code = install_art(dry_run=dry_run)
    if code:
        raise typer.Exit(code)


@cog_app.command("pretrain")
def pretrain_command(
    kind: Annotated[
        str,
        typer.Option(
            "--kind", metavar="supervised|simclr|random", help="Training signal (random: untrained, the control)."
        ),
    ],
    out: Annotated[Path, typer.Option("--out", metavar="FILE", help="Encoder file to write.")],
    epochs: Annotated[int, typer.Option("--epochs", metavar="N", min=1, help="Training epochs.")] = 30,
    resolution: Annotated[int, typer.Option("--resolution", metavar="S", min=8, help="Input side.")] = 32,
    architecture: Annotated[
        str, typer.Option("--architecture", metavar="NAME", help="Backbone: resnet_mini, resnet18 or resnet34.")
    ] = "resnet_mini",
    seed: Annotated[int, typer.Option("--seed", metavar="N", help="Seed.")] = 0,
    test_style: Annotated[
        str | None,
        typer.Option(
            "--test-style",
            metavar="STYLE",
            help="Train on the cog-mini fold that holds this artwork family out (noto, twemoji, openmoji; "
            "default twemoji), for `cog run --test-style`.",
        ),
    ] = None,
    concepts: Annotated[
        str,
        typer.Option(
            "--concepts",
            metavar="seen|all",
            help="Train on the seen concepts, or on all of them (the supplement's control to report levels against).",
        ),
    ] = "seen",
    threads: Annotated[int, typer.Option("--threads", metavar="N", min=1, help="Torch threads.")] = 1,
    data_root: Annotated[
        Path | None, typer.Option("--data-root", metavar="DIR", help="Data root (cog-mini cache).")
    ] = None,
    skip_corrupt: Annotated[
        bool, typer.Option("--skip-corrupt", help="Leave unreadable training images out (and count them).")
    ] = False,
    resume: ResumeOption = False,
    overwrite: OverwriteOption = False,
    device: DeviceOption = "auto",
    precision: PrecisionOption = "auto",
    compile: CompileOption = False,
    channels_last: ChannelsLastOption = "auto",
) -> None:
    """Train an encoder on cog-mini's seen concepts' training images (labels: supervised; none: SimCLR), or save a
    seeded untrained one (random) as the control."""
    started = time.perf_counter()
    try:
        accelerator_from(device, precision, compile, channels_last)
        summary = pretrain_cog_encoder(
            kind,
            out,
            epochs=epochs,
            resolution=resolution,
            architecture=architecture,
            seed=seed,
            threads=threads,
            data_root=data_root,
            skip_corrupt=skip_corrupt,
            resume=resume,
            overwrite=overwrite,
            concepts=concepts,
            test_style=test_style,
        )
    except KeyboardInterrupt:
        kept = "Finished epochs are kept in OUT.work (SimCLR): " if kind == "simclr" else ""
        console.print(f"[yellow]Interrupted.[/] {kept}rerun the same command plus [bold]--resume[/].")
        raise typer.Exit(130) from None
    except (OSError, ValueError, ImportError) as exc:
        raise fail(exc) from None
    for key, value in summary.items():
        console.print(f"{key}: {escape('-' if value is None else str(value))}", soft_wrap=True)
    console.print(f"time: {time.perf_counter() - started:.1f} s")


def cog_run_specs(
    features: str,
    data: str,
    *,
    levels: str | None,
    shots: str,
    seeds: int | Sequence[int],
    probe: str,
    out: Path,
    resume: bool,
    overwrite: bool,
    data_root: Path | None,
    threads: int,
    progress: bool,
    accelerator: dict | None = None,
    seen_draws: int = SEEN_DRAWS,
) -> list:
    """One RunSpec per (level, shots, seed): the fan-out unit (its own run folder, checkpoint and resume).

    `seeds`: the protocol seeds to run, or a number K for the first K of them.
    """
    from lifelong.suites.cog import parse_levels, parse_shots, read_index, resolve_features
    from lifelong.training.probes import COG_SEEDS

    folder = resolve_features(features, data_root)
    index = read_index(folder)
    chosen = parse_levels(levels, [level["name"] for level in index["levels"]])
    counts = parse_shots(shots)
    _check_shots(folder, index, chosen, [c for c in counts if c is not None])
    seed_list = list(COG_SEEDS[:seeds]) if isinstance(seeds, int) else list(seeds)
    return _specs(
        features,
        data,
        chosen,
        counts,
        seeds=seed_list,
        probe=probe,
        out=out,
        resume=resume,
        overwrite=overwrite,
        data_root=data_root,
        threads=threads,
        progress=progress,
        accelerator=accelerator,
        seen_draws=seen_draws,
    )


def _specs(
    features: str,
    data: str,
    levels: list[str],
    counts: list[int | None],
    *,
    seeds: Sequence[int],
    probe: str,
    out: Path,
    resume: bool,
    overwrite: bool,
    data_root: Path | None,
    threads: int,
    progress: bool,
    accelerator: dict | None = None,
    seen_draws: int = SEEN_DRAWS,
) -> list:
    """The RunSpecs of checked levels, shot counts and seeds (reads nothing: run ids are known before extraction)."""
    from lifelong.commands.runner import RunSpec
    from lifelong.suites.cog import ALL, SEEN

    stream = "cog-mini" if data == "cog-mini" else "cog"
    return [
        RunSpec(
            stream=stream,
            learner="linear-probe",
            seed=seed,
            out=str(out),
            learner_options={"probe": probe},
            eval_split="test",
            resume=resume,
            overwrite=overwrite,
            progress=progress,
            threads=threads,
            data_root=str(data_root) if data_root else None,
            stream_options={"features": features, "levels": level, "shots": ALL if count is None else str(count)}
            | ({"seen_draws": str(seen_draws)} if level == SEEN and seen_draws != SEEN_DRAWS else {}),
            **(accelerator or {}),
        )
        for level in levels
        for count in counts
        for seed in seeds
    ]


def _check_shots(folder: Path, index: dict, levels: list[str], counts: list[int]) -> None:
    """Before any run starts: every level must give the largest shot count for every concept."""
    from lifelong.suites.cog import read_split
    from lifelong.training.probe_data import few_shot_capacity

    if not counts:
        return
    wnids = {level["name"]: level["wnids"] for level in index["levels"]}
    for level in levels:
        most, label = few_shot_capacity(read_split(folder, level, "train")[1])
        if max(counts) > most:
            raise ValueError(
                f"--shots {max(counts)} is more than level {level!r} can give: concept {wnids[level][label]} has "
                f"{most} training images left after the 20% validation split; use at most {most} shots"
            )


def _finished(spec) -> dict | None:
    """With --resume, the summary (and records) of a run that already finished in its folder; else None."""
    import json

    summary_file = spec.folder / "summary.json"
    if spec.resume and summary_file.is_file():
        summary = json.loads(summary_file.read_text(encoding="utf-8"))
        if summary.get("events_done") == summary.get("events_total"):
            from lifelong.results import read_run

            return {**summary, "records": read_run(spec.folder).records}
    return None


def run_cog_specs(
    specs: list,
    *,
    executor: str = "local",
    num_cpus: int | None = None,
    threads: int = 1,
    gpus_per_trial: float = 0.0,
    address: str | None = None,
) -> list:
    """Run every spec through the executor (local, or Ray: levels x shots x seeds in parallel, spread over the
    cluster at `address`, each run landing in the driver's --out as it ends); with --resume, finished runs are
    read back here instead of failing as 'exists'."""
    from lifelong.commands.remote_runs import run_specs
    from lifelong.core.executors import make_executor

    runner = make_executor(
        executor, address=address, num_cpus=num_cpus, cpus_per_item=threads, gpus_per_item=gpus_per_trial
    )
    results = [_finished(spec) for spec in specs]
    todo = [i for i, result in enumerate(results) if result is None]
    for i, summary in zip(todo, run_specs(runner, [specs[i] for i in todo]), strict=True):
        results[i] = summary
    return results


def cog_top1(results: list[dict]) -> dict[tuple[str, str], list[float]]:
    """{(level, shots): [test top-1 % per seed (and per draw of the seen concepts)]} from run summaries' predict
    records."""
    from lifelong.suites.cog import base_level, split_task_name

    table: dict[tuple[str, str], list[float]] = {}
    for result in results:
        for record in result["records"]:
            if record["type"] == "predict" and record.get("error") is not None:
                level, shots = split_task_name(record["task"])
                table.setdefault((base_level(level), shots), []).append(100.0 * (1.0 - float(record["error"])))
    return table


def print_fold_tables(
    results: list[dict], fold_sizes: list[int], styles: list[str | None], features: list[str], *, title: str
) -> None:
    """The CoG table of `results` (consecutive runs of each fold, `fold_sizes` of them); with several held-out
    styles, one table per style first (their differences are the styles' difficulty), then the pooled one."""
    if len(fold_sizes) > 1:
        start = 0
        for style, size, name in zip(styles, fold_sizes, features, strict=True):
            print_cog_table(results[start : start + size], title=f"{title}, {style} held out", features=name)
            start += size
    print_cog_table(results, title=title, features=", ".join(features))
    if len(fold_sizes) > 1:
        console.print(
            f"pooled over {len(fold_sizes)} held-out artwork styles and the seeds: the std mixes the styles' "
            "difficulty (the tables above) with the seeds'"
        )


def print_cog_table(results: list[dict], *, title: str, features: str | None = None) -> None:
    """Top-1 per level (rows) and shots (columns): mean ± population std over seeds, and relative to seen.

    Shot columns that do not fit the console's width go on to a further table, so every table fits (80 columns).
    """
    import numpy as np

    table = cog_top1(results)
    if not table:
        console.print("no CoG results to show")
        return
    levels = list(dict.fromkeys(level for level, _ in table))
    shots = list(dict.fromkeys(s for _, s in table))
    cells = {key: f"{np.mean(values):.2f} ± {np.std(values):.2f}" if values else "-" for key, values in table.items()}
    counts = {len(values) for values in table.values()}
    seeds_column = len(counts) > 1
    header = {count: "all" if count == "all" else f"{count}-shot" for count in shots}
    widths = {c: max([len(header[c])] + [len(cells.get((lv, c), "-")) for lv in levels]) for c in shots}
    fixed = 4 + max(len("level"), *(len(level) for level in levels)) + (10 if seeds_column else 0)
    chunks, current, used = [], [], fixed
    for count in shots:
        if current and used + widths[count] + 3 > console.width:
            chunks.append(current)
            current, used = [], fixed
        current.append(count)
        used += widths[count] + 3
    chunks.append(current)
    n = counts.pop() if not seeds_column else None
    over = "seeds" if n is None else f"{n} seed" if n == 1 else f"{n} seeds"
    for number, chunk in enumerate(chunks, start=1):
        part = f" ({number}/{len(chunks)})" if len(chunks) > 1 else ""
        console.print(f"[italic]{escape(title)}: mean ± std over {over}{part}[/]")
        out = Table()
        out.add_column("level", no_wrap=True)
        for count in chunk:
            out.add_column(header[count], justify="right", no_wrap=True)
        if seeds_column:
            out.add_column("seeds", justify="right", no_wrap=True)
        for level in levels:
            row = [cells.get((level, count), "-") for count in chunk]
            if seeds_column:
                row.append(str(max(len(table.get((level, c), [])) for c in shots)))
            out.add_row(level, *row)
        console.print(out)
    if features:
        console.print(f"features: {escape(features)}", soft_wrap=True)
    first = shots[0]
    if ("seen", first) in table:
        seen = float(np.mean(table[("seen", first)]))
        relative = ", ".join(
            f"{level}={100 * np.mean(table[(level, first)]) / seen:.1f}%" for level in levels if (level, first) in table
        )
        console.print(f"relative to seen ({header[first]}; mean level top-1 / mean seen top-1): {relative}")
    console.print("std: population std over seeds (divisor n), as the protocol reports it")
    draws = {
        (r["task"], r.get("num_classes"))
        for result in results
        for r in result["records"]
        if r["type"] == "predict" and r["task"].startswith("cog-seen-d")
    }
    if draws:
        tasks = {task.rsplit("-", 1)[0] for task, _ in draws}
        console.print(
            f"seen: {len(tasks)} seeded draws of as many seen concepts as the largest level, pooled with the seeds "
            "(--seen-draws 0: the whole seen set)"
        )


def print_concept_intervals(results: list[dict], folders: list) -> None:
    """One line per shots column: each level's 95% bootstrap interval over its concepts (see cog_intervals)."""
    from lifelong.results.cog_intervals import level_intervals

    intervals = level_intervals(results, folders)
    for shots in dict.fromkeys(s for _, s in intervals):
        label = "all" if shots == "all" else f"{shots}-shot"
        cells = ", ".join(f"{lv} [{lo:.1f}, {hi:.1f}]" for (lv, s), (lo, hi) in intervals.items() if s == shots)
        console.print(f"95% interval over concepts (bootstrap, {label}): {cells}", soft_wrap=True)
