"""Checking an artefact before anything is unpacked: its digest, or the digest of its decompressed payload.

A single compressed file (`.gz`, `.bz2`, `.xz`) that a distribution recompressed (Debian's
`dataset-fashion-mnist` rewrote the gzip headers) has other bytes than the published file while holding the
same content. Such an artefact may record `payload_sha256`, the digest of its decompressed bytes: a file whose
own digest differs is then accepted when its payload's matches, and the provenance says which check passed.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from lifelong.data.fetch.manifest import Artefact

CHUNK = 1 << 20
DECOMPRESSORS: dict[str, Callable[[Path], BinaryIO]] = {
    ".gz": lambda p: gzip.open(p, "rb"),  # type: ignore[dict-item]
    ".bz2": lambda p: bz2.open(p, "rb"),  # type: ignore[dict-item]
    ".xz": lambda p: lzma.open(p, "rb"),  # type: ignore[dict-item]
}


class ChecksumError(ValueError):
    """An artefact whose bytes are not the ones the manifest names."""


@dataclass(frozen=True)
class Verified:
    """How an artefact passed: `check` is "sha256", "md5" or "payload_sha256"; `digests` what was computed."""

    file: str
    check: str
    digests: dict[str, str]


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


def verify_artefact(path: Path, artefact: Artefact) -> Verified:
    """Check `path` against the artefact's digests; a ChecksumError names the file, expected and actual hashes."""
    if artefact.size is not None and path.stat().st_size != artefact.size and not artefact.payload_sha256:
        raise ChecksumError(
            f"checksum: {artefact.file} has {path.stat().st_size:,} bytes, expected {artefact.size:,} ({path})"
        )
    expected = artefact.expected()
    actual = file_digests(path, tuple(expected) or ("sha256",))
    if expected and all(actual[algo] == value for algo, value in expected.items()):
        return Verified(artefact.file, next(iter(expected)), actual)
    if artefact.payload_sha256:
        payload = payload_digest(path)
        if payload == artefact.payload_sha256:
            return Verified(artefact.file, "payload_sha256", {**actual, "payload_sha256": payload})
        actual["payload_sha256"] = payload
        expected = {**expected, "payload_sha256": artefact.payload_sha256}
    if not expected:
        raise ChecksumError(f"checksum: {artefact.file} has no sha256, md5 or payload_sha256 in the manifest")
    wanted = ", ".join(f"{algo} {value}" for algo, value in expected.items())
    got = ", ".join(f"{algo} {actual[algo]}" for algo in expected)
    raise ChecksumError(f"checksum mismatch for {artefact.file} ({path}): expected {wanted}; got {got}")
