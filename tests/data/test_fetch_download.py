"""Downloads against a loopback server: resume after a cut, retries, redirects, mirrors, file names, Google Drive."""

from __future__ import annotations

import os

import pytest
from loopback import Loopback, Route

from lifelong.data.fetch.download import (
    DownloadError,
    DownloadSettings,
    confirmation_url,
    download,
    server_file_name,
)

BODY = bytes(range(256)) * 400  # 102,400 bytes
FAST = DownloadSettings(timeout=5, retries=2, backoff=0.01)


def test_a_cut_connection_is_resumed_with_range_from_the_part_file(tmp_path):
    with Loopback({"/f.bin": Route(BODY, cut_after=30_000)}) as server:
        got = download([server.url("/f.bin")], tmp_path, "f.bin", settings=FAST, sleep=lambda s: None)
    assert got.path.read_bytes() == BODY
    assert not (tmp_path / "f.bin.part").exists()
    assert [r for _, r in server.requests] == [None, "bytes=30000-"]


def test_a_part_left_by_a_killed_run_is_continued_not_restarted(tmp_path):
    (tmp_path / "f.bin.part").write_bytes(BODY[:12_345])
    with Loopback({"/f.bin": Route(BODY)}) as server:
        download([server.url("/f.bin")], tmp_path, "f.bin", settings=FAST)
    assert (tmp_path / "f.bin").read_bytes() == BODY
    assert server.requests == [("/f.bin", "bytes=12345-")]


def test_a_server_that_ignores_range_restarts_the_file(tmp_path):
    (tmp_path / "f.bin.part").write_bytes(b"x" * 1000)
    with Loopback({"/f.bin": Route(BODY, honour_range=False)}) as server:
        download([server.url("/f.bin")], tmp_path, "f.bin", settings=FAST)
    assert (tmp_path / "f.bin").read_bytes() == BODY


def test_server_errors_are_retried_with_growing_waits(tmp_path):
    waits: list[float] = []
    with Loopback({"/f.bin": Route(BODY, fail_times=2)}) as server:
        download([server.url("/f.bin")], tmp_path, "f.bin", settings=FAST, sleep=waits.append)
    assert (tmp_path / "f.bin").read_bytes() == BODY
    assert waits == [0.01, 0.02]


def test_a_dead_origin_falls_back_to_the_next_url_and_every_failure_is_named(tmp_path):
    routes = {"/gone": Route(status=404), "/mirror/f.bin": Route(BODY)}
    with Loopback(routes) as server:
        got = download([server.url("/gone"), server.url("/mirror/f.bin")], tmp_path, "f.bin", settings=FAST)
        assert got.url.endswith("/mirror/f.bin")
        with pytest.raises(DownloadError, match=r"could not download g.bin: .*/gone: HTTP 404"):
            download([server.url("/gone")], tmp_path, "g.bin", settings=FAST)
    assert not (tmp_path / "g.bin").exists() and not (tmp_path / "g.bin.part").exists()


def test_retries_run_out_with_a_clear_error(tmp_path):
    with Loopback({"/f.bin": Route(BODY, fail_times=10)}) as server:
        with pytest.raises(DownloadError, match=r"HTTP 500 \(3 tries\)"):
            download([server.url("/f.bin")], tmp_path, "f.bin", settings=FAST, sleep=lambda s: None)


def test_redirects_are_followed_and_the_servers_file_name_is_reported(tmp_path):
    routes = {"/latest": Route(redirect="/files/v2"), "/files/v2": Route(BODY, filename="data-v2.tar.gz")}
    with Loopback(routes) as server:
        got = download([server.url("/latest")], tmp_path, "data.tar.gz", settings=FAST)
    assert got.path == tmp_path / "data.tar.gz" and got.path.read_bytes() == BODY
    assert got.url.endswith("/files/v2") and got.server_name == "data-v2.tar.gz"


def test_google_drives_confirmation_page_is_answered(tmp_path):
    routes = {"/uc": Route(gdrive_to="/download"), "/download": Route(BODY)}
    with Loopback(routes) as server:
        got = download([server.url("/uc?id=abc&export=download")], tmp_path, "big.zip", settings=FAST)
    assert got.path.read_bytes() == BODY
    followed = server.requests[-1][0]
    assert followed.startswith("/download?") and "id=abc" in followed and "confirm=t" in followed


def test_an_html_page_that_is_no_confirmation_is_an_error_not_a_file(tmp_path):
    with Loopback({"/login": Route(html=b"<html><body>Please sign in</body></html>")}) as server:
        with pytest.raises(DownloadError, match="HTML page"):
            download([server.url("/login")], tmp_path, "f.zip", settings=FAST)
    assert not (tmp_path / "f.zip").exists()


def test_content_disposition_names():
    assert server_file_name('attachment; filename="a b.zip"') == "a b.zip"
    assert server_file_name("attachment; filename*=UTF-8''na%C3%AFve.tar.gz") == "naïve.tar.gz"
    assert server_file_name('attachment; filename="../../etc/passwd"') == "passwd"
    assert server_file_name(None) is None and server_file_name('attachment; filename=".."') is None


def test_the_older_drive_page_with_a_confirm_token_in_a_link():
    page = '<a href="/uc?export=download&amp;confirm=AbC_1&amp;id=xyz">Download anyway</a>'
    url = confirmation_url(page, "https://drive.google.com/uc?export=download&id=xyz")
    assert url is not None and "confirm=AbC_1" in url and "id=xyz" in url
    assert confirmation_url("<html>nothing here</html>", "https://x/") is None


def test_a_finished_file_is_not_fetched_again(tmp_path):
    (tmp_path / "f.bin").write_bytes(b"done")
    got = download(["http://127.0.0.1:9/never"], tmp_path, "f.bin", settings=FAST)
    assert got.path.read_bytes() == b"done"
    assert os.listdir(tmp_path) == ["f.bin"]
