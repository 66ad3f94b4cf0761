"""The fetch manifest's validation, checksum verification (payload digests included) and safe unpacking."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
import zipfile

import pytest
from fetch_fixtures import digest, manifest_toml

from lifelong.data.fetch.manifest import Artefact, ManifestError, load_manifest, parse_manifest
from lifelong.data.fetch.unpack import UnsafeArchiveError, archive_kind, unpack
from lifelong.data.fetch.verify import ChecksumError, verify_artefact

GOOD = {
    "name": "toy",
    "title": "Toy",
    "access": "auto",
    "converter": "copy",
    "artefacts": [{"file": "a.bin", "urls": ["https://example.org/a.bin"], "sha256": "0" * 64}],
}


def test_the_package_manifest_parses_and_its_entries_are_complete():
    entries = load_manifest()
    assert "fashion_mnist" in entries
    for entry in entries.values():
        if entry.access == "auto":
            assert all(a.urls and a.expected() for a in entry.artefacts), entry.name


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"name": "Bad Name"}, "lower-case"),
        ({"access": "ftp"}, "access 'ftp' must be one of"),
        ({"converter": "magic"}, "converter 'magic' must be one of"),
        ({"artefacts": []}, "needs at least one"),
        ({"artefacts": [{"file": "../x", "urls": ["https://e/x"], "md5": "0" * 32}]}, "plain file name"),
        ({"artefacts": [{"file": "x", "urls": ["file:///etc/passwd"], "md5": "0" * 32}]}, "must start with http"),
        ({"artefacts": [{"file": "x", "urls": ["https://e/x"], "md5": "abc"}]}, "md5 must be 32 hex digits"),
        ({"artefacts": [{"file": "x", "urls": ["https://e/x"]}]}, "needs a sha256 or md5"),
        ({"artefacts": [{"file": "x", "urls": ["https://e/x"], "md5": "0" * 32, "colour": 1}]}, "unknown keys"),
        ({"access": "kaggle"}, "needs kaggle"),
    ],
)
def test_a_bad_entry_is_refused_naming_the_file_dataset_and_field(change, message):
    with pytest.raises(ManifestError, match=message) as caught:
        parse_manifest(manifest_toml([{**GOOD, **change}]), "lab.toml")
    assert str(caught.value).startswith("lab.toml")


def test_a_repeated_name_and_broken_toml_are_refused():
    with pytest.raises(ManifestError, match="more than once: toy"):
        parse_manifest(manifest_toml([GOOD, GOOD]), "lab.toml")
    with pytest.raises(ManifestError, match="not valid TOML"):
        parse_manifest("[[dataset]\nname=", "lab.toml")


def test_a_labs_manifest_adds_datasets_and_replaces_same_named_ones(tmp_path):
    path = tmp_path / "lab.toml"
    path.write_text(manifest_toml([GOOD, {**GOOD, "name": "fashion_mnist", "title": "ours"}]))
    entries = load_manifest([path])
    assert entries["toy"].origin == str(path) and entries["fashion_mnist"].title == "ours"
    with pytest.raises(ManifestError, match="cannot read manifest"):
        load_manifest([tmp_path / "missing.toml"])


def test_verification_checks_sha256_and_md5_against_an_independent_hashlib(tmp_path):
    data = b"lifelong" * 1000
    path = tmp_path / "a.bin"
    path.write_bytes(data)
    art = Artefact("a.bin", sha256=hashlib.sha256(data).hexdigest(), md5=hashlib.md5(data).hexdigest())
    assert verify_artefact(path, art).check == "sha256"
    with pytest.raises(ChecksumError, match=r"checksum mismatch for a.bin .* expected md5 0{32}; got md5 [0-9a-f]{32}"):
        verify_artefact(path, Artefact("a.bin", md5="0" * 32))
    with pytest.raises(ChecksumError, match="has 8,000 bytes, expected 9"):
        verify_artefact(path, Artefact("a.bin", md5=digest(data, "md5"), size=9))


def test_a_recompressed_single_file_passes_by_its_payload_and_says_so(tmp_path):
    payload = b"\x00\x00\x08\x01" + bytes(range(200))
    published = gzip.compress(payload, mtime=1)  # the origin's bytes
    recompressed = gzip.compress(payload, mtime=2, compresslevel=1)  # a distribution's copy
    assert published != recompressed
    path = tmp_path / "x-labels-idx1-ubyte.gz"
    path.write_bytes(recompressed)
    art = Artefact(path.name, md5=digest(published, "md5"), payload_sha256=digest(payload))
    verified = verify_artefact(path, art)
    assert verified.check == "payload_sha256" and verified.digests["payload_sha256"] == digest(payload)
    path.write_bytes(gzip.compress(payload + b"!"))
    with pytest.raises(ChecksumError, match="checksum mismatch.*payload_sha256"):
        verify_artefact(path, art)


def _tar_with(name: str, data: bytes = b"x", kind: bytes = tarfile.REGTYPE, link: str = "") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tf:
        info = tarfile.TarInfo(name)
        info.type, info.linkname = kind, link
        info.size = len(data) if kind == tarfile.REGTYPE else 0
        tf.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "archive",
    [
        _tar_with("../escape.txt"),
        _tar_with("link", kind=tarfile.SYMTYPE, link="/etc/passwd"),
        _tar_with("dev", kind=tarfile.CHRTYPE),
    ],
    ids=["dotdot", "symlink-out", "device"],
)
def test_tar_members_never_land_outside_the_target(tmp_path, archive):
    path = tmp_path / "bad.tar"
    path.write_bytes(archive)
    target = tmp_path / "out" / "inner"
    with pytest.raises(UnsafeArchiveError):
        unpack(path, target)
    assert not (tmp_path / "out" / "escape.txt").exists() and not (tmp_path / "escape.txt").exists()


def test_an_absolute_tar_member_lands_inside_the_target(tmp_path):
    path = tmp_path / "abs.tar"
    path.write_bytes(_tar_with("/lifelong-test-abs/escape.txt"))
    unpack(path, tmp_path / "out")
    assert (tmp_path / "out" / "lifelong-test-abs" / "escape.txt").read_bytes() == b"x"
    assert not os.path.exists("/lifelong-test-abs")


@pytest.mark.parametrize("member", ["../evil.txt", "/evil.txt", "a/../../evil.txt", "C:/evil.txt"])
def test_zip_slip_is_refused(tmp_path, member):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("ok.txt", "fine")
        zf.writestr(member, "evil")
    path = tmp_path / "bad.zip"
    path.write_bytes(buffer.getvalue())
    with pytest.raises(UnsafeArchiveError, match="outside"):
        unpack(path, tmp_path / "out")
    assert not (tmp_path / "evil.txt").exists()


def test_archive_kinds_and_plain_unpacking(tmp_path):
    assert [archive_kind(n) for n in ("a.tar.gz", "a.tgz", "a.zip", "a.gz", "a.bz2", "a.mat")] == [
        "tar",
        "tar",
        "zip",
        "single",
        "single",
        "plain",
    ]
    (tmp_path / "v.txt.gz").write_bytes(gzip.compress(b"hello"))
    unpack(tmp_path / "v.txt.gz", tmp_path / "out")
    assert (tmp_path / "out" / "v.txt").read_bytes() == b"hello"
    (tmp_path / "broken.zip").write_bytes(b"PK not really")
    with pytest.raises(ValueError, match="broken.zip: cannot unpack"):
        unpack(tmp_path / "broken.zip", tmp_path / "out2")
