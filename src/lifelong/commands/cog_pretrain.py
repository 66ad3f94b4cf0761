"""The cog-mini encoders (`lifelong cog pretrain`): supervised or SimCLR on the seen concepts' training images (or
on every concept's, the supplement's control), or a seeded untrained one (random) as the control."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lifelong.commands import cog_prepare
from lifelong.core.errors import Interrupted, ResumeRefused, UsageError
from lifelong.core.progress import Progress, progress_bar

KINDS = ("supervised", "simclr", "random")
CONCEPT_SETS = ("seen", "all")  # what `cog pretrain --concepts` trains on


@dataclass(frozen=True)
class CogPretrainSpec:
    """`lifelong cog pretrain`'s options (the same names and defaults); checked on construction, in CLI words.
    `preset` (quick or full, None: full) sets `epochs` when it is None (`commands.presets`)."""

    kind: str  # supervised | simclr | random (untrained: the control)
    out: str | Path  # the encoder file to write
    epochs: int | None = None  # None: the preset's (full 30, quick 4)
    resolution: int = 32  # input side
    architecture: str = "resnet_mini"  # resnet_mini, resnet18 or resnet34
    seed: int = 0
    test_style: str | None = None  # train on the cog-mini fold that holds this artwork family out (default twemoji)
    concepts: str = "seen"  # seen | all (the supplement's control)
    threads: int = 1  # torch threads
    data_root: str | Path | None = None  # the data root (cog-mini cache)
    skip_corrupt: bool = False  # leave unreadable training images out (and count them)
    resume: bool = False  # keep a finished encoder, continue an interrupted one
    overwrite: bool = False  # delete OUT and OUT.work and train again
    device: str = "auto"
    precision: str = "auto"
    compile: bool = False
    channels_last: str = "auto"
    preset: str | None = None  # quick | full

    def __post_init__(self) -> None:
        from lifelong.commands.device_options import accelerator_specs
        from lifelong.commands.presets import apply_preset
        from lifelong.core.suggest import did_you_mean
        from lifelong.training.models import ARCHITECTURES

        apply_preset(self, "cog pretrain")
        for flag, value, least in (("--epochs", int(self.epochs or 0), 1), ("--resolution", self.resolution, 8)):
            if value < least:
                raise UsageError(f"{flag} {value}: give {least} or more")
        if self.threads < 1:
            raise UsageError(f"--threads {self.threads}: give 1 or more")
        accelerator_specs(self.device, self.precision, self.compile, self.channels_last)
        kind = self.kind
        if kind not in KINDS:
            raise UsageError(f"unknown --kind {kind!r}{did_you_mean(kind, KINDS)}; choose supervised, simclr or random")
        if self.concepts not in CONCEPT_SETS:
            hint = did_you_mean(self.concepts, CONCEPT_SETS)
            raise UsageError(f"unknown --concepts {self.concepts!r}{hint}; choose seen or all")
        cog_prepare.check_test_style(self.test_style)
        if self.architecture not in ARCHITECTURES:
            raise UsageError(
                f"unknown --architecture {self.architecture!r}{did_you_mean(self.architecture, ARCHITECTURES)}; "
                f"choose among {', '.join(sorted(ARCHITECTURES))}"
            )


@dataclass
class CogPretrainResult:
    """The encoder written (or kept), what `cog pretrain` prints of it (`summary`: encoder, kind, epochs,
    feature_dim, ...), whether it was there already (`kept`: --resume on a finished one) and the seconds taken."""

    encoder: Path
    summary: dict[str, Any]
    kept: bool
    seconds: float


def cog_pretrain(spec: CogPretrainSpec, *, progress: Progress = False) -> CogPretrainResult:
    """Train (or keep, or save untrained) the encoder of `spec` at `spec.out`.

    An existing `out` (or the OUT.work folder of an interrupted training) needs `resume` (keep a finished encoder,
    continue an interrupted one) or `overwrite` (delete both and train again). Ctrl-C raises `Interrupted`.
    """
    from lifelong.commands.device_options import accelerator_from
    from lifelong.commands.outputs import prepare_output
    from lifelong.training.encoders import load_encoder, save_encoder, untrained_encoder

    started = time.perf_counter()
    accelerator_from(spec.device, spec.precision, spec.compile, spec.channels_last)
    out = Path(spec.out)
    try:
        state = prepare_output(out, resume=spec.resume, overwrite=spec.overwrite, what="training")
        _check_resumed(spec, out, state)
        if state == "done":
            summary = {"encoder": str(out), "kind": spec.kind, "feature_dim": load_encoder(out).feature_dim}
            return CogPretrainResult(out, {**summary, "trained": "before"}, True, time.perf_counter() - started)
        if spec.kind == "random":
            checkpoint = untrained_encoder(spec.architecture, resolution=spec.resolution, seed=spec.seed)
            save_encoder(checkpoint, out)
            summary = {"encoder": str(out), "kind": spec.kind, "epochs": 0, "feature_dim": checkpoint.feature_dim}
            summary["seed"] = spec.seed
        else:
            summary = _train(spec, out, progress)
    except KeyboardInterrupt:
        kept = "Finished epochs are kept in OUT.work (SimCLR): " if spec.kind == "simclr" else ""
        raise Interrupted(f"{kept}rerun the same command plus --resume.") from None
    return CogPretrainResult(out, summary, False, time.perf_counter() - started)


def _check_resumed(spec: CogPretrainSpec, out: Path, state: str) -> None:
    """--resume keeps a finished encoder, or continues an interrupted one, only at this spec's epochs (what its
    preset sets): the epochs recorded in the encoder file, or in OUT.work's settings (supervised), must match."""
    import json

    from lifelong.commands.outputs import SETTINGS_FILE, work_folder
    from lifelong.commands.presets import SIZES
    from lifelong.training.checkpoints import read_torch_file

    if spec.kind == "random" or state == "new":
        return
    settings = work_folder(out) / SETTINGS_FILE
    if state == "done":
        contents = read_torch_file(out)
        epochs = contents.get("epochs") if isinstance(contents, dict) else None
    elif settings.is_file():
        epochs = json.loads(settings.read_text()).get("epochs")
    else:
        return  # SimCLR's own state file refuses other settings
    if epochs is None or int(epochs) == spec.epochs:
        return
    presets = SIZES["cog pretrain"]
    named = [name for name, sizes in presets.items() if sizes["epochs"] == int(epochs)]
    made = f"{epochs} epochs" + (f" (--preset {named[0]})" if named else "")
    asked = f"--preset {spec.preset}" if presets[str(spec.preset)]["epochs"] == spec.epochs else "--epochs"
    where = out if state == "done" else work_folder(out)
    raise ResumeRefused(
        f"{where} holds an encoder trained for {made}; this command asks for {spec.epochs} ({asked}): give the same "
        "--preset or --epochs to keep it, --overwrite to train it again, or another --out"
    )


def _train(spec: CogPretrainSpec, out: Path, progress: Progress) -> dict[str, Any]:
    """Supervised (`lifelong.training.pretrain`) or SimCLR training on cog-mini's training images of `spec.concepts`
    from the fold of `spec.test_style`."""
    import numpy as np

    from lifelong.commands.outputs import finish_output, work_folder
    from lifelong.commands.pretraining import pretrain_command as supervised
    from lifelong.training.encoders import save_encoder
    from lifelong.training.loop import set_torch_threads
    from lifelong.training.ssl import pretrain_simclr

    seen_only = spec.concepts == "seen"
    # cog-mini is rendered (once) before the first training; looked up on its module, where tests replace it
    cog, root = cog_prepare._cog_mini_folders(
        spec.data_root, ["seen"] if seen_only else None, spec.test_style, progress
    )
    names = ["seen"] if seen_only else list(cog.levels)
    images = np.concatenate([cog.levels[name].train_images for name in names])
    if spec.kind == "supervised":
        source = f"folder:{root / 'seen' / 'train' if seen_only else _all_train_folder(root, names)}"
        summary = supervised(
            source,
            out,
            architecture=spec.architecture,
            epochs=spec.epochs,
            resolution=spec.resolution,
            seed=spec.seed,
            threads=spec.threads,
            options={"skip_corrupt": True} if spec.skip_corrupt else None,
            show_progress=progress,
            resume=spec.resume,  # OUT.work's finished trials are continued, as --resume says
        )
        return {**summary, "encoder": str(out), "kind": spec.kind, "images": len(images), "concepts": spec.concepts}
    set_torch_threads(spec.threads)
    with progress_bar(progress, spec.epochs, description="SimCLR") as bar:
        checkpoint = pretrain_simclr(
            images,
            architecture=spec.architecture,
            resolution=spec.resolution,
            epochs=spec.epochs,
            seed=spec.seed,
            workdir=work_folder(out),
            source=f"cog-mini {spec.concepts} train",
            progress=lambda epoch, total, loss: bar(
                completed=epoch, total=total, description=f"SimCLR loss {loss:.3f}"
            ),
        )
    save_encoder(checkpoint, out)
    finish_output(out)
    return {
        "encoder": str(out),
        "kind": spec.kind,
        "concepts": spec.concepts,
        "images": len(images),
        "epochs": checkpoint.epochs,
        "feature_dim": checkpoint.feature_dim,
        "final_loss": checkpoint.history[-1]["loss"] if checkpoint.history else None,
    }


def _all_train_folder(root: Path, levels: list[str]) -> Path:
    """`root/all/train/<wnid>`: links to every level's exported training folders (one class per concept)."""
    target = root / "all" / "train"
    target.mkdir(parents=True, exist_ok=True)
    for level in levels:
        for folder in sorted((root / level / "train").iterdir()):
            link = target / folder.name
            if not link.exists():
                link.symlink_to(folder.resolve(), target_is_directory=True)
    return target
