"""Downloads against a hostile loopback server: endless or lying bodies, trickles, deadlines, local-file redirects.

Each case is bounded by small sizes, short rate windows and one retry; the server stops by itself.
"""

from __future__ import annotations

import pytest
from loopback import Loopback, Route

from lifelong.data.fetch.budgets import BudgetExceeded
from lifelong.data.fetch.download import DownloadError, DownloadSettings, download

BODY = bytes(range(256)) * 400  # 102,400 bytes
QUICK = DownloadSettings(timeout=5, retries=1, backoff=0, min_rate=100, rate_window=0.5)
NO_WAIT = {"settings": QUICK, "sleep": lambda s: None}


def test_an_endless_body_stops_at_the_manifests_size_and_its_part_is_removed(tmp_path):
    with Loopback({"/f.bin": Route(BODY, endless=True)}, lifetime=20) as server:
        with pytest.raises(BudgetExceeded) as caught:
            download([server.url("/f.bin")], tmp_path, "f.bin", size=250_000, **NO_WAIT)
    message = str(caught.value)
    assert f"could not download f.bin: f.bin from {server.url('/f.bin')}: the server sent at least " in message
    assert "more than the manifest's size of 250,000 bytes" in message
    assert list(tmp_path.iterdir()) == []
    assert server.routes["/f.bin"].hits == 1  # not retried


def test_a_huge_content_length_is_refused_before_a_byte_is_written(tmp_path):
    received: list[int] = []
    with Loopback({"/f.bin": Route(BODY, claim=10**12, endless=True)}, lifetime=20) as server:
        with pytest.raises(BudgetExceeded, match=r"claims 1,000,000,000,000 bytes .*refused before writing a byte"):
            download([server.url("/f.bin")], tmp_path, "f.bin", size=len(BODY),
                     progress=lambda n, t: received.append(n), **NO_WAIT)  # fmt: skip
    assert list(tmp_path.iterdir()) == [] and not any(received)
    assert server.routes["/f.bin"].hits == 1


def test_a_lying_length_after_a_resumed_prefix_keeps_the_prefix(tmp_path):
    (tmp_path / "f.bin.part").write_bytes(BODY[:1000])
    with Loopback({"/f.bin": Route(BODY, claim=len(BODY))}, lifetime=20) as server:  # 1000 + len(BODY) > size
        with pytest.raises(BudgetExceeded, match=r"after the 1,000 bytes already here"):
            download([server.url("/f.bin")], tmp_path, "f.bin", size=len(BODY), **NO_WAIT)
    assert (tmp_path / "f.bin.part").read_bytes() == BODY[:1000]
    assert server.requests == [("/f.bin", "bytes=1000-")]


def test_a_body_longer_than_the_size_without_a_content_length_stops_there(tmp_path):
    with Loopback({"/f.bin": Route(BODY, no_length=True)}, lifetime=20) as server:
        with pytest.raises(BudgetExceeded, match="the manifest's size of 100,000 bytes"):
            download([server.url("/f.bin")], tmp_path, "f.bin", size=100_000, **NO_WAIT)
    assert list(tmp_path.iterdir()) == []


def test_without_a_manifest_size_the_cap_is_the_max_download_setting(tmp_path):
    settings = DownloadSettings(timeout=5, retries=1, backoff=0, max_bytes_unknown_size=50_000)
    with Loopback({"/f.bin": Route(BODY, no_length=True)}, lifetime=20) as server:
        with pytest.raises(BudgetExceeded, match=r"50,000 bytes .*for an artefact without a size.*--max-download"):
            download([server.url("/f.bin")], tmp_path, "f.bin", settings=settings)
    assert list(tmp_path.iterdir()) == []


def test_an_oversized_mirror_falls_back_to_the_next_url(tmp_path):
    routes = {"/mirror/f.bin": Route(BODY * 2), "/f.bin": Route(BODY)}
    with Loopback(routes, lifetime=20) as server:
        got = download([server.url("/mirror/f.bin"), server.url("/f.bin")], tmp_path, "f.bin", size=len(BODY),
                       **NO_WAIT)  # fmt: skip
    assert got.path.read_bytes() == BODY and got.url.endswith("/f.bin")


def test_a_download_of_exactly_the_size_passes_even_when_resumed(tmp_path):
    routes = {"/a": Route(BODY, no_length=True), "/b": Route(BODY, cut_after=30_000)}
    with Loopback(routes, lifetime=20) as server:
        a = download([server.url("/a")], tmp_path, "a.bin", size=len(BODY), **NO_WAIT)
        b = download([server.url("/b")], tmp_path, "b.bin", size=len(BODY), **NO_WAIT)
    assert a.path.read_bytes() == BODY and b.path.read_bytes() == BODY
    assert server.requests[-1] == ("/b", "bytes=30000-")


def test_a_part_longer_than_the_size_is_no_prefix_and_is_restarted(tmp_path):
    (tmp_path / "f.bin.part").write_bytes(b"x" * (len(BODY) + 10))
    with Loopback({"/f.bin": Route(BODY)}, lifetime=20) as server:
        got = download([server.url("/f.bin")], tmp_path, "f.bin", size=len(BODY), **NO_WAIT)
    assert got.path.read_bytes() == BODY and server.requests == [("/f.bin", None)]


def test_a_trickle_is_slower_than_the_minimum_rate_and_ends_after_its_retries(tmp_path):
    with Loopback({"/f.bin": Route(BODY[:1000], pace=0.2, step=1)}, lifetime=10) as server:
        with pytest.raises(DownloadError) as caught:
            download([server.url("/f.bin")], tmp_path, "f.bin", size=1000, **NO_WAIT)
    message = str(caught.value)
    assert "slower than the minimum rate of 100 bytes/s (--min-rate) over 0.5 s" in message
    assert "(2 tries)" in message and "--deadline" in message
    part = (tmp_path / "f.bin.part").read_bytes()
    assert part and BODY.startswith(part)  # kept for the Range resume
    assert server.requests[1][1] is not None and server.requests[1][1].startswith("bytes=")


def test_a_header_that_never_ends_is_a_trickle_too(tmp_path):
    with Loopback({"/f.bin": Route(header_trickle=0.2)}, lifetime=10) as server:
        with pytest.raises(DownloadError, match=r"slower than the minimum rate .* \(2 tries\)"):
            download([server.url("/f.bin")], tmp_path, "f.bin", size=1000, **NO_WAIT)


def test_endless_interim_answers_are_cut_off(tmp_path):
    with Loopback({"/f.bin": Route(endless_continue=True)}, lifetime=10) as server:
        with pytest.raises(DownloadError, match=r"more than 1,048,576 bytes of status lines and headers and no body"):
            download([server.url("/f.bin")], tmp_path, "f.bin", size=1000, **NO_WAIT)
    assert server.routes["/f.bin"].hits == 1


def test_the_deadline_counts_every_try_and_wait(tmp_path):
    now = [0.0]
    settings = DownloadSettings(timeout=5, retries=10, backoff=1, deadline=2.5)
    with Loopback({"/f.bin": Route(BODY, fail_times=100)}, lifetime=20) as server:
        with pytest.raises(DownloadError, match=r"deadline of 2\.5 s for the whole artefact \(--deadline\)"):
            download([server.url("/f.bin")], tmp_path, "f.bin", settings=settings, clock=lambda: now[0],
                     sleep=lambda s: now.__setitem__(0, now[0] + s))  # fmt: skip
    assert server.routes["/f.bin"].hits == 2  # tries at 0 s and 1 s; the next (at 3 s) would be past it


def test_the_deadline_stops_a_transfer_at_once_and_keeps_its_part(tmp_path):
    settings = DownloadSettings(timeout=5, retries=3, backoff=0, min_rate=0, rate_window=0.5, deadline=1.0)
    with Loopback({"/f.bin": Route(BODY[:1000], pace=0.1, step=1)}, lifetime=10) as server:
        with pytest.raises(DownloadError, match=r"deadline of 1 s .* passed; f\.bin\.part is kept"):
            download([server.url("/f.bin")], tmp_path, "f.bin", size=1000, settings=settings)
    part = (tmp_path / "f.bin.part").read_bytes()
    assert 0 < len(part) < 1000 and BODY.startswith(part)
    assert server.routes["/f.bin"].hits == 1


@pytest.mark.parametrize("target", ["file:///etc/passwd", "ftp://127.0.0.1:9/f.bin", "data:,secret"])
def test_a_redirect_to_another_scheme_is_refused(tmp_path, target):
    with Loopback({"/f.bin": Route(redirect=target)}, lifetime=20) as server:
        with pytest.raises(DownloadError, match=f"redirected to {target}: only http and https"):
            download([server.url("/f.bin")], tmp_path, "f.bin", size=1000, **NO_WAIT)
    assert list(tmp_path.iterdir()) == [] and server.routes["/f.bin"].hits == 1


def test_a_confirmation_page_leading_to_a_local_file_is_refused(tmp_path):
    secret = tmp_path / "secret"
    secret.write_bytes(b"not yours")
    with Loopback({"/uc": Route(gdrive_to=secret.as_uri())}, lifetime=20) as server:
        with pytest.raises(DownloadError, match=r"file://.*only http and https"):
            download([server.url("/uc?id=x")], tmp_path / "out", "f.bin", **NO_WAIT)
    assert list((tmp_path / "out").iterdir()) == []


def test_the_body_of_a_redirect_is_not_read(tmp_path):
    routes = {"/old": Route(BODY, redirect="/new", endless=True, pace=0.05), "/new": Route(BODY)}
    with Loopback(routes, lifetime=5) as server:
        got = download([server.url("/old")], tmp_path, "f.bin", size=len(BODY), **NO_WAIT)
    assert got.path.read_bytes() == BODY
    assert routes["/old"].sent < len(BODY)  # urllib alone reads a redirect's body to its end, however long


def test_a_big_html_page_instead_of_the_archive_is_refused(tmp_path):
    page = b"<html><body>" + b"Please sign in. " * 400_000 + b"</body></html>"  # 6.4 MB
    with Loopback({"/f.zip": Route(html=page)}, lifetime=20) as server:
        with pytest.raises(DownloadError, match="HTML page, not the file"):
            download([server.url("/f.zip")], tmp_path, "f.zip", size=1000, **NO_WAIT)
    assert list(tmp_path.iterdir()) == []
