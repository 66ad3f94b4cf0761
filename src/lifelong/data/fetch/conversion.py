"""What every converter works with: the verified artefacts, a scratch folder, the output folder, the options.

`Conversion.unpacked()` unpacks every archive (tar, zip, rar) once (with `decompress = true` single
.gz/.bz2/.xz/.Z files too; with `unpack_inner = true` the archives found inside; links between unpacked files
become files);
`write_labels_csv` writes the `labels.csv` layout lifelong.data.sources reads (path, label or labels, split).
"""

from __future__ import annotations

import csv
import fnmatch
import io
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lifelong.core.files import atomic_write_bytes
from lifelong.data.fetch.unpack import ARCHIVES, archive_kind, resolve_links, unpack

LABELS_CSV = "labels.csv"
IMAGES = "images"  # the folder of out/ that labels.csv converters put images in
Row = tuple[str, str | list[str], str | None]  # a labels.csv row: image path (relative to out), label(s), split


class ConversionError(ValueError):
    """The artefacts do not hold what the converter expects: names the dataset and what is missing."""


@dataclass(frozen=True)
class Conversion:
    dataset: str
    artefacts: dict[str, Path]  # manifest file name -> verified file on disk
    work: Path  # scratch: archives unpack here
    out: Path  # the layout goes here
    options: dict[str, Any] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # corrupt archive members left out (skip_bad_members)
    names: dict[str, Path] = field(default_factory=dict)  # unpacked files by name, for path_search (built once)

    def unpacked(self) -> Path:
        """Every artefact unpacked (archives) or copied (single files) into work/unpacked, once."""
        target = self.work / "unpacked"
        if not target.exists():
            staging = self.work / "unpacking"
            shutil.rmtree(staging, ignore_errors=True)
            for name, path in self.artefacts.items():
                kind = archive_kind(name)
                if kind in ARCHIVES or (kind == "single" and self.options.get("decompress")):
                    unpack(
                        path, staging, name=name, skipped=self.skipped if self.options.get("skip_bad_members") else None
                    )
                else:
                    copy_file(path, staging / name)
            staging.mkdir(parents=True, exist_ok=True)
            if self.options.get("unpack_inner"):
                unpack_inner(staging)
            resolve_links(staging)  # links inside (VisTex's Reference/ tree) become files; none may leave
            staging.rename(target)
        return target

    def find(self, pattern: str) -> list[Path]:
        """The unpacked files whose path (POSIX, relative to the unpacked root) matches a glob; none is an error."""
        base = self.unpacked()
        found = [p for p in data_files(base) if fnmatch.fnmatch(p.relative_to(base).as_posix(), pattern)]
        if not found:
            raise self.fail(f"no file in the artefacts matches {pattern!r}")
        return found

    def fail(self, message: str) -> ConversionError:
        return ConversionError(f"{self.dataset}: {message}")


def copy_file(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


def data_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))


def unpack_inner(folder: Path) -> None:
    """Unpack the archives found inside unpacked archives, in place (each beside itself, then removed), to depth 3."""
    for _ in range(3):
        inner = [p for p in folder.rglob("*") if p.is_file() and archive_kind(p.name) in ARCHIVES]
        if not inner:
            return
        for archive in inner:
            unpack(archive, archive.parent)
            archive.unlink()


def write_labels_csv(out: Path, rows: list[Row]) -> None:
    """`out/labels.csv` from (image path relative to out, label or list of labels, split or None) rows."""
    multi = any(isinstance(label, list) for _, label, _ in rows)
    with_split = any(split for _, _, split in rows)
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["path", "labels" if multi else "label"] + (["split"] if with_split else []))
    for path, label, split in rows:
        cell = ";".join(label) if isinstance(label, list) else label
        writer.writerow([path, cell] + ([split or ""] if with_split else []))
    atomic_write_bytes(out / LABELS_CSV, text.getvalue().encode())


def save_png(job: Conversion, pixels: Any, relative: str) -> str:
    """Write an image array (H, W or H, W, C; a single channel squeezed) as out/<relative>; returns `relative`."""
    import numpy as np
    from PIL import Image

    target = job.out / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    image = pixels[..., 0] if pixels.ndim == 3 and pixels.shape[-1] == 1 else pixels
    Image.fromarray(np.ascontiguousarray(image).astype(np.uint8)).save(target)
    return relative
