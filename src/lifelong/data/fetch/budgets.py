"""Budgets for everything a fetch takes from elsewhere: bytes written, disk needed, time spent.

An archive, a server or a manifest decides how much it asks for; these budgets decide how much it gets. Every
unpack and link copy charges a `ByteBudget` while it streams, and stops at its limit with a `BudgetExceeded`
naming the artefact, the budget and the option that raises it (`lifelong data fetch --max-unpacked`). Budgets,
defaults and how to set them: docs/security.md.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from lifelong.core.errors import DataError

KB, MB, GB, TB = 1000, 1000**2, 1000**3, 1000**4
DEFAULT_UNPACK_RATIO = 20.0  # unpacked bytes per archive byte when the manifest gives no unpacked_size
DEFAULT_UNPACK_CAP = 100 * GB  # never more than this without --max-unpacked, whatever the archives' size
UNPACKED_SIZE_SLACK = 1.05  # a manifest's unpacked_size, plus this much, plus one MB (file systems differ)
_UNITS = {"": 1, "b": 1, "k": KB, "kb": KB, "m": MB, "mb": MB, "g": GB, "gb": GB, "t": TB, "tb": TB}
_UNITS |= {"kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4}


class BudgetExceeded(DataError, ValueError):
    """More bytes, disk or time than a budget allows: says which artefact, which budget, and the option to set."""


def parse_size(text: str) -> int:
    """Bytes from "500MB", "2.5 GB", "1GiB" or "1048576"; a ValueError says the accepted forms."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise ValueError(f"{text!r} is not a size: use a number of bytes with an optional unit (500MB, 2GB, 1GiB)")
    return int(float(match.group(1)) * _UNITS[unit])


def parse_duration(text: str) -> float:
    """Seconds from "90", "90s", "30m", "2h" or "1d"; a ValueError says the accepted forms."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text.lower())
    if match is None or float(match.group(1)) <= 0:
        raise ValueError(f"{text!r} is not a duration: use seconds or a number with s, m, h or d (90s, 30m, 2h)")
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]


def format_size(n: float | None) -> str:
    """ "26.4 MB" style (powers of 1000), "?" for None."""
    if n is None:
        return "?"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n}"


@dataclass(frozen=True)
class UnpackLimit:
    """How the unpack budget of a dataset is set: `--max-unpacked` as a size (`cap`), a ratio (`20x`), or both."""

    ratio: float = DEFAULT_UNPACK_RATIO
    cap: int = DEFAULT_UNPACK_CAP
    explicit_cap: bool = False  # the user gave a size: it replaces the manifest's unpacked_size too

    @classmethod
    def parse(cls, text: str | None) -> UnpackLimit:
        """From `--max-unpacked`: "50GB", "30x" or "30x,50GB"; None gives the defaults."""
        if not text:
            return cls()
        ratio, cap, explicit = DEFAULT_UNPACK_RATIO, DEFAULT_UNPACK_CAP, False
        for part in (p.strip() for p in text.split(",")):
            if part.lower().endswith("x"):
                try:
                    ratio = float(part[:-1])
                except ValueError:
                    ratio = -1.0
                if not ratio > 0:
                    raise ValueError(f"--max-unpacked {text!r}: a ratio is a positive number followed by x (30x)")
            else:
                try:
                    cap, explicit = parse_size(part), True
                except ValueError as exc:
                    raise ValueError(f"--max-unpacked {text!r}: {exc}") from None
        return cls(ratio, cap, explicit)

    def budget_for(self, archive_bytes: int, unpacked_size: int | None) -> tuple[int, str]:
        """The byte budget for one dataset's unpacking and where it comes from (said in the error)."""
        if self.explicit_cap:
            return self.cap, f"--max-unpacked {format_size(self.cap)}"
        if unpacked_size is not None:
            limit = int(unpacked_size * UNPACKED_SIZE_SLACK) + MB
            return limit, f"the manifest's unpacked_size {format_size(unpacked_size)} (+5%)"
        by_ratio = int(archive_bytes * self.ratio) + MB
        if by_ratio <= self.cap:
            return by_ratio, f"{self.ratio:g}x the archives' {format_size(archive_bytes)}"
        return self.cap, f"the cap of {format_size(self.cap)}"


class ByteBudget:
    """Bytes an unpack may write: `charge(n, item)` before writing n bytes; past the limit, BudgetExceeded."""

    def __init__(self, limit: int, source: str, dataset: str, option: str = "--max-unpacked") -> None:
        self.limit, self.source, self.dataset, self.option = limit, source, dataset, option
        self.used = 0

    def charge(self, n: int, item: str) -> None:
        """Count `n` more bytes for `item` (an archive member, a link copy); refuses before they exceed the limit."""
        if self.used + n > self.limit:
            raise BudgetExceeded(
                f"{self.dataset}: unpacking {item} goes past the unpack budget of {format_size(self.limit)} "
                f"({self.source}; {format_size(self.used)} written before it); if you trust this archive, raise "
                f"the budget with {self.option} SIZE (or a ratio, e.g. 50x)"
            )
        self.used += n

    def remaining(self) -> int:
        return self.limit - self.used

    def check_declared(self, size: int | None, item: str) -> None:
        """Refuse, before a byte is written, an item whose declared size alone is more than the budget has left."""
        if size is not None and size > self.remaining():
            self.charge(size, f"{item}, which declares {format_size(size)},")  # raises

    @classmethod
    def unlimited(cls, dataset: str = "this dataset") -> ByteBudget:
        """A budget that never ends (for files the user made: tests, local conversions of trusted data)."""
        return cls(1 << 62, "no limit", dataset)


def check_free_disk(where: Path, needed: int, what: str) -> None:
    """A BudgetExceeded when the file system holding `where` has less than `needed` bytes free."""
    existing = next(p for p in (where, *where.parents) if p.exists())
    free = shutil.disk_usage(existing).free
    if free < needed:
        raise BudgetExceeded(
            f"{what} needs about {format_size(needed)} of disk and {existing} has {format_size(free)} free; "
            "free some space or choose another --data-root"
        )
