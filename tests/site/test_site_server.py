"""The static server: isolation headers, MIME types, a clear error without a build."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from pyapp.errors import SiteMissingError
from pyapp.host import is_loopback, make_server, server_url


@pytest.fixture
def tiny_site(tmp_path: Path) -> Iterator[str]:
    (tmp_path / "index.html").write_text("<!doctype html><title>t</title>", encoding="utf-8")
    for name in ("a.mjs", "b.js", "c.wasm", "d.json", "e.whl", "f.zip"):
        (tmp_path / name).write_bytes(b"x")
    server = make_server(tmp_path)
    assert server.server_address[0] == "127.0.0.1"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server_url(server)
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    ("name", "mime"),
    [
        ("a.mjs", "text/javascript"),
        ("b.js", "text/javascript"),
        ("c.wasm", "application/wasm"),
        ("d.json", "application/json"),
        ("e.whl", "application/zip"),
        ("f.zip", "application/zip"),
        ("", "text/html"),
    ],
)
def test_mime_types_and_isolation_headers(tiny_site: str, name: str, mime: str) -> None:
    with urllib.request.urlopen(tiny_site + name, timeout=10) as response:
        headers = response.headers
    assert headers.get_content_type() == mime
    assert headers["Cross-Origin-Opener-Policy"] == "same-origin"
    assert headers["Cross-Origin-Embedder-Policy"] == "require-corp"
    assert headers["Cross-Origin-Resource-Policy"] == "same-origin"
    assert headers["Cache-Control"] == "no-cache"


def test_missing_build_says_how_to_build(tmp_path: Path) -> None:
    with pytest.raises(SiteMissingError, match="bash scripts/lab serve"):
        make_server(tmp_path / "nothing-here")


def test_no_directory_listings(tiny_site: str, tmp_path: Path) -> None:
    (tmp_path / "pyodide").mkdir()
    (tmp_path / "pyodide" / "x.js").write_bytes(b"x")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(tiny_site + "pyodide/", timeout=10)
    caught.value.close()
    assert caught.value.code == 404
    with urllib.request.urlopen(tiny_site + "pyodide/x.js", timeout=10) as response:
        assert response.read() == b"x"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.1.2.3", True), ("::1", True), ("localhost", True),
     ("0.0.0.0", False), ("192.168.1.5", False), ("example.org", False)],
)  # fmt: skip
def test_non_loopback_hosts_are_recognised(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
