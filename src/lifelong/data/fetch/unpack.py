"""Unpacking artefacts safely: nothing lands outside the target folder, whatever the archive says.

Tar archives go through Python's `data` filter (no absolute paths, no `..`, no links leaving the target, no
device files); zip and RAR members are checked one by one (the zip-slip guard; links and device files are
refused); a single compressed file is decompressed beside its name without the suffix. Anything else is copied
as it is. The bytes decide when the name lies: a zip served as .tgz is unzipped, a unix-compressed (LZW) tar is
decompressed to a plain tar first and then goes the tar way. RAR and LZW are read through libarchive
(lifelong.data.fetch.archives_libarchive). `resolve_links` turns the links inside an unpacked tree into files.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import shutil
import tarfile
import tempfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from lifelong.data.fetch import archives_libarchive as libarchive

TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.z", ".taz")
SINGLE_FILE = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
ARCHIVES = ("tar", "zip", "rar")  # the kinds that hold members (a "single" file holds one payload)


class UnsafeArchiveError(ValueError):
    """An archive member that would land outside the target folder (or is not a plain file or folder)."""


def archive_kind(name: str) -> str:
    """ "tar", "zip", "rar", "single" (one compressed file: .gz .bz2 .xz .Z) or "plain" from the file name."""
    lower = name.lower()
    if lower.endswith(TAR_SUFFIXES):
        return "tar"
    if lower.endswith((".zip", ".rar")):
        return lower[-3:]
    if PurePosixPath(lower).suffix in (*SINGLE_FILE, ".z"):
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
                _corrupt_member(archive, info.filename, exc, destination, skipped)


def _corrupt_member(archive: Path, member: str, exc: Exception, destination: Path, skipped: list[str] | None) -> None:
    """A member that cannot be read: an error naming it, or (with `skipped`) left out, its partial file removed."""
    if skipped is None:
        raise ValueError(
            f"{archive.name}: member {member!r} is corrupt ({exc}); the dataset's "
            "skip_bad_members = true option leaves such members out"
        ) from None
    destination.unlink(missing_ok=True)
    skipped.append(f"{archive.name}:{member}")


def _untar(archive: Path, target: Path) -> None:
    if libarchive.sniff(archive) == "lzw":  # .tar.Z: LZW-decompressed to a plain tar, which then goes the tar way
        with tempfile.TemporaryDirectory(dir=target, prefix=".lzw-") as scratch:
            plain = Path(scratch) / "archive.tar"
            libarchive.lzw_decompress(archive, plain)
            _untar_plain(plain, target, archive.name)
        return
    _untar_plain(archive, target, archive.name)


def _untar_plain(archive: Path, target: Path, name: str) -> None:
    with tarfile.open(archive) as tf:
        try:
            tf.extractall(target, filter="data")
        except tarfile.FilterError as exc:
            raise UnsafeArchiveError(f"{name}: {exc}") from None


def _unrar(archive: Path, target: Path, skipped: list[str] | None) -> None:
    for member in libarchive.rar_members(archive):
        destination = _inside(target, member.name, archive)
        if member.kind in ("link", "other"):
            what = "a link" if member.kind == "link" else "not a plain file or folder"
            raise UnsafeArchiveError(f"{archive.name}: member {member.name!r} is {what}")
        if member.kind == "dir":
            destination.mkdir(parents=True, exist_ok=True)
            continue
        destination.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(destination, "wb") as dst:
                for block in libarchive.member_blocks(member):
                    dst.write(block)
        except libarchive.ArchiveReadError as exc:
            _corrupt_member(archive, member.name, exc, destination, skipped)


def resolve_links(folder: Path) -> None:
    """Every symbolic link under `folder` replaced by the file it names (a hard link, else a copy), so converters
    that move files see no link; a link leaving `folder` is an UnsafeArchiveError, a dangling one is removed."""
    root = folder.resolve()
    for link in sorted(p for p in folder.rglob("*") if p.is_symlink()):
        try:
            real = link.resolve()
        except (OSError, RuntimeError):  # a loop of links: it names nothing
            link.unlink()
            continue
        if root not in real.parents:
            raise UnsafeArchiveError(f"{link.relative_to(folder)} links outside the unpacked artefacts")
        if real in link.parents:  # copying it would copy the copy without end
            raise UnsafeArchiveError(f"{link.relative_to(folder)} links to a folder holding it")
        link.unlink()
        if real.is_file():
            try:
                os.link(real, link)
            except OSError:
                shutil.copyfile(real, link)
        elif real.is_dir():
            shutil.copytree(real, link, symlinks=False)


def unpack(archive: Path, target: Path, *, name: str | None = None, skipped: list[str] | None = None) -> Path:
    """Unpack (or decompress, or copy) `archive` into `target`; returns `target`. `name` overrides the file name.

    A corrupt zip or RAR member is an error naming it, unless `skipped` is a list: then it is left out and named
    there (a published archive with a few unreadable images, which the reference code skips too).
    """
    name = name or archive.name
    target.mkdir(parents=True, exist_ok=True)
    kind = archive_kind(name)
    if kind in ARCHIVES:  # the bytes decide when the name is wrong (a zip served as .tgz)
        sniffed = libarchive.sniff(archive)
        kind = "zip" if zipfile.is_zipfile(archive) else "tar" if sniffed == "lzw" else sniffed or kind
        kind = "tar" if kind != "zip" and tarfile.is_tarfile(archive) else kind
    try:
        if kind == "tar":
            _untar(archive, target)
        elif kind == "zip":
            _unzip(archive, target, skipped)
        elif kind == "rar":
            _unrar(archive, target, skipped)
        elif kind == "single":
            suffix = PurePosixPath(name).suffix
            out = _inside(target, name[: -len(suffix)], archive)
            if suffix.lower() == ".z":
                libarchive.lzw_decompress(archive, out)
            else:
                with SINGLE_FILE[suffix.lower()](archive, "rb") as src, open(out, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
        else:
            shutil.copyfile(archive, _inside(target, name, archive))
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, lzma.LZMAError, zlib.error) as exc:
        raise ValueError(f"{name}: cannot unpack ({exc})") from None
    except libarchive.ArchiveReadError as exc:
        raise ValueError(f"{name}: cannot unpack ({exc})") from None
    except libarchive.MissingLibarchive as exc:
        raise libarchive.MissingLibarchive(f"{name}: {exc}") from None
    return target
