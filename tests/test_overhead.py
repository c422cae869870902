"""The one definition of harness overhead (bench/overhead.py) that every bench prints."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("overhead", ROOT / "bench" / "overhead.py")
assert spec is not None and spec.loader is not None
overhead = importlib.util.module_from_spec(spec)
spec.loader.exec_module(overhead)


def timings(**values: float | None) -> dict[str, Any]:
    base: dict[str, Any] = {
        "construction_ms": 0.5,
        "generation_ms": None,
        "parse_ms": None,
        "execution_ms": None,
        "verification_ms": None,
        "total_ms": 1.0,
    }
    return {**base, **values}


WHOLE = {
    "condition": "model-only",
    "timings": timings(generation_ms=103.0, parse_ms=0.25, total_ms=105.0),
    "completion": {"generation_ms": 100.0, "bridge_ms": 1.5, "load_wait_ms": 0.5},
    "chain": None,
}
CHAIN = {
    "condition": "controlled-chain",
    "timings": timings(generation_ms=64.0, verification_ms=0.5, total_ms=66.0),
    "completion": None,
    "chain": {
        "calls": [{"completion": {"generation_ms": 30.0}}, {"completion": {"generation_ms": 31.0}}]
    },
}
CONTROL = {
    "condition": "supplied-program",
    "timings": timings(execution_ms=0.25),
    "completion": None,
    "chain": None,
}


@pytest.mark.parametrize(
    ("trial", "worker", "harness"),
    [(WHOLE, 100.0, 10.0), (CHAIN, 61.0, 49.0), (CONTROL, 0.0, 110.0)],
)
def test_harness_is_the_gap_minus_the_worker_own_generation(
    trial: dict[str, Any], worker: float, harness: float
) -> None:
    assert overhead.worker_ms(trial) == worker
    assert overhead.harness_ms(110.0, trial) == harness
    parts = overhead.breakdown(110.0, trial)
    assert list(parts) == list(overhead.STAGES)
    assert sum(parts.values()) == pytest.approx(harness)


def test_the_bridge_and_the_page_count_as_harness() -> None:
    parts = overhead.breakdown(110.0, WHOLE)
    # the controller's generation − the worker's, and the bridge recorded apart (trace/3)
    assert parts["bridge"] == pytest.approx(3.0 + 1.5)
    assert parts["load waits"] == pytest.approx(0.5)  # a reload waited for is harness
    assert parts["between"] == pytest.approx(5.0)  # the gap − the trial's total
    assert parts["trial glue"] == pytest.approx(105.0 - 0.5 - 4.5 - 0.5 - 0.25 - 100.0)


def test_the_summary_prints_the_figure_the_goal_and_the_load(
    capsys: pytest.CaptureFixture[str],
) -> None:
    figures = overhead.summary([(110.0, WHOLE), (110.0, CHAIN)], "two trials")
    out = capsys.readouterr().out
    assert figures["median_ms"] == pytest.approx((10.0 + 49.0) / 2)
    assert "goal ≤ 5 ms" in out and "load average" in out and "bridge" in out
