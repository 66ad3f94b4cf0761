"""A loopback HTTP server (127.0.0.1 only) serving fixture files for the fetch tests; it stops by itself.

Each route can redirect, name the file (Content-Disposition), answer like Google Drive's confirmation page,
fail with HTTP 500 a number of times, cut the connection part-way once, or ignore Range. A hostile route can
lie about its Content-Length, send no length, send its body forever (a redirect's too), trickle it a byte at a
time, trickle a header that never ends, or answer "100 Continue" forever. Every request's path and Range header
is recorded, so a test can see that a download resumed.
"""

from __future__ import annotations

import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Route:
    body: bytes = b""
    redirect: str | None = None  # a path on this server, or a URL (another scheme); `body` is the redirect's body
    filename: str | None = None  # sent as Content-Disposition
    gdrive_to: str | None = None  # answer with a confirmation page whose form leads to this path (or URL)
    html: bytes | None = None  # answer with this HTML page (a login or error page instead of the file)
    fail_times: int = 0  # HTTP 500 this many times first
    cut_after: int | None = None  # once: promise the whole body, send this many bytes, close
    honour_range: bool = True
    pace: float = 0.0  # seconds between `step`-byte writes (a slow server, so a client can be killed mid-file)
    step: int = 4096  # bytes per paced write: 1 with a pace is a trickle
    claim: int | None = None  # the Content-Length sent instead of the body's (a lie)
    no_length: bool = False  # no Content-Length: the body ends when the connection closes
    endless: bool = False  # send the body again and again until the client or the server stops
    header_trickle: float = 0.0  # seconds between the bytes of a header that never ends (no body ever comes)
    endless_continue: bool = False  # answer "100 Continue" again and again (no final answer ever comes)
    status: int = 200
    hits: int = field(default=0)
    sent: int = field(default=0)  # body bytes written to clients


class _QuietServer(ThreadingHTTPServer):
    """A client killed or gone mid-file is what some tests do: not worth a traceback."""

    def handle_error(self, request, client_address) -> None:  # noqa: ANN001 (socketserver's signature)
        return None


class Loopback:
    """`with Loopback(routes) as server: server.url("/file")`; shuts down after `lifetime` seconds regardless."""

    def __init__(self, routes: dict[str, Route], lifetime: float = 60.0) -> None:
        self.routes = routes
        self.requests: list[tuple[str, str | None]] = []
        loopback = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return None

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                loopback.serve(self)

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.stopped = threading.Event()  # ends the endless and trickling answers too
        self.timer = threading.Timer(lifetime, self.stop)
        self.timer.daemon = True

    def __enter__(self) -> Loopback:
        self.thread.start()
        self.timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.timer.cancel()
        self.stop()
        self.server.server_close()

    def stop(self) -> None:
        self.stopped.set()
        self.server.shutdown()

    def url(self, path: str) -> str:
        """This server's URL for `path`; a `path` that is a URL already is kept."""
        return path if urllib.parse.urlsplit(path).scheme else f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def serve(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urllib.parse.urlsplit(handler.path)
        self.requests.append((handler.path, handler.headers.get("Range")))
        route = self.routes.get(parts.path)
        if route is None:
            handler.send_error(404)
            return
        route.hits += 1
        if route.fail_times > 0:
            route.fail_times -= 1
            handler.send_error(500)
            return
        if route.redirect:
            handler.send_response(302)
            handler.send_header("Location", self.url(route.redirect))
            handler.end_headers()
            self._send_body(handler, route, route.body)
            return
        if route.gdrive_to or route.html is not None:
            query = dict(urllib.parse.parse_qsl(parts.query))
            page = (
                route.html
                or (
                    "<html><body>Google Drive can't scan this file for viruses."
                    f'<form id="download-form" action="{self.url(route.gdrive_to)}" method="get">'
                    f'<input type="hidden" name="id" value="{query.get("id", "")}">'
                    '<input type="hidden" name="confirm" value="t">'
                    '<input type="hidden" name="uuid" value="u-1"></form></body></html>'
                ).encode()
            )
            handler.send_response(200)
            handler.send_header("Content-Type", "text/html; charset=utf-8")
            handler.send_header("Content-Length", str(len(page)))
            handler.end_headers()
            handler.wfile.write(page)
            return
        if route.status != 200:
            handler.send_error(route.status)
            return
        while route.endless_continue and not self.stopped.is_set():
            handler.wfile.write(b"HTTP/1.1 100 Continue\r\nX-Pad: " + b"a" * 4000 + b"\r\n\r\n")
        if route.header_trickle:
            handler.wfile.write(b"HTTP/1.0 200 OK\r\nX-Slow: ")
            while not self.stopped.wait(route.header_trickle):
                handler.wfile.write(b"a")
                handler.wfile.flush()
            return
        body, start = route.body, 0
        wanted = handler.headers.get("Range")
        if wanted and route.honour_range and wanted.startswith("bytes="):
            start = int(wanted[6:].split("-")[0])
            if start >= len(body):
                handler.send_error(416)
                return
            handler.send_response(206)
            handler.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            handler.send_response(200)
        handler.send_header("Content-Type", "application/octet-stream")
        if route.claim is not None or not (route.no_length or route.endless):
            handler.send_header("Content-Length", str(route.claim if route.claim is not None else len(body) - start))
        if route.filename:
            handler.send_header("Content-Disposition", f'attachment; filename="{route.filename}"')
        handler.end_headers()
        payload = body[start:]
        if route.cut_after is not None:
            payload, route.cut_after = payload[: route.cut_after], None
            handler.wfile.write(payload)
            handler.wfile.flush()
            handler.close_connection = True
            return
        self._send_body(handler, route, payload)

    def _send_body(self, handler: BaseHTTPRequestHandler, route: Route, payload: bytes) -> None:
        """`payload`, paced in `step`-byte writes when asked, again and again when endless, until stopped."""
        step = route.step if route.pace else max(len(payload), 1)
        while payload:
            for start in range(0, len(payload), step):
                handler.wfile.write(payload[start : start + step])
                handler.wfile.flush()
                route.sent += len(payload[start : start + step])
                if route.pace and self.stopped.wait(route.pace):
                    return
            if not route.endless or self.stopped.is_set():
                return
