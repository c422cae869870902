"""Chromium for the sweep, tests and benches: its flags, where to find it, and which hosts a
page may reach. Small on purpose, so that tests and benches need not import the sweep."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from urllib.parse import urlsplit

from pyapp.sweep.errors import SetupError

CHROMIUM_ARGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
"""From PLATFORM-NOTES: without the background-networking flags Chromium floods a closed
network."""
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser")
OFF_LOCALHOST = re.compile(r"^(?!(?:https?|wss?)://127\.0\.0\.1(?::\d+)?/|blob:|data:)")
"""Every URL the guard looks at: anything not on 127.0.0.1 (nor blob:/data:)."""
HF_HOSTS = ("huggingface.co", "hf.co")
"""The hub redirects file downloads to its CDNs (subdomains of these)."""


def find_chromium() -> tuple[str | None, list[str]]:
    """(executable or None meaning "Playwright's own", what was looked at)."""
    looked: list[str] = []
    env = os.environ.get("PLAYWRIGHT_CHROMIUM_EXECUTABLE_PATH")
    if env:
        looked.append(f"PLAYWRIGHT_CHROMIUM_EXECUTABLE_PATH={env}")
        if Path(env).is_file():
            return env, looked
    for candidate in CHROMIUM_CANDIDATES:
        looked.append(candidate)
        found = candidate if Path(candidate).is_file() else shutil.which(candidate)
        if found:
            return found, looked
    return None, looked


def missing_chromium(looked: list[str], managed: str) -> SetupError:
    return SetupError(
        "no_chromium",
        "no Chromium found (looked at: "
        + ", ".join([*looked, f"Playwright's own {managed}"])
        + "). Install Debian's: `sudo apt-get install chromium` (bash scripts/lab test does it),"
        " or point PLAYWRIGHT_CHROMIUM_EXECUTABLE_PATH at a Chromium/Chrome binary, or, where the"
        " network allows, `python -m playwright install chromium`.",
    )


def allowed_hosts(model_host: str | None, consent: bool) -> set[str]:
    """Hosts (besides 127.0.0.1) the page may reach: only a remote model host, with consent."""
    if not consent or not model_host:
        return set()
    host = urlsplit(model_host).hostname or ""
    if not host or host == "127.0.0.1":
        return set()
    return {host}


def host_allowed(host: str, allowed: set[str]) -> bool:
    if host == "127.0.0.1" or host in allowed:
        return True
    if any(a in HF_HOSTS for a in allowed):  # the hub's download redirects
        return any(host == h or host.endswith("." + h) for h in HF_HOSTS)
    return False
