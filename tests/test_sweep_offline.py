"""The sweep CLI's pieces that need no browser: finding Chromium, the request guard's
allowed hosts, and the progress lines."""

from __future__ import annotations

import pytest


def test_missing_chromium_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from pyapp.sweep import chromium

    monkeypatch.setenv("PLAYWRIGHT_CHROMIUM_EXECUTABLE_PATH", "/nonexistent/chrome")
    monkeypatch.setattr(chromium, "CHROMIUM_CANDIDATES", ("/nonexistent/chromium", "no-such"))
    found, looked = chromium.find_chromium()
    assert found is None
    message = chromium.missing_chromium(looked, "/ms-playwright/chrome").message
    for words in ("/nonexistent/chrome", "apt-get install chromium", "Playwright's own"):
        assert words in message


def test_only_a_consented_remote_model_host_is_reachable() -> None:
    from pyapp.sweep import allowed_hosts, host_allowed

    assert allowed_hosts("https://huggingface.co/", consent=False) == set()
    assert allowed_hosts("http://127.0.0.1:9/", consent=True) == set()
    hub = allowed_hosts("https://huggingface.co/", consent=True)
    assert host_allowed("huggingface.co", hub) and host_allowed("cdn-lfs.hf.co", hub)
    assert not host_allowed("example.com", hub)
    mirror = allowed_hosts("https://models.example.org/", consent=True)
    assert host_allowed("models.example.org", mirror) and not host_allowed("hf.co", mirror)
    assert host_allowed("127.0.0.1", set()) and not host_allowed("localhost", set())


def test_progress_lines_when_stderr_is_not_a_terminal() -> None:
    import io

    from pyapp.sweep import Progress

    stream = io.StringIO()
    now = [100.0]  # an injected clock: the trial takes exactly 61 s of it
    progress = Progress(stream, done=2, total=4, clock=lambda: now[0])
    progress.trial_start({"trial_id": "model-only/add-1", "phase": "measure"})
    now[0] += 61.0
    progress.trial_done({"trial": {"trial_id": "model-only/add-1", "outcome": "correct"}})
    assert stream.getvalue().startswith(
        "[sweep] 3/4  measure model-only/add-1  elapsed 1:01  ETA 1:01"
    )
    assert "ETA" in stream.getvalue() and stream.getvalue().endswith("-> correct\n")
