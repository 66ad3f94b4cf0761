"""`lifelong cog ...`: ImageNet-CoG's concept levels (unseen concepts ranked by similarity to the seen ones), the
cog-mini encoders, and the level-by-level probes of a frozen encoder; thin adapters over `lifelong.commands.cog_*`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lifelong.cli.cog_levels import levels_command
from lifelong.cli.options import (
    ChannelsLastOption,
    CompileOption,
    DeviceOption,
    GpusPerTrialOption,
    OverwriteOption,
    PrecisionOption,
    ResumeOption,
)
from lifelong.commands.presets import PRESET_HELP, SIZES, preset_help

cog_app = typer.Typer(help="ImageNet-CoG: concept generalization levels built from WordNet.", no_args_is_help=True)

cog_app.command("levels")(levels_command)

SHOTS_HELP = "Comma-separated: all (every training image) and/or shots per concept, e.g. all,1,2,4,8,16,32."
SEED_HELP = (
    "First run's seed, one of the protocol's seeds 22, 37, 45, 77, 93 (default 22; alone: that seed's run only)."
)
SEEDS_HELP = (
    "Number of runs per level and shots: the protocol's seeds 22, 37, 45, 77, 93 in that order, from --seed "
    f"(default: all 5; 1 with --seed; --preset quick: {SIZES['cog run']['quick']['seeds']})."
)
PresetOption = Annotated[str | None, typer.Option("--preset", metavar="quick|full", help=PRESET_HELP)]


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
        str | None,
        typer.Option(
            "--probe",
            metavar="reference|fast",
            help=preset_help(
                "cog run",
                "probe",
                "Probe recipe: reference (naver/cog's) or fast (a grid on a short schedule; not validated on real "
                "features, docs/cog.md).",
            ),
            show_default=False,
        ),
    ] = None,
    seen_draws: Annotated[
        int | None,
        typer.Option(
            "--seen-draws",
            metavar="K",
            min=0,
            help=preset_help(
                "cog run",
                "seen_draws",
                "Probe the seen level as K seeded draws of as many concepts as the largest level (0: all of it).",
            ),
            show_default=False,
        ),
    ] = None,
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
    preset: PresetOption = None,
) -> None:
    """Probe a frozen encoder level by level (one run per level, shots and seed).

    Extracts the asked levels' features once (kept in the data root's cog-features/), then runs the CoG stream for
    every level, shots and seed, one run folder each in --out.

    Seeds: the protocol fixes five (22, 37, 45, 77, 93); --seeds K runs the first K of them from --seed, as
    `lifelong run --seed N --seeds K` runs K seeds from N. Existing runs in --out need --resume or --overwrite.
    """
    from lifelong.commands.cog_console import print_run_result
    from lifelong.commands.cog_run import CogRunSpec, cog_run
    from lifelong.commands.runner import finished_means_exit_0

    spec = CogRunSpec(
        encoder=encoder,
        data=data,
        levels_file=levels_file,
        split_file=split_file,
        seen_train=seen_train,
        seen_val=seen_val,
        test_style=test_style,
        min_images=min_images,
        levels=levels,
        shots=shots,
        seed=seed,
        seeds=seeds,
        probe=probe,
        seen_draws=seen_draws,
        out=out,
        executor=executor,
        num_cpus=num_cpus,
        ray_address=ray_address,
        resume=resume,
        overwrite=overwrite,
        skip_corrupt=skip_corrupt,
        data_root=data_root,
        threads=threads,
        device=device,
        precision=precision,
        compile=compile,
        channels_last=channels_last,
        gpus_per_trial=gpus_per_trial,
        preset=preset,
    )
    result = cog_run(spec, progress=True)
    finished_means_exit_0()  # the runs are saved: a late signal ends the command with success, as `lifelong run`
    print_run_result(result)
    if result.exit_code:
        raise typer.Exit(result.exit_code)


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
    from lifelong.commands.cog_console import print_command, print_install_plan, print_install_result
    from lifelong.commands.cog_install import CogInstallArtSpec, cog_install_art, cog_install_art_plan

    spec = CogInstallArtSpec(dry_run=dry_run)
    plan = cog_install_art_plan(spec)
    print_install_plan(plan)
    shown = [""]

    def echo(description: str, done: float, total: float | None) -> None:
        if description and description != shown[-1]:  # a command about to run
            shown.append(description)
            print_command(description)

    result = cog_install_art(spec, plan=plan, progress=echo)
    print_install_result(result)
    if result.exit_code:
        raise typer.Exit(result.exit_code)


@cog_app.command("pretrain")
def pretrain_command(
    kind: Annotated[
        str,
        typer.Option(
            "--kind", metavar="supervised|simclr|random", help="Training signal (random: untrained, the control)."
        ),
    ],
    out: Annotated[Path, typer.Option("--out", metavar="FILE", help="Encoder file to write.")],
    epochs: Annotated[
        int | None,
        typer.Option(
            "--epochs",
            metavar="N",
            min=1,
            help=preset_help("cog pretrain", "epochs", "Training epochs."),
            show_default=False,
        ),
    ] = None,
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
    preset: PresetOption = None,
) -> None:
    """Train an encoder on cog-mini's seen concepts' training images (labels: supervised; none: SimCLR), or save a
    seeded untrained one (random) as the control."""
    from lifelong.commands.cog_console import print_pretrain_result
    from lifelong.commands.cog_pretrain import CogPretrainSpec, cog_pretrain

    spec = CogPretrainSpec(
        kind=kind,
        out=out,
        epochs=epochs,
        resolution=resolution,
        architecture=architecture,
        seed=seed,
        test_style=test_style,
        concepts=concepts,
        threads=threads,
        data_root=data_root,
        skip_corrupt=skip_corrupt,
        resume=resume,
        overwrite=overwrite,
        device=device,
        precision=precision,
        compile=compile,
        channels_last=channels_last,
        preset=preset,
    )
    print_pretrain_result(cog_pretrain(spec, progress=True))
