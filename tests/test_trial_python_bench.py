"""bench/trial_python.py natively: it drives a whole sweep through the page's own session with
a page stand-in, so it must follow the session's event shapes (a merge once left it building
`trial_done` events with fields that no longer exist, and it crashed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_native_figures_come_out() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "trial_python.py"), "--native-only", "--top", "3"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["native_ms"] > 0
    assert "trial_done event, posted texts" in done.stdout
