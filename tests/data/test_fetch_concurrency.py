"""Two fetches of one dataset at once: one lock covers download, verification and conversion; the second waits and
finds the dataset up to date; a replaced dataset's folder is never missing; a failed job leaves no work folder."""

from __future__ import annotations

import threading
import time

import pytest
from fetch_fixtures import digest, mnist_files, write_files
from loopback import Loopback, Route

from lifelong.data.fetch import FetchRequest, fetch, read_provenance
from lifelong.data.fetch.budgets import BudgetExceeded, UnpackLimit
from lifelong.data.fetch.download import DownloadSettings
from lifelong.data.fetch.install import STAGING, exchange
from lifelong.data.fetch.manifest import Artefact, DatasetEntry

FAST = DownloadSettings(timeout=5, retries=1, backoff=0.01)


def entry_for(files: dict[str, bytes], urls: dict[str, str] | None = None) -> DatasetEntry:
    artefacts = tuple(Artefact(f, (urls[f],) if urls else (), sha256=digest(b), size=len(b)) for f, b in files.items())
    return DatasetEntry(name="mnist", title="mnist", access="auto", converter="idx", artefacts=artefacts)


def test_two_downloads_of_one_dataset_at_once_share_the_work_and_the_second_finds_it_up_to_date(tmp_path):
    files, _ = mnist_files()
    routes = {f"/m/{f}": Route(b, pace=0.02) for f, b in files.items()}  # slow enough for the two to overlap
    outcomes, errors, waited = [], [], []
    with Loopback(routes) as server:
        entry = entry_for(files, {f: server.url(f"/m/{f}") for f in files})
        request = FetchRequest(entry, tmp_path / "root")

        def one() -> None:
            try:
                outcomes.append(fetch(request, FAST, waiting=waited.append).state)
            except Exception as exc:  # noqa: BLE001 (the test reports it)
                errors.append(exc)

        threads = [threading.Thread(target=one) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    assert not errors
    assert sorted(outcomes) == ["installed", "up to date"]
    assert waited == ["mnist"]
    assert sum(route.hits for route in routes.values()) == len(files)  # each file downloaded once


def test_the_installed_folder_never_goes_missing_while_another_fetch_replaces_it(tmp_path):
    files, _ = mnist_files()
    entry = entry_for(files)
    request = FetchRequest(entry, tmp_path / "root", from_dir=write_files(tmp_path / "dl", files))
    assert fetch(request).state == "installed"
    target, missing, stop = request.target, [], threading.Event()

    def watch() -> None:
        while not stop.is_set():
            if not (target / "train-images-idx3-ubyte.gz").is_file():
                missing.append(time.monotonic())

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        for _ in range(5):
            assert (
                fetch(FetchRequest(entry, request.root, from_dir=request.from_dir, overwrite=True)).state == "replaced"
            )
    finally:
        stop.set()
        watcher.join()
    assert not missing
    assert read_provenance(target) is not None
    assert not list((request.root / STAGING / "work").iterdir())


def test_exchange_swaps_two_folders_in_one_step(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "which").write_text("a")
    (b / "which").write_text("b")
    if not exchange(a, b):
        pytest.skip("this system has no renameat2 RENAME_EXCHANGE (the aside-and-restore path is used)")
    assert (a / "which").read_text() == "b" and (b / "which").read_text() == "a"


def test_a_budget_that_ends_the_unpack_leaves_no_work_folder_and_keeps_the_old_dataset(tmp_path):
    import gzip
    import io
    import tarfile

    files, _ = mnist_files()
    entry = entry_for(files)
    request = FetchRequest(entry, tmp_path / "root", from_dir=write_files(tmp_path / "dl", files))
    assert fetch(request).state == "installed"
    before = sorted(p.name for p in request.target.iterdir())
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        info = tarfile.TarInfo("zeros-images-idx3-ubyte")
        info.size = 4_000_000
        tf.addfile(info, io.BytesIO(bytes(info.size)))
    bomb = {"bomb.tar.gz": buffer.getvalue()}
    bomb_entry = DatasetEntry(
        name="mnist", title="mnist", access="auto", converter="idx",
        artefacts=(Artefact("bomb.tar.gz", sha256=digest(bomb["bomb.tar.gz"])),),
    )  # fmt: skip
    with pytest.raises(BudgetExceeded, match=r"bomb\.tar\.gz.*--max-unpacked"):
        fetch(
            FetchRequest(bomb_entry, request.root, from_dir=write_files(tmp_path / "bomb", bomb), overwrite=True),
            limit=UnpackLimit.parse("10x"),
        )
    assert not list((request.root / STAGING / "work").iterdir())
    assert sorted(p.name for p in request.target.iterdir()) == before  # the old dataset is still there, whole
    assert gzip.decompress(files["t10k-labels-idx1-ubyte.gz"]) == gzip.decompress(
        (request.target / "t10k-labels-idx1-ubyte.gz").read_bytes()
    )


def test_imagenet_streams_its_members_within_the_unpack_budget(tmp_path):
    """ImageNet's converter reads its tars in place (no unpacked copy); its writes are charged to the same budget."""
    import io
    import tarfile

    from fetch_fixtures import imagenet_archives, tar_bytes

    from lifelong.data.fetch.budgets import ByteBudget
    from lifelong.data.fetch.conversion import Conversion
    from lifelong.data.fetch.converters import CONVERTERS

    files, _ = imagenet_archives()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tf:
        info = tarfile.TarInfo("n01440764_big.JPEG")
        info.size = 300_000
        tf.addfile(info, io.BytesIO(bytes(info.size)))
    files["ILSVRC2012_img_train.tar"] = tar_bytes({"n01440764.tar": buffer.getvalue()}, "w")
    folder = write_files(tmp_path / "dl", files)
    (tmp_path / "scratch").mkdir()
    (tmp_path / "out").mkdir()
    budget = ByteBudget(100_000, "a test budget", "imagenet")
    job = Conversion("imagenet", {n: folder / n for n in files}, tmp_path / "scratch", tmp_path / "out", budget=budget)
    with pytest.raises(BudgetExceeded, match=r"n01440764_big\.JPEG.*declares|n01440764_big\.JPEG.*budget"):
        CONVERTERS["imagenet"](job)
    written = sum(p.stat().st_size for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert written <= 100_000
