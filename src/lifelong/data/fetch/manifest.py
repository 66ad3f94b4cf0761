"""The fetch manifest: per dataset its artefacts (files, checksums, URLs), licence, access kind and converter.

The package's manifest is data (`datasets.toml` beside this module); a lab adds its own datasets with a TOML
file of the same schema (`lifelong data fetch --manifest FILE`). A dataset's `name` is the folder it gets under
the data root, the same name `lifelong data status --json` reports for a task's data.

    [[dataset]]
    name = "fashion_mnist"            # folder under the data root
    title = "Fashion-MNIST"
    access = "auto"                   # auto | gdrive | kaggle | manual
    converter = "idx"                 # see lifelong.data.fetch.converters.CONVERTERS
    streams = ["..."]                 # streams that read it beyond those derived from task tables
    [dataset.licence]
    name = "MIT"
    requires_acceptance = false
    non_commercial = false
    [[dataset.artefacts]]
    file = "train-images-idx3-ubyte.gz"
    urls = ["https://origin/...", "https://mirror/..."]
    sha256 = "..."                    # and/or md5 = "..."
    payload_sha256 = "..."            # a single-file .gz/.bz2: the digest of its decompressed bytes
    size = 26421880
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

ACCESS_KINDS = ("auto", "gdrive", "kaggle", "manual")
DIGESTS = ("sha256", "md5")
_HEX = {"sha256": 64, "md5": 32}
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
PACKAGE_MANIFEST = "datasets.toml"
DATASET_KEYS = {"name", "title", "homepage", "access", "converter", "streams", "manual", "kaggle", "licence"}
DATASET_KEYS |= {"artefacts", "options", "layout", "notes", "source_of_facts"}  # the last three: notes for people


class FetchRefused(PermissionError):
    """A dataset that cannot be fetched as asked: a licence not accepted, manual steps, existing data, no tool."""


class ManifestError(ValueError):
    """A manifest entry that cannot be used: names the file, the dataset and the field."""


@dataclass(frozen=True)
class Licence:
    """A dataset's terms: `requires_acceptance` datasets are fetched only after `--accept-licence NAME`."""

    name: str = "unknown"
    url: str = ""
    requires_acceptance: bool = False
    non_commercial: bool = False
    terms: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "url": self.url,
            "requires_acceptance": self.requires_acceptance,
            "non_commercial": self.non_commercial,
            "terms": self.terms,
        }


@dataclass(frozen=True)
class Artefact:
    """One file to get: its name, where to get it (origin first, then mirrors), and how to check it."""

    file: str
    urls: tuple[str, ...] = ()
    sha256: str | None = None
    md5: str | None = None
    payload_sha256: str | None = None
    size: int | None = None

    def expected(self) -> dict[str, str]:
        """The digests to check, by algorithm (sha256 first)."""
        return {algo: value for algo in DIGESTS if (value := getattr(self, algo))}

    def as_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {"file": self.file, "urls": list(self.urls)}
        row.update(self.expected())
        if self.payload_sha256:
            row["payload_sha256"] = self.payload_sha256
        if self.size is not None:
            row["size"] = self.size
        return row


@dataclass(frozen=True)
class DatasetEntry:
    """One dataset of the manifest."""

    name: str
    title: str
    access: str
    converter: str
    artefacts: tuple[Artefact, ...]
    licence: Licence = Licence()
    streams: tuple[str, ...] = ()
    homepage: str = ""
    manual: str = ""
    kaggle: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    origin: str = ""  # the manifest file it came from

    @property
    def download_bytes(self) -> int | None:
        """The total download size, or None when an artefact's size is unknown."""
        sizes = [a.size for a in self.artefacts]
        return None if any(s is None for s in sizes) else sum(sizes)  # type: ignore[misc]

    def as_json(self, streams: tuple[str, ...] | None = None) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "streams": list(self.streams if streams is None else streams),
            "access": self.access,
            "licence": self.licence.as_json(),
            "converter": self.converter,
            "artefacts": [a.as_json() for a in self.artefacts],
            "homepage": self.homepage,
            "manual": self.manual,
        }


def _fail(origin: str, name: str, message: str) -> ManifestError:
    return ManifestError(f"{origin}: dataset {name!r}: {message}")


def _artefact(origin: str, name: str, row: Any) -> Artefact:
    if not isinstance(row, dict) or not isinstance(row.get("file"), str) or not row["file"]:
        raise _fail(origin, name, f"each [[dataset.artefacts]] needs a file name, got {row!r}")
    file = row["file"]
    if "/" in file or "\\" in file or file in (".", ".."):
        raise _fail(origin, name, f"artefact file {file!r} must be a plain file name, not a path")
    unknown = set(row) - {"file", "urls", "sha256", "md5", "payload_sha256", "size"}
    if unknown:
        raise _fail(origin, name, f"artefact {file!r} has unknown keys {sorted(unknown)}")
    urls = row.get("urls", [])
    if isinstance(urls, str):
        urls = [urls]
    for url in urls:
        if not isinstance(url, str) or not re.match(r"^(https?|ftp)://", url):
            raise _fail(origin, name, f"artefact {file!r}: URL {url!r} must start with http://, https:// or ftp://")
    digests = {}
    for algo in (*DIGESTS, "payload_sha256"):
        value = row.get(algo)
        if value is None:
            continue
        hex_len = _HEX["sha256" if algo == "payload_sha256" else algo]
        if not isinstance(value, str) or not re.fullmatch(f"[0-9a-fA-F]{{{hex_len}}}", value):
            raise _fail(origin, name, f"artefact {file!r}: {algo} must be {hex_len} hex digits, got {value!r}")
        digests[algo] = value.lower()
    size = row.get("size")
    if size is not None and (not isinstance(size, int) or size < 0):
        raise _fail(origin, name, f"artefact {file!r}: size must be a whole number of bytes, got {size!r}")
    return Artefact(file, tuple(urls), digests.get("sha256"), digests.get("md5"), digests.get("payload_sha256"), size)


def parse_entry(row: Any, origin: str) -> DatasetEntry:
    """One `[[dataset]]` table into a DatasetEntry, or a ManifestError naming what is wrong."""
    from lifelong.data.fetch.converters import CONVERTERS

    if not isinstance(row, dict):
        raise ManifestError(f"{origin}: each [[dataset]] must be a table, got {row!r}")
    name = row.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ManifestError(f"{origin}: dataset name {name!r} must be lower-case letters, digits, '_', '.', '-'")
    unknown = set(row) - DATASET_KEYS
    if unknown:
        raise _fail(origin, name, f"unknown keys {sorted(unknown)}; known: {', '.join(sorted(DATASET_KEYS))}")
    access = row.get("access", "auto")
    if access not in ACCESS_KINDS:
        raise _fail(origin, name, f"access {access!r} must be one of {', '.join(ACCESS_KINDS)}")
    converter = row.get("converter", "")
    if converter not in CONVERTERS:
        raise _fail(origin, name, f"converter {converter!r} must be one of {', '.join(sorted(CONVERTERS))}")
    artefacts = tuple(_artefact(origin, name, a) for a in row.get("artefacts", []))
    files = [a.file for a in artefacts]
    if len(set(files)) != len(files):
        raise _fail(origin, name, f"artefact file names repeat: {files}")
    if access != "manual" and not artefacts:
        raise _fail(origin, name, f"access {access!r} needs at least one [[dataset.artefacts]]")
    if access == "auto" and any(not a.urls for a in artefacts):
        raise _fail(origin, name, "access 'auto' needs URLs for every artefact (use 'manual' otherwise)")
    if access == "auto" and any(not a.expected() for a in artefacts):
        raise _fail(origin, name, "every downloaded artefact needs a sha256 or md5 to be verified against")
    if access == "kaggle" and not row.get("kaggle"):
        raise _fail(origin, name, "access 'kaggle' needs kaggle = 'owner/dataset'")
    licence = row.get("licence", {})
    if not isinstance(licence, dict):
        raise _fail(origin, name, f"[dataset.licence] must be a table, got {licence!r}")
    unknown = set(licence) - set(Licence.__dataclass_fields__)
    if unknown:
        raise _fail(origin, name, f"licence has unknown keys {sorted(unknown)}")
    options = row.get("options", {})
    if not isinstance(options, dict):
        raise _fail(origin, name, f"[dataset.options] must be a table, got {options!r}")
    return DatasetEntry(
        name=name,
        title=str(row.get("title", name)),
        access=access,
        converter=converter,
        artefacts=artefacts,
        licence=Licence(**licence),
        streams=tuple(row.get("streams", ())),
        homepage=str(row.get("homepage", "")),
        manual=str(row.get("manual", "")),
        kaggle=str(row.get("kaggle", "")),
        options=dict(options),
        origin=origin,
    )


def parse_manifest(text: str, origin: str) -> list[DatasetEntry]:
    """The datasets of one manifest's TOML text (`origin` names it in errors)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"{origin}: not valid TOML: {exc}") from None
    rows = data.get("dataset", [])
    if not isinstance(rows, list):
        raise ManifestError(f"{origin}: datasets must be [[dataset]] tables")
    entries = [parse_entry(row, origin) for row in rows]
    names = [e.name for e in entries]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ManifestError(f"{origin}: datasets named more than once: {', '.join(repeated)}")
    return entries


def load_manifest(extra: list[str | Path] | tuple[str | Path, ...] = ()) -> dict[str, DatasetEntry]:
    """The package's datasets, then each extra manifest file's (a lab's own; a later entry replaces an earlier)."""
    text = resources.files("lifelong.data.fetch").joinpath(PACKAGE_MANIFEST).read_text(encoding="utf-8")
    entries = {e.name: e for e in parse_manifest(text, PACKAGE_MANIFEST)}
    for path in extra:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ManifestError(f"cannot read manifest {path}: {exc.strerror or exc}") from None
        entries.update({e.name: e for e in parse_manifest(text, str(path))})
    return entries
