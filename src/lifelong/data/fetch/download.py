"""Downloading one artefact: to a `.part` file, resumed with HTTP Range, retried with backoff, bounded per host.

`download(urls, folder, file)` tries each URL in order (a mirror, the origin, known mirrors) and returns the
finished file. A killed download leaves `FILE.part`, a prefix of the file, which the next call resumes from
(a server that ignores Range restarts it). Redirects are followed; a server's file name
(Content-Disposition) is reported; Google Drive's "cannot scan this file" confirmation page is answered.
Standard library only (urllib): no new dependency for a path most runs never take.
"""

from __future__ import annotations

import html.parser
import http.client
import os
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CHUNK = 1 << 16
SNIFF = 1 << 16  # bytes of an HTML answer read to look for a confirmation form
USER_AGENT = "lifelong-data-fetch/1"
Progress = Callable[[int, int | None], None]  # (bytes just received, total bytes when known)


class DownloadError(OSError):
    """Every URL of an artefact failed: says which, and why each did."""


@dataclass(frozen=True)
class DownloadSettings:
    """Timeouts, retries and the per-host connection limit of every download in a process."""

    timeout: float = 60.0
    retries: int = 4
    backoff: float = 1.0  # seconds before the first retry; doubled after each
    per_host: int = 2


@dataclass(frozen=True)
class Downloaded:
    path: Path
    url: str  # the URL that served it (after redirects)
    server_name: str | None  # the server's file name, when it gave one


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
    """A failure worth another try of the same URL (timeout, reset, 5xx, 429)."""


def _fetch_once(url: str, part: Path, settings: DownloadSettings, progress: Progress | None) -> Downloaded:
    """One request for `url`, appending to `part` from its current size; answers one confirmation page."""
    for _ in range(3):  # the URL, then at most two confirmation pages
        have = part.stat().st_size if part.exists() else 0
        request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
        if have:
            request.add_header("Range", f"bytes={have}-")
        try:
            response = urllib.request.urlopen(request, timeout=settings.timeout)
        except urllib.error.HTTPError as exc:
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
            status = response.status
            append = status == 206 and have > 0
            if append:
                start = re.match(r"bytes (\d+)-", response.headers.get("Content-Range", ""))
                append = bool(start) and int(start.group(1)) == have  # type: ignore[union-attr]
            length = response.headers.get("Content-Length")
            total = (int(length) + (have if append else 0)) if length and length.isdigit() else None
            if progress:
                progress(have if append else 0, total)
            try:
                with open(part, "ab" if append else "wb") as out:
                    while chunk := response.read(CHUNK):
                        out.write(chunk)
                        if progress:
                            progress(len(chunk), None)
                    out.flush()
                    os.fsync(out.fileno())
            except (TimeoutError, ConnectionError, http.client.HTTPException) as exc:
                raise _Retry(f"connection broke mid-file ({exc!r})") from None
            got = part.stat().st_size
            if total is not None and got < total:
                raise _Retry(f"connection closed at {got:,} of {total:,} bytes")
            return Downloaded(part, response.geturl(), server_file_name(response.headers.get("Content-Disposition")))
    raise DownloadError(f"{url}: more than two confirmation pages")


def download(
    urls: list[str] | tuple[str, ...],
    folder: Path,
    file: str,
    *,
    settings: DownloadSettings = DownloadSettings(),
    progress: Progress | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Downloaded:
    """Get `file` into `folder` from the first URL that serves it; resumes a `.part` left by a killed run."""
    folder.mkdir(parents=True, exist_ok=True)
    final, part = folder / file, folder / f"{file}.part"
    if final.exists():
        return Downloaded(final, "", None)
    failures = []
    for url in urls:
        delay = settings.backoff
        for attempt in range(settings.retries + 1):
            try:
                with _host_slot(url, settings.per_host):
                    got = _fetch_once(url, part, settings, progress)
                os.replace(part, final)
                return Downloaded(final, got.url, got.server_name)
            except _Retry as exc:
                if attempt == settings.retries:
                    failures.append(f"{url}: {exc} ({settings.retries + 1} tries)")
                    break
                sleep(delay)
                delay *= 2
            except DownloadError as exc:
                failures.append(f"{url}: {exc}")
                part.unlink(missing_ok=True)  # another URL's bytes must not continue this one's
                break
    raise DownloadError(f"could not download {file}: " + "; ".join(failures or ["no URL to try"]))
