"""Getting one dataset into the data root: artefacts (downloaded or the user's), verified, converted, renamed in.

Nothing half-done is ever visible under `<root>/<name>`:
- artefacts download into `<root>/.fetch/downloads/<name>/` (`.part` files resume) and are verified before
  anything is unpacked; files from `--from DIR` are verified where they are, before anything is written;
- conversion happens in `<root>/.fetch/work/<name>-<pid>/`; the finished folder gets `provenance.json` (URLs,
  hashes, converter and version, licence and its acceptance) and a `.ready` marker, then one rename puts it in
  place. A kill leaves the old state or the new one; the next run removes stale work and redoes it;
- replacing (`overwrite`) moves the old folder aside first and restores it if the run dies between the renames.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lifelong.core.files import atomic_write_bytes
from lifelong.data.fetch.conversion import Conversion, ConversionError
from lifelong.data.fetch.converters import CONVERTERS, DETECTED, VERSIONS
from lifelong.data.fetch.download import DownloadSettings, Progress, download
from lifelong.data.fetch.kaggle import kaggle_download
from lifelong.data.fetch.manifest import Artefact, DatasetEntry, FetchRefused
from lifelong.data.fetch.unpack import archive_kind
from lifelong.data.fetch.verify import ChecksumError, Verified, file_digests, verify_artefact

READY = ".ready"
PROVENANCE = "provenance.json"
STAGING = ".fetch"


@dataclass(frozen=True)
class FetchRequest:
    entry: DatasetEntry
    root: Path
    from_dir: Path | None = None
    mirrors: tuple[str, ...] = ()  # base URLs tried first: <mirror>/<dataset>/<file>
    licence_accepted: bool = False
    overwrite: bool = False

    @property
    def target(self) -> Path:
        return self.root / self.entry.name

    @property
    def downloads(self) -> Path:
        return self.root / STAGING / "downloads" / self.entry.name


@dataclass(frozen=True)
class Acquired:
    """One artefact on disk and verified: where it is, how it passed, where it came from, the server's name for it."""

    path: Path
    verified: Verified
    source: str
    server_name: str | None = None

    def unpack_name(self, file: str) -> str:
        """The name that says how to unpack it: the server's, when the manifest's name has no archive suffix."""
        if self.server_name and archive_kind(file) == "plain" and archive_kind(self.server_name) != "plain":
            return self.server_name
        return file


@dataclass(frozen=True)
class FetchOutcome:
    name: str
    state: str  # "installed", "replaced" or "up to date"
    path: Path
    checks: tuple[Verified, ...] = ()


def read_provenance(folder: Path) -> dict | None:
    """A fetched folder's provenance, or None when it is not a finished fetch (no `.ready` marker)."""
    if not (folder / READY).is_file():
        return None
    try:
        return json.loads((folder / PROVENANCE).read_text())
    except (OSError, json.JSONDecodeError):
        return None


def is_up_to_date(request: FetchRequest) -> bool:
    """The target is a finished fetch of the same artefacts by the same converter version."""
    provenance = read_provenance(request.target)
    if provenance is None:
        return False
    wanted = {a.file: a.expected() for a in request.entry.artefacts}
    done = {a["file"]: a.get("expected", {}) for a in provenance.get("artefacts", [])}
    converter = provenance.get("converter", {})
    return done == wanted and converter == {
        "name": request.entry.converter,
        "version": VERSIONS[request.entry.converter],
    }


def check_allowed(request: FetchRequest) -> None:
    """Refuse before any work: licence not accepted, manual steps not done, data the toolkit did not write."""
    entry = request.entry
    if entry.licence.requires_acceptance and not request.licence_accepted:
        raise FetchRefused(
            f"{entry.name}: its licence ({entry.licence.name}) must be accepted first: {entry.licence.terms} "
            f"{entry.licence.url} -- rerun with --accept-licence {entry.name} to accept it"
        )
    if entry.access == "manual" and request.from_dir is None:
        raise FetchRefused(f"{entry.name} cannot be downloaded automatically: {entry.manual} {finish_hint(entry)}")
    if request.target.exists() and read_provenance(request.target) is None and not request.overwrite:
        raise FetchRefused(
            f"{request.target} already holds data that lifelong data fetch did not write; "
            "--overwrite replaces it (or use it as it is: lifelong data status)"
        )


def finish_hint(entry: DatasetEntry) -> str:
    files = ", ".join(a.file for a in entry.artefacts) or "its files"
    return f"Then put {files} in one folder DIR and run: lifelong data fetch {entry.name} --from DIR"


def locate_in(folder: Path, artefact: Artefact, dataset: str) -> Path | None:
    """The artefact's file in a user's folder: DIR/FILE, DIR/<dataset>/FILE, else the first match below DIR."""
    for candidate in (folder / artefact.file, folder / dataset / artefact.file):
        if candidate.is_file():
            return candidate
    return next((p for p in sorted(folder.rglob(artefact.file)) if p.is_file()), None)


def mirror_urls(request: FetchRequest, artefact: Artefact) -> list[str]:
    mirrored = [f"{m.rstrip('/')}/{request.entry.name}/{artefact.file}" for m in request.mirrors]
    return mirrored + list(artefact.urls)


def acquire(
    request: FetchRequest, settings: DownloadSettings, progress: Callable[[Artefact], Progress | None]
) -> dict[str, Acquired]:
    """Every artefact on disk and verified, by its manifest file name."""
    got: dict[str, Acquired] = {}
    if request.from_dir is not None:
        missing = [
            a.file for a in request.entry.artefacts if locate_in(request.from_dir, a, request.entry.name) is None
        ]
        if missing:
            raise FileNotFoundError(f"{request.entry.name}: not in {request.from_dir}: {', '.join(missing)}")
        for artefact in request.entry.artefacts:
            path = locate_in(request.from_dir, artefact, request.entry.name)
            assert path is not None
            got[artefact.file] = Acquired(path, _verify(path, artefact), f"file://{path.resolve()}")
        return got
    missing = [a.file for a in request.entry.artefacts if not (request.downloads / a.file).is_file()]
    if request.entry.access == "kaggle" and missing:
        kaggle_download(request.entry.kaggle, request.downloads, request.entry.name, missing)
    for artefact in request.entry.artefacts:
        fetched = download(
            mirror_urls(request, artefact), request.downloads, artefact.file, settings=settings,
            progress=progress(artefact),
        )  # fmt: skip
        record = request.downloads / f".{artefact.file}.source.json"  # where an earlier run's file came from
        try:
            verified = _verify(fetched.path, artefact)
        except ChecksumError:
            fetched.path.unlink(missing_ok=True)  # a wrong file must not be "resumed" or reused
            record.unlink(missing_ok=True)
            raise
        if fetched.url:
            atomic_write_bytes(record, json.dumps({"url": fetched.url, "server_name": fetched.server_name}).encode())
        earlier = json.loads(record.read_text()) if record.is_file() else {"url": "(downloaded earlier)"}
        got[artefact.file] = Acquired(fetched.path, verified, earlier["url"], earlier.get("server_name"))
    return got


def _verify(path: Path, artefact: Artefact) -> Verified:
    """Check against the manifest; an artefact with no published checksum is recorded (its sha256), not checked."""
    if not artefact.expected() and not artefact.payload_sha256:
        return Verified(artefact.file, "unverified (no published checksum)", file_digests(path, ("sha256",)))
    return verify_artefact(path, artefact)


@contextmanager
def dataset_lock(root: Path, name: str) -> Iterator[None]:
    """One fetch of a dataset at a time per data root (a second waits)."""
    locks = root / STAGING / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / f"{name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def recover(root: Path, name: str) -> None:
    """Finish what a killed run left: restore a moved-aside folder whose replacement never arrived; drop stale work."""
    aside = root / STAGING / "aside"
    target = root / name
    for old in sorted(aside.glob(f"{name}-*")) if aside.is_dir() else []:
        if not target.exists():
            old.rename(target)
        else:
            shutil.rmtree(old, ignore_errors=True)
    work = root / STAGING / "work"
    for stale in sorted(work.glob(f"{name}-*")) if work.is_dir() else []:
        shutil.rmtree(stale, ignore_errors=True)


def provenance(request: FetchRequest, files: dict[str, Acquired]) -> dict:
    entry = request.entry
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    licence = entry.licence.as_json()
    if entry.licence.requires_acceptance:
        licence["accepted_at"] = now
    return {
        "dataset": entry.name,
        "title": entry.title,
        "fetched_at": now,
        "manifest": entry.origin,
        "converter": {"name": entry.converter, "version": VERSIONS[entry.converter]},
        "licence": licence,
        "artefacts": [
            {
                "file": a.file,
                "source": files[a.file].source,
                "server_name": files[a.file].server_name,
                "expected": a.expected(),
                "check": files[a.file].verified.check,
                "digests": files[a.file].verified.digests,
            }
            for a in entry.artefacts
        ],
    }


def convert_into_place(request: FetchRequest, files: dict[str, Acquired]) -> str:
    """Convert in a work folder, mark it ready, and rename it to `<root>/<name>`; returns installed/replaced."""
    from lifelong.data.sources import detect_source

    entry, root = request.entry, request.root
    work = root / STAGING / "work" / f"{entry.name}-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    out = work / entry.name
    out.mkdir(parents=True)
    artefacts = {got.unpack_name(file): got.path for file, got in files.items()}
    job = Conversion(entry.name, artefacts, work / "scratch", out, entry.options)
    (work / "scratch").mkdir()
    CONVERTERS[entry.converter](job)
    expected = DETECTED.get(entry.converter)
    if expected and not (detect_source(out) or "").startswith(expected):
        raise ConversionError(f"{entry.name}: converted folder does not hold the {expected[:-1]} layout")
    shutil.rmtree(work / "scratch")
    record = provenance(request, files) | {"skipped_members": job.skipped}
    atomic_write_bytes(out / PROVENANCE, json.dumps(record, indent=2).encode())
    atomic_write_bytes(out / READY, b"")
    state = "installed"
    if request.target.exists():
        aside = root / STAGING / "aside"
        aside.mkdir(parents=True, exist_ok=True)
        request.target.rename(aside / f"{entry.name}-{os.getpid()}")
        state = "replaced"
    out.rename(request.target)
    recover(root, entry.name)  # drops the moved-aside folder and the work folder
    return state


def fetch(
    request: FetchRequest,
    settings: DownloadSettings | None = None,
    progress: Callable[[Artefact], Progress | None] = lambda artefact: None,
) -> FetchOutcome:
    """Fetch one dataset as `request` says; FetchRefused / ChecksumError / DownloadError say why not."""
    settings = settings or DownloadSettings()
    check_allowed(request)
    if not request.overwrite and is_up_to_date(request):
        return FetchOutcome(request.entry.name, "up to date", request.target)
    files = acquire(request, settings, progress)  # verified before anything under the target is touched
    request.root.mkdir(parents=True, exist_ok=True)
    with dataset_lock(request.root, request.entry.name):
        recover(request.root, request.entry.name)
        state = convert_into_place(request, files)
    checks = tuple(got.verified for got in files.values())
    return FetchOutcome(request.entry.name, state, request.target, checks)
