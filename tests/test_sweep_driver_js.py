"""The sweep CLI drives the page through protocol messages only (issue 13): its JavaScript
(pyapp/sweep/driver.js) and the JavaScript its Python evaluates touch no page global but the
one entry point, window.lab.send (plus the driver's own window.__sweep / window.__sweepEvent).
The DOM it reads and clicks is the UI a user sees."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DRIVER_JS = ROOT / "pyapp" / "sweep" / "driver.js"
SWEEP_PY = sorted((ROOT / "pyapp" / "sweep").glob("*.py"))

OWN = {"__sweep", "__sweepEvent"}
"""The driver's own globals: the object it installs and the binding Python exposes."""
GLOBAL = re.compile(
    r"\b(?:window|globalThis|self|top|parent)\s*\.\s*([A-Za-z_$][\w$]*)((?:\s*\??\.\s*[A-Za-z_$][\w$]*)?)"
)


def strip_comments(js: str) -> str:
    return re.sub(r"//[^\n]*", "", js)


def foreign_globals(js: str) -> list[str]:
    """Every page global the text reaches other than window.lab.send and the driver's own."""
    found = []
    for match in GLOBAL.finditer(strip_comments(js)):
        name, member = match.group(1), re.sub(r"[\s?.]", "", match.group(2))
        if name in OWN or (name == "lab" and member == "send"):
            continue
        found.append(match.group(0))
    # `lab.` without `window.` (a bare global) counts too
    found += [
        m.group(0)
        for m in re.finditer(r"(?<![\w$.])lab\s*\??\.\s*(?!send\b)[\w$]+", strip_comments(js))
    ]
    return found


def test_checker_catches_what_it_must() -> None:
    assert foreign_globals("window.lab.experiment.start()") == ["window.lab.experiment"]
    assert foreign_globals("window.lab.models.state()") == ["window.lab.models"]
    assert foreign_globals("window.lab.request('hello')") == ["window.lab.request"]
    assert foreign_globals("lab.experiment.run('all')") == ["lab.experiment"]
    assert foreign_globals("globalThis.lab.timings") == ["globalThis.lab.timings"]
    assert foreign_globals("window.lab?.send(m); window.__sweepEvent(t)") == []


def test_driver_js_uses_only_the_entry_point() -> None:
    js = DRIVER_JS.read_text("utf-8")
    assert foreign_globals(js) == []
    assert "window.lab.send(" in js  # it does use the entry point


def test_driver_python_evaluates_only_the_driver() -> None:
    """Every line of JavaScript the sweep's Python runs in the page calls window.__sweep."""
    for path in SWEEP_PY:
        text = path.read_text("utf-8")
        for match in re.finditer(r"window\.[\w$.]+", text):
            assert match.group(0).startswith(("window.__sweep.", "window.lab.send")), (
                f"{path.name}: {match.group(0)}"
            )
