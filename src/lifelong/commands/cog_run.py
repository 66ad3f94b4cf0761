"""ImageNet-CoG runs (`lifelong cog run`): a frozen encoder probed level by level, one run per level, shots and seed.

`cog_run(CogRunSpec(encoder=...))` extracts the asked levels' features once (the encoder loaded once per held-out
style), checks every run folder before any work, then runs the CoG stream for every level x shots x seed, locally or
on Ray; with `resume=True` finished runs are read back and interrupted ones continue.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lifelong.commands.cog_prepare import check_test_style, extract_levels, plan_features
from lifelong.commands.cog_runs import cog_run_specs, cog_top1, level_run_specs, run_cog_specs
from lifelong.commands.terminal import note
from lifelong.concepts.level_files import MIN_IMAGES
from lifelong.core.errors import Interrupted, LifelongError, UsageError
from lifelong.core.progress import Progress

EXECUTORS = ("local", "ray")
INTERRUPTED = "Every finished event is checkpointed: rerun the same command plus --resume."


@dataclass(frozen=True)
class CogRunSpec:
    """`lifelong cog run`'s options (the same names and defaults); checked on construction, in CLI words. `preset`
    (quick or full, None: full) sets `seeds` (unless `seed` is given: that seed's run only), `probe` and
    `seen_draws` where they are None (`commands.presets`); they name the runs, so the runs of two presets never
    share a folder."""

    encoder: str  # a model name, a toolkit checkpoint, torchscript:FILE, hf:FOLDER or package.module:factory
    data: str = "cog-mini"  # cog-mini, or ImageNet-style DIR/<wnid>/* folders
    levels_file: str | Path | None = None  # with data DIR: `cog levels` CSV, or the authors' mapping pkl
    split_file: str | Path | None = None  # with data DIR: the authors' cog_concepts_split_file.pkl
    seen_train: str | Path | None = None  # with data DIR: the IN-1K training <wnid>/ folders (default: data's)
    seen_val: str | Path | None = None  # with data DIR: the IN-1K validation <wnid>/ folders (the seen test set)
    test_style: str | None = None  # cog-mini: the held-out artwork family, or "all" ('{style}' in encoder filled)
    min_images: int = MIN_IMAGES  # with data DIR and no split file: images a concept needs
    levels: str = ""  # e.g. "seen,1,2" (default: every level)
    shots: str = "all"  # all and/or shots per concept, e.g. "all,1,2,4"
    seed: int | None = None  # the first run's protocol seed (22, 37, 45, 77, 93)
    seeds: int | None = None  # runs per level and shots (default: all 5; 1 with seed; the preset's)
    probe: str | None = None  # reference | fast (None: the preset's, full reference)
    seen_draws: int | None = None  # the seen level as K seeded draws (0: all of it; None: the preset's, full 5)
    out: str | Path = "runs"  # one run folder per run
    executor: str = "local"  # local | ray
    num_cpus: int | None = None  # CPUs for a local Ray
    ray_address: str | None = None  # join this Ray cluster
    resume: bool = False  # continue interrupted runs; finished ones are read back
    overwrite: bool = False  # delete the runs and the asked levels' features, and start over
    skip_corrupt: bool = False  # leave unreadable images out of the features (and count them)
    data_root: str | Path | None = None  # cog-mini cache, feature sets
    threads: int = 1  # torch threads per run
    device: str = "auto"
    precision: str = "auto"
    compile: bool = False
    channels_last: str = "auto"
    gpus_per_trial: float = 0.0
    preset: str | None = None  # quick | full

    def __post_init__(self) -> None:
        from lifelong.commands.device_options import accelerator_specs, check_ray_gpus
        from lifelong.commands.presets import apply_preset
        from lifelong.core.suggest import did_you_mean
        from lifelong.learners.probe import PROBES
        from lifelong.suites.cog import parse_shots

        apply_preset(self, "cog run", keep=("seeds",) if self.seed is not None else ())
        for flag, value, least in (("--threads", self.threads, 1), ("--seen-draws", int(self.seen_draws or 0), 0)):
            if value < least:
                raise UsageError(f"{flag} {value}: give {least} or more")
        if self.gpus_per_trial < 0:
            raise UsageError(f"--gpus-per-trial {self.gpus_per_trial}: give 0 or more")
        if self.probe not in PROBES:
            hint = did_you_mean(self.probe, PROBES)
            raise UsageError(f"unknown --probe {self.probe!r}{hint}; choose reference or fast")
        if self.executor not in EXECUTORS:
            hint = did_you_mean(self.executor, EXECUTORS)
            raise UsageError(f"unknown --executor {self.executor!r}{hint}; choose local or ray")
        protocol_seeds(self.seed, self.seeds)
        try:
            parse_shots(self.shots)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        check_ray_gpus(self.executor, self.device, self.gpus_per_trial)
        accelerator_specs(self.device, self.precision, self.compile, self.channels_last)

    @property
    def protocol_seeds(self) -> list[int]:
        """The protocol seeds this spec runs (`seed`, `seeds`)."""
        return protocol_seeds(self.seed, self.seeds)


@dataclass
class CogRunResult:
    """Every run of a `cog_run` and the table it makes: `top1` {(level, shots): [top-1 % per seed and seen draw]},
    `intervals` {(level, shots): 95% bootstrap interval over the level's concepts}, `table()` both as a DataFrame.

    The runs are in order: each fold (held-out style; one without `test_style`) in turn, level x shots x seed."""

    results: list[dict]  # each run's summary, with its records
    folders: list[Path]  # each run's folder
    features: list[str]  # each fold's features set
    styles: list[str | None]  # each fold's held-out style (None: the one fold without test_style)
    fold_sizes: list[int]  # runs per fold
    probe: str
    out: Path
    seconds: float
    top1: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    intervals: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)

    @property
    def title(self) -> str:
        return f"ImageNet-CoG top-1 (%), {self.probe} probe"

    @property
    def exit_code(self) -> int:
        """The command's exit status once the runs are back: 0 (every run finished; a run that fails raises, and
        Ctrl-C raises Interrupted)."""
        return 0

    def table(self) -> Any:
        """One row per (level, shots): top-1 % mean and population std over the runs, how many, the interval."""
        import numpy as np
        import pandas as pd

        rows = []
        for (level, shots), values in self.top1.items():
            low, high = self.intervals.get((level, shots), (float("nan"), float("nan")))
            mean, std = float(np.mean(values)), float(np.std(values))
            rows.append({"level": level, "shots": shots, "top1": mean, "std": std, "runs": len(values)})
            rows[-1] |= {"low": low, "high": high}
        return pd.DataFrame(rows, columns=["level", "shots", "top1", "std", "runs", "low", "high"])


def cog_run(spec: CogRunSpec, *, progress: Progress = False) -> CogRunResult:
    """Probe `spec.encoder` level by level: extract the asked levels' features once, then one run per level, shots
    and seed in `spec.out` (see the module doc). `progress`: True for the command line's bars (cog-mini's
    rendering, each split's features, each local run), or a callback `(description, done, total)` told of the
    renderings, the features and each finished run.

    Existing runs need `resume` or `overwrite` (checked before any extraction); Ctrl-C raises `Interrupted` and the
    same spec with `resume=True` continues.
    """
    from lifelong.commands.device_options import accelerator_from
    from lifelong.results.cog_intervals import level_intervals

    started = time.perf_counter()
    seeds = protocol_seeds(spec.seed, spec.seeds)
    accelerator_from(spec.device, spec.precision, spec.compile, spec.channels_last)  # feature extraction runs here
    try:
        folds = _plan_folds(spec, seeds, progress)
        specs, features, fold_sizes = [], [], []
        for _, plan, chosen in folds:
            features.append(
                extract_levels(
                    plan,
                    chosen,
                    threads=spec.threads,
                    skip_corrupt=spec.skip_corrupt,
                    overwrite=spec.overwrite,
                    progress=progress,
                )
            )
            fold_specs = cog_run_specs(
                features[-1], spec.data, levels=",".join(chosen), shots=spec.shots, **_common(spec, seeds, progress)
            )
            specs += fold_specs
            fold_sizes.append(len(fold_specs))
        results = run_cog_specs(
            specs,
            executor=spec.executor,
            num_cpus=spec.num_cpus,
            threads=spec.threads,
            gpus_per_trial=spec.gpus_per_trial,
            address=spec.ray_address,
            progress=progress,
        )
    except Interrupted:
        raise
    except KeyboardInterrupt:
        raise Interrupted(INTERRUPTED) from None
    except RuntimeError as exc:  # a run folder another process writes, a lost Ray worker, a failing learner
        raise LifelongError(str(exc)) from exc
    folders = [run_spec.folder for run_spec in specs]
    return CogRunResult(
        results,
        folders,
        features,
        [style for style, _, _ in folds],
        fold_sizes,
        spec.probe,
        Path(spec.out),
        time.perf_counter() - started,
        cog_top1(results),
        level_intervals(results, folders),
    )


def _common(spec: CogRunSpec, seeds: list[int], progress: Progress) -> dict[str, Any]:
    """The RunSpec settings every run of `spec` shares (local runs show their own bar when `progress` is True)."""
    from lifelong.commands.device_options import accelerator_specs

    return dict(
        seeds=seeds,
        probe=spec.probe,
        seen_draws=spec.seen_draws,
        out=Path(spec.out),
        resume=spec.resume,
        overwrite=spec.overwrite,
        data_root=Path(spec.data_root) if spec.data_root is not None else None,
        threads=spec.threads,
        progress=progress is True and spec.executor == "local",
        accelerator=accelerator_specs(spec.device, spec.precision, spec.compile, spec.channels_last),
    )


def _plan_folds(spec: CogRunSpec, seeds: list[int], progress: Progress) -> list[tuple[str | None, Any, list[str]]]:
    """(held-out style, features plan, chosen levels) per fold, every run folder checked before any extraction."""
    from lifelong.commands.runner import check_folder
    from lifelong.suites.cog import parse_levels, parse_shots

    counts, common = parse_shots(spec.shots), _common(spec, seeds, False)
    data_root = Path(spec.data_root) if spec.data_root is not None else None
    folds = []
    for style, encoder in held_out_style_folds(spec.encoder, spec.data, spec.test_style):
        plan = plan_features(
            encoder,
            spec.data,
            levels_file=_path(spec.levels_file),
            split_file=_path(spec.split_file),
            seen_train=_path(spec.seen_train),
            seen_val=_path(spec.seen_val),
            min_images=spec.min_images,
            test_style=style,
            data_root=data_root,
            progress=progress,
        )
        try:
            chosen = parse_levels(spec.levels or None, list(plan.levels))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        for run_spec in level_run_specs(plan.name, spec.data, chosen, counts, **common):
            check_folder(run_spec)
        folds.append((style, plan, chosen))
    return folds


def _path(value: str | Path | None) -> Path | None:
    return Path(value) if value is not None else None


def held_out_style_folds(encoder: str, data: str, test_style: str | None) -> list[tuple[str | None, str]]:
    """[(held-out style or None, encoder spec)]: one fold without --test-style; every style family with "all",
    "{style}" in the encoder spec replaced by each family (an encoder trained on that fold's training styles)."""
    from lifelong.data.sources.emoji_art import HOLDOUT_FAMILIES

    if test_style is None:
        if "{style}" in encoder:
            raise UsageError("--encoder has {style} in it: give --test-style all (or one style) to fill it")
        return [(None, encoder)]
    if test_style != "all":
        check_test_style(test_style)
    if data != "cog-mini":
        raise UsageError("--test-style goes with --data cog-mini (the held-out artwork family of its test images)")
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
        raise UsageError(f"--seed {seed} is not a protocol seed; ImageNet-CoG's seeds are {listed}")
    count = seeds if seeds is not None else (len(COG_SEEDS) if seed is None else 1)
    if count < 1:
        raise UsageError(f"--seeds {count}: give 1 or more")
    chosen = list(COG_SEEDS[first : first + count])
    if len(chosen) < count:
        raise UsageError(
            f"--seeds {count} from --seed {COG_SEEDS[first]} asks for more than the protocol's seeds ({listed}); "
            f"give --seeds {len(chosen)} or less, or an earlier --seed"
        )
    return chosen
