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
    unpacked_size = 90000000          # optional: bytes once unpacked (the unpack budget, docs/security.md)
    [dataset.licence]
    name = "MIT"
    requires_acceptance = false
    non_commercial = false
    [[dataset.artefacts]]
    file = "train-images-idx3-ubyte.gz"
    urls = ["https://origin/...", "https://mirror/..."]
    sha256 = "..."                    # and/or md5 = "...": the file must match every digest listed
    digests = "all"                   # or "any": one listed digest that matches suffices
    payload_sha256 = "..."            # a single-file .gz/.bz2: the digest of its decompressed bytes
    size = 26421880
    [[dataset.artefacts]]             # hosts that serve different bytes: one table per copy, its own digests
    file = "lfw.tgz"
    [[dataset.artefacts.copies]]
    url = "http://origin/lfw.tgz"
    md5 = "..."
    [[dataset.artefacts.copies]]
    url = "https://mirror/lfw.tgz"
    sha256 = "..."                    # a file passes by the digests of the copy that served it; from --from, any copy's

Reading a manifest is bounded (lifelong.data.fetch.manifest_scan): size, encoding, nesting and key parts are checked
before tomllib parses it, and names, files, streams and texts are checked whole (no control character reaches a
path or a terminal).
"""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from lifelong.core.errors import UsageError
from lifelong.data.fetch.manifest_scan import ManifestError, read_text, scan  # ManifestError: the pre-scan's too

ACCESS_KINDS = ("auto", "gdrive", "kaggle", "manual")
DIGESTS = ("sha256", "md5")
DIGEST_RULES = ("all", "any")
_HEX = {"sha256": 64, "md5": 32}
_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,99}")  # a folder under the data root
_STREAM = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:+-]{0,99}")
_KAGGLE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}/[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
_URL = re.compile(r"(https?|ftp)://[^\s\x00-\x1f\x7f-\x9f]{1,2040}")
# A plain file name: no folder, no leading '-' (an option to a tool) or '.' (hidden, '..'), no glob or Windows
# metacharacter (--from finds files with rglob(name)), no trailing space or dot.
_FILE = re.compile(r"(?![\s.-])[^/\\:*?\"<>|\[\]]{1,255}(?<![\s.])")
# C0 and C1 controls, line/paragraph separators and bidirectional overrides: nothing that moves a terminal's
# cursor or reorders what it shows. `_PROSE_CONTROL` allows newlines and tabs in notes for people.
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_PROSE_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
MAX_SIZE = 1 << 62  # bytes: any real file is smaller
PACKAGE_MANIFEST = "datasets.toml"
DATASET_KEYS = {"name", "title", "homepage", "access", "converter", "streams", "manual", "kaggle", "licence"}
DATASET_KEYS |= {"artefacts", "options", "unpacked_size", "layout", "notes", "source_of_facts"}  # last 3 for people
ARTEFACT_KEYS = {"file", "urls", "sha256", "md5", "payload_sha256", "size", "digests", "copies"}
COPY_KEYS = {"url", "sha256", "md5", "size"}


class FetchRefused(PermissionError, UsageError):
    """A dataset that cannot be fetched as asked: a licence not accepted, manual steps, existing data, no tool."""


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
class Copy:
    """One host's copy of an artefact: its URL and the digests (and size) of the bytes that host serves."""

    url: str
    sha256: str | None = None
    md5: str | None = None
    size: int | None = None

    def expected(self) -> dict[str, str]:
        """The copy's digests, by algorithm (sha256 first)."""
        return {algo: value for algo in DIGESTS if (value := getattr(self, algo))}

    def as_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {"url": self.url, **self.expected()}
        if self.size is not None:
            row["size"] = self.size
        return row


@dataclass(frozen=True)
class Artefact:
    """One file to get: its name, where to get it (origin first, then mirrors), and how to check it.

    With `copies`, each URL has its own digests (hosts whose bytes differ); `urls` are then the copies' URLs and
    `size` the largest copy's. `digests` says whether a file must match every listed digest or any one."""

    file: str
    urls: tuple[str, ...] = ()
    sha256: str | None = None
    md5: str | None = None
    payload_sha256: str | None = None
    size: int | None = None
    copies: tuple[Copy, ...] = ()
    digests: str = "all"

    def expected(self) -> dict[str, str]:
        """The digests to check, by algorithm (sha256 first); with copies, the first (origin) copy's."""
        if self.copies:
            return self.copies[0].expected()
        return {algo: value for algo in DIGESTS if (value := getattr(self, algo))}

    def as_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {"file": self.file, "urls": list(self.urls)}
        if self.copies:
            row["copies"] = [c.as_json() for c in self.copies]
        else:
            row.update(self.expected())
        if self.digests != "all":
            row["digests"] = self.digests
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
    unpacked_size: int | None = None  # bytes once unpacked, when the manifest says: the unpack budget's basis

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
            "unpacked_size": self.unpacked_size,
            "homepage": self.homepage,
            "manual": self.manual,
        }


def _show(value: Any) -> str:
    """A value as an error shows it: its repr, cut to 80 characters (a manifest's value may be long)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _fail(origin: str, name: str, message: str) -> ManifestError:
    return ManifestError(f"{origin}: dataset {name!r}: {message}")


def _text(origin: str, name: str, where: str, value: Any, prose: bool = False) -> str:
    """A string field, refused when it is not a string or holds a control character (newlines too, unless prose)."""
    if not isinstance(value, str):
        raise _fail(origin, name, f"{where} must be a string, got {_show(value)}")
    bad = (_PROSE_CONTROL if prose else CONTROL).search(value)
    if bad:
        raise _fail(origin, name, f"{where} {_show(value)} holds the control character {bad.group()!r}")
    return value


def _size(origin: str, name: str, where: str, value: Any) -> int | None:
    if value is not None and (type(value) is not int or not 0 <= value < MAX_SIZE):
        raise _fail(origin, name, f"{where} must be a whole number of bytes, got {_show(value)}")
    return value


def _url(origin: str, name: str, where: str, url: Any) -> str:
    if not isinstance(url, str) or not _URL.fullmatch(url):
        raise _fail(
            origin, name, f"{where}: URL {_show(url)} must start with http://, https:// or ftp:// (no space or control)"
        )
    return url


def _digests(origin: str, name: str, where: str, row: dict, algos: tuple[str, ...]) -> dict[str, str]:
    """The hex digests a table lists (lower-cased), each checked for its length."""
    found = {}
    for algo in algos:
        value = row.get(algo)
        if value is None:
            continue
        hex_len = _HEX["sha256" if algo == "payload_sha256" else algo]
        if not isinstance(value, str) or not re.fullmatch(f"[0-9a-fA-F]{{{hex_len}}}", value):
            raise _fail(origin, name, f"{where}: {algo} must be {hex_len} hex digits, got {_show(value)}")
        found[algo] = value.lower()
    return found


def check_file_name(file: str) -> str | None:
    """Why `file` cannot be an artefact's plain file name, or None when it can."""
    if CONTROL.search(file):
        return "holds a control character"
    if not _FILE.fullmatch(file) or len(file.encode()) > 255:
        return (
            "must be a plain file name: no '/' or '\\', no leading '-' or '.', no trailing space or '.', "
            'none of : * ? " < > | [ ], at most 255 bytes'
        )
    return None


def _copies(origin: str, name: str, file: str, rows: Any) -> tuple[Copy, ...]:
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise _fail(origin, name, f"artefact {file!r}: copies must be [[dataset.artefacts.copies]] tables")
    copies = []
    for row in rows:
        unknown = set(row) - COPY_KEYS
        if unknown:
            raise _fail(origin, name, f"artefact {file!r}: a copy has unknown keys {_show(sorted(unknown))}")
        url = _url(origin, name, f"artefact {file!r} copy", row.get("url"))
        digests = _digests(origin, name, f"artefact {file!r} copy {url}", row, DIGESTS)
        if not digests:
            raise _fail(origin, name, f"artefact {file!r}: copy {url} needs a sha256 or md5 (the bytes it serves)")
        size = _size(origin, name, f"artefact {file!r} copy {url}: size", row.get("size"))
        copies.append(Copy(url, digests.get("sha256"), digests.get("md5"), size))
    urls = [c.url for c in copies]
    if len(set(urls)) != len(urls):
        raise _fail(origin, name, f"artefact {file!r}: copies repeat a URL: {_show(urls)}")
    return tuple(copies)


def _artefact(origin: str, name: str, row: Any) -> Artefact:
    if not isinstance(row, dict) or not isinstance(row.get("file"), str) or not row["file"]:
        raise _fail(origin, name, f"each [[dataset.artefacts]] needs a file name, got {_show(row)}")
    file = row["file"]
    why = check_file_name(file)
    if why:
        raise _fail(origin, name, f"artefact file {_show(file)} {why}")
    unknown = set(row) - ARTEFACT_KEYS
    if unknown:
        raise _fail(origin, name, f"artefact {file!r} has unknown keys {_show(sorted(unknown))}")
    rule = row.get("digests", "all")
    if rule not in DIGEST_RULES:
        raise _fail(origin, name, f"artefact {file!r}: digests must be 'all' or 'any', got {_show(rule)}")
    payload = _digests(origin, name, f"artefact {file!r}", row, ("payload_sha256",)).get("payload_sha256")
    if "copies" in row:
        mixed = sorted({"urls", *DIGESTS, "size"} & set(row))
        if mixed:
            raise _fail(origin, name, f"artefact {file!r} has copies: give {', '.join(mixed)} in each copy instead")
        copies = _copies(origin, name, file, row["copies"])
        sizes = [c.size for c in copies]
        size = None if None in sizes else max(sizes)  # type: ignore[type-var]
        return Artefact(file, tuple(c.url for c in copies), None, None, payload, size, copies, rule)
    urls = row.get("urls", [])
    if isinstance(urls, str):
        urls = [urls]
    if not isinstance(urls, list):
        raise _fail(origin, name, f"artefact {file!r}: urls must be a list of URLs, got {_show(urls)}")
    urls = [_url(origin, name, f"artefact {file!r}", url) for url in urls]
    digests = _digests(origin, name, f"artefact {file!r}", row, DIGESTS)
    size = _size(origin, name, f"artefact {file!r}: size", row.get("size"))
    return Artefact(file, tuple(urls), digests.get("sha256"), digests.get("md5"), payload, size, (), rule)


def _licence(origin: str, name: str, licence: Any) -> Licence:
    if not isinstance(licence, dict):
        raise _fail(origin, name, f"[dataset.licence] must be a table, got {_show(licence)}")
    unknown = set(licence) - set(Licence.__dataclass_fields__)
    if unknown:
        raise _fail(origin, name, f"licence has unknown keys {_show(sorted(unknown))}")
    for flag in ("requires_acceptance", "non_commercial"):
        if not isinstance(licence.get(flag, False), bool):
            raise _fail(origin, name, f"licence {flag} must be true or false, got {_show(licence[flag])}")
    for key in ("name", "url", "terms"):
        if key in licence:
            _text(origin, name, f"licence {key}", licence[key])
    return Licence(**licence)


def parse_entry(row: Any, origin: str) -> DatasetEntry:
    """One `[[dataset]]` table into a DatasetEntry, or a ManifestError naming the file, dataset and field."""
    from lifelong.data.fetch.converters import CONVERTERS

    if not isinstance(row, dict):
        raise ManifestError(f"{origin}: each [[dataset]] must be a table, got {_show(row)}")
    name = row.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ManifestError(
            f"{origin}: dataset name {_show(name)} must be lower-case letters, digits, '_', '.', '-' "
            "(a letter or digit first, at most 100)"
        )
    unknown = set(row) - DATASET_KEYS
    if unknown:
        raise _fail(origin, name, f"unknown keys {_show(sorted(unknown))}; known: {', '.join(sorted(DATASET_KEYS))}")
    access = row.get("access", "auto")
    if not isinstance(access, str) or access not in ACCESS_KINDS:
        raise _fail(origin, name, f"access {_show(access)} must be one of {', '.join(ACCESS_KINDS)}")
    converter = row.get("converter", "")
    if not isinstance(converter, str) or converter not in CONVERTERS:
        raise _fail(origin, name, f"converter {_show(converter)} must be one of {', '.join(sorted(CONVERTERS))}")
    rows = row.get("artefacts", [])
    if not isinstance(rows, list):
        raise _fail(origin, name, f"artefacts must be [[dataset.artefacts]] tables, got {_show(rows)}")
    artefacts = tuple(_artefact(origin, name, a) for a in rows)
    files = [a.file for a in artefacts]
    if len(set(files)) != len(files):
        raise _fail(origin, name, f"artefact file names repeat: {_show(files)}")
    if access != "manual" and not artefacts:
        raise _fail(origin, name, f"access {_show(access)} needs at least one [[dataset.artefacts]]")
    if access == "auto" and any(not a.urls for a in artefacts):
        raise _fail(origin, name, "access 'auto' needs URLs for every artefact (use 'manual' otherwise)")
    if access == "auto" and any(not a.expected() for a in artefacts):
        raise _fail(origin, name, "every downloaded artefact needs a sha256 or md5 to be verified against")
    kaggle = _text(origin, name, "kaggle", row.get("kaggle", ""))
    if access == "kaggle" and not kaggle:
        raise _fail(origin, name, "access 'kaggle' needs kaggle = 'owner/dataset'")
    if kaggle and not _KAGGLE.fullmatch(kaggle):
        raise _fail(origin, name, f"kaggle {_show(kaggle)} must be 'owner/dataset' (letters, digits, '_', '.', '-')")
    streams = row.get("streams", [])
    if not isinstance(streams, list):
        raise _fail(origin, name, f"streams must be a list of stream names, got {_show(streams)}")
    for stream in streams:
        if not isinstance(stream, str) or not _STREAM.fullmatch(stream):
            raise _fail(origin, name, f"stream {_show(stream)} must be letters, digits, '_', '.', ':', '+', '-'")
    options = row.get("options", {})
    if not isinstance(options, dict):
        raise _fail(origin, name, f"[dataset.options] must be a table, got {_show(options)}")
    for note in ("layout", "notes", "source_of_facts"):
        if note in row:
            _text(origin, name, note, row[note], prose=True)
    return DatasetEntry(
        name=name,
        title=_text(origin, name, "title", row.get("title", name)),
        access=access,
        converter=converter,
        artefacts=artefacts,
        licence=_licence(origin, name, row.get("licence", {})),
        streams=tuple(streams),
        homepage=_text(origin, name, "homepage", row.get("homepage", "")),
        manual=_text(origin, name, "manual", row.get("manual", "")),
        kaggle=kaggle,
        options=dict(options),
        origin=origin,
        unpacked_size=_size(origin, name, "unpacked_size", row.get("unpacked_size")),
    )


def parse_manifest(text: str, origin: str) -> list[DatasetEntry]:
    """The datasets of one manifest's TOML text (`origin` names it in errors); pre-scanned, then parsed."""
    scan(text, origin)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"{origin}: not valid TOML: {exc}") from None
    except (RecursionError, MemoryError, ValueError) as exc:  # past what the pre-scan bounds: still refused
        raise ManifestError(f"{origin}: cannot be parsed ({type(exc).__name__}: {str(exc)[:200]})") from None
    rows = data.get("dataset", [])
    if not isinstance(rows, list):
        raise ManifestError(f"{origin}: datasets must be [[dataset]] tables")
    entries = [parse_entry(row, origin) for row in rows]
    repeated = sorted(n for n, count in Counter(e.name for e in entries).items() if count > 1)
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
            text = read_text(path, str(path))
        except OSError as exc:
            raise ManifestError(f"cannot read manifest {path}: {exc.strerror or exc}") from None
        entries.update({e.name: e for e in parse_manifest(text, str(path))})
    return entries
