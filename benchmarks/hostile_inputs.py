"""Hostile inputs: each attack on `lifelong data fetch` (archives, downloads, pickles, manifests, converter paths) met
by the plain-library recipe the toolkit used before (the baseline, same run) and by the toolkit as a user meets it.

Each side runs as a child under hard limits (address space 4 GB, 1 GB with --quick; files 2 GB, 256 MB; a wall
limit; a disk guard that stops it once it has written --max-disk), in its own folder W: the target
(W/data, the data root) and beside it a canary folder (W/canary) and the inputs (W/in). Measured per side: the exit
(or the signal, or the limit that stopped it), the error's first line, the bytes the child wrote (/proc/PID/io
wchar, read before it is reaped) and those left in the target, anything new or changed outside the target, the
peak RSS (wait4) and the wall time. The now side runs `lifelong data fetch` (--from a folder of crafted artefacts,
or a loopback server on 127.0.0.1 that stops by itself; --list for manifests), the level-file reader for pickles.
Checks on the now side (exit 1 when one fails): nothing written outside the target, exit 2 with an `error:` line
(the concurrency row: 0, one install) within the wall limit, bytes written under the case's budget plus 2 MiB (one
chunk and the CLI's own files), peak RSS under 512 MiB.

Run: python benchmarks/hostile_inputs.py [--quick] [--only 1,3,8] [--work DIR] [--out PATH] [--max-disk SIZE]
     [--keep]
--quick: small sizes, the trickle against a 5 s --deadline: ~40 s on 2 cores, < 0.3 GB of disk at a time. The full
run (10 GB bombs, a trickle against the default settings: 2 min before, ~3 min now) takes ~6.5 min on 2 cores and
never lets a side write more than --max-disk (default 3 GB); its bombs are cached in WORK/cache (~30 MB). Writes
WORK/hostile_inputs.md and .json (WORK: --work, default $TMPDIR/lifelong-hostile-inputs).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import _hostile_attacks as attacks

from lifelong.data.fetch.budgets import GB, MB, UnpackLimit, format_size, parse_size

HERE = Path(__file__).resolve().parent
CLI = [sys.executable, "-m", "lifelong.cli", "data", "fetch"]
RECIPE = [sys.executable, str(HERE / "_hostile_attacks.py")]
RSS_BOUND = 512 * 2**20
SLACK = 2 * 2**20  # one chunk (1 MiB) and the CLI's own small files
ENV = {"PYTHONDONTWRITEBYTECODE": "1", "OPENBLAS_NUM_THREADS": "1", "COLUMNS": "200"}  # no .pyc in the bytes written
ENV |= {"no_proxy": "127.0.0.1,localhost", "NO_PROXY": "127.0.0.1,localhost"}
LIMITS = "import os, resource as r, sys; r.setrlimit(r.RLIMIT_AS, ({0}, {0})); r.setrlimit(r.RLIMIT_FSIZE, ({1}, {1}))"
LIMITS += "; r.setrlimit(r.RLIMIT_CORE, (0, 0)); os.execv(sys.argv[1], sys.argv[1:])"


@dataclass
class Side:
    """One side's folder W (target W/data, canary W/canary, inputs W/in) and what the case functions need."""

    folder: Path
    name: str  # "before" or "now"
    quick: bool
    cache: Path
    server: attacks.Loopback
    data: Path = field(init=False)
    canary: Path = field(init=False)
    inputs: Path = field(init=False)

    def __post_init__(self) -> None:
        self.data, self.canary, self.inputs = self.folder / "data", self.folder / "canary", self.folder / "in"

    def work(self, name: str) -> Path:
        """The toolkit's work folder for `name` (its pid: 7 digits on the now side, as the installer names it)."""
        return self.data / ".fetch" / "work" / f"{name}-{'0' if self.name == 'before' else '1234567'}"

    def size(self, full: int, quick: int) -> int:
        return quick if self.quick else full


@dataclass
class Case:
    number: int  # the attack class
    title: str
    make: Callable[[Side], list[str] | None]  # the side's command (None: not measured on that side)
    limit: tuple[float, float]  # wall seconds (full, quick)
    before_limit: tuple[float, float] | None = None  # the before side's, when shorter (a trickle never ends)
    budget: Callable[[Side], int] = lambda s: MB  # bytes the now side may write
    expect: int = 2
    verify: Callable[[Side, str], str | None] | None = None  # a problem with the now side's outcome, or None


@dataclass
class Result:
    exit: str
    code: int | None
    message: str
    written: int
    left: int
    outside: int
    outside_changes: list[str]
    rss: int
    seconds: float
    stopped: str | None = None
    refused: bool = False  # an `error: ...` line and no traceback
    output: str = field(default="", repr=False)


CASES: list[Case] = []


def case(number: int, title: str, limit: tuple[float, float] = (120, 30), **kw: object) -> Callable:
    def add(make: Callable[[Side], list[str] | None]) -> Callable:
        CASES.append(Case(number, title, make, limit, **kw))  # type: ignore[arg-type]
        return make

    return add


# ---------------------------------------------------------------------------------------------------------------
# The commands of each side


def fetch_from(s: Side, source: Path, converter: str, options: str = "", *extra: str) -> list[str]:
    """`lifelong data fetch evil --from W/in/files` on a manifest of one artefact, `source`."""
    files = s.inputs / "files"
    files.mkdir(parents=True, exist_ok=True)
    if source.parent != files:
        try:
            os.link(source, files / source.name)  # a cached bomb: no copy
        except OSError:
            shutil.copyfile(source, files / source.name)
    manifest = s.inputs / "M.toml"
    manifest.write_text(
        f'[[dataset]]\nname = "evil"\naccess = "manual"\nmanual = "-"\nconverter = "{converter}"\n'
        f'options = {{ {options} }}\n[[dataset.artefacts]]\nfile = "{source.name}"\n'
    )
    return [*CLI, "evil", "--manifest", str(manifest), "--from", str(files), "--data-root", str(s.data), *extra]


def fetch_url(s: Side, route: tuple, size: int | None, *extra: str) -> list[str]:
    """Before: a urllib read loop into the download folder; now: `lifelong data fetch evil` from the loopback."""
    path = f"/{len(s.server.routes)}"
    s.server.routes[path] = route
    if s.name == "before":
        return [*RECIPE, "download", s.server.url(path), str(s.data / ".fetch/downloads/evil/a.bin.part")]
    manifest = s.inputs / "M.toml"
    s.inputs.mkdir(parents=True, exist_ok=True)
    manifest.write_text(
        f'[[dataset]]\nname = "evil"\naccess = "auto"\nconverter = "copy"\n[[dataset.artefacts]]\n'
        f'file = "a.bin"\nurls = ["{s.server.url(path)}"]\nsha256 = "{"0" * 64}"\n'
        + (f"size = {size}\n" if size is not None else "")
    )
    return [*CLI, "evil", "--manifest", str(manifest), "--data-root", str(s.data), *extra]


def unpack_case(s: Side, archive: Path, kind: str, options: str = "unpack = true", *extra: str) -> list[str]:
    if s.name == "before":
        return [*RECIPE, "unpack", str(archive), str(s.work("evil") / "scratch/unpacking"), kind]
    return fetch_from(s, archive, "copy", options, *extra)


def default_budget(s: Side, max_unpacked: str | None = None) -> int:
    """The unpack budget the toolkit gives the case's archive (20x its bytes + 1 MB), or --max-unpacked's size."""
    archive = next((s.inputs / "files").iterdir())
    return UnpackLimit.parse(max_unpacked).budget_for(archive.stat().st_size, None)[0]


def new_file(s: Side, name: str) -> Path:
    (s.inputs / "files").mkdir(parents=True, exist_ok=True)
    return s.inputs / "files" / name


@case(1, "tar: link chain past PATH_MAX, hard link over an outside file (CVE-2025-4517; links = true)",
      budget=default_budget)  # fmt: skip
def tar_chain(s: Side) -> list[str]:
    archive = new_file(s, "chain.tar")
    attacks.tar_link_chain(archive, s.work("evil") / "scratch/unpacking", s.canary)
    return unpack_case(s, archive, "tar", "unpack = true, links = true")  # links allowed: the harder case


def zip_case(member: Callable[[Side], str], mode: int = 0o100644) -> Callable[[Side], list[str]]:
    def make(s: Side) -> list[str]:
        archive = new_file(s, "a.zip")
        attacks.zip_member(archive, member(s), mode)
        return unpack_case(s, archive, "zip")

    return make


case(2, "zip: member ('../' x 6)canary/slip.txt", budget=default_budget)(
    zip_case(lambda s: "../" * 6 + "canary/slip.txt")
)
case(2, "zip: absolute member W/canary/abs.txt", budget=default_budget)(zip_case(lambda s: f"{s.canary}/abs.txt"))
case(2, "zip: character-device member", budget=default_budget)(zip_case(lambda s: "dev/tty9", 0o020644))


def bomb_case(kind: str, maker: Callable[[Path, int], None], suffix: str, options: str) -> Callable[[Side], list[str]]:
    def make(s: Side) -> list[str]:
        size = s.size(10 * GB, 200 * MB)
        cached = s.cache / f"bomb-{size}{suffix}"
        if not cached.exists():
            maker(cached.with_suffix(f".tmp{os.getpid()}"), size)  # another run may make it at the same time
            cached.with_suffix(f".tmp{os.getpid()}").rename(cached)
        archive = new_file(s, f"bomb{suffix}")
        os.link(cached, archive)
        return unpack_case(s, archive, kind, options, *(["--max-unpacked", "20MB"] if s.quick else []))

    return make


for _kind, _maker, _suffix, _options in (
    ("gz", attacks.gzip_bomb, ".bin.gz", "unpack = true, decompress = true"),
    ("tar", attacks.tar_gz_bomb, ".tar.gz", "unpack = true"),
    ("zip", attacks.zip_bomb, ".zip", "unpack = true"),
):
    title = f"{_suffix[1:]} bomb: 10 GB of zeros (quick: 200 MB against --max-unpacked 20MB)"
    case(3, title, (300, 30), budget=lambda s: default_budget(s, "20MB" if s.quick else None))(
        bomb_case(_kind, _maker, _suffix, _options))  # fmt: skip


@case(4, "tar.gz of links to folders, each level's to the level below (links = true)", (180, 30), budget=default_budget)
def link_levels(s: Side) -> list[str]:
    archive = new_file(s, "links.tar.gz")
    width, depth, file_bytes = (4, 6, 16 * 1024) if s.quick else (8, 8, 64 * 1024)
    attacks.tar_link_levels(archive, width, depth, file_bytes)
    return unpack_case(s, archive, "tar+links", "unpack = true, links = true")


@case(5, "download: endless body, no size in the manifest", budget=lambda s: s.size(GB, 20 * MB))
def endless(s: Side) -> list[str]:
    return fetch_url(s, ("endless",), None, "--max-download", "20MB" if s.quick else "1GB")


@case(5, "download: Content-Length of 1 TB (manifest size 1 MB), then zeros")
def huge_length(s: Side) -> list[str]:
    return fetch_url(s, ("length", 10**12), MB)


@case(5, "download: body 50x longer than the manifest size, no Content-Length", budget=lambda s: s.size(10, 1) * MB)
def longer(s: Side) -> list[str]:
    size = s.size(10, 1) * MB
    return fetch_url(s, ("longer", 50 * size), size)


@case(6, "download: trickle, 1 byte every 2 s (full: default settings; quick: --deadline 5s)", (420, 20),
      before_limit=(120, 8))  # fmt: skip
def trickle(s: Side) -> list[str]:
    return fetch_url(s, ("trickle", MB), MB, *([] if not s.quick else ["--deadline", "5s", "--min-rate", "1KB"]))


@case(7, "download: redirect to file:// (W/canary/secret.txt)")
def to_file(s: Side) -> list[str]:
    return fetch_url(s, ("to-file", f"file://{s.canary}/secret.txt"), None)


@case(7, "download: an HTML page instead of the archive")
def html(s: Side) -> list[str]:
    return fetch_url(s, ("html",), None)


def pickle_case(kind: str, full: int, quick: int) -> Callable[[Side], list[str]]:
    def make(s: Side) -> list[str]:
        path = new_file(s, "levels.pkl")
        attacks.pickle_attack(path, kind, s.size(full, quick))
        return [*RECIPE, "levels" if s.name == "before" else "now-levels", str(path)]

    return make


case(8, "pickle: a level of 8e9 zero-size items (numpy V0)")(pickle_case("zero-size", 0, 0))
case(8, "pickle: a 1,000-wnid level referenced 2e6 times (quick: 4e4)")(pickle_case("shared", 2 * 10**6, 4 * 10**4))
case(8, "pickle: a list 1e6 deep (quick: 1e5)")(pickle_case("deep", 10**6, 10**5))
case(8, "pickle: BINBYTES8 claiming 2**40 bytes")(pickle_case("binbytes8", 0, 0))


def manifest_case(kind: str, full: int, quick: int) -> Callable[[Side], list[str]]:
    def make(s: Side) -> list[str]:
        path = new_file(s, "BAD.toml")
        attacks.manifest_attack(path, kind, s.size(full, quick))
        return [*RECIPE, "manifest", str(path)] if s.name == "before" else [*CLI, "--manifest", str(path), "--list"]

    return make


case(9, "manifest: not UTF-8 (a Latin-1 title)")(manifest_case("latin1", 0, 0))
case(9, "manifest: arrays 50,000 deep (quick: 5,000)")(manifest_case("deep", 50_000, 5_000))
case(9, "manifest: a 50,000-part dotted key (quick: 5,000)")(manifest_case("dotted", 50_000, 5_000))
case(9, "manifest: a dataset name ending in a newline")(manifest_case("newline", 0, 0))


@case(10, "converter: idx rename = ../../../../../canary/evil-images-idx3-ubyte")
def idx_rename(s: Side) -> list[str]:
    data = new_file(s, "data.bin")
    data.write_bytes(b"\0\0\x08\x03" + bytes(1020))
    name = "../" * 5 + "canary/evil-images-idx3-ubyte"
    if s.name == "before":
        return [*RECIPE, "idx-rename", str(data), str(s.work("evil") / "evil"), name]
    return fetch_from(s, data, "idx", f'rename = {{ "data.bin" = "{name}" }}')


@case(10, "converter: VOC <filename> ../../../../../../../../canary/victim.jpg")
def voc(s: Side) -> list[str]:
    archive = new_file(s, "voc.tar")
    attacks.voc_tar(archive, "../" * 8 + "canary/victim.jpg")
    if s.name == "before":
        work = s.work("evil")
        return [*RECIPE, "voc", str(archive), str(work / "scratch/unpacked"), str(work / "evil")]
    return fetch_from(s, archive, "voc")


def one_install(s: Side, output: str) -> str | None:
    if not (s.data / "evil" / ".ready").is_file() or "up to date" not in output:
        return "two fetches at once: expected one install and one 'up to date'"
    return None


@case(11, "two fetches of one dataset at once (now side only: the old installer is not in this tree)",
      budget=lambda s: 3 * s.size(256, 16) * MB, expect=0, verify=one_install)  # fmt: skip
def twice(s: Side) -> list[str] | None:
    if s.name == "before":
        return None
    archive = new_file(s, "plain.tar")
    attacks.plain_tar(archive, s.size(256, 16) * MB)
    return [*RECIPE, "now-twice", *fetch_from(s, archive, "copy", "unpack = true")]


# ---------------------------------------------------------------------------------------------------------------
# Measuring one side


def message_of(stderr: str, stdout: str) -> str:
    """The error's most telling line: the dataset's own line after the CLI's summary, a traceback's last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if any(line.startswith("Traceback") for line in lines):
        return lines[-1]
    for i, line in enumerate(lines):
        if "datasets not fetched" in line and i + 1 < len(lines):
            return lines[i + 1]
        if not line.startswith("note:"):
            return line
    out = [line.strip() for line in stdout.splitlines() if line.strip()]
    return out[-1] if out else ""


def run_side(argv: list[str], side: Side, limit: float, max_disk: int, logs: Path) -> Result:
    """Run `argv` in `side.folder` under the limits; measure it (see the module docstring)."""
    before = attacks.tree_state(side.folder, side.data)
    address, fsize = (GB, 256 * 2**20) if side.quick else (4 * GB, 2 * GB)
    disk0, start, stopped, killed, hwm = attacks.used_disk(side.folder), time.monotonic(), None, False, 0
    # a child's ru_maxrss starts at this process's peak (fork copies its pages, exec keeps the high-water mark): the
    # child's own peak is the polled VmHWM unless ru_maxrss passes this one
    inherited = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    with open(logs.with_suffix(".out"), "wb") as out, open(logs.with_suffix(".err"), "wb") as err:
        limited = [sys.executable, "-c", LIMITS.format(address, fsize), *argv]
        child = subprocess.Popen(limited, stdout=out, stderr=err, cwd=side.folder, env=os.environ | ENV,
                                 start_new_session=True)  # fmt: skip
    while os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is None:
        # the disk guard: the child's own writes, and the file system's growth (another writer's too) at twice that
        grown, written = attacks.used_disk(side.folder) - disk0, attacks.written_by(child.pid)
        hwm = max(hwm, attacks.peak_rss(child.pid))
        if stopped is None and max(written, grown / 2) > max_disk:
            stopped = f"stopped by the benchmark's disk guard at {format_size(max(written, grown))}"
        elif stopped is None and time.monotonic() - start > limit:
            stopped = f"still running at {limit:.0f} s"
        if stopped and not killed:
            os.killpg(child.pid, signal.SIGKILL)
            killed = True
        time.sleep(0.05)
    seconds, written = time.monotonic() - start, attacks.written_by(child.pid)  # a zombie's counts: read before reaping
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    stdout, stderr = (logs.with_suffix(s).read_text(errors="replace") for s in (".out", ".err"))
    message = message_of(stderr, stdout).replace(str(side.folder), "W")  # W: the side's folder, as in the titles
    code = child.returncode if child.returncode >= 0 else None
    if stopped:
        text = f"{stopped} (stopped by the benchmark)" if "still" in stopped else stopped
    elif "[Errno 27] File too large" in message:  # Python ignores SIGXFSZ: a write past RLIMIT_FSIZE fails
        stopped = text = f"{code}: stopped by the benchmark's own file-size limit at {format_size(fsize)}"
    elif code is None:
        text = f"killed by {signal.Signals(-child.returncode).name}"
    elif "MemoryError" in message:
        stopped = text = f"{code}: MemoryError at the benchmark's own {format_size(address)} address-space limit"
    else:
        text = str(code)
    after = attacks.tree_state(side.folder, side.data)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    outside = sum(after[k][1] for k in changed if k in after and not after[k][0] and after[k][3])
    left = attacks.bytes_in(side.data)
    refused = "Traceback" not in stderr and any(line.startswith("error:") for line in stderr.splitlines())
    rss = usage.ru_maxrss * 1024 if usage.ru_maxrss * 1024 > inherited or not hwm else hwm
    return Result(text, code, message, written or left, left, outside, changed, rss, seconds, stopped, refused,
                  stdout + stderr)  # fmt: skip


def prepare(folder: Path, name: str, args: argparse.Namespace, cache: Path, server: attacks.Loopback) -> Side:
    side = Side(folder, name, args.quick, cache, server)
    for sub in (side.data, side.canary, side.inputs):
        sub.mkdir(parents=True, exist_ok=True)
    (side.canary / "victim.txt").write_text("the user's file\n")
    (side.canary / "victim.jpg").write_bytes(b"\xff\xd8the user's photo\xff\xd9")
    (side.canary / "secret.txt").write_text("a secret\n")
    return side


def now_problems(c: Case, side: Side, r: Result, limit: float) -> list[str]:
    """Every check the now side fails, in words."""
    found = []
    if r.outside_changes:
        found.append(f"wrote outside the target: {', '.join(r.outside_changes[:5])}")
    if r.stopped or r.code != c.expect or (c.expect == 2 and not r.refused):
        found.append(f"ended with {r.exit} ({r.message[:200]!r}), not exit {c.expect} within {limit:.0f} s")
    if r.written > (budget := c.budget(side)) + SLACK:
        found.append(f"wrote {format_size(r.written)}, over its budget {format_size(budget)} + 2 MiB")
    if r.rss > RSS_BOUND:
        found.append(f"peak RSS {format_size(r.rss)} over {format_size(RSS_BOUND)}")
    if c.verify and (problem := c.verify(side, r.output)):
        found.append(problem)
    return [f"[{c.number}] {c.title}: {p}" for p in found]


# ---------------------------------------------------------------------------------------------------------------
# Reporting


def cells(r: Result | None) -> list[str]:
    if r is None:
        return ["n/a", "", "", "", "", ""]
    outside = format_size(r.outside) + (f", {len(r.outside_changes)} changed" if r.outside_changes else "")
    message = re.sub(r"(.)\1{15,}", lambda m: f"{m[1] * 3}...({len(m[0])})", r.message).replace("|", "\\|")
    message = message if len(message) <= 140 else message[:137] + "..."
    written = f"{format_size(r.written)} ({format_size(r.left)})"
    return [r.exit, written, outside, format_size(r.rss), f"{r.seconds:.1f} s", message]


def table(rows: list[tuple[Case, Result | None, Result]]) -> str:
    columns = ("exit", "written (left)", "outside", "peak RSS", "time", "message")
    head = ["#", "attack"] + [f"{side}: {column}" for side in ("before", "now") for column in columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c, before, now in rows:
        lines.append("| " + " | ".join([str(c.number), c.title, *cells(before), *cells(now)]) + " |")
    return "\n".join(lines)


def ratios(rows: list[tuple[Case, Result | None, Result]]) -> list[str]:
    """Per class, before -> now: bytes written, bytes outside, peak RSS, and the ratios where both are non-zero
    ('>=' where a limit of the benchmark stopped a before side: its true figure is larger)."""
    lines = []
    for number in sorted({c.number for c, _, _ in rows}):
        pairs = [(b, n) for c, b, n in rows if c.number == number and b is not None]
        if not pairs:
            lines.append(f"class {number}: now side only")
            continue
        at_least = ">= " if any(b.stopped for b, _ in pairs) else ""
        parts = []
        for what, total in (("written", sum), ("outside", sum), ("peak RSS", max)):
            key = {"peak RSS": "rss"}.get(what, what)
            old, new = total(getattr(b, key) for b, _ in pairs), total(getattr(n, key) for _, n in pairs)
            ratio = f" ({at_least}{old / new:.3g}x)" if old and new else ""
            parts.append(f"{what} {format_size(old)} -> {format_size(new)}{ratio}")
        lines.append(f"class {number}: " + ", ".join(parts))
    return lines


def machine() -> str:
    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").is_file() else []
    model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), "?")
    return f"{os.cpu_count()} CPUs ({model}), Python {platform.python_version()}, {platform.platform()}"


def run_case(c: Case, folder: Path, name: str, args: argparse.Namespace, cache: Path, server: attacks.Loopback,
             max_disk: int, problems: list[str]) -> Result | None:  # fmt: skip
    """One side of one case, measured (None where the case has no such side); the now side's problems added."""
    limits = c.before_limit if name == "before" and c.before_limit else c.limit
    limit = limits[1] if args.quick else limits[0]
    side = prepare(folder / name, name, args, cache, server)
    command = c.make(side)
    result = None if command is None else run_side(command, side, limit, max_disk, folder / name)
    if name == "now":
        assert result is not None
        problems += now_problems(c, side, result, limit)
    if not args.keep:
        shutil.rmtree(side.folder, ignore_errors=True)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, seconds per attack")
    parser.add_argument("--only", default="", help="attack classes to run, e.g. 1,3,8 (default: all)")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "lifelong-hostile-inputs")
    parser.add_argument("--out", type=Path, help="the Markdown table (default WORK/hostile_inputs.md; also .json)")
    parser.add_argument("--max-disk", help="the most one side may grow the disk by (default 3GB; quick 400MB)")
    parser.add_argument("--keep", action="store_true", help="keep each side's folder (WORK/run-PID/...)")
    args = parser.parse_args(argv)
    max_disk = parse_size(args.max_disk or ("400MB" if args.quick else "3GB"))
    only = {int(n) for n in args.only.split(",") if n.strip()}
    cache, run = args.work / "cache", args.work / f"run-{os.getpid()}"
    for folder in (cache, run):
        folder.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(run).free
    if free < 2 * max_disk + GB:
        raise SystemExit(f"hostile_inputs: {run} has {format_size(free)} free; it needs 2 x --max-disk + 1 GB")
    out = args.out or args.work / "hostile_inputs.md"
    print(f"hostile inputs ({'quick' if args.quick else 'full'}) on {machine()}; work in {run}", flush=True)
    server = attacks.Loopback({}, lifetime=900 if args.quick else 3600)
    rows, problems, start = [], [], time.monotonic()
    try:
        for i, c in enumerate(x for x in CASES if not only or x.number in only):
            before, now = (run_case(c, run / f"{i:02d}", name, args, cache, server, max_disk, problems)
                           for name in ("before", "now"))  # fmt: skip
            print(f"[{c.number}] {c.title}\n    before: {' | '.join(cells(before))}\n    now:    "
                  f"{' | '.join(cells(now))}", flush=True)  # fmt: skip
            rows.append((c, before, now))
    finally:
        server.close()
    seconds = time.monotonic() - start
    text = (
        f"Hostile inputs, {'--quick' if args.quick else 'full run'}: {machine()}; {seconds:.0f} s.\n"
        "written: bytes the child wrote (wchar); left: bytes left in the target after it ended; outside: bytes "
        "new or changed beside the target (W/canary, W/in).\n\n" + table(rows) + "\n\n" + "\n".join(ratios(rows))
    )
    print("\n" + text)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n")
    report = [{"class": c.number, "attack": c.title, "before": b and asdict(b), "now": asdict(n)} for c, b, n in rows]
    summary = {"machine": machine(), "quick": args.quick, "seconds": seconds, "rows": report, "failed": problems}
    out.with_suffix(".json").write_text(json.dumps(summary, indent=2))
    if not args.keep:
        shutil.rmtree(run, ignore_errors=True)
    if problems:
        raise SystemExit("hostile_inputs FAILED:\n- " + "\n- ".join(problems))
    print(f"hostile_inputs: every check passed ({len(rows)} attacks, {seconds:.0f} s); table in {out}")


if __name__ == "__main__":
    main()
