"""The static server and the hub stand-in under hostile requests (issue 12).

Everything binds 127.0.0.1. Nothing races the wall clock: each wait is on an event (a
reply, a closed socket) with a generous deadline."""

from __future__ import annotations

import contextlib
import http.client
import os
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pyapp.host import BoundedServer, make_server, serve_hub_in_thread, server_url

DEADLINE_S = 60


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[BoundedServer, str, Path]]:
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_text("<!doctype html><title>t</title>", encoding="utf-8")
    (root / "a.js").write_text("ok", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("SECRET", encoding="utf-8")
    (root / "leak.txt").symlink_to(tmp_path / "secret.txt")
    (root / "leakdir").symlink_to(tmp_path)
    server = make_server(root)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server, server_url(server), root
    server.shutdown()
    server.server_close()


def raw_get(url: str, path: str) -> tuple[int, bytes]:
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=DEADLINE_S)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


@pytest.mark.parametrize("path", ["/%00", "/index.html%00.js", "/a%00/b"])
def test_nul_in_a_path_is_400_not_a_dropped_connection(site, path, capfd) -> None:
    _, url, _ = site
    status, _ = raw_get(url, path)
    assert status == 400
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize("path", ["/leak.txt", "/leakdir/secret.txt", "/../secret.txt"])
def test_nothing_outside_the_real_folder_is_served(site, path) -> None:
    _, url, _ = site
    status, body = raw_get(url, path)
    assert status == 404 and b"SECRET" not in body


def test_a_fifo_in_the_site_is_a_404_not_a_blocked_worker(site) -> None:
    _, url, root = site
    os.mkfifo(root / "pipe.js")  # opening it to read would block until a writer came
    assert raw_get(url, "/pipe.js")[0] == 404


def test_files_inside_are_still_served(site) -> None:
    _, url, _ = site
    assert raw_get(url, "/a.js") == (200, b"ok")


def test_an_idle_connection_is_closed_after_the_idle_timeout(site) -> None:
    server, url, _ = site
    server.idle_timeout_s = 0.2  # injected: the event waited for is the server's close
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=DEADLINE_S) as idle:
        assert idle.recv(1) == b""  # closed by the server, not by our deadline


def test_200_idle_connections_do_not_stop_1000_requests(site) -> None:
    """Bounded load test on 127.0.0.1: 200 silent clients hold connections open (more
    than the worker pool has threads) while 1,000 ordinary requests all succeed."""
    server, url, _ = site
    assert server.max_workers < 200
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    idle = [socket.create_connection((host, int(port)), timeout=DEADLINE_S) for _ in range(200)]
    try:
        with ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(lambda _: raw_get(url, "/a.js")[0], range(1000)))
        assert statuses == [200] * 1000
        assert threading.active_count() < 100  # the idle clients hold no thread each
    finally:
        for connection in idle:
            connection.close()


def test_a_slow_request_is_dropped_without_holding_the_server(site) -> None:
    _, url, _ = site
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=DEADLINE_S) as slow:
        slow.sendall(b"GET /a.js HTTP/1.0\r\n")  # and never the blank line
        assert raw_get(url, "/a.js") == (200, b"ok")


def test_200_clients_holding_half_a_request_head_do_not_block_requests(site, monkeypatch) -> None:
    """Issue 24: each slow client sends the request line and one header, never the blank
    line, and waits. The deadlines are pushed far out (injected), so only where the half
    heads wait decides: in a worker (the old server: 32 of them, each blocked in a read, and
    the ordinary request times out) or in the selector thread (no worker held)."""
    from pyapp.host import HardenedHandler

    server, url, _ = site
    monkeypatch.setattr(HardenedHandler, "timeout", 600.0)
    server.idle_timeout_s = server.head_timeout_s = 600.0
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    slow = []
    try:
        for _ in range(200):
            client = socket.create_connection((host, int(port)), timeout=DEADLINE_S)
            client.sendall(b"GET /a.js HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            slow.append(client)
        with ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(lambda _: raw_get(url, "/a.js"), range(200)))
        assert statuses == [(200, b"ok")] * 200
        assert threading.active_count() < 100  # the slow clients hold no thread each
    finally:
        for client in slow:
            client.close()


def test_a_half_head_is_closed_after_the_head_deadline_and_a_whole_one_served(site) -> None:
    server, url, _ = site
    server.head_timeout_s = 0.2  # injected: the event waited for is the server's close
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=DEADLINE_S) as half:
        half.sendall(b"GET /a.js HTTP/1.1\r\n")
        assert half.recv(1) == b""
    with socket.create_connection((host, int(port)), timeout=DEADLINE_S) as whole:
        for byte in b"GET /a.js HTTP/1.0\r\nHost: x\r\n\r\n":  # a byte at a time
            whole.sendall(bytes([byte]))
        reply = b"".join(iter(lambda: whole.recv(4096), b""))
    assert reply.startswith(b"HTTP/1.0 200") and reply.endswith(b"ok")


def head_reply(url: str, head: bytes) -> bytes:
    """What the server answers to `head` before it closes (everything until the close)."""
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=DEADLINE_S) as client:
        with contextlib.suppress(OSError):  # the server may answer while we still send
            client.sendall(head)
        reply = b""
        with contextlib.suppress(ConnectionResetError):
            for chunk in iter(lambda: client.recv(4096), b""):
                reply += chunk
    return reply


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", b"414"),
        (b"GET / HTTP/1.1\r\nX-Long: " + b"a" * 70_000 + b"\r\n\r\n", b"431"),
        (b"GET / HTTP/1.1\r\n" + b"X-Many: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n" * 2_000, b"431"),
    ],
    ids=["request line of 70,000", "header line of 70,000", "head of 2,000 header lines"],
)
def test_a_request_head_over_the_limit_is_answered_414_or_431_then_closed(
    site, head: bytes, status: bytes
) -> None:
    """Issue 39: a request line over 64 KiB is 414, a header line or a whole head over the
    limit 431 (they were closed with no status); the server then closes and serves on."""
    _, url, _ = site
    reply = head_reply(url, head)
    assert reply.split(b" ")[1] == status and b"Connection: close" in reply, reply[:200]
    assert raw_get(url, "/a.js") == (200, b"ok")


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[str]:
    model = tmp_path / "model"
    (model / "onnx").mkdir(parents=True)
    (model / "onnx" / "model.onnx").write_bytes(b"onnx")
    (tmp_path / "outside.txt").write_text("SECRET", encoding="utf-8")
    (model / "link.txt").symlink_to(tmp_path / "outside.txt")
    server, url, _ = serve_hub_in_thread({"org/m": model})
    yield url
    server.shutdown()
    server.server_close()


def test_the_hub_stand_in_lists_no_directory(hub) -> None:
    status, body = raw_get(hub, "/org/m/resolve/main/onnx/")
    assert status == 404 and b"model.onnx" not in body


def test_the_hub_stand_in_serves_files_but_nothing_outside(hub) -> None:
    assert raw_get(hub, "/org/m/resolve/main/onnx/model.onnx") == (200, b"onnx")
    status, body = raw_get(hub, "/org/m/resolve/main/link.txt")
    assert status == 404 and b"SECRET" not in body
    assert raw_get(hub, "/org/m/resolve/main/x%00")[0] == 400
