"""Getting one dataset into the data root: artefacts (downloaded or the user's), verified, converted, renamed in.

Nothing half-done is ever visible under `<root>/<name>`:
- artefacts download into `<root>/.fetch/downloads/<name>/` (`.part` files resume) and are verified before
  anything is unpacked; files from `--from DIR` are verified where they are, before anything is written;
- conversion happens in `<root>/.fetch/work/<name>-<pid>/`; the finished folder gets `provenance.json` (URLs,
  hashes, converter and version, licence and its acceptance) and a `.ready` marker, then one rename puts it in
  place. A kill leaves the old state or the new one; the next run removes stale work and redoes it;
- replacing (`overwrite`) swaps the new folder with the old one in one step (Linux `renameat2` RENAME_EXCHANGE),
  so `<root>/<name>` never goes missing; elsewhere the old folder is moved aside and restored if the run dies;
- one lock per dataset covers download, verification and conversion: a second fetch waits, then finds the dataset
  up to date; any error removes the work folder (a `.part` download that can resume is kept for the next run);
- what outside data may take is bounded (lifelong.data.fetch.budgets, docs/security.md): the download's bytes by
  the manifest's size, unpacking by the dataset's unpack budget, and the free disk is compared with the job first.
"""

from __future__ import annotations

import ctypes
import datetime as dt
import errno
import fcntl
import json
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lifelong.core.files import atomic_write_bytes
from lifelong.data.fetch.budgets import ByteBudget, UnpackLimit, check_free_disk
from lifelong.data.fetch.containment import plain_name
from lifelong.data.fetch.conversion import Conversion, ConversionError
from lifelong.data.fetch.converters import CONVERTERS, DETECTED, READS_IN_PLACE, VERSIONS
from lifelong.data.fetch.download import DownloadSettings, Progress, download
from lifelong.data.fetch.kaggle import kaggle_download
from lifelong.data.fetch.manifest import Artefact, DatasetEntry, FetchRefused
from lifelong.data.fetch.unpack import archive_kind
from lifelong.data.fetch.verify import ChecksumError, Verified, file_digests, uncompressed_name, verify_artefact

READY = ".ready"
PROVENANCE = "provenance.json"
STAGING = ".fetch"


@dataclass(frozen=True)
class FetchRequest:
    """One dataset to fetch: its manifest entry, the data root, where its files come from, and what is allowed."""

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

    def unpack_name(self, file: str, dataset: str) -> str:
        """The name that says how to unpack it: the server's, when the manifest's name has no archive suffix."""
        if self.path.name != file and self.path.name == uncompressed_name(file):  # its payload, handed over as is
            return self.path.name
        if self.server_name and archive_kind(file) == "plain" and archive_kind(self.server_name) != "plain":
            return plain_name(self.server_name, dataset=dataset, field=f"the server's file name for {file}")
        return file


@dataclass(frozen=True)
class FetchOutcome:
    """What a fetch did: the dataset, its state ("installed", "replaced" or "up to date"), folder and checks."""

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
    """The artefact's file in a user's folder: DIR/FILE, DIR/<dataset>/FILE, else the first match below DIR; for an
    artefact with a payload_sha256, FILE without its .gz/.bz2/.xz (the payload uncompressed) when FILE is not there."""
    plain = uncompressed_name(artefact.file) if artefact.payload_sha256 else None
    for name in (artefact.file, plain) if plain else (artefact.file,):
        for candidate in (folder / name, folder / dataset / name):
            if candidate.is_file():
                return candidate
        found = next((p for p in sorted(folder.rglob(name)) if p.is_file()), None)
        if found is not None:
            return found
    return None


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
            got[artefact.file] = Acquired(path, _verify(path, artefact, None), f"file://{path.resolve()}")
        return got
    missing = [a.file for a in request.entry.artefacts if not (request.downloads / a.file).is_file()]
    if request.entry.access == "kaggle" and missing:
        kaggle_download(request.entry.kaggle, request.downloads, request.entry.name, missing)
    for artefact in request.entry.artefacts:
        fetched = download(
            mirror_urls(request, artefact), request.downloads, artefact.file, settings=settings,
            progress=progress(artefact), size=artefact.size,
        )  # fmt: skip
        record = request.downloads / f".{artefact.file}.source.json"  # where an earlier run's file came from
        try:  # checked against the copy asked for (the manifest's URL, before redirects): now, or as recorded
            earlier = json.loads(record.read_text()) if record.is_file() else {}
            served_by = fetched.requested or earlier.get("requested") or earlier.get("url")
            verified = _verify(fetched.path, artefact, served_by)
        except ChecksumError:
            fetched.path.unlink(missing_ok=True)  # a wrong file must not be "resumed" or reused
            record.unlink(missing_ok=True)
            raise
        if fetched.url:
            source = {"url": fetched.url, "requested": fetched.requested, "server_name": fetched.server_name}
            atomic_write_bytes(record, json.dumps(source).encode())
        earlier = json.loads(record.read_text()) if record.is_file() else {"url": "(downloaded earlier)"}
        got[artefact.file] = Acquired(fetched.path, verified, earlier["url"], earlier.get("server_name"))
    return got


def _verify(path: Path, artefact: Artefact, served_by: str | None) -> Verified:
    """Check against the manifest (the digests of the copy at `served_by`, the URL that served the file; any copy's
    when None); an artefact with no published checksum is recorded (its sha256), not checked."""
    if not artefact.expected() and not artefact.payload_sha256:
        return Verified(artefact.file, "unverified (no published checksum)", file_digests(path, ("sha256",)))
    return verify_artefact(path, artefact, served_by)


@contextmanager
def dataset_lock(root: Path, name: str, waiting: Callable[[str], None] | None = None) -> Iterator[None]:
    """One fetch of a dataset at a time per data root: a second one calls `waiting(name)`, then waits its turn."""
    locks = root / STAGING / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / f"{name}.lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting:
                waiting(name)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def exchange(new: Path, old: Path) -> bool:
    """Swap two folders in one step (Linux renameat2 RENAME_EXCHANGE); False where the system cannot."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    result = renameat2(_AT_FDCWD, os.fsencode(new), _AT_FDCWD, os.fsencode(old), _RENAME_EXCHANGE)
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, f"cannot swap {new} into place: {os.strerror(code)}")


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


def unpack_budget(request: FetchRequest, files: dict[str, Acquired], limit: UnpackLimit) -> ByteBudget:
    """The dataset's unpack budget: its manifest unpacked_size, else a ratio of its archives' bytes up to a cap."""
    archive_bytes = sum(got.path.stat().st_size for got in files.values())
    budget, source = limit.budget_for(archive_bytes, request.entry.unpacked_size)
    return ByteBudget(budget, source, request.entry.name)


def disk_needed(request: FetchRequest, limit: UnpackLimit) -> int:
    """Bytes of disk the job is expected to take: the downloads still to do, the unpacked copy (none for converters
    that read archives in place) and the converted folder, each the manifest's unpacked_size, else the archives'
    size (the unpack budget still bounds what unpacking writes)."""
    entry = request.entry
    known = [a.size or 0 for a in entry.artefacts]
    pending = 0
    if request.from_dir is None:
        pending = sum(a.size or 0 for a in entry.artefacts if not (request.downloads / a.file).is_file())
    unpacked = entry.unpacked_size if entry.unpacked_size is not None else sum(known)
    if limit.explicit_cap:
        unpacked = min(unpacked, limit.cap)
    return pending + (1 if entry.converter in READS_IN_PLACE else 2) * unpacked


def convert_into_place(request: FetchRequest, files: dict[str, Acquired], limit: UnpackLimit | None = None) -> str:
    """Convert in a work folder, mark it ready, and swap it in as `<root>/<name>`; returns installed/replaced.
    Any error (a budget, a refused path, a bad archive) removes the work folder before it goes up."""
    from lifelong.data.sources import detect_source

    entry, root, limit = request.entry, request.root, limit or UnpackLimit()
    work = root / STAGING / "work" / f"{entry.name}-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    try:
        out = work / entry.name
        out.mkdir(parents=True)
        artefacts = {got.unpack_name(file, entry.name): got.path for file, got in files.items()}
        budget = unpack_budget(request, files, limit)
        job = Conversion(entry.name, artefacts, work / "scratch", out, entry.options, budget=budget)
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
            state = "replaced"
            if not exchange(out, request.target):  # the old folder moves aside, restored by recover() if we die
                aside = root / STAGING / "aside"
                aside.mkdir(parents=True, exist_ok=True)
                request.target.rename(aside / f"{entry.name}-{os.getpid()}")
                out.rename(request.target)
        else:
            out.rename(request.target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    recover(root, entry.name)  # drops the work folder (holding the old data after an exchange) and any aside
    return state


def fetch(
    request: FetchRequest,
    settings: DownloadSettings | None = None,
    progress: Callable[[Artefact], Progress | None] = lambda artefact: None,
    limit: UnpackLimit | None = None,
    waiting: Callable[[str], None] | None = None,
) -> FetchOutcome:
    """Fetch one dataset as `request` says; FetchRefused / ChecksumError / DownloadError / BudgetExceeded say why not.
    The whole of it holds the dataset's lock (`waiting(name)` is called when another fetch has it)."""
    settings, limit = settings or DownloadSettings(), limit or UnpackLimit()
    check_allowed(request)
    new_root = not request.root.exists()
    request.root.mkdir(parents=True, exist_ok=True)
    try:
        with dataset_lock(request.root, request.entry.name, waiting):
            recover(request.root, request.entry.name)
            if not request.overwrite and is_up_to_date(request):
                return FetchOutcome(request.entry.name, "up to date", request.target)
            check_free_disk(request.root, disk_needed(request, limit), f"fetching {request.entry.name}")
            files = acquire(request, settings, progress)  # verified before anything under the target is touched
            state = convert_into_place(request, files, limit)
    except BaseException:
        if new_root:
            _remove_empty_root(request.root, request.entry.name)
        raise
    checks = tuple(got.verified for got in files.values())
    return FetchOutcome(request.entry.name, state, request.target, checks)


def _remove_empty_root(root: Path, name: str) -> None:
    """A failed first fetch into a new data root leaves no trace: its lock file and the folders, when empty."""
    (root / STAGING / "locks" / f"{name}.lock").unlink(missing_ok=True)
    for folder in (root / STAGING / "locks", root / STAGING / "work", root / STAGING, root):
        try:
            folder.rmdir()
        except OSError:  # not empty (downloads kept for a resume, another fetch's files) or gone: keep it
            pass
