"""Unpacking artefacts safely: nothing lands outside the target folder and no more than the budget is written,
whatever the archive says.

Tar, zip and RAR members are read one by one and each goes through the same decision
(lifelong.data.fetch.members: plain files and folders inside the target; links only when the caller allows
them, and then as copies of what they name; nothing else), so no reliance on tarfile's extraction filter, which
links chained past PATH_MAX defeat (CVE-2025-4517) on the Pythons before 3.11.13 / 3.12.11 / 3.13.4. A single
compressed file is decompressed beside its name without the suffix; anything else is copied as it is. Every byte
written is charged to a ByteBudget as it streams. The bytes decide when the name lies: a zip served as .tgz is
unzipped, a unix-compressed (LZW) tar is decompressed as it is read and goes the tar way. RAR and LZW are read
through libarchive (lifelong.data.fetch.archives_libarchive).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import tarfile
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath

from lifelong.data.fetch import archives_libarchive as libarchive
from lifelong.data.fetch.budgets import ByteBudget
from lifelong.data.fetch.members import MAX_LINK_TARGET, Gate, Links, UnsafeArchiveError, chunks

__all__ = ["ARCHIVES", "Links", "UnsafeArchiveError", "archive_kind", "copy_in", "unpack"]

TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.z", ".taz")
SINGLE_FILE = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
ARCHIVES = ("tar", "zip", "rar")  # the kinds that hold members (a "single" file holds one payload)
ZIP_TYPES = {0: "file", 0o100000: "file", 0o040000: "dir", 0o120000: "symlink"}  # a unix mode's file type


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


def _unzip(archive: Path, gate: Gate, skipped: list[str] | None) -> None:
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            kind = ZIP_TYPES.get((info.external_attr >> 16) & 0o170000, "other")
            kind = "dir" if kind == "file" and info.is_dir() else kind
            link = ""
            if kind == "symlink" and gate.links is not None and info.file_size <= MAX_LINK_TARGET:
                link = zf.read(info).decode("utf-8", "replace")  # a zip stores a link's target as its data
            destination = gate.admit(info.filename, kind, size=info.file_size, link=link)
            if destination is None:
                continue
            if kind == "dir":
                gate.folder(destination)
                continue
            try:
                with zf.open(info) as src:
                    gate.write(destination, chunks(src), info.filename)
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


class _BlockReader(io.RawIOBase):
    """A read-only file object over byte blocks: tarfile's stream mode reads an LZW-compressed tar through it."""

    def __init__(self, blocks: Iterable[bytes]) -> None:
        self._blocks: Iterator[bytes] = iter(blocks)
        self._rest = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        while not self._rest:
            block = next(self._blocks, None)
            if block is None:
                return 0
            self._rest = memoryview(block)
        n = min(len(buffer), len(self._rest))
        buffer[:n] = self._rest[:n]
        self._rest = self._rest[n:]
        return n


def _tar_kind(info: tarfile.TarInfo) -> str:
    if info.isreg():
        return "file"
    if info.isdir():
        return "dir"
    return "symlink" if info.issym() else "hardlink" if info.islnk() else "other"


def _untar(archive: Path, gate: Gate) -> None:
    if libarchive.sniff(archive) == "lzw":  # .tar.Z: LZW-decompressed as tarfile reads it, nothing kept on disk
        with tarfile.open(fileobj=_BlockReader(libarchive.lzw_blocks(archive)), mode="r|") as tf:
            _tar_members(tf, gate)
        return
    with tarfile.open(archive) as tf:
        _tar_members(tf, gate)


def _tar_members(tf: tarfile.TarFile, gate: Gate) -> None:
    for info in tf:
        kind = _tar_kind(info)
        # a leading / is dropped from member names, hard links' targets included, as GNU tar does
        link = info.linkname.lstrip("/") if kind == "hardlink" else info.linkname
        name = info.name.lstrip("/")
        destination = gate.admit(name, kind, size=info.size if kind == "file" else None, link=link)
        if destination is None:
            continue
        if kind == "dir":
            gate.folder(destination)
            continue
        source = tf.extractfile(info)
        assert source is not None  # a regular member always has data
        with source:
            gate.write(destination, chunks(source), name)


def _unrar(archive: Path, gate: Gate, skipped: list[str] | None) -> None:
    for member in libarchive.rar_members(archive):
        destination = gate.admit(member.name, member.kind, size=member.size, link=member.link)
        if destination is None:
            continue
        if member.kind == "dir":
            gate.folder(destination)
            continue
        try:
            gate.write(destination, libarchive.member_blocks(member), member.name)
        except libarchive.ArchiveReadError as exc:
            _corrupt_member(archive, member.name, exc, destination, skipped)


def copy_in(source: Path, target: Path, name: str, budget: ByteBudget) -> Path:
    """`source` copied as it is to `target/name` (the name checked like a member's), charged to `budget`."""
    gate = Gate(name, target, None, budget)
    destination = gate.admit(name, "file", size=source.stat().st_size)
    assert destination is not None  # a file's name is never the folder itself
    with open(source, "rb") as src:
        gate.write(destination, chunks(src), name)
    return destination


def _decompress(archive: Path, gate: Gate, name: str) -> None:
    suffix = PurePosixPath(name).suffix
    inner = name[: -len(suffix)]
    destination = gate.admit(inner, "file")
    assert destination is not None
    if suffix.lower() == ".z":
        gate.write(destination, libarchive.lzw_blocks(archive), inner)
        return
    with SINGLE_FILE[suffix.lower()](archive, "rb") as src:
        gate.write(destination, chunks(src), inner)


def unpack(
    archive: Path,
    target: Path,
    *,
    name: str | None = None,
    skipped: list[str] | None = None,
    budget: ByteBudget | None = None,
    links: bool | Links = False,
) -> Path:
    """Unpack (or decompress, or copy) `archive` into `target`; returns `target`. `name` overrides the file name.

    Every byte written is charged to `budget` (None: no limit, for files the user made): past it, BudgetExceeded
    naming the member. `links`: False refuses any link (UnsafeArchiveError); True allows those that stay inside
    `target` and copies what they name in their place at the end; a `Links` collects them for the caller to
    materialise once every archive is unpacked (a link naming a file of another archive). A corrupt zip or RAR
    member is an error naming it, unless `skipped` is a list: then it is left out and named there (a published
    archive with a few unreadable images, which the reference code skips too). Whatever is refused leaves the
    files written so far to the caller.
    """
    name = name or archive.name
    budget = budget or ByteBudget.unlimited()
    target.mkdir(parents=True, exist_ok=True)
    collected = Links(target) if links is True else links or None
    gate = Gate(name, target, collected, budget)
    kind = archive_kind(name)
    if kind in ARCHIVES:  # the bytes decide when the name is wrong (a zip served as .tgz)
        sniffed = libarchive.sniff(archive)
        kind = "zip" if zipfile.is_zipfile(archive) else "tar" if sniffed == "lzw" else sniffed or kind
        kind = "tar" if kind != "zip" and tarfile.is_tarfile(archive) else kind
    try:
        if kind == "tar":
            _untar(archive, gate)
        elif kind == "zip":
            _unzip(archive, gate, skipped)
        elif kind == "rar":
            _unrar(archive, gate, skipped)
        elif kind == "single":
            _decompress(archive, gate, name)
        else:
            copy_in(archive, target, name, budget)
        if links is True and collected is not None:
            collected.materialise(budget)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, lzma.LZMAError, zlib.error) as exc:
        raise ValueError(f"{name}: cannot unpack ({exc})") from None
    except libarchive.ArchiveReadError as exc:
        raise ValueError(f"{name}: cannot unpack ({exc})") from None
    except libarchive.MissingLibarchive as exc:
        raise libarchive.MissingLibarchive(f"{name}: {exc}") from None
    return target
