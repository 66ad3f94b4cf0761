"""Data preparation behind `lifelong cog run` and `lifelong cog pretrain`: cog-mini's exported folders or
ImageNet-style concept folders, level by level, into a features set."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lifelong.commands.terminal import note
from lifelong.concepts.level_files import MAX_TRAIN_IMAGES, MIN_IMAGES, TEST_IMAGES
from lifelong.core.errors import DataError, UsageError
from lifelong.core.progress import Progress, progress_bar


def check_test_style(test_style: str | None) -> None:
    """A UsageError in CLI words unless `test_style` is None or an artwork family."""
    from lifelong.core.suggest import did_you_mean
    from lifelong.data.sources.emoji_art import FAMILIES, HOLDOUT_FAMILIES

    if test_style is not None and test_style not in HOLDOUT_FAMILIES:
        if test_style in FAMILIES:
            raise UsageError(
                f"--test-style {test_style} cannot hold the test images: that artwork does not draw every cog-mini "
                f"concept (it is a training style only); choose among {', '.join(HOLDOUT_FAMILIES)}"
            )
        hint = did_you_mean(test_style, HOLDOUT_FAMILIES)
        raise UsageError(f"unknown --test-style {test_style!r}{hint}; choose among {', '.join(HOLDOUT_FAMILIES)}")


def _cog_mini_folders(
    data_root: Path | None,
    levels: list[str] | None = None,
    test_style: str | None = None,
    progress: Progress = True,
):
    """(cog-mini, its export `<cache>/folders/<level>/<split>/<wnid>/*.png`), exporting the missing `levels`
    (default: every level). `test_style`: the held-out artwork family (default: cog-mini's, Twemoji); `progress`:
    of rendering cog-mini, the first time."""
    from lifelong.data.sources.cog_mini import CogMiniOptions, export_folders, load_cog_mini

    options = None if test_style is None else CogMiniOptions(test_style=test_style)
    cog = load_cog_mini(options, data_root=data_root, progress=progress)
    root = cog.path / "folders"
    missing = [name for name in (cog.levels if levels is None else levels) if not (root / name).is_dir()]
    if missing:
        export_folders(cog, root, missing)
    return cog, root


def _level_files(root: Path, wnids: tuple[str, ...], split: str) -> tuple[list[str], list[int]]:
    """Files and labels of one exported level split, in (label, file name) order."""
    files, labels = [], []
    for label, wnid in enumerate(wnids):
        names = sorted(p for p in (root / split / wnid).iterdir() if p.is_file())
        files += [str(p) for p in names]
        labels += [label] * len(names)
    return files, labels


def _folder_groups(data: Path, levels_file: Path | None, seen_train: Path) -> dict[str, list[str]]:
    """{level: wnids} of ImageNet-style concept folders: seen = the ImageNet-1K folders present in `seen_train`,
    L1.. from the levels file (our CSV or the authors' pkl)."""
    from lifelong.concepts.level_files import read_levels_file
    from lifelong.concepts.wnids import imagenet1k

    if levels_file is None:
        raise UsageError(
            "--data DIR needs --levels-file FILE (written by `lifelong cog levels`, or the authors' "
            "cog_levels_mapping_file.pkl)"
        )
    if not seen_train.is_dir():
        raise FileNotFoundError(f"--seen-train {str(seen_train)!r} not found")
    present = {p.name for p in seen_train.iterdir() if p.is_dir()}
    groups = {"seen": sorted(w for w in imagenet1k() if w in present)}
    for number, wnids in enumerate(read_levels_file(levels_file), start=1):
        groups[f"L{number}"] = list(wnids)
    out = {}
    for name, wnids in groups.items():
        if not wnids:
            note(f"level {name}: no concept folder in {seen_train if name == 'seen' else data}; left out")
            continue
        out[name] = sorted(wnids)
    return out


@dataclass
class FeaturesPlan:
    """A features set before extraction: its name and folder, and each level's content, read when extracted."""

    name: str
    folder: Path
    dataset: str
    identity: str
    encoder: str | Path  # an encoder spec (`lifelong.training.encoders.load_encoder`)
    levels: dict[str, Callable[[], dict]]  # level -> {wnids, train: (files, labels), test: ..., similarity}
    loaded: Any = field(default=None, repr=False)  # the Encoder of `encoder`, once loaded (see `load_encoder`)

    def load_encoder(self) -> Any:
        """The Encoder of `encoder`, loaded on first use and kept: a command loads it once (naming the set and
        extracting every level's train and test split all use this one)."""
        if self.loaded is None:
            from lifelong.training.encoders import load_encoder

            self.loaded = load_encoder(str(self.encoder))
        return self.loaded

    def index(self, contents: dict[str, dict]) -> dict:
        """The features set's cog.json: the levels whose features are complete on disk, in the set's order."""
        from lifelong.suites.cog import FORMAT, INDEX_FILE, read_index

        old = {}
        if (self.folder / INDEX_FILE).is_file():
            with contextlib.suppress(FileNotFoundError, ValueError):
                old = {level["name"]: level for level in read_index(self.folder)["levels"]}
        levels = []
        for name in self.levels:
            if not all(_complete(self.folder / name / split) for split in ("train", "test")):
                continue
            if name in contents:
                content = contents[name]
                levels.append({"name": name, "wnids": list(content["wnids"]), "similarity": content.get("similarity")})
            elif name in old:
                levels.append(old[name])
        return {
            "format": FORMAT,
            "dataset": self.dataset,
            "dataset_identity": self.identity,
            "encoder": _encoder_entry(self.encoder),
            "levels": levels,
        }


def _encoder_entry(spec: str | Path) -> dict[str, str]:
    """cog.json's encoder: its name and file (a file spec) or its spec (a model name, hf:, torchscript:, ...)."""
    path = Path(spec)
    if path.is_file():
        return {"name": path.stem, "file": str(path.resolve())}
    return {"name": _spec_stem(str(spec)), "spec": str(spec)}


def _spec_stem(spec: str) -> str:
    """A short name for a non-file spec, fit for a folder name (hf:models/vit -> vit)."""
    import re

    text = spec.split(":", 1)[1] if spec.startswith(("hf:", "torchscript:")) else spec
    text = Path(text.rstrip("/")).name or text
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text.replace(":", "-")) or "encoder"


def _encoder_digest(spec: str | Path) -> tuple[str, bytes, Any]:
    """(stem, identity bytes, the Encoder when it had to be loaded, else None) of an encoder spec: a file's bytes (as
    before), else the loaded encoder's weights sha256 and preprocessing (a model name, hf:, module:callable)."""
    import json

    from lifelong.training.encoders import EncoderNotFoundError, check_encoder_spec, load_encoder

    path = Path(spec)
    if path.is_file():
        return path.stem, path.read_bytes(), None
    try:
        kind = check_encoder_spec(str(spec))
    except EncoderNotFoundError as exc:
        raise FileNotFoundError(f"{exc}; or train one with `lifelong cog pretrain`") from None
    if kind == "torchscript":
        target = Path(str(spec).removeprefix("torchscript:"))
        return target.stem, target.read_bytes(), None
    encoder = load_encoder(str(spec))
    own = {k: v for k, v in encoder.identity("fp32").items() if k not in ("description", "precision")}
    return _spec_stem(str(spec)), json.dumps(own, sort_keys=True).encode(), encoder


def _complete(folder: Path) -> bool:
    """Whether a features folder holds a finished extraction."""
    from lifelong.data.feature_files import MANIFEST_FILE, read_json

    try:
        return bool(read_json(folder / MANIFEST_FILE).get("complete"))
    except (OSError, ValueError):
        return False


def plan_features(
    encoder: str | Path,
    data: str,
    *,
    levels_file: Path | None = None,
    split_file: Path | None = None,
    seen_train: Path | None = None,
    seen_val: Path | None = None,
    min_images: int = MIN_IMAGES,
    test_style: str | None = None,
    data_root: Path | None = None,
    progress: Progress = True,
) -> FeaturesPlan:
    """Name the features set of (encoder, data) and list its levels; nothing is extracted yet.

    `encoder`: any encoder spec (a file, a model name, torchscript:, hf:, package.module:factory). The set lives in
    `<data root>/cog-features/<name>`, name = dataset-encoder-hash (of the encoder file's bytes, or of a loaded
    encoder's weights sha256 and preprocessing, the precision of the forward pass on the current accelerator, and
    the dataset's identity), and its cog.json lists the levels whose features are complete.
    """
    import hashlib

    from lifelong.suites.cog import features_root
    from lifelong.training.feature_cache import forward_precision

    stem, encoder_bytes, loaded = _encoder_digest(encoder)
    levels: dict[str, Callable[[], dict]] = {}
    folder_options = {"--levels-file": levels_file, "--split-file": split_file, "--seen-train": seen_train}
    folder_options |= {"--seen-val": seen_val}
    if data == "cog-mini" and any(value is not None for value in folder_options.values()):
        given = ", ".join(flag for flag, value in folder_options.items() if value is not None)
        raise UsageError(f"{given} go(es) with --data DIR; cog-mini brings its own levels and splits")
    if data == "cog-mini":
        cog, root = _cog_mini_folders(data_root, [], test_style, progress)  # renders (or reads) cog-mini; no export
        dataset, identity = "cog-mini", cog.path.name
        for name in cog.levels:
            levels[name] = functools.partial(_cog_mini_level, cog, root, name)
    else:
        folder = Path(data)
        if not folder.is_dir():
            raise FileNotFoundError(f"--data {data!r} is neither cog-mini nor a folder of <wnid>/ image folders")
        if min_images < TEST_IMAGES + 1:
            raise UsageError(f"--min-images {min_images}: a concept needs its {TEST_IMAGES} test images and 1 more")
        seen_train = Path(seen_train) if seen_train is not None else folder
        groups = _folder_groups(folder, levels_file, seen_train)
        if "seen" in groups and seen_val is None:
            raise UsageError(
                f"the seen level ({len(groups['seen'])} ImageNet-1K concepts in {seen_train}) is tested on the "
                "official validation images: pass --seen-val DIR (<wnid>/ folders of the IN-1K validation set); a "
                "split of training images would test an encoder on images it may have trained on"
            )
        dataset = folder.name
        files = [Path(levels_file)] + ([] if split_file is None else [Path(split_file)])
        digest_identity = ":".join(
            [str(folder.resolve()), str(seen_train.resolve()), str(Path(seen_val).resolve() if seen_val else "")]
            + [str(min_images), str(MAX_TRAIN_IMAGES)]
            + [hashlib.sha256(f.read_bytes()).hexdigest() for f in files]
        )
        identity = str(folder.resolve())
        for name, wnids in groups.items():
            if name == "seen":
                levels[name] = functools.partial(_seen_level, seen_train, Path(seen_val), wnids)
            else:
                levels[name] = functools.partial(_folder_level, folder, wnids, split_file, min_images)
    precision = forward_precision()  # bf16 GPU features and fp32 CPU ones are different sets
    digest = hashlib.sha256(
        encoder_bytes + (identity if data == "cog-mini" else digest_identity).encode() + precision.encode()
    )
    name = f"{dataset}-{stem}-{digest.hexdigest()[:10]}".replace("/", "_")
    return FeaturesPlan(name, features_root(data_root) / name, dataset, identity, encoder, levels, loaded)


def _cog_mini_level(cog, root: Path, name: str) -> dict:
    """One cog-mini level's content, its images exported to PNG files first if they are not yet."""
    from lifelong.data.sources.cog_mini import export_folders

    if not (root / name).is_dir():
        export_folders(cog, root, [name])
    level = cog.levels[name]
    splits = {split: _level_files(root / name, level.wnids, split) for split in ("train", "test")}
    return {"wnids": level.wnids, **splits, "similarity": level.similarity.round(6).tolist()}


def _folder_level(data: Path, wnids: list[str], split_file: Path | None, min_images: int) -> dict:
    """One unseen level of ImageNet-style concept folders: its concepts' images as the split file lists them,
    else scanned and split: 50 test images and at most 1,300 training images per concept (seeded); a concept with
    fewer than `min_images` images is an error naming it."""
    from lifelong.concepts.level_files import read_split_file
    from lifelong.data.sources.concept_folders import concepts_from_split_file, scan_concept_folders

    if split_file is not None:
        splits = concepts_from_split_file(data, read_split_file(split_file, wnids))
    else:
        splits = scan_concept_folders(
            data,
            wnids=wnids,
            test_per_class=TEST_IMAGES,
            min_train=min_images - TEST_IMAGES,
            max_train=MAX_TRAIN_IMAGES,
        )
    return {"wnids": splits.wnids, "train": splits.split("train"), "test": splits.split("test")}


def _seen_level(train_root: Path, val_root: Path, wnids: list[str]) -> dict:
    """The seen level: training images from the IN-1K train folders, test images from the validation folders."""
    from lifelong.data.sources.concept_folders import seen_concepts

    splits = seen_concepts(train_root, val_root, wnids)
    return {"wnids": splits.wnids, "train": splits.split("train"), "test": splits.split("test")}


def extract_levels(
    plan: FeaturesPlan,
    levels: list[str],
    *,
    threads: int = 1,
    skip_corrupt: bool = False,
    overwrite: bool = False,
    progress: Progress = True,
) -> str:
    """Extract (or resume, or reuse) the train/test features of `levels` only; return the features set's name.

    Features come from the shared feature cache (`lifelong.training.feature_cache`, keyed by the encoder's identity
    with its precision, and the images): an interrupted extraction continues, a finished one is reused (also by
    another features set, run or seed); each split folder of the set links to its cache folder. `overwrite`
    (--overwrite) extracts these levels again from scratch.

    Without `skip_corrupt` an unreadable image is an error naming it and --skip-corrupt; with it, unreadable images
    are left out (each listed in its split's manifest.json) and counted in a note. `progress`: a bar per split
    (True), nothing (False) or a callback `(description, files done, files)`.
    """
    import json

    from lifelong.core.files import atomic_write_bytes
    from lifelong.suites.cog import INDEX_FILE, level_label
    from lifelong.training.features import UnreadableImageError, cached_features
    from lifelong.training.loop import set_torch_threads

    set_torch_threads(threads)
    contents = {}
    for level in levels:
        content = contents[level] = plan.levels[level]()
        for split in ("train", "test"):
            files, labels = content[split]
            out = plan.folder / level / split
            description = f"features {level_label(level)} {split}"
            try:
                with _split_progress(progress, len(files), description) as bar:
                    features = cached_features(
                        plan.load_encoder(),  # loaded once for every level and split (a spec would load each time)
                        files,
                        labels,
                        progress=bar,
                        overwrite=overwrite,
                        skip_corrupt=skip_corrupt,
                        description=description,
                    )
            except UnreadableImageError as exc:
                raise DataError(
                    f"{exc}; replace or remove the file, or pass --skip-corrupt to leave unreadable images out"
                ) from None
            _link(out, Path(features.features.filename).parent)
            left_out = features.manifest.get("skipped") or []
            if left_out:
                note(
                    f"{level_label(level)} {split}: {len(left_out)} unreadable image(s) left out (--skip-corrupt); "
                    f"listed in {out / 'manifest.json'}"
                )
    atomic_write_bytes(plan.folder / INDEX_FILE, json.dumps(plan.index(contents), indent=1).encode())
    return plan.name


@contextlib.contextmanager
def _split_progress(progress: Progress, total: int, description: str) -> Iterator[Any]:
    """What `cached_features` takes as `progress`: True or False as they are (its own bar starts where a resumed
    extraction stands), a callback wrapped into the bar's update function."""
    if not callable(progress):
        yield progress
        return
    with progress_bar(progress, total, description=description) as update:
        yield update


def _link(path: Path, target: Path) -> None:
    """Make `path` a symbolic link to the cache folder `target` (atomically; an older set's real folder goes)."""
    import os
    import shutil

    if path.is_symlink() and path.resolve() == target.resolve():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    staged = path.with_name(path.name + ".link")
    staged.unlink(missing_ok=True)
    os.symlink(target.resolve(), staged, target_is_directory=True)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    os.replace(staged, path)
