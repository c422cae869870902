"""Serve the built static site (``build/site``) on 127.0.0.1, cross-origin isolated.

Static files only. Every response carries the headers the page needs:

* ``Cross-Origin-Opener-Policy: same-origin`` and ``Cross-Origin-Embedder-Policy:
  require-corp`` make the page cross-origin isolated, which enables SharedArrayBuffer
  (PyScript's synchronous worker channel, multi-threaded WASM);
* ``Cross-Origin-Resource-Policy: same-origin`` lets our own files load under COEP;
* ``Cache-Control: no-cache`` so a rebuilt site is never served stale.

``python -m pyapp serve`` calls :func:`serve`; tests call :func:`make_server` on port 0.
"""

from __future__ import annotations

import functools
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

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
}


class SiteMissingError(FileNotFoundError):
    """The build folder does not exist or has no index.html."""


class StaticSiteHandler(SimpleHTTPRequestHandler):
    """SimpleHTTPRequestHandler with fixed MIME types, isolation headers and quiet logs."""

    extensions_map = {  # noqa: RUF012 (stdlib declares it as a plain class attribute)
        **SimpleHTTPRequestHandler.extensions_map,
        **MIME_TYPES,
    }

    def end_headers(self) -> None:
        for name, value in ISOLATION_HEADERS.items():
            self.send_header(name, value)
        super().end_headers()

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


def make_server(directory: Path, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """A server for ``directory`` bound to ``host:port`` (port 0 picks a free port)."""
    root = check_site(directory)
    handler = functools.partial(StaticSiteHandler, directory=str(root))
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def server_url(server: ThreadingHTTPServer) -> str:
    host, port = server.server_address[:2]
    return f"http://{host!s}:{port}/"


def serve(directory: Path, host: str, port: int) -> None:
    """Serve until Ctrl-C; print the URL first. A missing build exits with a clear message."""
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


def serve_in_thread(directory: Path, host: str = "127.0.0.1") -> tuple[ThreadingHTTPServer, str]:
    """Start a server on a free port in a daemon thread (tests, bench); returns (server, url)."""
    server = make_server(directory, host, 0)
    threading.Thread(target=server.serve_forever, name="site-server", daemon=True).start()
    return server, server_url(server)
