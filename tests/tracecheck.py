"""Shared by tests: every trace a test produces is validated against the committed schema."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

EXPORTS = Path(__file__).resolve().parent.parent / "exports"


@cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((EXPORTS / name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def assert_valid_trace(document: Any) -> None:
    errors = sorted(_validator("trace.schema.json").iter_errors(document), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])
