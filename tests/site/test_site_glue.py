"""The worker glue (site/python_worker/lab_worker.py) under CPython: it forwards to
pyapp.browser.bridge."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Coroutine
from pathlib import Path
from types import ModuleType
from typing import Any

from pyapp.browser import handle as bridge_handle

GLUE = Path(__file__).resolve().parents[2] / "site" / "python_worker" / "lab_worker.py"


def load_glue() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lab_worker", GLUE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(coroutine: Coroutine[Any, Any, str]) -> str:
    """Drive a glue coroutine that never suspends under CPython (no event loop needed:
    the sync Playwright tests in this process keep one running)."""
    try:
        coroutine.send(None)
    except StopIteration as finished:
        result: str = finished.value
        return result
    coroutine.close()
    raise AssertionError("the glue suspended; under CPython it should not")


def test_glue_exports_one_entry_point() -> None:
    assert load_glue().__export__ == ["handle"]


def test_glue_forwards_requests_unchanged() -> None:
    glue = load_glue()
    for request in (
        {"type": "tasks", "id": 3, "seed": 1729},
        {"type": "no_such_type", "id": 4},
    ):
        text = json.dumps(request)
        assert run(glue.handle(text)) == bridge_handle(text)
    assert run(glue.handle("not json")) == bridge_handle("not json")


def test_sympy_load_outside_pyodide_is_a_typed_error() -> None:
    reply = json.loads(run(load_glue().handle('{"type": "sympy_load", "id": 9}')))
    assert reply["type"] == "sympy_load" and reply["id"] == 9 and reply["ok"] is False
    assert reply["error"]["code"] == "runtime_load_failed"
    assert "sympy" in reply["error"]["message"]
