"""Reading the archive formats Python cannot: RAR (4.x and 5) and unix `compress` (LZW, `.Z`), via libarchive.

Only reading happens here (members with their kind and bytes, a decompressed stream); where the bytes go, and
what is refused, is lifelong.data.fetch.unpack's job. The Python binding `libarchive-c` (the `fetch` extra)
loads the system's libarchive shared library; either one missing is an error saying what to install.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lifelong.core.errors import LifelongError

RAR4_MAGIC = b"Rar!\x1a\x07\x00"
RAR5_MAGIC = b"Rar!\x1a\x07\x01\x00"
LZW_MAGIC = b"\x1f\x9d"
INSTALL_HINT = (
    "RAR and unix-compress (.Z) archives need libarchive: the Python package libarchive-c "
    "(pip install 'libarchive-c>=5.3', part of the project's [fetch] extra) and the libarchive shared library "
    "(Debian 12 / Ubuntu: apt-get install libarchive13; Debian 13: libarchive13t64; macOS: brew install libarchive)"
)


class ArchiveReadError(Exception):
    """libarchive could not read the archive (corrupt, truncated, unsupported)."""


class MissingLibarchive(LifelongError, ValueError):
    """libarchive-c or the libarchive shared library is not installed."""


@dataclass(frozen=True)
class Member:
    name: str
    kind: str  # "file", "dir", "symlink", "hardlink" or "other" (device, fifo, socket)
    entry: Any  # the libarchive entry: read its data with `member_blocks` before the next member
    size: int | None = None  # as the header declares it (None when it does not say)
    link: str = ""  # what a link names


def libarchive() -> Any:
    """The `libarchive` module, or MissingLibarchive saying what to install."""
    try:
        import libarchive as module  # the binding loads the shared library on import
    except ImportError as exc:
        raise MissingLibarchive(f"{INSTALL_HINT} ({exc})") from None
    except (OSError, AttributeError, TypeError) as exc:  # the package is there, the shared library is not
        raise MissingLibarchive(f"{INSTALL_HINT} (loading the shared library failed: {exc})") from None
    return module


def sniff(path: Path) -> str | None:
    """ "rar" or "lzw" when the file's first bytes say so, else None (the bytes decide, not the name)."""
    with open(path, "rb") as f:
        head = f.read(8)
    if head.startswith((RAR4_MAGIC, RAR5_MAGIC)):
        return "rar"
    return "lzw" if head.startswith(LZW_MAGIC) else None


def _kind(entry: Any) -> str:
    if entry.issym:
        return "symlink"
    if entry.islnk:
        return "hardlink"
    if entry.isdir:
        return "dir"
    return "file" if entry.isreg else "other"


def _message(exc: Exception) -> str:
    return str(getattr(exc, "msg", None) or "unreadable or cut short")


def rar_members(path: Path) -> Iterator[Member]:
    """The members of a RAR archive, in archive order; ArchiveReadError when its headers cannot be read."""
    module = libarchive()
    with open(path, "rb") as f:
        fmt = "rar5" if f.read(8).startswith(RAR5_MAGIC) else "rar"
    try:
        with module.file_reader(str(path), format_name=fmt, filter_name="none") as archive:
            for entry in archive:
                kind = _kind(entry)
                link = (entry.linkpath or "") if kind in ("symlink", "hardlink") else ""
                yield Member(entry.pathname, kind, entry, entry.size, link)
    except module.ArchiveError as exc:
        raise ArchiveReadError(_message(exc)) from None


def member_blocks(member: Member) -> Iterator[bytes]:
    """A member's bytes, block by block; ArchiveReadError when they are corrupt (a CRC mismatch, cut short)."""
    module = libarchive()
    try:
        yield from member.entry.get_blocks()
    except module.ArchiveError as exc:
        raise ArchiveReadError(_message(exc)) from None


def lzw_blocks(source: Path) -> Iterator[bytes]:
    """A unix `compress` (.Z) file's decompressed bytes, block by block (the caller decides where they go and how
    many it takes); ArchiveReadError when it is not valid LZW data."""
    module = libarchive()
    if sniff(source) != "lzw":
        raise ArchiveReadError("not unix-compress (LZW) data: it lacks the 1f 9d magic bytes")
    try:
        with module.file_reader(str(source), format_name="raw", filter_name="compress") as archive:
            for entry in archive:
                yield from entry.get_blocks()
    except module.ArchiveError as exc:
        raise ArchiveReadError(_message(exc)) from None
