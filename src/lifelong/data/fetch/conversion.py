"""What every converter works with: the verified artefacts, a scratch folder, the output folder, the options.

`Conversion.unpacked()` unpacks every archive (tar, zip, rar) once (with `decompress = true` single
.gz/.bz2/.xz/.Z files too; with `unpack_inner = true` the archives found inside; with `links = true` the links
that stay inside become copies of what they name, else a link is an error), all of it charged to one byte budget;
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

from lifelong.core.errors import DataError
from lifelong.core.files import atomic_write_bytes
from lifelong.data.fetch.budgets import ByteBudget
from lifelong.data.fetch.unpack import ARCHIVES, Links, archive_kind, copy_in, unpack

LABELS_CSV = "labels.csv"
IMAGES = "images"  # the folder of out/ that labels.csv converters put images in
Row = tuple[str, str | list[str], str | None]  # a labels.csv row: image path (relative to out), label(s), split


class ConversionError(DataError, ValueError):
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
    budget: ByteBudget | None = None  # what unpacking may write (None: no limit, for trusted local files)

    def __post_init__(self) -> None:
        if self.budget is None:  # no limit: trusted local files (a fetch always gives its dataset's budget)
            object.__setattr__(self, "budget", ByteBudget.unlimited(self.dataset))

    def unpacked(self) -> Path:
        """Every artefact unpacked (archives) or copied (single files) into work/unpacked, once, charged to the budget;
        with the option `links = true` a link inside becomes a copy of what it names once all is unpacked (VisTex's
        Reference/ tree links into folders of other inner archives)."""
        target = self.work / "unpacked"
        if not target.exists():
            staging = self.work / "unpacking"
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
            budget = self.budget
            links = Links(staging) if self.options.get("links") else None
            skipped = self.skipped if self.options.get("skip_bad_members") else None
            for name, path in self.artefacts.items():
                kind = archive_kind(name)
                if kind in ARCHIVES or (kind == "single" and self.options.get("decompress")):
                    unpack(path, staging, name=name, skipped=skipped, budget=budget, links=links or False)
                else:
                    copy_in(path, staging, name, budget)
            if self.options.get("unpack_inner"):
                unpack_inner(staging, budget, links)
            if links is not None:
                links.materialise(budget)
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

    def inside_out(self, value: str, field: str) -> Path:
        """out/<value> for an output path built from outside data (options, annotations, cells, member names);
        UnsafePathError naming the dataset, `field` and the value when it would leave out/."""
        from lifelong.data.fetch.containment import inside

        return inside(self.out, value, dataset=self.dataset, field=field)

    def inside_unpacked(self, value: str, field: str, under: Path | None = None) -> Path:
        """<under>/<value> (default: the unpacked artefacts) for an input path read from outside data, refused like
        `inside_out` when it would leave `under`; "." is `under` itself (a folder option's default)."""
        from lifelong.data.fetch.containment import inside

        folder = self.unpacked() if under is None else under
        return folder if value == "." else inside(folder, value, dataset=self.dataset, field=field)


def copy_file(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


def data_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))


def unpack_inner(folder: Path, budget: ByteBudget | None = None, links: Links | None = None) -> None:
    """Unpack the archives found inside unpacked archives, in place (each beside itself, then removed), to depth 3,
    charged to `budget`; their links (allowed only with `links`) join the conversion's."""
    for _ in range(3):
        inner = [p for p in folder.rglob("*") if p.is_file() and archive_kind(p.name) in ARCHIVES]
        if not inner:
            return
        for archive in inner:
            unpack(archive, archive.parent, budget=budget, links=links or False)
            archive.unlink()


def write_labels_csv(job: Conversion, rows: list[Row]) -> None:
    """`out/labels.csv` from (image path relative to out, label or list of labels, split or None) rows; every path
    must stay inside out/ (the csv source reads them relative to it)."""
    for number, (path, _, _) in enumerate(rows, start=2):  # line 1 is the header
        job.inside_out(path, f"labels.csv row {number} path")
    out = job.out
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

    target = job.inside_out(relative, "image path")
    target.parent.mkdir(parents=True, exist_ok=True)
    image = pixels[..., 0] if pixels.ndim == 3 and pixels.shape[-1] == 1 else pixels
    Image.fromarray(np.ascontiguousarray(image).astype(np.uint8)).save(target)
    return relative
