"""ImageNet-style concept folders (docs/protocols/cog.md#levels): `root/<wnid>/<image files>` -> seeded splits.

Labels follow the sorted wnids, so train and test (and every level scanned the same way) share one label order.
Each concept gives `test_per_class` test images drawn with a seed derived from its wnid (a concept's split does
not depend on which other concepts are present); the rest are training images. Only file lists and labels are
returned: the images are decoded later, batch by batch, by feature extraction.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lifelong.concepts.level_files import ConceptImages
from lifelong.concepts.wnids import UnknownConceptError, check_wnid, imagenet1k, imagenet21k
from lifelong.core.errors import DataError
from lifelong.core.seeds import derive_seed
from lifelong.data.images import IMAGE_SUFFIXES, is_image_file

TEST_PER_CLASS = 50
IMAGENET = "imagenet"  # `known=` default: the wnids of ImageNet-21K fall 2011 and ImageNet-1K


class TooFewImagesError(DataError):
    """A concept folder with fewer images than its test split plus the minimum training images."""


@dataclass(frozen=True)
class ConceptSplits:
    """File lists and labels of one set of concepts; label k is `wnids[k]` (sorted)."""

    root: Path
    wnids: tuple[str, ...]
    train_files: list[str]
    train_labels: np.ndarray
    test_files: list[str]
    test_labels: np.ndarray
    seed: int
    test_per_class: int

    def split(self, name: str) -> tuple[list[str], np.ndarray]:
        """(files, labels) of split "train" or "test"."""
        if name == "train":
            return self.train_files, self.train_labels
        if name == "test":
            return self.test_files, self.test_labels
        raise ValueError(f"unknown split {name!r}; choose 'train' or 'test'")


def _known_wnids(known: Collection[str] | str | None) -> Collection[str] | None:
    if known == IMAGENET:
        return set(imagenet21k()) | set(imagenet1k())
    if isinstance(known, str):
        raise ValueError(f"known must be {IMAGENET!r}, a collection of wnids or None, got {known!r}")
    return known


def _concept_dirs(root: Path, wnids: Sequence[str] | None) -> dict[str, Path]:
    """wnid -> folder: the requested concepts (each must exist), else every visible sub-folder of root."""
    if wnids is not None:
        requested = sorted({check_wnid(w, "requested concept") for w in wnids})
        missing = [w for w in requested if not (root / w).is_dir()]
        if missing:
            shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
            raise FileNotFoundError(
                f"{len(missing)} requested concept(s) have no folder under {root}: {shown}; "
                "add root/<wnid>/ folders or leave those wnids out"
            )
        return {w: root / w for w in requested}
    dirs: dict[str, Path] = {}
    with os.scandir(root) as entries:
        for entry in entries:
            if entry.name.startswith(".") or not entry.is_dir():
                continue
            dirs[check_wnid(entry.name, f"concept folder {os.path.join(root, entry.name)!r}")] = Path(entry.path)
    if not dirs:
        raise FileNotFoundError(f"{root} has no concept folders; expected root/<wnid>/<image files>, e.g. n01440764/")
    return dict(sorted(dirs.items()))


def _image_files(folder: Path) -> list[str]:
    with os.scandir(folder) as entries:
        return sorted(e.path for e in entries if e.is_file() and is_image_file(Path(e.name)))


def scan_concept_folders(
    root: str | os.PathLike,
    *,
    seed: int = 0,
    test_per_class: int = TEST_PER_CLASS,
    min_train: int = 1,
    max_train: int | None = None,
    wnids: Sequence[str] | None = None,
    known: Collection[str] | str | None = IMAGENET,
) -> ConceptSplits:
    """Scan `root/<wnid>/*` (image suffixes, any case; hidden files ignored) and split each concept, seeded.

    `wnids`: the concepts to use (e.g. one level's), each needing a folder; default every sub-folder, each of
    which must be named by a wnid. `known`: wnids accepted (default ImageNet-21K fall 2011 + 1K; None: any
    well-formed wnid). A concept with fewer than `test_per_class + min_train` images is an error naming it.
    `max_train`: at most this many training images per concept, a seeded choice (ImageNet-CoG: 1,300).
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"concept folder root not found: {str(root)!r}; expected root/<wnid>/<image files>")
    if test_per_class < 1 or min_train < 1:
        raise ValueError(f"test_per_class and min_train must be >= 1, got {test_per_class} and {min_train}")
    if max_train is not None and max_train < min_train:
        raise ValueError(f"max_train ({max_train}) must be >= min_train ({min_train})")
    folders = _concept_dirs(root, wnids)
    accepted = _known_wnids(known)
    if accepted is not None:
        unknown = [w for w in folders if w not in accepted]
        if unknown:
            raise UnknownConceptError(
                f"concept folder(s) {', '.join(str(folders[w]) for w in unknown[:10])} name(s) wnids outside "
                "ImageNet-21K fall 2011 and ImageNet-1K; rename them, or pass known=None to accept any wnid"
            )
    need = test_per_class + min_train
    train_files: list[str] = []
    train_labels: list[np.ndarray] = []
    test_files: list[str] = []
    test_labels: list[np.ndarray] = []
    too_few: list[str] = []
    for label, (wnid, folder) in enumerate(folders.items()):
        files = _image_files(folder)
        if len(files) < need:
            too_few.append(f"{wnid} ({folder}) has {len(files)}")
            continue
        order = np.random.default_rng(derive_seed(seed, int(wnid[1:]))).permutation(len(files))
        train_end = len(files) if max_train is None else min(len(files), test_per_class + max_train)
        role = np.zeros(len(files), dtype=np.int8)  # 0: unused, 1: test, 2: train
        role[order[:test_per_class]] = 1
        role[order[test_per_class:train_end]] = 2
        test_files.extend(f for f, r in zip(files, role, strict=True) if r == 1)
        train_files.extend(f for f, r in zip(files, role, strict=True) if r == 2)
        test_labels.append(np.full(test_per_class, label, dtype=np.int64))
        train_labels.append(np.full(train_end - test_per_class, label, dtype=np.int64))
    if too_few:
        shown = "; ".join(too_few[:10]) + (f"; and {len(too_few) - 10} more" if len(too_few) > 10 else "")
        raise TooFewImagesError(
            f"{len(too_few)} concept(s) have too few images (suffixes {', '.join(IMAGE_SUFFIXES)}): {shown}; "
            f"each needs at least {need} ({test_per_class} test + {min_train} train): lower test_per_class "
            "or leave those concepts out (wnids=...)"
        )
    return ConceptSplits(
        root=root,
        wnids=tuple(folders),
        train_files=train_files,
        train_labels=np.concatenate(train_labels),
        test_files=test_files,
        test_labels=np.concatenate(test_labels),
        seed=int(seed),
        test_per_class=int(test_per_class),
    )


def concepts_from_split_file(
    root: str | os.PathLike, images: Mapping[str, ConceptImages], *, check_files: bool = True
) -> ConceptSplits:
    """ConceptSplits of concepts whose images a split file lists (`lifelong.concepts.level_files.read_split_file`),
    paths relative to `root` (the ImageNet-21K images folder); labels follow the sorted wnids. With `check_files`
    every listed file must exist, else a FileNotFoundError counting the missing ones and naming a few."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"images folder not found: {str(root)!r} (the root the split file's paths start at)")
    wnids = tuple(sorted(images))
    splits: dict[str, tuple[list[str], list[np.ndarray]]] = {"train": ([], []), "test": ([], [])}
    for label, wnid in enumerate(wnids):
        for name, (files, labels) in splits.items():
            listed = getattr(images[wnid], name)
            files.extend(str(root / relative) for relative in listed)
            labels.append(np.full(len(listed), label, dtype=np.int64))
    if check_files:
        missing = [f for name in splits for f in splits[name][0] if not os.path.isfile(f)]
        if missing:
            raise FileNotFoundError(
                f"{len(missing)} image(s) the split file lists are not under {str(root)!r}, e.g. "
                f"{', '.join(missing[:3])}; pass the folder that holds the <wnid>/ image folders"
            )
    return _listed_splits(root, wnids, splits)


def seen_concepts(train_root: str | os.PathLike, val_root: str | os.PathLike, wnids: Sequence[str]) -> ConceptSplits:
    """ConceptSplits of seen concepts as ImageNet-CoG tests them: every image of `train_root/<wnid>/` for training
    and every image of `val_root/<wnid>/` (the official validation set, sorted into wnid folders) for testing, never
    a split of training images an encoder may have trained on. Each concept needs both folders, non-empty."""
    train_root, val_root = Path(train_root), Path(val_root)
    for what, root in (("training", train_root), ("validation", val_root)):
        if not root.is_dir():
            raise FileNotFoundError(f"seen {what} folder not found: {str(root)!r}")
    if wnids and not any((val_root / w).is_dir() for w in wnids):
        loose = any(is_image_file(Path(e)) for e in os.listdir(val_root))
        hint = (
            "it holds loose images: sort the validation images into <wnid>/ folders first (the labels come with "
            "the ILSVRC2012 devkit)"
            if loose
            else "expected <wnid>/ folders of validation images"
        )
        raise FileNotFoundError(f"the validation folder {str(val_root)!r} has no folder of a seen concept; {hint}")
    wnids = tuple(sorted(check_wnid(w, "seen concept") for w in wnids))
    splits: dict[str, tuple[list[str], list[np.ndarray]]] = {"train": ([], []), "test": ([], [])}
    empty = []
    for label, wnid in enumerate(wnids):
        for name, root in (("train", train_root), ("test", val_root)):
            folder = root / wnid
            files = _image_files(folder) if folder.is_dir() else []
            if not files:
                empty.append(str(folder))
            splits[name][0].extend(files)
            splits[name][1].append(np.full(len(files), label, dtype=np.int64))
    if empty:
        shown = ", ".join(empty[:5]) + (f" and {len(empty) - 5} more" if len(empty) > 5 else "")
        raise TooFewImagesError(f"{len(empty)} seen concept folder(s) are missing or hold no image: {shown}")
    return _listed_splits(train_root, wnids, splits)


def _listed_splits(root: Path, wnids: tuple[str, ...], splits: dict[str, tuple[list[str], list[np.ndarray]]]):
    """ConceptSplits of given file lists ({"train"/"test": (files, per-concept label arrays)}): no seeded split."""
    labels = {name: np.concatenate(parts) if parts else np.zeros(0, np.int64) for name, (_, parts) in splits.items()}
    return ConceptSplits(
        root=root,
        wnids=wnids,
        train_files=splits["train"][0],
        train_labels=labels["train"],
        test_files=splits["test"][0],
        test_labels=labels["test"],
        seed=0,
        test_per_class=0,
    )
