"""Random matrix plans (issue 39): each is refused in one line naming the file and a key
(exit 1), or runs (`--dry-run`: exit 0, its cells listed) — never a traceback, a hang or
memory without bound.

Every drawn plan is checked by `tests/planworker.py`, a subprocess whose address space is
limited to 1 GiB (`resource.RLIMIT_AS`), within 5 s each (the answer is waited for that
long; a worker that dies or does not answer fails the example and is replaced). Ranges,
numbers (NaN, infinities, huge integers), strings (long, control characters), duplicates
and unknown names are drawn. `PLAN_EXAMPLES` examples (200 in CI)."""

from __future__ import annotations

import json
import math
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
PLAN_EXAMPLES = int(os.environ.get("PLAN_EXAMPLES", "200"))
ANSWER_S = 5.0
"""Seconds one plan may take in the worker."""
START_S = 120.0
"""Seconds the worker may take to start (imports, on a loaded machine)."""


class Worker:
    """The plan worker subprocess; replaced when it dies or does not answer in time."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "planworker.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert self._line(process, START_S) == "ready"
        return process

    @staticmethod
    def _line(process: subprocess.Popen[str], seconds: float) -> str | None:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], seconds)
        return process.stdout.readline().strip() if ready else None

    def check(self, text: str) -> dict[str, Any]:
        if self.process is None or self.process.poll() is not None:
            self.process = self.start()
        process = self.process
        assert process.stdin is not None
        process.stdin.write(json.dumps({"text": text}) + "\n")
        process.stdin.flush()
        line = self._line(process, ANSWER_S)
        if not line:  # no answer in time, or the worker died (its memory limit)
            self.stop()
            what = "died (memory?)" if line == "" else f"gave no answer in {ANSWER_S} s"
            pytest.fail(f"the plan worker {what} on:\n{text[:2000]}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.communicate()  # waits, and closes its pipes
            self.process = None


@pytest.fixture(scope="module")
def worker() -> Iterator[Worker]:
    running = Worker()
    yield running
    running.stop()


# ---- TOML out of drawn values ----------------------------------------------------------


def toml_string(text: str) -> str:
    """A TOML basic string: JSON's escapes, which TOML shares, for control characters only
    (TOML has no surrogate pairs: other characters stay themselves)."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_value(value: object) -> str:
    """`value` as an inline TOML value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        items = ", ".join(f"{toml_string(str(k))} = {toml_value(v)}" for k, v in value.items())
        return "{ " + items + " }"
    raise TypeError(type(value))


def toml_document(plan: dict[str, object]) -> str:
    return "".join(f"{toml_string(key)} = {toml_value(value)}\n" for key, value in plan.items())


# ---- strategies ------------------------------------------------------------------------
# Each part of a plan is drawn valid more often than hostile, so that plans run as well as
# fail; the hostile values are the ones issue 39 found and their neighbours.

HUGE = st.integers(min_value=-(2**70), max_value=2**80)
SMALL = st.integers(min_value=-3, max_value=40)
NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -1.0, 1e-9, 86_400.0, 86_400.5, 1_024.0, 1_025.0]),
    SMALL,
    HUGE,
)
TEXT = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=20),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=200, max_size=6_000),
    st.sampled_from(["", "\x00", "a\nb", "../../etc", "/" * 300, "x" * 300]),
)
GOOD_MODELS = st.sampled_from(
    ["independent", "size-dependent:slope=1.2", "cancelling", "independent:p_add=0.05"]
)
MODELS = st.one_of(
    GOOD_MODELS,
    GOOD_MODELS,
    st.sampled_from(
        [
            "independent:bogus=1",
            "nonesuch",
            "fixture",
            "independent:p_add=0.0" + "0" * 380 + "5",
            "independent:p_add=0.0" + "0" * 60_000 + "5",
        ]
    ),
    TEXT,
    st.fixed_dictionaries(
        {"id": st.sampled_from(["fixture", "independent"])},
        optional={"folder": TEXT, "host": TEXT, "revision": TEXT, "dtype": TEXT},
    ),
)
SEED = st.integers(0, 2**64 - 1)
SEEDS = st.one_of(
    st.lists(st.integers(0, 50), min_size=1, max_size=4),
    st.builds(lambda a, n: {"first": a, "last": a + n}, SEED, st.integers(0, 30)),
    st.lists(st.one_of(SMALL, HUGE, st.just(2**64 - 1), st.just(2**64)), max_size=6),
    st.fixed_dictionaries({"first": st.one_of(SMALL, HUGE), "last": st.one_of(SMALL, HUGE)}),
    st.builds(
        lambda n: {"first": 0, "last": n}, st.sampled_from([10**5, 10**9, 2**64 - 1, 10**23])
    ),
    st.just("1..3"),
)
CONDITION = st.sampled_from(
    ["model-only", "model-program", "controlled-chain", "supplied-program", "nope"]
)
PARAMETER_VALUE = st.one_of(st.integers(0, 3), NUMBERS, TEXT, st.lists(SMALL, max_size=3))
PARAMETER_SET = st.dictionaries(
    st.sampled_from(
        ["primitives_per_op", "probe_pairs", "determinants", "derivatives", "seed", "bogus"]
    ),
    PARAMETER_VALUE,
    max_size=4,
)
PRESETS = st.lists(st.sampled_from(["design", "tiny", "other", "calibration-60"]), max_size=3)
AXES = st.fixed_dictionaries(
    {"models": st.lists(MODELS, min_size=1, max_size=3), "seeds": SEEDS},
    optional={
        "presets": PRESETS,
        "conditions": st.lists(st.lists(CONDITION, max_size=3), max_size=3),
        "backends": st.lists(st.sampled_from(["wasm", "webgpu", "cuda"]), max_size=3),
    },
)
GOOD_NUMBER = st.floats(min_value=0.5, max_value=1_000)
OPTIONS = st.fixed_dictionaries(
    {},
    optional={
        "consent": st.booleans(),
        "timeout_s": st.one_of(GOOD_NUMBER, NUMBERS),
        "cpus_per_browser_cell": st.one_of(GOOD_NUMBER, NUMBERS),
        "cpus_per_synthetic_cell": st.one_of(GOOD_NUMBER, NUMBERS),
        "retries": st.one_of(st.integers(0, 100), NUMBERS),
        "ledger": st.one_of(st.sampled_from(["cell", "shared"]), TEXT),
        "site": TEXT,
        "page_params": st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
    },
)
TINY = {"primitives_per_op": 1, "probe_pairs": 1, "determinants": 0, "derivatives": 0}
PLANS = st.fixed_dictionaries(
    {"axes": AXES},
    optional={
        "name": TEXT,
        "options": OPTIONS,
        "parameter_sets": st.one_of(
            st.just({"tiny": TINY}),
            st.dictionaries(
                st.sampled_from(["tiny", "other", "x" * 100]), PARAMETER_SET, max_size=3
            ),
        ),
        "exclude": st.lists(
            st.fixed_dictionaries(
                {}, optional={"model": MODELS, "seed": SMALL, "preset": st.just("tiny")}
            ),
            max_size=3,
        ),
    },
)
GOOD_PLANS = st.fixed_dictionaries(
    {
        "axes": st.fixed_dictionaries(
            {
                "models": st.lists(GOOD_MODELS, min_size=1, max_size=2, unique=True),
                "seeds": SEEDS,
                "presets": st.lists(st.sampled_from(["design", "tiny"]), min_size=1, unique=True),
                "conditions": st.lists(
                    st.lists(CONDITION.filter(lambda c: c != "nope"), unique=True).map(sorted),
                    min_size=1,
                    max_size=2,
                    unique_by=tuple,
                ),
            }
        ),
        "parameter_sets": st.just({"tiny": TINY}),
    },
    optional={"options": OPTIONS, "name": st.text(max_size=30)},
)
TEXTS = st.one_of(
    GOOD_PLANS.map(toml_document),
    GOOD_PLANS.map(toml_document),
    PLANS.map(toml_document),
    PLANS.map(toml_document),
    st.text(max_size=300),
    st.integers(1, 5_000).map(lambda n: "a = " + "[" * n + "]" * n + "\n"),
)


@settings(
    max_examples=PLAN_EXAMPLES,
    deadline=None,  # the worker bounds each plan's time (ANSWER_S)
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(text=TEXTS)
def test_a_drawn_plan_is_refused_in_one_line_or_runs(worker: Worker, text: str) -> None:
    answer = worker.check(text)
    assert "crash" not in answer, answer.get("crash")
    if answer["code"] == 0:
        assert "cells (dry run: nothing runs)" in answer["stdout"], answer
        return
    lines = answer["stderr"].strip().splitlines()
    assert answer["code"] == 1, answer
    assert len(lines) == 1 and lines[0].startswith(f"error: {answer['plan']}: "), answer
    assert "Traceback" not in answer["stderr"]
