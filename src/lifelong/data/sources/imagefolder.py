"""A folder with one sub-folder of image files per class, optionally under train/ val/ test/ split folders.

Layouts: DIR/<class>/... ; DIR/<split>/<class>/... when every sub-folder of DIR names a split (train, val,
valid, validation, test), which becomes the official split (a lone train/ folder gives none); with
`grouped=True` one more level names each item's group (DomainNet's domains): DIR/[<split>/]<group>/<class>/...,
recorded in notes["groups"].
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lifelong.core.tasks import TaskKind
from lifelong.data.images import IMAGE_SUFFIXES, decode_files, is_image_file
from lifelong.data.labeled import LabeledImages

SPLIT_FOLDERS = {"train": "train", "val": "val", "valid": "val", "validation": "val", "test": "test"}


def split_folders(directory: str | Path) -> dict[str, Path]:
    """Split name -> folder when every sub-folder of `directory` names a split (train/ val/ test/), else {}."""
    subdirs = _subdirs(Path(directory))
    if not subdirs or any(d.name.lower() not in SPLIT_FOLDERS for d in subdirs):
        return {}
    found: dict[str, Path] = {}
    for d in subdirs:
        split = SPLIT_FOLDERS[d.name.lower()]
        if split in found:
            raise ValueError(f"{str(directory)!r} has two folders for the {split} split: {found[split].name}, {d.name}")
        found[split] = d
    return found


def load_image_folder(directory: str | Path, *, skip_corrupt: bool = False, grouped: bool = False) -> LabeledImages:
    """Images under DIR/[<split>/][<group>/]<class>/... (any depth below); classes are the class folder names, sorted.

    Files without an image suffix (and hidden files) are not read; their count is in notes["ignored_files"].
    A class present in one split only is still a class of the task.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"image folder not found: {str(directory)!r}")
    splits = split_folders(directory)
    roots = list(splits.items()) if splits else [("", directory)]
    found: list[tuple[Path, str, str, str]] = []  # (file, class, split, group)
    ignored = 0
    for split, root in roots:
        ignored += sum(1 for p in root.iterdir() if p.is_file())
        for group, class_root in _group_roots(root, grouped):
            ignored += sum(1 for p in class_root.iterdir() if p.is_file()) if group else 0
            class_dirs = _subdirs(class_root)
            if not class_dirs:
                raise ValueError(
                    f"{str(class_root)!r} has no class sub-folders; expected {_layout_text(splits, grouped)}"
                )
            for class_dir in class_dirs:
                files = sorted(p for p in class_dir.rglob("*") if p.is_file())
                images = [p for p in files if is_image_file(p)]
                ignored += len(files) - len(images)
                if not images:
                    raise ValueError(
                        f"class folder {str(class_dir)!r} holds no image files (suffixes {IMAGE_SUFFIXES}); "
                        "add images or remove the folder"
                    )
                found.extend((path, class_dir.name, split, group) for path in images)
    class_names = tuple(sorted({name for _, name, _, _ in found}))
    index = {name: k for k, name in enumerate(class_names)}
    paths = [path for path, _, _, _ in found]
    decoded, kept, skipped = decode_files(paths, skip_corrupt=skip_corrupt)
    ids = [str(paths[i]) for i in kept]
    notes = {
        "source": f"folder:{directory}",
        "corrupt_skipped": len(skipped),
        "corrupt_files": skipped,
        "ignored_files": ignored,
    }
    if grouped:
        notes["groups"] = {str(found[i][0]): found[i][3] for i in kept}
    return LabeledImages(
        images=decoded,
        labels=np.asarray([index[found[i][1]] for i in kept], dtype=np.int64),
        ids=ids,
        class_names=class_names,
        kind=TaskKind.MULTI_CLASS,
        official_split=np.asarray([found[i][2] for i in kept]) if set(splits) - {"train"} else None,
        notes=notes,
    )


def _subdirs(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.is_dir() and not p.name.startswith("."))


def _group_roots(root: Path, grouped: bool) -> list[tuple[str, Path]]:
    """(group name, folder holding class folders) pairs: the group folders, or ("", root) when not grouped."""
    if not grouped:
        return [("", root)]
    groups = _subdirs(root)
    if not groups:
        raise ValueError(f"{str(root)!r} has no group sub-folders; expected <group>/<class>/<image files>")
    return [(g.name, g) for g in groups]


def _layout_text(splits: dict[str, Path], grouped: bool) -> str:
    return "DIR/" + ("<split>/" if splits else "") + ("<group>/" if grouped else "") + "<class name>/<image files>"
