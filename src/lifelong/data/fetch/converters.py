"""Converters: verified artefacts in, one of the layouts lifelong.data.sources reads out (no loader changes).

Each converter gets a `Conversion`: the verified artefact files, a scratch folder and the empty output folder,
plus the dataset's `[dataset.options]`. It writes only into the output folder; the installer renames that
folder into place once it is whole. `VERSIONS` is recorded in provenance.json, so a changed converter can be
told from an old conversion.

- `idx`: IDX files (plain, gzipped, or inside an archive) copied under their IDX names. Option
  `rename = {"archive file name" = "train-images-idx3-ubyte.gz", ...}` for files named otherwise.
- `cifar`: the CIFAR "python version" pickles (CIFAR-10's data_batch_1..5 + test_batch, or CIFAR-100's
  train + test), wherever they sit in the archive.
- `folder`: an image folder. Option `root` (a folder inside the unpacked archives holding <class>/ folders or
  train/ val/ test/ folders) or `splits = {train = "path", test = "path"}` (one folder of class folders each).
- `clear`: CLEAR's released archives (train_image_only/, test/, ...) unpacked as they are; checked by
  opening the result as lifelong.data.sources.clear.ClearFolder.
- `pattern`, `table`, `voc`, `mat`: the labels.csv layout (lifelong.data.fetch.converters_tables).
- `copy`: the artefacts themselves (unpacked when `unpack = true`; `strip_top = true` lifts the contents of
  an archive's single top folder): level files, the fact-learning authors' CSVs, side files.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from lifelong.data.fetch.conversion import Conversion, copy_file, data_files
from lifelong.data.fetch.converters_tables import (
    convert_imagenet,
    convert_mat,
    convert_pattern,
    convert_table,
    convert_voc,
)

VERSIONS = {
    "idx": 1,
    "cifar": 1,
    "folder": 1,
    "clear": 1,
    "copy": 1,
    "pattern": 1,
    "table": 1,
    "voc": 1,
    "mat": 1,
    "imagenet": 1,
}


def convert_idx(job: Conversion) -> None:
    from lifelong.data.sources.idx import IDX_FILE_NAME

    rename = job.options.get("rename", {})
    found = 0
    for path in data_files(job.unpacked()):
        name = rename.get(path.name, path.name)
        if IDX_FILE_NAME.match(name):
            if (job.out / name).exists():
                raise job.fail(f"two IDX files named {name} in the artefacts")
            copy_file(path, job.out / name)
            found += 1
    if not found:
        raise job.fail("no IDX files (PREFIX-images-idx3-ubyte[.gz], PREFIX-labels-idx1-ubyte[.gz]) in the artefacts")


def convert_cifar(job: Conversion) -> None:
    from lifelong.data.sources.cifar import cifar_layout

    folders = [p for p in [job.unpacked(), *job.unpacked().rglob("*")] if p.is_dir() and cifar_layout(p)]
    if len(folders) != 1:
        where = ", ".join(str(p) for p in folders) or "none"
        raise job.fail(f"expected one folder of CIFAR pickles in the artefacts, found {len(folders)}: {where}")
    for path in folders[0].iterdir():
        if path.is_file():
            copy_file(path, job.out / path.name)


def _inside(job: Conversion, base: Path, relative: str) -> Path:
    folder = (base / relative).resolve()
    if base.resolve() not in (folder, *folder.parents) or not folder.is_dir():
        raise job.fail(f"folder {relative!r} is not in the unpacked artefacts")
    return folder


def convert_folder(job: Conversion) -> None:
    base = job.unpacked()
    splits = job.options.get("splits")
    sources = (
        {split: _inside(job, base, rel) for split, rel in splits.items()}
        if splits
        else {"": _inside(job, base, job.options.get("root", "."))}
    )
    for split, folder in sources.items():
        target = job.out / split if split else job.out
        target.mkdir(parents=True, exist_ok=True)
        for child in sorted(folder.iterdir()):
            if not child.name.startswith("."):
                shutil.move(str(child), target / child.name)


def _move_contents(source: Path, out: Path, strip_top: bool) -> None:
    children = [c for c in sorted(source.iterdir()) if not c.name.startswith(".")]
    if strip_top and len(children) == 1 and children[0].is_dir():
        children = sorted(children[0].iterdir())
    for child in children:
        shutil.move(str(child), out / child.name)


def convert_clear(job: Conversion) -> None:
    from lifelong.data.sources.clear import ClearFolder

    _move_contents(job.unpacked(), job.out, strip_top=False)
    try:
        ClearFolder(job.out)
    except (FileNotFoundError, ValueError) as exc:
        raise job.fail(f"the unpacked archives are not CLEAR's layout: {exc}") from None


def convert_copy(job: Conversion) -> None:
    if not job.options.get("unpack"):
        for name, path in job.artefacts.items():
            copy_file(path, job.out / name)
        return
    _move_contents(job.unpacked(), job.out, strip_top=bool(job.options.get("strip_top")))


CONVERTERS: dict[str, Callable[[Conversion], None]] = {
    "idx": convert_idx,
    "cifar": convert_cifar,
    "folder": convert_folder,
    "clear": convert_clear,
    "copy": convert_copy,
    "pattern": convert_pattern,
    "table": convert_table,
    "voc": convert_voc,
    "mat": convert_mat,
    "imagenet": convert_imagenet,
}
# What the installer checks after a converter ran: the source kind lifelong.data.sources detects in the output.
DETECTED = {"idx": "idx:", "cifar": "cifar:", "folder": "folder:", "imagenet": "folder:"}
DETECTED |= dict.fromkeys(("pattern", "table", "voc", "mat"), "csv:")
