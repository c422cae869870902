"""Run one of the tests' Node.js scripts (`tests/*_node.mjs`) on JSON cases: the cases go in
on stdin, the script's JSON answer comes back. Skips when Node.js is absent."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent


def run_node_script(script: str, cases: Any) -> Any:
    """`script` (a file name under tests/) run on `cases`; its stdout read as JSON."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed (scripts/lab installs the npm packages with it)")
    done = subprocess.run(
        [node, "--no-warnings", str(TESTS / script)],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
