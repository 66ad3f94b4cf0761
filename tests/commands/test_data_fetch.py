"""`lifelong data fetch` from the command line: --list --json, --from, --dry-run, licences, --manifest, --stream."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _prereq import FASHION_MNIST, needs_fashion_mnist
from fetch_fixtures import digest, manifest_toml, mnist_files, write_files
from loopback import Loopback, Route
from typer.testing import CliRunner
from waits import wait_for

from lifelong.cli import app
from lifelong.data.sources import load_source

runner = CliRunner()


def lab_manifest(
    tmp_path: Path, urls: dict[str, str] | None = None, files: dict[str, bytes] | None = None, **extra
) -> tuple[Path, dict[str, bytes]]:
    files = files or mnist_files()[0]
    artefacts = [{"file": f, "urls": [urls[f] if urls else f"https://example.org/{f}"], "sha256": digest(b)}
                 for f, b in files.items()]  # fmt: skip
    entry = {"name": "lab_digits", "title": "Lab digits", "access": "auto", "converter": "idx",
             "streams": ["lab-stream"], "artefacts": artefacts, **extra}  # fmt: skip
    path = tmp_path / "lab.toml"
    path.write_text(manifest_toml([entry]))
    return path, files


def test_list_json_has_the_fields_the_checks_read():
    result = runner.invoke(app, ["data", "fetch", "--list", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    fashion = next(r for r in rows if r["name"] == "fashion_mnist")
    assert {"name", "streams", "access", "licence", "artefacts"} <= set(fashion)
    assert fashion["access"] in ("auto", "kaggle", "gdrive", "manual") and "nevis-full" in fashion["streams"]
    assert all({"file", "urls"} <= set(a) and ("sha256" in a or "md5" in a) for a in fashion["artefacts"])
    assert isinstance(fashion["licence"], dict) and "requires_acceptance" in fashion["licence"]


def test_from_with_a_wrong_file_exits_2_says_checksum_and_leaves_no_folder(tmp_path):
    files, _ = mnist_files()
    files["train-images-idx3-ubyte.gz"] = b"same name, other bytes"
    write_files(tmp_path / "have", files)
    result = runner.invoke(
        app, ["data", "fetch", "fashion_mnist", "--from", str(tmp_path / "have"), "--data-root", str(tmp_path / "root")]
    )
    assert result.exit_code == 2
    assert "checksum" in result.output
    assert not (tmp_path / "root" / "fashion_mnist").exists()


def test_a_labs_manifest_downloads_over_http_and_the_stream_reads_it(tmp_path):
    files, _ = mnist_files()
    with Loopback({f"/d/{f}": Route(b) for f, b in files.items()}) as server:
        manifest, _ = lab_manifest(tmp_path, urls={f: server.url(f"/d/{f}") for f in files})
        args = [
            "data",
            "fetch",
            "--stream",
            "lab-stream",
            "--manifest",
            str(manifest),
            "--data-root",
            str(tmp_path / "r"),
        ]
        result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "lab_digits: installed" in result.output
    assert load_source(f"idx:{tmp_path / 'r' / 'lab_digits'}").images.shape[0] == 18
    again = runner.invoke(app, args)
    assert "lab_digits: up to date" in again.output


def test_dry_run_says_bytes_disk_and_manual_steps_and_writes_nothing(tmp_path):
    manifest, _ = lab_manifest(tmp_path)
    result = runner.invoke(
        app,
        [
            "data",
            "fetch",
            "lab_digits",
            "fashion_mnist",
            "--dry-run",
            "--manifest",
            str(manifest),
            "--data-root",
            str(tmp_path / "root"),
        ],  # fmt: skip
    )
    assert result.exit_code == 0, result.output
    assert "nothing is downloaded or written" in result.output and "30.9 MB" in result.output
    assert "free at" in result.output and not (tmp_path / "root").exists()


def test_a_licence_to_accept_is_refused_without_a_terminal_then_accepted_by_flag(tmp_path):
    files, _ = mnist_files()
    licence = {"name": "research only", "requires_acceptance": True, "non_commercial": True, "terms": "Research only."}
    manifest, files = lab_manifest(tmp_path, licence=licence)
    have = write_files(tmp_path / "have", files)
    base = [
        "data",
        "fetch",
        "lab_digits",
        "--manifest",
        str(manifest),
        "--from",
        str(have),
        "--data-root",
        str(tmp_path / "r"),
    ]
    refused = runner.invoke(app, base)
    assert refused.exit_code == 2 and "--accept-licence lab_digits" in refused.output
    assert not (tmp_path / "r" / "lab_digits").exists()
    accepted = runner.invoke(app, [*base, "--accept-licence", "lab_digits"])
    assert accepted.exit_code == 0, accepted.output
    provenance = json.loads((tmp_path / "r" / "lab_digits" / "provenance.json").read_text())
    assert "accepted_at" in provenance["licence"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["fashion_mnst"], "did you mean 'fashion_mnist'"),
        ([], "name the datasets to fetch"),
        (["--stream", "no-such-stream"], "no dataset of the manifest is read by stream"),
        (["fashion_mnist", "--from", "/no/such/folder"], "--from /no/such/folder: not a folder"),
        (["fashion_mnist", "--accept-licence", "nope"], "--accept-licence names unknown datasets: nope"),
    ],
)
def test_bad_requests_get_errors_in_cli_words(args, message):
    result = runner.invoke(app, ["data", "fetch", *args])
    assert result.exit_code == 2 and message in result.output


def test_a_broken_lab_manifest_is_named(tmp_path):
    (tmp_path / "bad.toml").write_text('[[dataset]]\nname = "x"\nconverter = "nope"\n')
    result = runner.invoke(app, ["data", "fetch", "--list", "--manifest", str(tmp_path / "bad.toml")])
    assert result.exit_code == 2 and "bad.toml: dataset 'x': converter 'nope'" in result.output


@needs_fashion_mnist
def test_debians_recompressed_fashion_mnist_is_accepted_by_its_payload(tmp_path):
    result = runner.invoke(
        app, ["data", "fetch", "fashion_mnist", "--from", str(FASHION_MNIST), "--data-root", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert "checked by payload_sha256" in result.output
    data = load_source(f"idx:{tmp_path / 'fashion_mnist'}")
    assert data.images.shape == (70000, 28, 28, 1) and len(set(data.labels.tolist())) == 10


def test_a_fetch_killed_mid_file_resumes_with_range_on_the_next_run(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    files, _ = mnist_files(train=400)  # a train-images file of about 300 KB, served slowly
    big = "train-images-idx3-ubyte.gz"
    routes = {f"/d/{f}": Route(b, pace=0.02 if f == big else 0.0) for f, b in files.items()}
    with Loopback(routes, lifetime=120) as server:
        manifest, _ = lab_manifest(tmp_path, urls={f: server.url(f"/d/{f}") for f in files}, files=files)
        root = tmp_path / "r"
        command = [sys.executable, "-m", "lifelong", "data", "fetch", "lab_digits", "--manifest", str(manifest),
                   "--data-root", str(root)]  # fmt: skip
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        part = root / ".fetch" / "downloads" / "lab_digits" / f"{big}.part"
        wait_for(lambda: part.exists() and part.stat().st_size > 20_000, f"20 KB in {part}", 120, process)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        kept = part.stat().st_size
        assert 0 < kept < len(files[big]) and not (root / "lab_digits").exists()
        server.routes[f"/d/{big}"].pace = 0.0
        result = runner.invoke(app, command[3:])
    assert result.exit_code == 0, result.output
    assert (f"/d/{big}", f"bytes={kept}-") in server.requests
    assert load_source(f"idx:{root / 'lab_digits'}").images.shape[0] == 406


def test_data_status_names_the_fetch_command_for_missing_datasets_the_manifest_has(tmp_path):
    as_json = runner.invoke(
        app, ["data", "status", "--stream", "nevis-imagenet", "--data-root", str(tmp_path), "--json"]
    )
    (row,) = json.loads(as_json.output)
    assert row["available"] is False and row["fetch"] == "lifelong data fetch imagenet"
    text = runner.invoke(app, ["data", "status", "--stream", "nevis-imagenet", "--data-root", str(tmp_path)])
    assert "lifelong data fetch imagenet" in text.output


def test_list_of_a_stream_counts_what_fetches_alone_and_names_what_the_manifest_lacks():
    result = runner.invoke(app, ["data", "fetch", "--list", "--stream", "nevis-imagenet"])
    assert result.exit_code == 0, result.output
    assert "imagenet" in result.output and "0 of 1 fetch with no manual step" in result.output
    rows = json.loads(runner.invoke(app, ["data", "fetch", "--list", "--json", "--stream", "nevis-imagenet"]).output)
    assert [r["name"] for r in rows] == ["imagenet"] and rows[0]["licence"]["requires_acceptance"] is True
