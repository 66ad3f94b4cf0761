"""RAR and unix-compress (.Z) archives: the fixture writers against independent readers, safe unpacking through
libarchive, links inside unpacked trees (allowed with the `links` option), and the `scores` / `dedupe` conversions
of TID and AnimalWeb."""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest
from _prereq import missing, needs
from archive_writers import compress_bytes, libarchive_missing, rar_bytes
from fetch_fixtures import tar_bytes

from lifelong.data.fetch import archives_libarchive
from lifelong.data.fetch.conversion import Conversion, ConversionError
from lifelong.data.fetch.converters_scores import equal_count_buckets, score_rows
from lifelong.data.fetch.converters_tables import pattern_rows
from lifelong.data.fetch.duplicates import drop_duplicate_images
from lifelong.data.fetch.unpack import UnsafeArchiveError, archive_kind, unpack


def plain_tar(members: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    return tar_bytes(members, "w", links)


needs_libarchive = needs(not libarchive_missing(), libarchive_missing())


def tree(folder) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# The writers, checked by readers that share no code with them.


@pytest.mark.parametrize("tool", [["uncompress", "-c"], ["gzip", "-dc"]])
def test_compress_output_is_read_back_by_the_system_decompressors(tool):
    if shutil.which(tool[0]) is None:
        missing(f"{tool[0]} is not installed: apt-get install gzip (Debian package)")
    rng = np.random.default_rng(0)
    samples = [b"", b"a", b"abababababab", rng.integers(0, 3, 4000, dtype=np.uint8).tobytes()]
    samples.append(rng.integers(0, 256, 200_000, dtype=np.uint8).tobytes())  # codes grow from 9 to 16 bits
    for data in samples:
        done = subprocess.run(tool, input=compress_bytes(data), capture_output=True, check=False)
        assert done.stdout == data, (len(data), done.stderr)


@needs_libarchive
def test_rar_output_is_read_back_by_libarchive(tmp_path):
    members = {"top/": b"", "top/a.txt": b"hello", "top/sub/b.bin": bytes(range(256)) * 3, "c.txt": b""}
    (tmp_path / "x.rar").write_bytes(rar_bytes(members, links={"top/l": "a.txt"}))
    import libarchive

    seen = {}
    with libarchive.file_reader(str(tmp_path / "x.rar")) as archive:
        for entry in archive:
            seen[entry.pathname] = ("link", entry.linkpath) if entry.issym else b"".join(entry.get_blocks())
        assert archive.format_name.startswith(b"RAR")
    assert seen == {"top": b"", "top/a.txt": b"hello", "top/sub/b.bin": members["top/sub/b.bin"], "c.txt": b""} | {
        "top/l": ("link", "a.txt")
    }


# Unpacking.


@needs_libarchive
def test_rar_members_land_under_the_target_and_the_bytes_decide_the_kind(tmp_path):
    members = {"d/": b"", "d/x.bmp": b"xx", "d/e/y.txt": b"yy"}
    (tmp_path / "a.rar").write_bytes(rar_bytes(members))
    (tmp_path / "served.zip").write_bytes(rar_bytes(members))  # a RAR under another archive's name
    assert archive_kind("a.rar") == "rar" and archive_kind("VisTex.tar.Z") == "tar" and archive_kind("x.Z") == "single"
    for name in ("a.rar", "served.zip"):
        unpack(tmp_path / name, tmp_path / name.replace(".", "_"))
        assert tree(tmp_path / name.replace(".", "_")) == {"d/x.bmp": b"xx", "d/e/y.txt": b"yy"}


@needs_libarchive
@pytest.mark.parametrize(
    ("members", "links", "refusal"),
    [
        ({"../evil.txt": b"x"}, None, "outside"),
        ({"/etc/evil.txt": b"x"}, None, "outside"),
        ({"ok/../../evil.txt": b"x"}, None, "outside"),
        ({"ok.txt": b"x"}, {"l": "../../etc/passwd"}, "is a link"),
    ],
)
def test_a_rar_member_leaving_the_target_is_refused(tmp_path, members, links, refusal):
    (tmp_path / "bad.rar").write_bytes(rar_bytes(members, links=links))
    with pytest.raises(UnsafeArchiveError, match=refusal):
        unpack(tmp_path / "bad.rar", tmp_path / "out" / "target")
    assert not (tmp_path / "out" / "evil.txt").exists() and not (tmp_path / "evil.txt").exists()


@needs_libarchive
def test_a_corrupt_rar_names_the_artefact_and_a_corrupt_member_names_itself(tmp_path):
    data = rar_bytes({"a.txt": b"first", "b.txt": b"second" * 50, "c.txt": b"third"})
    (tmp_path / "cut.rar").write_bytes(data[: data.find(b"second") + 40])  # b.txt's data cut short
    with pytest.raises(ValueError, match=r"cut\.rar: member 'b\.txt' is corrupt .*skip_bad_members"):
        unpack(tmp_path / "cut.rar", tmp_path / "out")
    (tmp_path / "junk.rar").write_bytes(archives_libarchive.RAR4_MAGIC + b"\x00" * 5 + b"\xff" * 40)
    with pytest.raises(ValueError, match=r"junk\.rar: cannot unpack"):
        unpack(tmp_path / "junk.rar", tmp_path / "out2")


@needs_libarchive
def test_skip_bad_members_leaves_a_rar_member_out_and_names_it(tmp_path, monkeypatch):
    # libarchive does not check a stored member's CRC, so the unreadable member is simulated at the reader
    real = archives_libarchive.member_blocks

    def blocks(member):
        if member.name == "b.txt":
            raise archives_libarchive.ArchiveReadError("CRC error")
        yield from real(member)

    monkeypatch.setattr(archives_libarchive, "member_blocks", blocks)
    (tmp_path / "a.rar").write_bytes(rar_bytes({"a.txt": b"1", "b.txt": b"2", "c.txt": b"3"}))
    skipped: list[str] = []
    unpack(tmp_path / "a.rar", tmp_path / "out", skipped=skipped)
    assert tree(tmp_path / "out") == {"a.txt": b"1", "c.txt": b"3"} and skipped == ["a.rar:b.txt"]


@needs_libarchive
def test_a_tar_z_is_decompressed_and_goes_the_safe_tar_way(tmp_path):
    plain = plain_tar({"V/a.ppm": b"aa", "V/b/c.ppm": b"cc"}, links={"V/l.ppm": "b/c.ppm"})
    (tmp_path / "x.tar.Z").write_bytes(compress_bytes(plain))
    (tmp_path / "lzw.tgz").write_bytes(compress_bytes(plain))  # the bytes decide, not the name
    for name in ("x.tar.Z", "lzw.tgz"):
        # links are refused unless asked for (issue 38: no link reaches the disk); allowed, one becomes a copy
        with pytest.raises(UnsafeArchiveError, match=r"member 'V/l\.ppm' is a link .*links = true"):
            unpack(tmp_path / name, tmp_path / f"refused-{name}")
        unpack(tmp_path / name, tmp_path / f"out-{name}", links=True)
        assert tree(tmp_path / f"out-{name}") == {"V/a.ppm": b"aa", "V/b/c.ppm": b"cc", "V/l.ppm": b"cc"}
        assert not (tmp_path / f"out-{name}" / "V/l.ppm").is_symlink()
        assert not [p for p in (tmp_path / f"out-{name}").iterdir() if p.name.startswith(".")]  # no scratch left
    (tmp_path / "out.tar.Z").write_bytes(compress_bytes(plain_tar({"ok": b"1"}, links={"l": "../../outside"})))
    with pytest.raises(UnsafeArchiveError, match="outside"):
        unpack(tmp_path / "out.tar.Z", tmp_path / "o", links=True)
    (tmp_path / "up.tar.Z").write_bytes(compress_bytes(plain_tar({"../up.txt": b"1"})))
    with pytest.raises(UnsafeArchiveError):
        unpack(tmp_path / "up.tar.Z", tmp_path / "u")
    (tmp_path / "bad.tar.Z").write_bytes(b"\x1f\x9d\x90" + bytes(range(200, 256)))
    with pytest.raises(ValueError, match=r"bad\.tar\.Z: cannot unpack"):
        unpack(tmp_path / "bad.tar.Z", tmp_path / "b")


@needs_libarchive
def test_a_single_z_file_is_decompressed_beside_its_name(tmp_path):
    (tmp_path / "data.txt.Z").write_bytes(compress_bytes(b"payload" * 100))
    unpack(tmp_path / "data.txt.Z", tmp_path / "out")
    assert tree(tmp_path / "out") == {"data.txt": b"payload" * 100}


def test_without_libarchive_the_error_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "libarchive", None)  # the import fails as when the package is missing
    (tmp_path / "a.rar").write_bytes(rar_bytes({"a.txt": b"1"}))
    with pytest.raises(archives_libarchive.MissingLibarchive, match=r"a\.rar: .*libarchive-c.*libarchive13"):
        unpack(tmp_path / "a.rar", tmp_path / "out")


def job_over(tmp_path, artefacts: dict[str, bytes], **options) -> Conversion:
    files = {}
    for name, data in artefacts.items():
        (tmp_path / name).write_bytes(data)
        files[name] = tmp_path / name
    for folder in ("work", "out"):
        (tmp_path / folder).mkdir()
    return Conversion("toy", files, tmp_path / "work", tmp_path / "out", options)


@needs_libarchive
def test_vistex_links_across_inner_tar_z_archives_resolve_into_files(tmp_path):
    reference = plain_tar({}, links={"VisTex/Images/Reference/Bark/Bark.0000.ppm": "../../FLAT/512x512/Bark.0000.ppm"})
    flat = plain_tar({"VisTex/Images/FLAT/512x512/Bark.0000.ppm": b"P6 pixels"})
    outer = plain_tar(
        {"VisionTexture/Ref.tar.Z": compress_bytes(reference), "VisionTexture/F.tar.Z": compress_bytes(flat)}
    )
    # the link (in Ref.tar.Z) names a file of another inner archive (F.tar.Z): links wait until all is unpacked
    job = job_over(tmp_path, {"VisTex.tar": outer}, unpack_inner=True, links=True)  # VisTex's links = true
    base = job.unpacked()
    linked = base / "VisionTexture/VisTex/Images/Reference/Bark/Bark.0000.ppm"
    assert not linked.is_symlink() and linked.read_bytes() == b"P6 pixels"
    assert not list(base.rglob("*.tar.Z"))
    assert not [p for p in base.rglob("*") if p.is_symlink()]
    (tmp_path / "no").mkdir()
    refused = job_over(tmp_path / "no", {"VisTex.tar": outer}, unpack_inner=True)  # without the option: an error
    with pytest.raises(UnsafeArchiveError, match=r"Ref\.tar\.Z member .*links = true"):
        refused.unpacked()


def test_vistex_asks_for_links():
    from lifelong.data.fetch.manifest import load_manifest

    assert load_manifest()["vistex"].options["links"] is True


def test_a_link_leaving_the_unpacked_tree_or_holding_itself_is_refused(tmp_path):
    # links no longer reach the disk (resolve_links is gone): the tar's own links are refused before any copy
    (tmp_path / "a.tar").write_bytes(plain_tar({"ok": b"1"}, links={"l": "../secret"}))
    with pytest.raises(UnsafeArchiveError, match="outside"):
        unpack(tmp_path / "a.tar", tmp_path / "tree", links=True)
    (tmp_path / "b.tar").write_bytes(plain_tar({"a/b/f": b"1"}, links={"a/b/up": ".."}))
    with pytest.raises(UnsafeArchiveError, match="holding it"):
        unpack(tmp_path / "b.tar", tmp_path / "tree2", links=True)


# TID's buckets: dm_nevis's definition, computed by brute force.


def brute_force_buckets(values: list[float], buckets: int) -> list[int | None]:
    """tid.py's rule spelled out: bucket b = sorted values [b*n, (b+1)*n); a value's label = the first bucket with
    an equal value in it, None when no bucket holds one."""
    n = len(values) // buckets
    ordered = sorted(values)
    runs = [ordered[b * n : (b + 1) * n] for b in range(buckets)]
    return [next((b for b, run in enumerate(runs) if any(v == w for w in run)), None) for v in values]


def test_equal_count_buckets_match_the_brute_force_ties_and_leftovers_included():
    rng = np.random.default_rng(1)
    for trial in range(300):
        size = int(rng.integers(1, 60))
        pool = int(rng.integers(1, 12)) if trial % 2 else 10**6  # many ties, or (almost) none
        values = (rng.integers(0, pool, size) / 7).tolist()
        buckets = int(rng.integers(1, 7))
        assert equal_count_buckets(values, buckets) == brute_force_buckets(values, buckets), (values, buckets)


def test_distinct_values_fill_every_bucket_equally_in_value_order():
    values = np.random.default_rng(2).permutation(1700).astype(float).tolist()
    labels = equal_count_buckets(values, 5)
    assert [labels.count(b) for b in range(5)] == [340] * 5
    assert all(labels[i] <= labels[j] for i in range(0, 1700, 37) for j in range(1700) if values[i] < values[j])


@needs_libarchive
def test_score_rows_label_the_listed_images_by_line_order(tmp_path):
    names = [f"i{s:02d}_{t:02d}_{lv}.bmp" for s in (1, 2) for t in (1, 2, 3) for lv in (1, 2)]  # 12 lines
    scores = [0.5, 0.1, 0.9, 0.3, 0.7, 0.2, 0.8, 0.4, 0.6, 0.05, 0.95, 0.35]
    members = {"d/MSSIM.TXT": "\n".join(map(str, scores)).encode() + b"\n"}
    members |= {f"d/{n.upper() if k == 3 else n}": b"img" for k, n in enumerate(names)}  # I01_02_2.BMP: no
    members |= {"d/I01_02_2.bmp": b"img", "ref/I01.BMP": b"ref"}  # ... but I01_02_2.bmp, lowercased, is listed
    del members["d/I01_02_2.BMP"]
    job = job_over(tmp_path, {"t.rar": rar_bytes(members)})
    options = {"scores": "*MSSIM.TXT", "names": "i{0:02d}_{1:02d}_{2}.bmp", "counts": [2, 3, 2], "buckets": 4}
    rows = score_rows(job, options)
    got = {path.rsplit("/", 1)[1].lower(): label for path, label, _ in rows}
    rank = {v: r for r, v in enumerate(sorted(scores))}  # distinct values: bucket = rank // 3
    assert got == {n: str(rank[v] // 3) for n, v in zip(names, scores, strict=True)}


@needs_libarchive
def test_score_rows_name_a_bad_score_file(tmp_path):
    members = {"MSSIM.TXT": b"0.5\nnot-a-number\n0.1\n", "i01_01_1.bmp": b"x"}
    job = job_over(tmp_path, {"t.rar": rar_bytes(members)})
    options = {"scores": "*MSSIM.TXT", "names": "i{0:02d}_{1:02d}_{2}.bmp", "counts": [1, 1, 3], "buckets": 1}
    with pytest.raises(ConversionError, match=r"MSSIM\.TXT:2: 'not-a-number' is not a number"):
        score_rows(job, options)
    with pytest.raises(ConversionError, match="has 3 lines"):
        score_rows(job, options | {"counts": [1, 1, 4]})


@needs_libarchive
def test_dedupe_keeps_the_first_byte_identical_image_of_a_class(tmp_path):
    members = {"a/fox_2.jpg": b"same", "a/fox_1.jpg": b"same", "a/fox_3.jpg": b"other", "a/goat_1.jpg": b"same"}
    job = job_over(tmp_path, {"w.rar": rar_bytes(members)})
    rows = pattern_rows(job, {"files": r"(?:.*/)?(?P<label>[^/_]+)(?:_[^/]*)?\.jpg"})
    kept = drop_duplicate_images(job, rows)
    assert sorted((p, label) for p, label, _ in kept) == [
        ("images/a/fox_1.jpg", "fox"),
        ("images/a/fox_3.jpg", "fox"),
        ("images/a/goat_1.jpg", "goat"),
    ]
    assert not (job.out / "images/a/fox_2.jpg").exists()
