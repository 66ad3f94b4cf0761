"""What may come out of an archive: one decision on every member of a tar, zip or RAR before any of it is written.

Plain files and folders land under the target (their path checked by lifelong.data.fetch.containment, a tar's
leading `/` dropped by its reader); device files, fifos and sockets are refused; a link (symbolic or hard) is
refused unless the caller allows links, and then only when what it names, followed lexically (a symbolic link
from its own folder, a hard link from its archive's root, through the other links met on the way, at most
MAX_HOPS of them), stays inside the unpack folder. No link is ever made on disk: once every file is written,
`Links.materialise` puts a copy of what each allowed link names in its place, every byte and every entry charged
to the unpack's ByteBudget, so links to folders cannot multiply an archive without bound. Every file is written
fresh (what was there removed, then O_CREAT|O_EXCL|O_NOFOLLOW), so nothing is ever written through a link.
"""

from __future__ import annotations

import bisect
import os
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from lifelong.data.fetch.budgets import ByteBudget
from lifelong.data.fetch.containment import UnsafePathError, inside, relative_parts

CHUNK = 1 << 20  # bytes read, charged and written at a time
MAX_HOPS = 40  # links followed while resolving one link (Linux's MAXSYMLINKS)
ENTRY_BYTES = 512  # charged per file or folder a link copy makes, beside its bytes (a tar header's size)
MAX_LINK_TARGET = 4096  # a zip stores a link's target as the member's data: longer is not a path (PATH_MAX)
KINDS = ("file", "dir", "symlink", "hardlink")  # what an archive reader may admit; anything else is refused
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
Parts = tuple[str, ...]  # an absolute path, split


class UnsafeArchiveError(UnsafePathError):
    """An archive member that would land outside the target folder, or is not a plain file, folder or allowed link."""


def chunks(source: BinaryIO) -> Iterable[bytes]:
    """A file object's bytes, CHUNK at a time."""
    return iter(lambda: source.read(CHUNK), b"")


def write_fresh(path: Path, blocks: Iterable[bytes], budget: ByteBudget, item: str) -> None:
    """`blocks` into a new file at `path` (whatever was there removed first, never followed), each block charged to
    `budget` before it is written: a bomb stops at the budget with BudgetExceeded, its partial file left behind."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    with os.fdopen(os.open(path, _FLAGS, 0o644), "wb") as out:
        for block in blocks:
            budget.charge(len(block), item)
            out.write(block)


def _parts(path: Path) -> Parts:
    return Path(os.path.abspath(path)).parts


@dataclass(frozen=True)
class Link:
    """An allowed link waiting for its copy: where it is, what it names as stored, where a hard link's name starts."""

    at: Parts
    kind: str  # "symlink" or "hardlink"
    target: str
    base: Parts  # the folder its archive unpacks to
    item: str  # "ARCHIVE member 'NAME'", for messages


class Links:
    """The links allowed in the unpacks under `root` (one archive's, or all of one conversion's, so that a link
    may name a file of another archive, as VisTex's do); nothing they name may lie outside `root`."""

    def __init__(self, root: Path) -> None:
        self.root = _parts(root)
        self.pending: dict[Parts, Link] = {}

    def through(self, at: Parts) -> Link | None:
        """The link a member at `at` would be written through (one of its folders is a link), if any."""
        return next((self.pending[at[:n]] for n in range(len(self.root) + 1, len(at)) if at[:n] in self.pending), None)

    @staticmethod
    def _outside(link: Link) -> UnsafeArchiveError:
        return UnsafeArchiveError(f"{link.item} links to {link.target!r}, outside the unpacked folder; refused")

    def _target(self, link: Link) -> list[str]:
        """The link's target split into names; UnsafeArchiveError when it is empty, absolute or not a path."""
        text = link.target
        if not text:
            raise UnsafeArchiveError(f"{link.item} links to no path (none, or over {MAX_LINK_TARGET} bytes); refused")
        if text.startswith(("/", "\\")):
            raise self._outside(link)
        names = text.replace("\\", "/").split("/")
        for name in names:
            if name not in ("", ".", ".."):
                try:
                    relative_parts(name, dataset=link.item, field="link target")
                except UnsafePathError as exc:
                    raise UnsafeArchiveError(str(exc)) from None
        return names

    def resolve(self, link: Link) -> Parts:
        """What `link` names, every link on the way followed lexically; UnsafeArchiveError when it leaves `root`
        or goes round (more than MAX_HOPS links)."""
        out = list(link.at[:-1] if link.kind == "symlink" else link.base)
        queue, hops = deque(self._target(link)), 0
        while queue:
            name = queue.popleft()
            if name in ("", "."):
                continue
            if name == "..":
                if len(out) <= len(self.root):
                    raise self._outside(link)
                out.pop()
                continue
            out.append(name)
            hop = self.pending.get(tuple(out))
            if hop is not None:
                hops += 1
                if hops > MAX_HOPS:
                    raise UnsafeArchiveError(f"{link.item}: its links go round (more than {MAX_HOPS} hops); refused")
                out = out[:-1] if hop.kind == "symlink" else list(hop.base)
                queue.extendleft(reversed(self._target(hop)))
        return tuple(out)

    def add(self, link: Link) -> None:
        """Keep an allowed link (checked with the links known so far: a chain is followed as far as it goes)."""
        self.resolve(link)
        self.pending[link.at] = link

    def drop(self, at: Parts) -> None:
        """A later member at a link's place replaces the link."""
        self.pending.pop(at, None)

    def materialise(self, budget: ByteBudget) -> None:
        """Each link replaced by a copy of what it names (links inside a copied folder copied first; one naming
        nothing is left out); UnsafeArchiveError for a link to a folder holding it or a ring of such links."""
        keys = sorted(self.pending)
        state: dict[Parts, str] = {}  # "open" while the links it copies are materialised, then "done"
        for first in keys:
            stack = [first]
            while stack:
                at = stack[-1]
                if state.get(at) == "done":
                    stack.pop()
                    continue
                link = self.pending[at]
                source = self.resolve(link)
                if at[: len(source)] == source:
                    raise UnsafeArchiveError(f"{link.item} links to a folder holding it; refused (a copy without end)")
                if state.get(at) is None:
                    state[at] = "open"
                    waiting = [k for k in _under(keys, source) if state.get(k) != "done"]
                    if any(state.get(k) == "open" for k in waiting):
                        raise UnsafeArchiveError(f"{link.item} links to a folder whose links lead back to it; refused")
                    if waiting:
                        stack.extend(waiting)
                        continue
                self._copy(link, source, budget)
                state[at] = "done"
                stack.pop()
        self.pending.clear()

    def _copy(self, link: Link, source: Parts, budget: ByteBudget) -> None:
        src, dst = Path(*source), Path(*link.at)
        if not os.path.lexists(src):
            return  # a link naming nothing: left out
        real_root = os.path.realpath(Path(*self.root))
        if os.path.realpath(src) != os.path.join(real_root, *source[len(self.root) :]):
            raise UnsafeArchiveError(f"{link.item}: {src} is reached through a link on disk; refused")
        if dst.is_dir() and not dst.is_symlink():
            raise UnsafeArchiveError(f"{link.item} is a link where the archive holds a folder; refused")
        if os.path.lexists(dst):
            os.unlink(dst)  # an earlier member at the link's place: the later link wins, as in tar
        dst.parent.mkdir(parents=True, exist_ok=True)
        copy_tree(src, dst, budget, f"{link.item} (a copy of what it links to)")


def _under(keys: list[Parts], folder: Parts) -> list[Parts]:
    """The keys (sorted) inside `folder`: a run of the sorted list."""
    found, i = [], bisect.bisect_right(keys, folder)
    while i < len(keys) and keys[i][: len(folder)] == folder:
        found.append(keys[i])
        i += 1
    return found


def copy_tree(src: Path, dst: Path, budget: ByteBudget, item: str) -> None:
    """A file or folder copied from `src` to `dst`, links never followed, every entry and byte charged to `budget`."""
    todo = [(src, dst)]
    while todo:
        source, target = todo.pop()
        budget.charge(ENTRY_BYTES, item)
        if source.is_symlink() or not (source.is_file() or source.is_dir()):
            raise UnsafeArchiveError(f"{item}: {source} is not a plain file or folder; refused")
        if source.is_dir():
            target.mkdir()
            todo.extend((entry, target / entry.name) for entry in sorted(source.iterdir(), reverse=True))
            continue
        with open(source, "rb") as f:
            write_fresh(target, chunks(f), budget, item)


class Gate:
    """The decision on every member of one archive unpacking into `target`, made before any of it is written."""

    def __init__(self, archive: str, target: Path, links: Links | None, budget: ByteBudget) -> None:
        self.archive, self.target, self.links, self.budget = archive, target, links, budget
        self.base = _parts(target)
        if links is not None and self.base[: len(links.root)] != links.root:
            raise ValueError(f"{archive}: unpacking into {target}, outside the links' folder {Path(*links.root)}")

    def item(self, name: str) -> str:
        return f"{self.archive} member {name!r}"

    def admit(self, name: str, kind: str, *, size: int | None = None, link: str = "") -> Path | None:
        """Where a file or folder member goes; None for the target folder itself and for an allowed link (kept for
        `Links.materialise`). UnsafeArchiveError for anything else, BudgetExceeded for a file declaring more bytes
        than the budget has left."""
        item = self.item(name)
        if kind not in KINDS:
            raise UnsafeArchiveError(f"{item} is not a plain file, folder or link (a device, fifo or socket); refused")
        if kind == "dir" and not [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]:
            return None  # the target folder itself ("./" in many tars)
        try:
            path = inside(self.target, name, dataset=self.archive, field="member")
        except UnsafePathError as exc:
            raise UnsafeArchiveError(str(exc)) from None
        at = _parts(path)
        if self.links is not None:
            under = self.links.through(at)
            if under is not None:
                raise UnsafeArchiveError(f"{item} lies under the link {under.item}; refused (never written through)")
        if kind in ("symlink", "hardlink"):
            if self.links is None:
                raise UnsafeArchiveError(
                    f"{item} is a link (to {link!r}); links are refused unless the dataset sets the option links = true"
                )
            self.links.add(Link(at, kind, link, self.base, item))
            return None
        self.budget.check_declared(size, item)
        if self.links is not None:
            self.links.drop(at)
        return path

    def folder(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)

    def write(self, path: Path, blocks: Iterable[bytes], name: str) -> None:
        """A file member's bytes into a fresh file, charged to the budget as they stream."""
        path.parent.mkdir(parents=True, exist_ok=True)
        write_fresh(path, blocks, self.budget, self.item(name))
