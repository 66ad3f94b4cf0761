"""Archives made by an attacker (issue 38): links chained past PATH_MAX (CVE-2025-4517), zip-slip, links, device
files and fifos, hard links, links to folders, and bombs. Nothing may land or change outside the target, no link
may reach the disk, and no unpack writes more than its byte budget (plus at most one chunk)."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest
from _prereq import needs
from archive_writers import compress_bytes, libarchive_missing, rar_bytes

from lifelong.data.fetch.budgets import BudgetExceeded, ByteBudget
from lifelong.data.fetch.conversion import Conversion
from lifelong.data.fetch.members import CHUNK
from lifelong.data.fetch.unpack import UnsafeArchiveError, unpack

needs_libarchive = needs(not libarchive_missing(), libarchive_missing())
LIMIT = 200_000  # the budget of the bomb tests: 2 MB of zeros against it
ZEROS = bytes(2_000_000)


def tar_of(*members: tuple[str, bytes, str], mode: str = "w") -> bytes:
    """A tar of (name, type, link target or data) members, written in that order."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode, format=tarfile.PAX_FORMAT) as tf:
        for name, kind, value in members:
            info = tarfile.TarInfo(name)
            info.type, info.mode = kind, 0o755 if kind == tarfile.DIRTYPE else 0o644
            data = value.encode() if kind == tarfile.REGTYPE else b""
            info.linkname = value if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE) else ""
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data) if data else None)
    return buffer.getvalue()


def zip_of(files: dict[str, bytes], modes: dict[str, tuple[int, bytes]] | None = None) -> bytes:
    """A zip of `files` plus members with a unix mode (name -> (mode, data)): a symbolic link's data is its target."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        for name, (mode, data) in (modes or {}).items():
            info = zipfile.ZipInfo(name)
            info.create_system, info.external_attr = 3, mode << 16
            zf.writestr(info, data)
    return buffer.getvalue()


def cve_2025_4517_tar() -> bytes:
    """Folders of 247-character names chained by one-letter links until the real path passes PATH_MAX (so a
    realpath stops resolving and judges the rest lexically), a link back to the top through that path, `escape`
    through it to the target's parent, a file written through `escape`, and a hard link to an outside file that
    the next member overwrites."""
    component, steps = "d" * 247, "abcdefghijklmnop"
    members, real, short = [], "", ""
    for step in steps:
        members += [
            (os.path.join(real, component), tarfile.DIRTYPE, ""),
            (os.path.join(real, step), tarfile.SYMTYPE, component),
        ]
        real, short = os.path.join(real, component), os.path.join(short, step)
    top = os.path.join(short, "l" * 254)
    members += [(top, tarfile.SYMTYPE, "/".join([".."] * len(steps))), ("escape", tarfile.SYMTYPE, top + "/..")]
    members += [("escape/planted.txt", tarfile.REGTYPE, "pwned"), ("hl", tarfile.LNKTYPE, "escape/victim.txt")]
    members += [("hl", tarfile.REGTYPE, "overwritten")]
    return tar_of(*members)


def snapshot(folder: Path, skip: Path) -> dict[str, bytes]:
    """Every file under `folder` but those under `skip` (the target, not even walked), with its bytes."""
    found = {}
    for top, folders, files in os.walk(folder):
        folders[:] = [f for f in folders if Path(top, f) != skip]
        found |= {Path(top, f).relative_to(folder).as_posix(): Path(top, f).read_bytes() for f in files}
    return found


def links_on_disk(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_symlink()]


def written(folder: Path) -> int:
    return sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def refused(archive: Path, target: Path, error=UnsafeArchiveError, **options) -> Exception | None:
    """The error unpack raised, or None: the caller checks the outside first, so a write outside shows as such."""
    try:
        unpack(archive, target, **options)
    except error as exc:
        return exc
    return None


@pytest.mark.parametrize("links", [False, True])
def test_links_chained_past_path_max_write_nothing_outside(tmp_path, links):
    work = tmp_path / "w"  # the target's parent, where the archive's escape would land
    work.mkdir()
    (work / "victim.txt").write_bytes(b"original")
    (work / "x.tar").write_bytes(cve_2025_4517_tar())
    before = snapshot(tmp_path, work / "target")
    error = refused(work / "x.tar", work / "target", links=links)
    assert snapshot(tmp_path, work / "target") == before  # nothing planted, the victim unchanged
    assert not (work / "planted.txt").exists() and (work / "victim.txt").read_bytes() == b"original"
    assert error is not None and "x.tar member" in str(error)
    assert not links_on_disk(work / "target")


@pytest.mark.parametrize(
    "member", ["../evil.txt", "/evil.txt", "a/../../evil.txt", "C:/evil.txt", "c:evil.txt", "..\\evil.txt",
               "a\\..\\..\\evil.txt", "\\evil.txt", "ok/ev\x01il.txt"],
)  # fmt: skip
def test_zip_slip_is_refused_whatever_the_separator(tmp_path, member):
    (tmp_path / "slip.zip").write_bytes(zip_of({"ok.txt": b"fine", member: b"evil"}))
    error = refused(tmp_path / "slip.zip", tmp_path / "out" / "target")
    assert snapshot(tmp_path, tmp_path / "out" / "target") == {"slip.zip": (tmp_path / "slip.zip").read_bytes()}
    assert error is not None and f"slip.zip: member {member!r}" in str(error)


@pytest.mark.parametrize("member", ["../evil.txt", "..\\evil.txt", "a/../../evil.txt"])
@pytest.mark.parametrize("form", ["tar", "zip", pytest.param("rar", marks=needs_libarchive)])
def test_tar_zip_and_rar_refuse_a_climbing_member_alike(tmp_path, form, member):
    data = {"tar": lambda: tar_of((member, tarfile.REGTYPE, "evil")), "zip": lambda: zip_of({member: b"evil"})}
    data["rar"] = lambda: rar_bytes({member: b"evil"})
    (tmp_path / f"a.{form}").write_bytes(data[form]())
    with pytest.raises(UnsafeArchiveError, match=r"a\.(tar|zip|rar): member .* climbs out"):
        unpack(tmp_path / f"a.{form}", tmp_path / "out" / "target")
    assert not (tmp_path / "out" / "evil.txt").exists() and not (tmp_path / "evil.txt").exists()


LINKED = {"zip": lambda links: zip_of({"d/f.txt": b"data"}, {n: (0o120777, t.encode()) for n, t in links.items()}),
          "rar": lambda links: rar_bytes({"d/f.txt": b"data"}, links=links),
          "tar": lambda links: tar_of(("d/f.txt", tarfile.REGTYPE, "data"),
                                      *((n, tarfile.SYMTYPE, t) for n, t in links.items()))}  # fmt: skip
FORMS = ["tar", "zip", pytest.param("rar", marks=needs_libarchive)]


@pytest.mark.parametrize("form", FORMS)
def test_a_symbolic_link_is_refused_unless_asked_for_and_then_becomes_a_copy(tmp_path, form):
    (tmp_path / f"a.{form}").write_bytes(LINKED[form]({"d/l.txt": "f.txt", "top.txt": "d/f.txt"}))
    with pytest.raises(UnsafeArchiveError, match=rf"a\.{form} member '.*' is a link .*links = true"):
        unpack(tmp_path / f"a.{form}", tmp_path / "refused")
    budget = ByteBudget(10_000, "a test", "toy")
    unpack(tmp_path / f"a.{form}", tmp_path / "out", links=True, budget=budget)
    out = tmp_path / "out"
    assert [(out / n).read_bytes() for n in ("d/f.txt", "d/l.txt", "top.txt")] == [b"data"] * 3
    assert not links_on_disk(out) and (out / "d/l.txt").stat().st_nlink == 1
    assert budget.used >= 3 * len(b"data")  # the copies are charged too


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("target", ["../../outside.txt", "/etc/passwd", "C:/x", "e/../../../x", "..\\..\\x"])
def test_a_symbolic_link_leaving_the_target_is_refused_even_when_links_are_asked_for(tmp_path, form, target):
    (tmp_path / "outside.txt").write_bytes(b"secret")
    (tmp_path / f"a.{form}").write_bytes(LINKED[form]({"d/l": target}))
    with pytest.raises(UnsafeArchiveError, match=rf"a\.{form} member 'd/l'"):
        unpack(tmp_path / f"a.{form}", tmp_path / "out" / "target", links=True)
    assert not links_on_disk(tmp_path / "out") and not (tmp_path / "out" / "target" / "d" / "l").exists()


@pytest.mark.parametrize("kind", [tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE])
def test_device_files_and_fifos_in_a_tar_are_refused(tmp_path, kind):
    (tmp_path / "a.tar").write_bytes(tar_of(("dev", kind, "")))
    with pytest.raises(UnsafeArchiveError, match=r"a\.tar member 'dev' is not a plain file, folder or link"):
        unpack(tmp_path / "a.tar", tmp_path / "out", links=True)
    assert not os.path.lexists(tmp_path / "out" / "dev")


@pytest.mark.parametrize("mode", [stat.S_IFIFO | 0o644, stat.S_IFCHR | 0o644, stat.S_IFSOCK | 0o644])
@pytest.mark.parametrize("form", ["zip", pytest.param("rar", marks=needs_libarchive)])
def test_device_files_and_fifos_in_a_zip_or_rar_are_refused(tmp_path, form, mode):
    data = zip_of({}, {"dev": (mode, b"")}) if form == "zip" else rar_bytes({}, modes={"dev": mode})
    (tmp_path / f"a.{form}").write_bytes(data)
    with pytest.raises(UnsafeArchiveError, match=rf"a\.{form} member 'dev' is not a plain file"):
        unpack(tmp_path / f"a.{form}", tmp_path / "out", links=True)
    assert not os.path.lexists(tmp_path / "out" / "dev")


def test_a_hard_link_is_a_copy_and_a_later_member_of_its_name_never_writes_through_it(tmp_path):
    members = (("d/a.txt", tarfile.REGTYPE, "original"), ("hl", tarfile.LNKTYPE, "d/a.txt"))
    (tmp_path / "a.tar").write_bytes(tar_of(*members))
    with pytest.raises(UnsafeArchiveError, match=r"a\.tar member 'hl' is a link"):
        unpack(tmp_path / "a.tar", tmp_path / "refused")
    unpack(tmp_path / "a.tar", tmp_path / "copy", links=True)  # a hard link's target starts at the archive's root
    assert (tmp_path / "copy/hl").read_bytes() == b"original" and (tmp_path / "copy/hl").stat().st_nlink == 1
    (tmp_path / "b.tar").write_bytes(tar_of(*members, ("hl", tarfile.REGTYPE, "overwritten")))  # hl, then a file
    unpack(tmp_path / "b.tar", tmp_path / "later", links=True)
    assert (tmp_path / "later/hl").read_bytes() == b"overwritten"
    assert (tmp_path / "later/d/a.txt").read_bytes() == b"original"


def test_a_hard_link_to_an_outside_file_is_refused(tmp_path):
    (tmp_path / "victim.txt").write_bytes(b"original")
    (tmp_path / "a.tar").write_bytes(tar_of(("hl", tarfile.LNKTYPE, "../victim.txt"), ("hl", tarfile.REGTYPE, "x")))
    for links in (False, True):
        with pytest.raises(UnsafeArchiveError, match=r"a\.tar member 'hl'"):
            unpack(tmp_path / "a.tar", tmp_path / f"out{links}", links=links)
    assert (tmp_path / "victim.txt").read_bytes() == b"original"


def test_a_member_under_a_link_is_refused(tmp_path):
    archive = tar_of(("real", tarfile.DIRTYPE, ""), ("d", tarfile.SYMTYPE, "real"), ("d/f.txt", tarfile.REGTYPE, "x"))
    (tmp_path / "a.tar").write_bytes(archive)
    with pytest.raises(UnsafeArchiveError, match=r"member 'd/f\.txt' lies under the link a\.tar member 'd'"):
        unpack(tmp_path / "a.tar", tmp_path / "out", links=True)
    assert not (tmp_path / "out/real/f.txt").exists()


def test_a_link_already_in_the_target_is_never_written_through(tmp_path):
    (tmp_path / "victim.txt").write_bytes(b"original")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "f.txt").symlink_to(tmp_path / "victim.txt")
    (tmp_path / "a.zip").write_bytes(zip_of({"f.txt": b"overwritten"}))
    with pytest.raises(UnsafeArchiveError, match="outside"):
        unpack(tmp_path / "a.zip", tmp_path / "out")
    assert (tmp_path / "victim.txt").read_bytes() == b"original"


def doubling_links(levels: int) -> bytes:
    """A few hundred bytes gzipped: d0 holds 10 KB, each d<k> holds two links to d<k-1>: 2**levels copies of it."""
    members = [("d0/f", tarfile.REGTYPE, "x" * 10_000)]
    for k in range(1, levels + 1):
        members += [(f"d{k}/a", tarfile.SYMTYPE, f"../d{k - 1}"), (f"d{k}/b", tarfile.SYMTYPE, f"../d{k - 1}")]
    return tar_of(*members, mode="w:gz")


def test_links_to_folders_are_copied_within_the_budget(tmp_path):
    data = doubling_links(20)  # 10 GB once copied out
    assert len(data) < 1000
    (tmp_path / "a.tar.gz").write_bytes(data)
    with pytest.raises(BudgetExceeded, match=r"a\.tar\.gz member 'd\d+/[ab]' .*500\.0 KB.*--max-unpacked"):
        unpack(tmp_path / "a.tar.gz", tmp_path / "out", links=True, budget=ByteBudget(500_000, "a test", "toy"))
    assert written(tmp_path / "out") <= 500_000 + CHUNK and not links_on_disk(tmp_path / "out")
    (tmp_path / "small.tar.gz").write_bytes(doubling_links(3))  # 8 copies fit: each link a folder of copies
    unpack(tmp_path / "small.tar.gz", tmp_path / "small", links=True, budget=ByteBudget(500_000, "a test", "toy"))
    assert (tmp_path / "small/d3/b/a/b/f").read_bytes() == b"x" * 10_000 and not links_on_disk(tmp_path / "small")


@pytest.mark.parametrize(
    ("links", "message"),
    [({"d/self": "."}, "holding it"), ({"d/e/up": "../.."}, "holding it"), ({"x": "x"}, "go round"),
     ({"a/l": "../b", "b/l": "../a"}, "lead back"), ({"p": "q", "q": "p"}, "go round")],
)  # fmt: skip
def test_a_folder_that_links_to_itself_is_refused(tmp_path, links, message):
    members = [("a/f", tarfile.REGTYPE, "1"), ("b/f", tarfile.REGTYPE, "2"), ("d/e/f", tarfile.REGTYPE, "3")]
    (tmp_path / "a.tar").write_bytes(tar_of(*members, *((n, tarfile.SYMTYPE, t) for n, t in links.items())))
    with pytest.raises(UnsafeArchiveError, match=message):
        unpack(tmp_path / "a.tar", tmp_path / "out", links=True, budget=ByteBudget(100_000, "a test", "toy"))
    assert written(tmp_path / "out") < 100_000 and not links_on_disk(tmp_path / "out")


def _tar_gz() -> bytes:
    return tar_of(("zeros", tarfile.REGTYPE, ZEROS.decode()), mode="w:gz")


BOMBS = {
    "zeros.gz": (lambda: gzip.compress(ZEROS), "zeros"),
    "zeros.bz2": (lambda: bz2.compress(ZEROS), "zeros"),
    "zeros.xz": (lambda: lzma.compress(ZEROS), "zeros"),
    "zeros.tar.gz": (_tar_gz, "zeros"),
    "zeros.zip": (lambda: zip_of({"zeros": ZEROS}), "zeros"),
}


@pytest.mark.parametrize("name", [*BOMBS, pytest.param("zeros.Z", marks=needs_libarchive)])
def test_a_bomb_stops_at_the_budget(tmp_path, name):
    make, member = BOMBS.get(name, (lambda: compress_bytes(ZEROS), "zeros"))
    data = make()
    assert len(data) < 100_000  # 2 MB of zeros, compressed
    (tmp_path / name).write_bytes(data)
    budget = ByteBudget(LIMIT, "a test's budget", "toy")
    with pytest.raises(BudgetExceeded) as caught:
        unpack(tmp_path / name, tmp_path / "out", budget=budget)
    assert f"{name} member {member!r}" in str(caught.value)
    assert "200.0 KB" in str(caught.value) and "--max-unpacked" in str(caught.value)
    assert written(tmp_path / "out") <= LIMIT + CHUNK


def test_a_member_declaring_more_than_the_budget_is_refused_before_it_is_written(tmp_path):
    info = tarfile.TarInfo("big")
    info.size = 10_000_000
    (tmp_path / "a.tar").write_bytes(info.tobuf() + bytes(512))  # the header claims 10 MB, 512 bytes follow
    budget = ByteBudget(LIMIT, "a test", "toy")
    with pytest.raises(BudgetExceeded, match=r"a\.tar member 'big', which declares 10\.0 MB, .*200\.0 KB"):
        unpack(tmp_path / "a.tar", tmp_path / "out", budget=budget)
    assert not (tmp_path / "out" / "big").exists() and budget.used == 0
    (tmp_path / "a.zip").write_bytes(zip_of({"small": b"1", "big": ZEROS}))
    with pytest.raises(BudgetExceeded, match=r"a\.zip member 'big', which declares 2\.0 MB"):
        unpack(tmp_path / "a.zip", tmp_path / "zip", budget=ByteBudget(LIMIT, "a test", "toy"))
    assert (tmp_path / "zip" / "small").exists() and not (tmp_path / "zip" / "big").exists()


def conversion(tmp_path: Path, artefacts: dict[str, bytes], budget: ByteBudget, **options) -> Conversion:
    for name, data in artefacts.items():
        (tmp_path / name).write_bytes(data)
    return Conversion("toy", {n: tmp_path / n for n in artefacts}, tmp_path / "work", tmp_path / "out", options,
                      budget=budget)  # fmt: skip


def test_a_conversion_charges_every_archive_inner_ones_too_to_its_budget(tmp_path):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tf:
        info = tarfile.TarInfo("sub/inner.tar.gz")
        inner = _tar_gz()
        info.size = len(inner)
        tf.addfile(info, io.BytesIO(inner))
    outer = buffer.getvalue()
    job = conversion(tmp_path, {"outer.tar": outer, "notes.txt": b"n" * 1000}, ByteBudget(LIMIT, "a test", "toy"),
                     unpack_inner=True)  # fmt: skip
    with pytest.raises(BudgetExceeded, match=r"inner\.tar\.gz member 'zeros'"):
        job.unpacked()
    assert written(tmp_path / "work") <= LIMIT + CHUNK


def test_a_conversion_reads_the_links_option_and_copies_links_into_files(tmp_path):
    archive = tar_of(("d/f", tarfile.REGTYPE, "data"), ("d/l", tarfile.SYMTYPE, "f"))
    budget = ByteBudget(LIMIT, "a test", "toy")
    base = conversion(tmp_path, {"a.tar": archive}, budget, links=True).unpacked()
    assert (base / "d/l").read_bytes() == b"data" and not links_on_disk(base)
    (tmp_path / "no").mkdir()
    with pytest.raises(UnsafeArchiveError, match="links = true"):
        conversion(tmp_path / "no", {"a.tar": archive}, budget).unpacked()
