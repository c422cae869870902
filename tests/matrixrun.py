"""Run a one-cell, one-seed matrix plan through the product's command, for tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def one_cell_trace(tmp_path: Path, plan_text: str) -> dict[str, Any]:
    """`python -m pyapp matrix` over `plan_text` (one cell, seed 1): the cell's trace."""
    plan = tmp_path / "plan.toml"
    plan.write_text(plan_text, encoding="utf-8")
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "pyapp", "matrix", str(plan), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (trace_path,) = out.glob("cells/*/seed-1/trace.json")
    trace: dict[str, Any] = json.loads(trace_path.read_text(encoding="utf-8"))
    return trace
