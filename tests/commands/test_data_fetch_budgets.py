"""`lifelong data fetch`'s budget options: --max-unpacked, --max-download, --min-rate, --deadline (docs/security.md).
A budget that ends a fetch is exit 2 naming the artefact, the budget and the option; nothing is installed."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from fetch_fixtures import digest, manifest_toml, write_files
from loopback import Loopback, Route
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.commands.data_fetch import download_settings
from lifelong.data.fetch.budgets import GB, KB, MB, UnpackLimit

runner = CliRunner()
BOMB = gzip.compress(bytes(4 * MB), mtime=0)  # 4 MB of zeros in ~4 KB


def bomb_manifest(tmp_path: Path, url: str = "https://example.org/bomb.bin.gz", **artefact) -> Path:
    entry = {
        "name": "lab_bomb", "title": "Lab bomb", "access": "auto", "converter": "copy",
        "artefacts": [{"file": "bomb.bin.gz", "urls": [url], "sha256": digest(BOMB), **artefact}],
        "options": {"unpack": True, "decompress": True},
    }  # fmt: skip
    path = tmp_path / "lab.toml"
    path.write_text(manifest_toml([entry]))
    return path


def fetch(tmp_path: Path, manifest: Path, *options: str):
    args = ["data", "fetch", "lab_bomb", "--manifest", str(manifest), "--data-root", str(tmp_path / "root")]
    return runner.invoke(app, [*args, *options])


def test_a_bomb_is_exit_2_naming_the_member_the_budget_and_the_option_and_installs_nothing(tmp_path):
    have = write_files(tmp_path / "have", {"bomb.bin.gz": BOMB})
    result = fetch(tmp_path, bomb_manifest(tmp_path), "--from", str(have), "--max-unpacked", "100x")
    assert result.exit_code == 2, result.output
    assert "bomb.bin" in result.output and "unpack budget" in result.output and "--max-unpacked" in result.output
    assert "lab_bomb: lab_bomb:" not in result.output  # the dataset is named once
    assert not (tmp_path / "root" / "lab_bomb").exists()
    assert not (tmp_path / "root").exists()  # a failed first fetch into a new data root leaves no trace
    again = fetch(tmp_path, bomb_manifest(tmp_path), "--from", str(have), "--max-unpacked", "5MB")
    assert again.exit_code == 0, again.output  # a size the user gives raises the budget
    assert (tmp_path / "root" / "lab_bomb" / "bomb.bin").stat().st_size == 4 * MB


def test_a_download_past_the_manifests_size_is_exit_2_and_leaves_no_part(tmp_path):
    with Loopback({"/bomb.bin.gz": Route(BOMB + bytes(64 * KB))}) as server:
        manifest = bomb_manifest(tmp_path, server.url("/bomb.bin.gz"), size=len(BOMB))
        result = fetch(tmp_path, manifest)
    assert result.exit_code == 2, result.output
    assert "manifest" in result.output and "bomb.bin.gz" in result.output
    downloads = tmp_path / "root" / ".fetch" / "downloads" / "lab_bomb"
    assert not list(downloads.glob("*.part")) if downloads.is_dir() else True


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--max-unpacked", "lots", "--max-unpacked 'lots'"),
        ("--max-unpacked", "0x", "a ratio is a positive number"),
        ("--max-download", "-5", "is not a size"),
        ("--min-rate", "fast", "is not a size"),
        ("--deadline", "0", "is not a duration"),
        ("--deadline", "soon", "is not a duration"),
    ],
)
def test_a_bad_budget_value_is_exit_2_before_anything_is_written(tmp_path, option, value, message):
    result = fetch(tmp_path, bomb_manifest(tmp_path), option, value)
    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "root").exists()


def test_the_options_set_the_download_settings_and_the_unpack_limit():
    settings = download_settings("2GB", "10KB/s", "2h")
    assert (settings.max_bytes_unknown_size, settings.min_rate, settings.deadline) == (2 * GB, 10 * KB, 7200.0)
    assert UnpackLimit.parse("30x,500GB") == UnpackLimit(30.0, 500 * GB, True)
    assert UnpackLimit.parse("30x").budget_for(10 * MB, None)[0] == 300 * MB + MB
    assert UnpackLimit.parse(None).budget_for(10 * MB, 7 * MB)[0] == int(7 * MB * 1.05) + MB  # the manifest's size
    assert UnpackLimit.parse("1GB").budget_for(10 * MB, 7 * MB)[0] == GB  # a size given replaces the manifest's
    assert UnpackLimit.parse(None).budget_for(50 * GB, None)[1] == "the cap of 100.0 GB"
