"""Fetching into a data root: converters against the loaders, atomic installs, kills, licences, mirrors."""

from __future__ import annotations

import gzip
import multiprocessing
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from fetch_fixtures import cifar10_archive, digest, image_folder_zip, mnist_files, write_files
from loopback import Loopback, Route

from lifelong.data.fetch import FetchRefused, FetchRequest, fetch, read_provenance
from lifelong.data.fetch.converters import CONVERTERS
from lifelong.data.fetch.download import DownloadSettings
from lifelong.data.fetch.install import STAGING
from lifelong.data.fetch.manifest import Artefact, DatasetEntry, Licence
from lifelong.data.fetch.verify import ChecksumError
from lifelong.data.sources import detect_source, load_source

FAST = DownloadSettings(timeout=5, retries=1, backoff=0.01)


def entry_for(name: str, files: dict[str, bytes], converter: str, urls=None, **kw) -> DatasetEntry:
    artefacts = tuple(Artefact(f, tuple(urls[f]) if urls else (), sha256=digest(b)) for f, b in files.items())
    return DatasetEntry(name=name, title=name, access=kw.pop("access", "auto"), converter=converter,
                        artefacts=artefacts, **kw)  # fmt: skip


def test_idx_converter_gives_a_folder_the_idx_loader_reads_with_the_fixtures_digits(tmp_path):
    files, arrays = mnist_files()
    entry = entry_for("mnist", files, "idx")
    outcome = fetch(FetchRequest(entry, tmp_path / "root", from_dir=write_files(tmp_path / "dl", files)))
    assert outcome.state == "installed" and detect_source(outcome.path) == f"idx:{outcome.path}"
    data = load_source(f"idx:{outcome.path}")
    train = data.official_split == "train"
    np.testing.assert_array_equal(data.images[train][..., 0], arrays["train_images"])
    np.testing.assert_array_equal(data.labels[train], arrays["train_labels"])
    np.testing.assert_array_equal(data.labels[~train], arrays["test_labels"])


def test_cifar_converter_finds_the_pickles_inside_the_archive(tmp_path):
    archive, images, labels = cifar10_archive()
    entry = entry_for("cifar10", {"cifar-10-python.tar.gz": archive}, "cifar")
    dl = write_files(tmp_path / "dl", {"cifar-10-python.tar.gz": archive})
    outcome = fetch(FetchRequest(entry, tmp_path / "root", from_dir=dl))
    data = load_source(f"cifar:{outcome.path}")
    np.testing.assert_array_equal(data.images, images)
    np.testing.assert_array_equal(data.labels, labels)
    assert data.class_names[0] == "airplane"


def test_folder_converter_keeps_the_official_split_folders(tmp_path):
    archive, counts = image_folder_zip()
    entry = entry_for("pets", {"pets.zip": archive}, "folder", options={"root": "Dataset"})
    outcome = fetch(
        FetchRequest(entry, tmp_path / "root", from_dir=write_files(tmp_path / "dl", {"pets.zip": archive}))
    )
    data = load_source(f"folder:{outcome.path}")
    assert sorted(data.class_names) == ["cat", "dog"]
    for split in ("train", "test"):
        got = data.labels[data.official_split == split]
        assert {name: int((got == data.class_names.index(name)).sum()) for name in ("cat", "dog")} == counts[split]


def test_folder_converter_with_explicit_split_folders(tmp_path):
    archive, counts = image_folder_zip()
    entry = entry_for(
        "pets", {"pets.zip": archive}, "folder", options={"splits": {"train": "Dataset/train", "test": "Dataset/test"}}
    )
    outcome = fetch(
        FetchRequest(entry, tmp_path / "root", from_dir=write_files(tmp_path / "dl", {"pets.zip": archive}))
    )
    assert sorted(p.name for p in outcome.path.iterdir() if not p.name.startswith(".")) == [
        "provenance.json",
        "test",
        "train",
    ]
    entry = entry_for("pets2", {"pets.zip": archive}, "folder", options={"root": "Nowhere"})
    with pytest.raises(ValueError, match="folder 'Nowhere' is not in the unpacked artefacts"):
        fetch(FetchRequest(entry, tmp_path / "root", from_dir=tmp_path / "dl"))
    assert not (tmp_path / "root" / "pets2").exists()


def test_a_checksum_mismatch_from_a_users_folder_writes_nothing_at_all(tmp_path):
    files, _ = mnist_files()
    entry = entry_for("mnist", files, "idx")
    files["t10k-labels-idx1-ubyte.gz"] = gzip.compress(b"wrong")
    with pytest.raises(ChecksumError, match=r"checksum mismatch for t10k-labels-idx1-ubyte.gz .*expected sha256"):
        fetch(FetchRequest(entry, tmp_path / "root", from_dir=write_files(tmp_path / "dl", files)))
    assert not (tmp_path / "root").exists()


def test_a_download_is_verified_before_unpacking_and_a_bad_one_is_deleted(tmp_path):
    files, _ = mnist_files()
    routes = {f"/m/{f}": Route(b) for f, b in files.items()}
    routes["/m/train-labels-idx1-ubyte.gz"] = Route(b"tampered")
    with Loopback(routes) as server:
        urls = {f: [server.url(f"/m/{f}")] for f in files}
        entry = entry_for("mnist", files, "idx", urls=urls)
        with pytest.raises(ChecksumError, match="train-labels-idx1-ubyte.gz"):
            fetch(FetchRequest(entry, tmp_path / "root"), FAST)
        assert not (tmp_path / "root" / "mnist").exists()
        assert not (tmp_path / "root" / STAGING / "downloads" / "mnist" / "train-labels-idx1-ubyte.gz").exists()
        server.routes["/m/train-labels-idx1-ubyte.gz"] = Route(files["train-labels-idx1-ubyte.gz"])
        outcome = fetch(FetchRequest(entry, tmp_path / "root"), FAST)
    assert outcome.state == "installed"
    fetched = [p for p, _ in server.requests]
    assert fetched.count("/m/train-images-idx3-ubyte.gz") == 1  # verified files are not downloaded twice
    provenance = read_provenance(outcome.path)
    assert provenance["converter"] == {"name": "idx", "version": 1}
    assert {a["source"] for a in provenance["artefacts"]} == {server.url(f"/m/{f}") for f in files}


def test_a_mirror_is_tried_first(tmp_path):
    files, _ = mnist_files()
    routes = {f"/mirror/mnist/{f}": Route(b) for f, b in files.items()}
    with Loopback(routes) as server:
        entry = entry_for("mnist", files, "idx", urls={f: ["http://127.0.0.1:9/origin"] for f in files})
        outcome = fetch(FetchRequest(entry, tmp_path / "root", mirrors=(server.url("/mirror"),)), FAST)
    assert outcome.state == "installed"
    assert all(p.startswith("/mirror/mnist/") for p, _ in server.requests)


def test_up_to_date_datasets_are_left_alone_and_overwrite_replaces_them(tmp_path):
    files, _ = mnist_files()
    entry = entry_for("mnist", files, "idx")
    request = FetchRequest(entry, tmp_path / "root", from_dir=write_files(tmp_path / "dl", files))
    assert fetch(request).state == "installed"
    assert fetch(request).state == "up to date"
    again = FetchRequest(entry, tmp_path / "root", from_dir=tmp_path / "dl", overwrite=True)
    assert fetch(again).state == "replaced"
    staging = tmp_path / "root" / STAGING
    left = [p for folder in ("work", "aside") if (staging / folder).is_dir() for p in (staging / folder).iterdir()]
    assert not left  # nothing left behind (a swap in place needs no aside folder at all)


def test_data_the_toolkit_did_not_write_is_never_replaced_silently(tmp_path):
    files, _ = mnist_files()
    mine = write_files(tmp_path / "root" / "mnist", {"notes.txt": b"my own copy"})
    entry = entry_for("mnist", files, "idx")
    with pytest.raises(FetchRefused, match="did not write; --overwrite replaces it"):
        fetch(FetchRequest(entry, tmp_path / "root", from_dir=write_files(tmp_path / "dl", files)))
    assert (mine / "notes.txt").read_bytes() == b"my own copy"


def test_licences_that_need_acceptance_are_refused_until_accepted_and_acceptance_is_recorded(tmp_path):
    files, _ = mnist_files()
    licence = Licence("research only", "https://example.org/terms", True, True, "Non-commercial research only.")
    entry = entry_for("mnist", files, "idx", licence=licence)
    dl = write_files(tmp_path / "dl", files)
    with pytest.raises(FetchRefused, match="--accept-licence mnist"):
        fetch(FetchRequest(entry, tmp_path / "root", from_dir=dl))
    assert not (tmp_path / "root").exists()
    outcome = fetch(FetchRequest(entry, tmp_path / "root", from_dir=dl, licence_accepted=True))
    recorded = read_provenance(outcome.path)["licence"]
    assert recorded["name"] == "research only" and recorded["accepted_at"].startswith("20")


def test_manual_datasets_say_what_to_do_and_from_finishes_the_job(tmp_path):
    files, _ = mnist_files()
    entry = entry_for("mnist", files, "idx", access="manual", manual="Register at example.org and download.")
    with pytest.raises(FetchRefused, match=r"Register at example.org.*--from DIR"):
        fetch(FetchRequest(entry, tmp_path / "root"))
    assert (
        fetch(FetchRequest(entry, tmp_path / "root", from_dir=write_files(tmp_path / "dl", files))).state == "installed"
    )


def _killed_conversion(root: str, dl: str) -> None:
    """Run a fetch whose converter dies (as a kill would) after writing part of its output."""
    files, _ = mnist_files()
    entry = entry_for("mnist", files, "idx")

    def dying(job):
        CONVERTERS["idx"](job)
        os._exit(9)

    CONVERTERS["dies"] = dying
    fetch(FetchRequest(replace(entry, converter="dies"), Path(root), from_dir=Path(dl)))


def test_a_kill_during_conversion_leaves_nothing_visible_and_the_rerun_redoes_it(tmp_path):
    files, _ = mnist_files()
    dl = write_files(tmp_path / "dl", files)
    from lifelong.data.fetch import converters

    converters.VERSIONS.setdefault("dies", 1)
    process = multiprocessing.get_context("fork").Process(
        target=_killed_conversion, args=(str(tmp_path / "root"), str(dl))
    )
    process.start()
    process.join(60)
    assert process.exitcode == 9
    assert not (tmp_path / "root" / "mnist").exists()
    assert any((tmp_path / "root" / STAGING / "work").iterdir())  # the dead run's half-done work
    outcome = fetch(FetchRequest(entry_for("mnist", files, "idx"), tmp_path / "root", from_dir=dl))
    assert outcome.state == "installed" and load_source(f"idx:{outcome.path}").images.shape[0] == 18
    assert not any((tmp_path / "root" / STAGING / "work").iterdir())


def test_clear_converter_unpacks_the_release_and_the_clear_loader_reads_train_and_test(tmp_path):
    from fetch_fixtures import clear_archives

    from lifelong.data.sources.clear import ClearFolder

    archives, counts = clear_archives()
    entry = entry_for("clear10", archives, "clear")
    outcome = fetch(FetchRequest(entry, tmp_path / "root", from_dir=write_files(tmp_path / "dl", archives)))
    source = ClearFolder(outcome.path)
    assert source.official_splits.name(0) == "official:test-folder"
    train, test = source.official_split(2, seed=0)

    def count(folder: str) -> int:
        return sum(n for (top, b, _), n in counts.items() if top == folder and b == 2)

    assert (len(source.labeled(2).labels), len(test)) == (count("train_image_only"), count("test"))
    empty_zip = {"x.zip": b"PK\x05\x06" + bytes(18)}
    broken = entry_for("clear_bad", empty_zip, "clear")
    with pytest.raises(ValueError, match="not CLEAR's layout"):
        fetch(FetchRequest(broken, tmp_path / "root", from_dir=write_files(tmp_path / "dl2", empty_zip)))
    assert not (tmp_path / "root" / "clear_bad").exists()


def _fake_kaggle(bin_dir: Path, payload: Path) -> None:
    """A `kaggle` command that records its arguments and drops the fixture archive where -p says."""
    bin_dir.mkdir()
    script = bin_dir / "kaggle"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$@" > "{bin_dir}/args"\n'
        'while [ "$#" -gt 0 ]; do [ "$1" = "-p" ] && out="$2"; shift; done\n'
        f'cp "{payload}" "$out/digits.zip"\n'
    )
    script.chmod(0o755)


def test_kaggle_datasets_use_the_kaggle_command_or_say_how(tmp_path, monkeypatch):
    import zipfile

    files, _ = mnist_files()
    with zipfile.ZipFile(tmp_path / "digits.zip", "w") as zf:
        for name, data in files.items():
            zf.writestr(f"digits/{name}", data)
    archive = (tmp_path / "digits.zip").read_bytes()
    entry = entry_for("digits", {"digits.zip": archive}, "idx", access="kaggle", kaggle="someone/digits")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    with pytest.raises(FetchRefused, match=r"kaggle command is not installed.*kaggle.com/datasets/someone/digits"):
        fetch(FetchRequest(entry, tmp_path / "root"))
    _fake_kaggle(tmp_path / "bin", tmp_path / "digits.zip")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}/usr/bin:/bin")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KAGGLE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("KAGGLE_USERNAME", raising=False)
    with pytest.raises(FetchRefused, match="no API token"):
        fetch(FetchRequest(entry, tmp_path / "root"))
    monkeypatch.setenv("KAGGLE_USERNAME", "me")
    monkeypatch.setenv("KAGGLE_KEY", "secret")
    outcome = fetch(FetchRequest(entry, tmp_path / "root"))
    assert (tmp_path / "bin" / "args").read_text().split()[:4] == ["datasets", "download", "-d", "someone/digits"]
    assert load_source(f"idx:{outcome.path}").images.shape[0] == 18


def test_the_servers_file_name_says_how_to_unpack_an_artefact_the_manifest_names_plainly(tmp_path):
    archive, counts = image_folder_zip()
    with Loopback({"/get": Route(archive, filename="pets-v2.zip")}) as server:
        entry = entry_for("pets", {"download": archive}, "folder", urls={"download": [server.url("/get")]},
                          options={"root": "Dataset"})  # fmt: skip
        outcome = fetch(FetchRequest(entry, tmp_path / "root"), FAST)
    data = load_source(f"folder:{outcome.path}")
    assert len(data.labels) == sum(sum(c.values()) for c in counts.values())
    (artefact,) = read_provenance(outcome.path)["artefacts"]
    assert artefact["server_name"] == "pets-v2.zip" and artefact["source"] == server.url("/get")
