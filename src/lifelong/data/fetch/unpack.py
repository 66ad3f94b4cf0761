"""Unpacking artefacts safely: nothing lands outside the target folder, whatever the archive says.

Tar archives go through Python's `data` filter (no absolute paths, no `..`, no links leaving the target, no
device files); zip members are checked one by one (the zip-slip guard); a single compressed file is
decompressed beside its name without the suffix. Anything else is copied as it is.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import shutil
import tarfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath

TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
SINGLE_FILE = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


class UnsafeArchiveError(ValueError):
    """An archive member that would land outside the target folder (or is not a plain file or folder)."""


def archive_kind(name: str) -> str:
    """ "tar", "zip", "single" (one compressed file) or "plain" from the file name."""
    lower = name.lower()
    if lower.endswith(TAR_SUFFIXES):
        return "tar"
    if lower.endswith(".zip"):
        return "zip"
    if PurePosixPath(lower).suffix in SINGLE_FILE:
        return "single"
    return "plain"


def _inside(target: Path, member: str, archive: Path) -> Path:
    """The path `member` unpacks to, or an UnsafeArchiveError when it leaves `target`."""
    parts = PurePosixPath(member.replace("\\", "/"))
    if parts.is_absolute() or ".." in parts.parts or (parts.parts and parts.parts[0].endswith(":")):
        raise UnsafeArchiveError(f"{archive.name}: member {member!r} would unpack outside {target}")
    destination = (target / parts).resolve()
    if destination != target.resolve() and target.resolve() not in destination.parents:
        raise UnsafeArchiveError(f"{archive.name}: member {member!r} would unpack outside {target}")
    return destination


def _unzip(archive: Path, target: Path, skipped: list[str] | None) -> None:
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            destination = _inside(target, info.filename, archive)
            mode = (info.external_attr >> 16) & 0o170000
            if mode == 0o120000:  # a symbolic link stored in the zip
                raise UnsafeArchiveError(f"{archive.name}: member {info.filename!r} is a symbolic link")
            if info.is_dir():
                destination.mkdir(parents=True, exist_ok=True)
                continue
            destination.parent.mkdir(parents=True, exist_ok=True)
            try:
                with zf.open(info) as src, open(destination, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
                if skipped is None:
                    raise ValueError(
                        f"{archive.name}: member {info.filename!r} is corrupt ({exc}); the dataset's "
                        "skip_bad_members = true option leaves such members out"
                    ) from None
                destination.unlink(missing_ok=True)
                skipped.append(f"{archive.name}:{info.filename}")


def _untar(archive: Path, target: Path) -> None:
    with tarfile.open(archive) as tf:
        try:
            tf.extractall(target, filter="data")
        except tarfile.FilterError as exc:
            raise UnsafeArchiveError(f"{archive.name}: {exc}") from None


def unpack(archive: Path, target: Path, *, name: str | None = None, skipped: list[str] | None = None) -> Path:
    """Unpack (or decompress, or copy) `archive` into `target`; returns `target`. `name` overrides the file name.

    A corrupt zip member is an error naming it, unless `skipped` is a list: then it is left out and named there
    (a published archive with a few unreadable images, which the reference code skips too).
    """
    name = name or archive.name
    target.mkdir(parents=True, exist_ok=True)
    kind = archive_kind(name)
    if kind in ("tar", "zip"):  # the bytes decide when the name is wrong (a zip served as .tgz)
        kind = "zip" if zipfile.is_zipfile(archive) else "tar" if tarfile.is_tarfile(archive) else kind
    try:
        if kind == "tar":
            _untar(archive, target)
        elif kind == "zip":
            _unzip(archive, target, skipped)
        elif kind == "single":
            suffix = PurePosixPath(name).suffix
            out = _inside(target, name[: -len(suffix)], archive)
            with SINGLE_FILE[suffix.lower()](archive, "rb") as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        else:
            shutil.copyfile(archive, _inside(target, name, archive))
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, lzma.LZMAError, zlib.error) as exc:
        raise ValueError(f"{name}: cannot unpack ({exc})") from None
    return target
