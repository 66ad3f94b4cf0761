"""Downloading one artefact: to a `.part` file, resumed with HTTP Range, retried with backoff, bounded per host.

`download(urls, folder, file)` tries each URL in order (a mirror, the origin, known mirrors) and returns the
finished file. A killed download leaves `FILE.part`, a prefix of the file, which the next call resumes from
(a server that ignores Range restarts it). Redirects are followed (to http and https only); a server's file name
(Content-Disposition) is reported; Google Drive's "cannot scan this file" confirmation page is answered.
What a server decides is bounded: never more bytes than the manifest's size (`BudgetExceeded`), never slower than
`min_rate` over `rate_window` once bytes flow (a retry), never longer than `deadline` for the whole artefact.
Standard library only (urllib): no new dependency for a path most runs never take.
"""

from __future__ import annotations

import functools
import html.parser
import http.client
import io
import os
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lifelong.core.errors import DataError
from lifelong.data.fetch.budgets import DEFAULT_UNPACK_CAP, KB, BudgetExceeded, format_size

CHUNK = 1 << 16
SNIFF = 1 << 16  # bytes of an HTML answer read to look for a confirmation form
HEAD_LIMIT = 1 << 20  # bytes a try may read before its body: http.client loops over any number of 1xx answers
USER_AGENT = "lifelong-data-fetch/1"
SCHEMES = ("http", "https")
Progress = Callable[[int, int | None], None]  # (bytes just received, total bytes when known)
Clock = Callable[[], float]


class DownloadError(OSError, DataError):
    """Every URL of an artefact failed, or its deadline passed: says which, and why each did."""


@dataclass(frozen=True)
class DownloadSettings:
    """Timeouts, retries, the per-host connection limit and the byte and time budgets of every download."""

    timeout: float = 60.0  # seconds a read may wait for the server's first byte (later: at most rate_window)
    retries: int = 4
    backoff: float = 1.0  # seconds before the first retry; doubled after each
    per_host: int = 2
    # bytes an artefact whose manifest gives no size may reach (--max-download)
    max_bytes_unknown_size: int = DEFAULT_UNPACK_CAP
    # bytes/s under which a try is given up (--min-rate): far below any working link (dial-up ~5 KB/s), far
    # above a trickle; a server that sends just enough is bounded by the size and by `deadline`
    min_rate: float = 1 * KB
    rate_window: float = 30.0  # seconds over which the rate is measured; also the longest silence once bytes flow
    deadline: float = 24 * 3600.0  # seconds for the whole artefact: every try, URL and wait (--deadline)

    def __post_init__(self) -> None:
        """Refuse values that would lift a bound by accident (a zero window, a negative size)."""
        seconds = {"timeout": self.timeout, "rate_window": self.rate_window, "--deadline": self.deadline}
        for name, value in seconds.items():
            if not value > 0:
                raise ValueError(f"download {name} must be a positive number of seconds, not {value!r}")
        if not self.min_rate >= 0:
            raise ValueError(f"--min-rate must be 0 (no minimum) or a positive bytes/s, not {self.min_rate!r}")
        if self.max_bytes_unknown_size < 0:
            raise ValueError(f"--max-download must be a number of bytes, not {self.max_bytes_unknown_size!r}")


@dataclass(frozen=True)
class Downloaded:
    path: Path
    url: str  # the URL that served it (after redirects)
    server_name: str | None  # the server's file name, when it gave one
    requested: str = ""  # the URL asked for (the manifest's or a mirror's), which names the copy it is


_HOST_SLOTS: dict[str, threading.BoundedSemaphore] = {}
_SLOTS_LOCK = threading.Lock()


def _host_slot(url: str, per_host: int) -> threading.BoundedSemaphore:
    host = urllib.parse.urlsplit(url).netloc.lower()
    with _SLOTS_LOCK:
        return _HOST_SLOTS.setdefault(host, threading.BoundedSemaphore(per_host))


def server_file_name(header: str | None) -> str | None:
    """The file name of a Content-Disposition header (RFC 6266 `filename*` first), reduced to its last part."""
    if not header:
        return None
    match = re.search(r"filename\*\s*=\s*[^']*'[^']*'([^;]+)", header, re.I)
    name = urllib.parse.unquote(match.group(1).strip()) if match else None
    if name is None:
        match = re.search(r'filename\s*=\s*"([^"]*)"|filename\s*=\s*([^;]+)', header, re.I)
        name = (match.group(1) or match.group(2)).strip() if match else None
    name = os.path.basename((name or "").replace("\\", "/"))
    return name if name not in ("", ".", "..") else None


class _FormFinder(html.parser.HTMLParser):
    """The download form of a Google Drive confirmation page: its action and hidden inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.action: str | None = None
        self.fields: dict[str, str] = {}
        self._in_form = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "form" and ("download" in values.get("id", "") or "download" in values.get("action", "")):
            self.action, self._in_form = values.get("action"), True
        elif tag == "input" and self._in_form and values.get("name"):
            self.fields[values["name"]] = values.get("value", "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._in_form = False


def confirmation_url(page: str, url: str) -> str | None:
    """The URL that answers a Google Drive confirmation page, or None when `page` is not one."""
    finder = _FormFinder()
    finder.feed(page)
    if finder.action and finder.fields:
        action = urllib.parse.urljoin(url, finder.action)
        return f"{action}?{urllib.parse.urlencode(finder.fields)}"
    match = re.search(r"confirm=([0-9A-Za-z_-]+)", page)
    if match:
        parts = urllib.parse.urlsplit(url)
        query = dict(urllib.parse.parse_qsl(parts.query))
        query["confirm"] = match.group(1)
        return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))
    return None


class _Retry(Exception):
    """A failure worth another try of the same URL (timeout, reset, 5xx, 429, slower than the minimum rate)."""


class _TooSlow(_Retry):
    """Slower than the minimum rate over a window."""


class _Deadline(Exception):
    """The artefact's deadline passed: no more tries, no more URLs."""


def _require_http(url: str, what: str) -> None:
    """A DownloadError unless `url` is http or https (a redirect or a page must not open a local file)."""
    if urllib.parse.urlsplit(url).scheme.lower() not in SCHEMES:
        raise DownloadError(f"{what}: only http and https URLs are downloaded (for local files use --from FOLDER)")


@dataclass(frozen=True)
class _Cap:
    """The bytes one artefact may reach: its manifest's size, or the setting for artefacts without one."""

    file: str
    limit: int
    known: bool  # the limit is the manifest's size

    def refuse(self, url: str, what: str, done: str) -> BudgetExceeded:
        """The error for `url` claiming or sending `what`, past the cap; `done`: what became of the .part."""
        if self.known:
            source = f"the manifest's size of {self.limit:,} bytes"
            advice = "the server is not serving the manifest's file, or the manifest's size is wrong"
        else:
            source = f"the limit of {self.limit:,} bytes ({format_size(self.limit)}) for an artefact without a size"
            advice = "if you trust this server, raise the limit with --max-download SIZE"
        return BudgetExceeded(f"{self.file} from {url}: {what}, more than {source}; {done} ({advice})")


class _Meter:
    """The time limits of one artefact: a deadline over every try and URL, a minimum rate within each try."""

    def __init__(self, settings: DownloadSettings, clock: Clock) -> None:
        self.settings, self.clock = settings, clock
        self.end = clock() + settings.deadline
        self.window_start: float | None = None  # set by the try's first byte: waiting for it is `timeout`'s
        self.window_bytes = 0
        self.head_bytes: int | None = None  # bytes of a request's answer before its body; None in the body

    def new_try(self) -> None:
        self.window_start, self.window_bytes = None, 0

    def left(self) -> float:
        """Seconds to the deadline; none left is a _Deadline."""
        left = self.end - self.clock()
        if left <= 0:
            raise _Deadline(self.passed())
        return left

    def passed(self, why: str = "passed") -> str:
        return f"the deadline of {self.settings.deadline:g} s for the whole artefact (--deadline) {why}"

    def wait(self) -> float:
        """How long the next read may block: the timeout, the rate window once bytes flow, the deadline."""
        wait = min(self.settings.timeout, self.left())
        return wait if self.window_start is None else min(wait, self.settings.rate_window)

    def received(self, n: int) -> None:
        """Count `n` bytes; a window slower than `min_rate` is a _Retry (the .part stays for the resume)."""
        now = self.clock()
        if self.window_start is None:
            self.window_start = now
        self.window_bytes += n
        if self.head_bytes is not None:
            self.head_bytes += n
            if self.head_bytes > HEAD_LIMIT:
                raise DownloadError(f"more than {HEAD_LIMIT:,} bytes of status lines and headers and no body")
        elapsed = now - self.window_start
        if elapsed >= self.settings.rate_window:
            if self.window_bytes < self.settings.min_rate * elapsed:
                raise _TooSlow(
                    f"slower than the minimum rate of {self.settings.min_rate:g} bytes/s (--min-rate) over "
                    f"{self.settings.rate_window:g} s: {self.window_bytes:,} bytes in {elapsed:.1f} s"
                )
            self.window_start, self.window_bytes = now, 0


class _MeteredSocket(io.RawIOBase):
    """A response's socket, read through the meter: every read (status, headers, body) is bounded in time."""

    def __init__(self, inner: io.RawIOBase, sock: socket.socket, meter: _Meter) -> None:
        super().__init__()
        self.inner, self.sock, self.meter = inner, sock, meter

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        wait = self.meter.wait()
        self.sock.settimeout(wait)
        try:
            n = self.sock.recv_into(buffer)
        except TimeoutError:
            self.meter.left()  # the deadline, when that is what ran out
            raise TimeoutError(f"no byte for {wait:g} s") from None
        self.meter.received(n)
        return n

    def close(self) -> None:
        self.inner.close()  # the socket itself closes with its last file
        super().close()


class _MeteredResponse(http.client.HTTPResponse):
    def __init__(self, sock: socket.socket, *args: object, meter: _Meter, **kwargs: object) -> None:
        super().__init__(sock, *args, **kwargs)  # type: ignore[arg-type]
        self.fp = io.BufferedReader(_MeteredSocket(self.fp.detach(), sock, meter), CHUNK)  # type: ignore[arg-type]


class _Metered:
    """A connection whose responses read through a meter."""

    def __init__(self, *args: object, meter: _Meter, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[call-arg]
        self.response_class = functools.partial(_MeteredResponse, meter=meter)


class _Connection(_Metered, http.client.HTTPConnection):
    pass


class _TLSConnection(_Metered, http.client.HTTPSConnection):
    pass


class _MeteredHandler(urllib.request.AbstractHTTPHandler):
    """http and https through metered connections (certificates checked as urllib's default does)."""

    def __init__(self, meter: _Meter) -> None:
        super().__init__()
        self.meter = meter

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_Connection, meter=self.meter), req)

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_TLSConnection, meter=self.meter), req)

    http_request = https_request = urllib.request.AbstractHTTPHandler.do_request_


class _HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """Redirects to http and https only (urllib also follows ftp), without reading the redirect's body."""

    def http_error_302(self, req, fp, code, msg, headers):  # noqa: ANN001, ANN201 (urllib's signature)
        target = urllib.parse.urljoin(req.full_url, headers.get("location") or headers.get("uri") or "")
        fp.close()  # urllib reads the whole body of a redirect: a server decides how much
        _require_http(target, f"{req.full_url} redirected to {target}")
        return super().http_error_302(req, fp, code, msg, headers)

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302


def _opener(meter: _Meter) -> urllib.request.OpenerDirector:
    """urllib's default opener less its file, ftp and data handlers, with metered connections."""
    opener = urllib.request.OpenerDirector()
    for handler in (
        urllib.request.ProxyHandler(), urllib.request.UnknownHandler(), _MeteredHandler(meter),
        urllib.request.HTTPDefaultErrorHandler(), _HttpOnlyRedirects(), urllib.request.HTTPErrorProcessor(),
    ):  # fmt: skip
        opener.add_handler(handler)
    return opener


def _fetch_once(url: str, part: Path, progress: Progress | None, cap: _Cap, meter: _Meter) -> Downloaded:
    """One request for `url`, appending to `part` from its current size; answers one confirmation page."""
    for _ in range(3):  # the URL, then at most two confirmation pages
        _require_http(url, url)
        have = part.stat().st_size if part.exists() else 0
        request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
        if have:
            request.add_header("Range", f"bytes={have}-")
        try:
            meter.head_bytes = 0
            response = _opener(meter).open(request, timeout=meter.wait())
            meter.head_bytes = None
        except urllib.error.HTTPError as exc:
            exc.close()
            if exc.code == 416 and have:  # the .part is already whole: the checksum will tell
                return Downloaded(part, url, None)
            if exc.code >= 500 or exc.code == 429:
                raise _Retry(f"HTTP {exc.code}") from None
            raise DownloadError(f"HTTP {exc.code} {exc.reason}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as exc:
            raise _Retry(str(getattr(exc, "reason", exc))) from None
        with response:
            kind = response.headers.get("Content-Type", "")
            if kind.startswith("text/html"):
                page = response.read(SNIFF).decode("utf-8", "replace")
                follow = confirmation_url(page, response.geturl())
                if follow is None:
                    raise DownloadError(f"{url} answered an HTML page, not the file (a login or an error page?)")
                url = follow
                continue
            append = response.status == 206 and have > 0
            if append:
                start = re.match(r"bytes (\d+)-", response.headers.get("Content-Range", ""))
                append = bool(start) and int(start.group(1)) == have  # type: ignore[union-attr]
            kept = have if append else 0
            length = response.headers.get("Content-Length")
            total = (int(length) + kept) if length and length.isdigit() else None
            if total is not None and total > cap.limit:
                resumed = f" after the {kept:,} bytes already here" if kept else ""
                raise cap.refuse(url, f"the server claims {total:,} bytes (Content-Length {length}{resumed})",
                                 "refused before writing a byte")  # fmt: skip
            if progress:
                progress(kept, total)
            _receive(response, part, append, cap, url, progress)
            got = part.stat().st_size
            if total is not None and got < total:
                raise _Retry(f"connection closed at {got:,} of {total:,} bytes")
            return Downloaded(part, response.geturl(), server_file_name(response.headers.get("Content-Disposition")))
    raise DownloadError(f"{url}: more than two confirmation pages")


def _receive(response: http.client.HTTPResponse, part: Path, append: bool, cap: _Cap, url: str,
             progress: Progress | None) -> None:  # fmt: skip
    """The body into `part` (appended or from its start); past the cap, the .part is removed (it is not the file)."""
    try:
        with open(part, "ab" if append else "wb") as out:
            written = out.tell()
            while chunk := response.read1(CHUNK):
                if written + len(chunk) > cap.limit:
                    out.close()
                    part.unlink(missing_ok=True)
                    raise cap.refuse(url, f"the server sent at least {written + len(chunk):,} bytes",
                                     f"stopped there and removed {part.name}")  # fmt: skip
                out.write(chunk)
                written += len(chunk)
                if progress:
                    progress(len(chunk), None)
            out.flush()
            os.fsync(out.fileno())
    except (TimeoutError, ConnectionError, http.client.HTTPException) as exc:
        raise _Retry(f"connection broke mid-file ({exc})") from None


def download(
    urls: list[str] | tuple[str, ...],
    folder: Path,
    file: str,
    *,
    settings: DownloadSettings = DownloadSettings(),
    progress: Progress | None = None,
    sleep: Callable[[float], None] = time.sleep,
    size: int | None = None,
    clock: Clock = time.monotonic,
) -> Downloaded:
    """Get `file` into `folder` from the first URL that serves it; resumes a `.part` left by a killed run.

    `size` (the manifest's) bounds the bytes written; `clock` measures the rate and the deadline.
    """
    folder.mkdir(parents=True, exist_ok=True)
    final, part = folder / file, folder / f"{file}.part"
    if final.exists():
        return Downloaded(final, "", None)
    cap = _Cap(file, size, True) if size is not None else _Cap(file, settings.max_bytes_unknown_size, False)
    if part.exists() and part.stat().st_size > cap.limit:
        part.unlink()  # longer than the file: no prefix of it
    meter = _Meter(settings, clock)
    failures: list[str] = []
    over_budget = too_slow = False
    try:
        for url in urls:
            delay = settings.backoff
            for attempt in range(settings.retries + 1):
                meter.new_try()
                try:
                    slot = _host_slot(url, settings.per_host)
                    if not slot.acquire(timeout=min(meter.left(), threading.TIMEOUT_MAX)):
                        raise _Deadline(meter.passed("passed waiting for a connection to this host"))
                    try:
                        got = _fetch_once(url, part, progress, cap, meter)
                    finally:
                        slot.release()
                    os.replace(part, final)
                    return Downloaded(final, got.url, got.server_name, url)
                except _Retry as exc:
                    too_slow |= isinstance(exc, _TooSlow)
                    if attempt == settings.retries:
                        failures.append(f"{url}: {exc} ({settings.retries + 1} tries)")
                        break
                    if delay >= meter.left():
                        raise _Deadline(meter.passed(f"would pass before the next try (in {delay:g} s)")) from None
                    sleep(delay)
                    delay *= 2
                except BudgetExceeded as exc:
                    failures.append(str(exc))  # the next URL may serve the manifest's file
                    over_budget = True
                    break
                except DownloadError as exc:
                    failures.append(f"{url}: {exc}")
                    part.unlink(missing_ok=True)  # another URL's bytes must not continue this one's
                    break
    except _Deadline as exc:
        failures.append(f"stopped: {exc}" + (f"; {part.name} is kept for a later resume" if part.exists() else ""))
        raise DownloadError(f"could not download {file}: " + "; ".join(failures)) from None
    message = f"could not download {file}: " + "; ".join(failures or ["no URL to try"])
    if too_slow:
        message += (f" (a server slower than {settings.min_rate:g} bytes/s is given up: lower --min-rate for a slow "
                    f"but genuine one; --deadline bounds the whole artefact, now {settings.deadline:g} s)")  # fmt: skip
    raise (BudgetExceeded if over_budget else DownloadError)(message)
