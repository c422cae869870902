"""site/store.js's SweepWriter under Node (tests/sweep_writer_node.mjs): the page's writes of
a live sweep leave the trial path (issue 22 §3) yet stay in order and consistent — what one
task writes is one transaction, what arrives while a transaction runs is the next, each
batch keeps the status record as it stood last with every trial and ledger record, the
callbacks (the experiment's listeners) run only once their batch is committed, and a failed
write is thrown by the next write and by `flush`."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_writer() -> dict[str, Any]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed (scripts/lab installs the npm packages with it)")
    done = subprocess.run(
        [node, "--no-warnings", str(ROOT / "tests" / "sweep_writer_node.mjs")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_writes_are_batched_in_order_and_told_once_committed() -> None:
    result = run_writer()
    first, second, failed = result["transactions"]
    assert first == {
        "status": {"n": 3},
        "header": "H1",
        "trials": [{"seq": 0}, {"seq": 1}],
        "observed": [{"task_id": "a"}],
    }
    assert second == {"status": {"n": 5}, "header": None, "trials": [{"seq": 2}], "observed": []}
    assert failed["status"] == {"n": 6}
    assert result["log"] == [
        "transactions before the first commit: 1",  # the second batch waits for the first
        "after 1",
        "after 2",
        "after 3",
        "first resolved",
        "transactions after the first commit: 2",
        "after 4",
        "after 5",
        "flushed",
        "after 6",
    ]


def test_a_failed_write_is_thrown_by_the_next_write_and_by_flush() -> None:
    result = run_writer()
    assert result["thrown"] == "quota" and result["flushed"] == "quota"
