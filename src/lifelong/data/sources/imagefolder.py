"""A folder with one sub-folder of image files per class."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lifelong.core.tasks import TaskKind
from lifelong.data.images import IMAGE_SUFFIXES, decode_files
from lifelong.data.labeled import LabeledImages


def load_image_folder(directory: str | Path, *, skip_corrupt: bool = False) -> LabeledImages:
    """Images under DIR/<class>/... (any depth); classes are the sub-folder names, sorted.

    Files without an image suffix (and hidden files) are not read; their count is in notes["ignored_files"].
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"image folder not found: {str(directory)!r}")
    class_dirs = sorted(p for p in directory.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not class_dirs:
        raise ValueError(f"{str(directory)!r} has no class sub-folders; expected DIR/<class name>/<image files>")
    paths: list[Path] = []
    labels: list[int] = []
    ignored = sum(1 for p in directory.iterdir() if p.is_file())
    for label, class_dir in enumerate(class_dirs):
        files = sorted(p for p in class_dir.rglob("*") if p.is_file())
        images = [p for p in files if p.suffix.lower() in IMAGE_SUFFIXES and not p.name.startswith(".")]
        ignored += len(files) - len(images)
        if not images:
            raise ValueError(
                f"class folder {str(class_dir)!r} holds no image files (suffixes {IMAGE_SUFFIXES}); "
                "add images or remove the folder"
            )
        paths.extend(images)
        labels.extend([label] * len(images))
    decoded, kept, skipped = decode_files(paths, skip_corrupt=skip_corrupt)
    return LabeledImages(
        images=decoded,
        labels=np.asarray(labels, dtype=np.int64)[kept],
        ids=[str(paths[i]) for i in kept],
        class_names=tuple(p.name for p in class_dirs),
        kind=TaskKind.MULTI_CLASS,
        notes={
            "source": f"folder:{directory}",
            "corrupt_skipped": len(skipped),
            "corrupt_files": skipped,
            "ignored_files": ignored,
        },
    )
