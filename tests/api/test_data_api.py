"""`lifelong data fetch`, `inspect` and `status` from Python (lifelong.api): objects back and nothing printed,
download progress through a callback, the command line's error messages, and a fetch stopped mid-file that the
same spec continues (HTTP Range) to the dataset the command line installs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fetch_fixtures import digest, manifest_toml, mnist_files, write_files
from loopback import Loopback, Route
from typer.testing import CliRunner

from lifelong import api
from lifelong.cli import app
from lifelong.data.sources import load_source


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args], terminal_width=80)


def lab_manifest(tmp_path: Path, files: dict[str, bytes], urls: dict[str, str] | None = None, **extra) -> Path:
    artefacts = [{"file": f, "urls": [urls[f] if urls else f"https://example.org/{f}"], "sha256": digest(b)}
                 for f, b in files.items()]  # fmt: skip
    entry = {"name": "lab_digits", "title": "Lab digits", "access": "auto", "converter": "idx",
             "streams": ["lab-stream"], "artefacts": artefacts, **extra}  # fmt: skip
    path = tmp_path / "lab.toml"
    path.write_text(manifest_toml([entry]))
    return path


def test_a_fetch_returns_what_it_installed_reports_progress_and_prints_nothing(tmp_path, capsys):
    files, arrays = mnist_files()
    calls: list[tuple[str, float, float | None]] = []
    with Loopback({f"/d/{f}": Route(b) for f, b in files.items()}) as server:
        manifest = lab_manifest(tmp_path, files, {f: server.url(f"/d/{f}") for f in files})
        spec = api.DataFetchSpec(stream="lab-stream", manifest=[manifest], data_root=tmp_path / "r")
        result = api.data_fetch(spec, progress=lambda *call: calls.append(call))
        again = api.data_fetch(spec)
    printed = capsys.readouterr()
    assert printed.out == "" and printed.err == ""
    assert [(o.name, o.state) for o in result.outcomes] == [("lab_digits", "installed")]
    assert result.installed == ["lab_digits"] and result.outcomes[0].path == tmp_path / "r" / "lab_digits"
    assert [(o.name, o.state) for o in again.outcomes] == [("lab_digits", "up to date")] and again.installed == []
    finished = {file: done for file, done, total in calls if done == total}
    assert finished == {f: float(len(b)) for f, b in files.items()}  # every file's bytes, to its end
    images = load_source(f"idx:{tmp_path / 'r' / 'lab_digits'}").images[:, :, :, 0]
    assert np.array_equal(images, np.concatenate([arrays["train_images"], arrays["test_images"]]))


def test_a_fetch_stopped_mid_file_continues_with_the_same_spec_as_the_command_line_installs_it(tmp_path):
    files, _ = mnist_files(train=400)  # a train-images file of about 300 KB, served in 4 KB steps
    big = "train-images-idx3-ubyte.gz"
    routes = {f"/d/{f}": Route(b, pace=0.001 if f == big else 0.0) for f, b in files.items()}

    def stop_mid_file(file: str, done: float, total: float | None) -> None:
        if file == big and 20_000 < done < len(files[big]):
            raise KeyboardInterrupt

    with Loopback(routes, lifetime=120) as server:
        manifest = lab_manifest(tmp_path, files, {f: server.url(f"/d/{f}") for f in files})
        spec = api.DataFetchSpec(["lab_digits"], manifest=[manifest], data_root=tmp_path / "api", jobs=1)
        with pytest.raises(api.Interrupted) as stopped:
            api.data_fetch(spec, progress=stop_mid_file)
        part = tmp_path / "api" / ".fetch" / "downloads" / "lab_digits" / f"{big}.part"
        kept = part.stat().st_size
        assert 20_000 < kept < len(files[big]) and not (tmp_path / "api" / "lab_digits").exists()
        assert "run the same fetch again to continue" in str(stopped.value)
        resumed = api.data_fetch(spec)
        cli = invoke("data", "fetch", "lab_digits", "--manifest", manifest, "--data-root", tmp_path / "cli")
    assert cli.exit_code == 0, cli.output
    assert (f"/d/{big}", f"bytes={kept}-") in server.requests  # continued where it stopped, not from the start
    assert [(o.name, o.state) for o in resumed.outcomes] == [("lab_digits", "installed")]
    ours, theirs = (load_source(f"idx:{tmp_path / root / 'lab_digits'}") for root in ("api", "cli"))
    assert ours.images.shape[0] == 406 and np.array_equal(ours.images, theirs.images)
    assert np.array_equal(ours.labels, theirs.labels)


@pytest.mark.parametrize(
    ("spec", "args", "message"),
    [
        ({"names": ["fashion_mnst"]}, ["fashion_mnst"], "did you mean 'fashion_mnist'"),
        ({}, [], "name the datasets to fetch"),
        (
            {"names": ["fashion_mnist"], "from_dir": "/no/such"},
            ["fashion_mnist", "--from", "/no/such"],
            "--from /no/such: not a folder",
        ),  # fmt: skip
        (
            {"names": ["fashion_mnist"], "max_unpacked": "lots"},
            ["fashion_mnist", "--max-unpacked", "lots"],
            "--max-unpacked 'lots'",
        ),  # fmt: skip
        (
            {"names": ["fashion_mnist"], "accept_licence": ["nope"]},
            ["fashion_mnist", "--accept-licence", "nope"],
            "--accept-licence names unknown datasets: nope",
        ),  # fmt: skip
    ],
)
def test_bad_requests_raise_usage_errors_with_the_clis_words(tmp_path, spec, args, message):
    with pytest.raises(api.UsageError) as raised:
        api.data_fetch(api.DataFetchSpec(data_root=tmp_path, **spec))
    assert message in str(raised.value)
    result = invoke("data", "fetch", *args, "--data-root", tmp_path)
    assert result.exit_code == 2 and message in result.output


def test_a_licence_is_refused_unless_accepted_by_name_or_by_the_hook(tmp_path):
    files, _ = mnist_files()
    licence = {"name": "research only", "requires_acceptance": True, "terms": "Research only."}
    manifest = lab_manifest(tmp_path, files, licence=licence)
    have = write_files(tmp_path / "have", files)
    spec = api.DataFetchSpec(["lab_digits"], manifest=[manifest], from_dir=have, data_root=tmp_path / "r")
    with pytest.raises(api.DataFetchError) as refused:
        api.data_fetch(spec)
    assert "--accept-licence lab_digits" in str(refused.value) and refused.value.result.outcomes == []
    asked = []
    result = api.data_fetch(spec, confirm_licence=lambda entry: asked.append(entry.name) or True)
    assert asked == ["lab_digits"] and result.installed == ["lab_digits"]


def test_dry_run_and_list_return_their_rows(tmp_path):
    files, _ = mnist_files()
    manifest = lab_manifest(tmp_path, files)
    spec = api.DataFetchSpec(["lab_digits"], manifest=[manifest], data_root=tmp_path / "root", dry_run=True)
    plan = api.data_fetch(spec).plan
    assert plan is not None and [(r.dataset, r.todo) for r in plan.rows] == [("lab_digits", "download + convert")]
    assert not (tmp_path / "root").exists()
    listing = api.data_list(api.DataListSpec(stream="lab-stream", manifest=[manifest]))
    assert [row["name"] for row in listing.rows()] == ["lab_digits"] and listing.rows()[0]["converter"] == "idx"


def test_status_and_inspect_return_objects_and_bad_values_raise_the_clis_errors(tmp_path, capsys):
    status = api.data_status(api.DataStatusSpec(stream="nevis-imagenet", data_root=tmp_path))
    assert status.root == tmp_path and [r["fetch"] for r in status.missing] == ["lifelong data fetch imagenet"]
    assert status.available == [] and status.fetchable == ["imagenet"] and len(status.frame()) == 1
    shapes = api.data_inspect(api.DataInspectSpec("builtin:shapes"))
    assert shapes.info["count"] > 0 and shapes.info["num_classes"] == len(shapes.info["class_names"])
    assert capsys.readouterr().out == ""
    with pytest.raises(api.UsageError, match="data status covers the Nevis'22 streams, not 'mini'"):
        api.data_status(api.DataStatusSpec(stream="mini"))
    with pytest.raises(api.LifelongError, match="unknown builtin source 'nope'"):
        api.data_inspect(api.DataInspectSpec("builtin:nope"))
