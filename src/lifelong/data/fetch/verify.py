"""Checking an artefact before anything is unpacked: its digest, or the digest of its decompressed payload.

A single compressed file (`.gz`, `.bz2`, `.xz`) that a distribution recompressed (Debian's
`dataset-fashion-mnist` rewrote the gzip headers) has other bytes than the published file while holding the
same content. Such an artefact may record `payload_sha256`, the digest of its decompressed bytes: a file whose
own digest differs is then accepted when its payload's matches, and the provenance says which check passed.
The payload itself, uncompressed under the name without the suffix (`--from` a folder of plain IDX files), passes
by the same digest.

An artefact whose hosts serve different bytes lists its digests per copy (`[[dataset.artefacts.copies]]`): a
download is checked against the digests of the copy that served it; a file whose source is unknown (`--from`,
a `--mirror`, a redirect to another host) passes when it matches every digest of any one copy. Without copies,
every listed digest must match (`digests = "any"`: one of them suffices).
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from lifelong.core.errors import DataError
from lifelong.data.fetch.manifest import DIGESTS, Artefact, Copy

CHUNK = 1 << 20
DECOMPRESSORS: dict[str, Callable[[Path], BinaryIO]] = {
    ".gz": lambda p: gzip.open(p, "rb"),  # type: ignore[dict-item]
    ".bz2": lambda p: bz2.open(p, "rb"),  # type: ignore[dict-item]
    ".xz": lambda p: lzma.open(p, "rb"),  # type: ignore[dict-item]
}


class ChecksumError(DataError, ValueError):
    """An artefact whose bytes are not the ones the manifest names."""


@dataclass(frozen=True)
class Verified:
    """How an artefact passed: `check` is "sha256", "md5" or "payload_sha256" (with the copy's URL for an artefact
    listed per copy: "md5 (copy URL)"); `digests` what was computed; `copy` the URL of the copy whose digests passed."""

    file: str
    check: str
    digests: dict[str, str]
    copy: str | None = None


def stream_digests(stream: BinaryIO, algorithms: tuple[str, ...]) -> dict[str, str]:
    """Hex digests of everything `stream` yields, one pass for all `algorithms`."""
    hashers = {algo: hashlib.new(algo) for algo in algorithms}
    while chunk := stream.read(CHUNK):
        for h in hashers.values():
            h.update(chunk)
    return {algo: h.hexdigest() for algo, h in hashers.items()}


def file_digests(path: Path, algorithms: tuple[str, ...] = ("sha256", "md5")) -> dict[str, str]:
    with open(path, "rb") as f:
        return stream_digests(f, algorithms)


def uncompressed_name(file: str) -> str | None:
    """The name of a single compressed file's payload (`x.gz` -> `x`), or None for any other name."""
    suffix = Path(file).suffix
    return file[: -len(suffix)] if suffix.lower() in DECOMPRESSORS else None


def payload_digest(path: Path) -> str:
    """The sha256 of a single compressed file's decompressed bytes, or why there is none (in parentheses)."""
    opener = DECOMPRESSORS.get(path.suffix.lower())
    if opener is None:
        return "(not a single compressed file)"
    try:
        with opener(path) as f:
            return stream_digests(f, ("sha256",))["sha256"]
    except (OSError, EOFError, lzma.LZMAError) as exc:
        return f"(cannot be decompressed: {exc})"


def _same_url(a: str, b: str) -> bool:
    """The same URL, scheme and host compared without case."""
    x, y = urllib.parse.urlsplit(a), urllib.parse.urlsplit(b)
    return x._replace(scheme=x.scheme.lower(), netloc=x.netloc.lower()) == y._replace(
        scheme=y.scheme.lower(), netloc=y.netloc.lower()
    )


def candidates(artefact: Artefact, served_by: str | None) -> tuple[Copy, ...]:
    """The copies a file may match: the one at `served_by`, else (unknown, --from, a mirror) any copy.
    An artefact without copies is one copy of its own digests and size, with no URL."""
    if not artefact.copies:
        return (Copy("", artefact.sha256, artefact.md5, artefact.size),)
    served = [c for c in artefact.copies if served_by and _same_url(c.url, served_by)]
    return tuple(served) or artefact.copies


def _passes(copy: Copy, actual: dict[str, str], rule: str) -> str | None:
    """The algorithm by which `actual` matches the copy's digests (every one, or any with rule "any"), or None."""
    matched = [algo for algo, value in copy.expected().items() if actual.get(algo) == value]
    if matched and (rule == "any" or len(matched) == len(copy.expected())):
        return matched[0]
    return None


def verify_artefact(path: Path, artefact: Artefact, served_by: str | None = None) -> Verified:
    """Check `path` against the artefact's digests: those of the copy at `served_by` (the URL that served it),
    or of any one copy when that is unknown; a ChecksumError names the file, expected and actual hashes."""
    if artefact.payload_sha256 and path.name != artefact.file and path.name == uncompressed_name(artefact.file):
        return _verify_payload(path, artefact)
    copies = candidates(artefact, served_by)
    size = path.stat().st_size
    sized = [c for c in copies if c.size is None or c.size == size]
    if not sized and not artefact.payload_sha256:
        wanted = " or ".join(f"{c.size:,}" for c in copies)
        raise ChecksumError(f"checksum: {artefact.file} has {size:,} bytes, expected {wanted} ({path})")
    algos = tuple(algo for algo in DIGESTS if any(algo in c.expected() for c in copies))
    actual = file_digests(path, algos or ("sha256",))
    for copy in sized:
        algo = _passes(copy, actual, artefact.digests)
        if algo:
            return Verified(artefact.file, f"{algo} (copy {copy.url})" if copy.url else algo, actual, copy.url or None)
    if artefact.payload_sha256:
        payload = payload_digest(path)
        if payload == artefact.payload_sha256:
            return Verified(artefact.file, "payload_sha256", {**actual, "payload_sha256": payload})
        actual["payload_sha256"] = payload
    if not algos and not artefact.payload_sha256:
        raise ChecksumError(f"checksum: {artefact.file} has no sha256, md5 or payload_sha256 in the manifest")
    options = [_describe(c, artefact.digests, size) for c in copies if c.expected()]
    if artefact.payload_sha256:
        options.append(f"payload_sha256 {artefact.payload_sha256}")
    got = ", ".join(f"{algo} {value}" for algo, value in actual.items())
    served = f", served by {served_by}" if served_by else ""
    raise ChecksumError(
        f"checksum mismatch for {artefact.file} ({path}{served}): expected {'; or '.join(options)}; got {got}"
    )


def _verify_payload(path: Path, artefact: Artefact) -> Verified:
    """An artefact's payload handed over uncompressed: its sha256 must be the artefact's payload_sha256."""
    actual = file_digests(path, ("sha256",))["sha256"]
    if actual != artefact.payload_sha256:
        raise ChecksumError(
            f"checksum mismatch for {path.name} (the uncompressed {artefact.file}, {path}): expected payload_sha256 "
            f"{artefact.payload_sha256}; got sha256 {actual}"
        )
    return Verified(artefact.file, "payload_sha256 (uncompressed)", {"sha256": actual, "payload_sha256": actual})


def _describe(copy: Copy, rule: str, size: int) -> str:
    """A copy's digests as an error states them: "md5 X (copy URL)", "any one of sha256 X, md5 Y"."""
    digests = ", ".join(f"{algo} {value}" for algo, value in copy.expected().items())
    text = f"any one of {digests}" if rule == "any" and len(copy.expected()) > 1 else digests
    if copy.size is not None and copy.size != size:
        text += f" and {copy.size:,} bytes (this file has {size:,})"
    return f"{text} (copy {copy.url})" if copy.url else text
