"""The page's JavaScript is typed from Python's records (issue 40): the JSDoc typedefs
`python -m pyapp schema` writes (`pyapp/protocol/jsdoc.py`: site/lab_types.js,
site/common/model_types.js) say what the JSON Schemas say, for every message and for the
documents the page reads; a schema the types cannot say is refused, never written loosely."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pyapp.protocol import exports, jsdoc, model_exports

ROOT = Path(__file__).resolve().parents[1]


def test_each_schema_keyword_becomes_its_type() -> None:
    defs: dict[str, Any] = {"Caps": {"type": "object", "properties": {}}}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"type": "string"}, "string"),
        ({"type": "integer"}, "number"),
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "(number | null)"),
        ({"enum": ["a", "b"]}, '("a" | "b")'),
        ({"const": True}, "true"),
        ({"$ref": "#/$defs/Caps"}, "Caps"),
        ({"type": "array", "items": {"$ref": "#/$defs/Caps"}}, "Caps[]"),
        ({"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
         "Array<(string | null)>"),
        ({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
          "minItems": 2, "maxItems": 2}, "[string, number]"),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "Record<string, number>"),
        ({"type": "object", "properties": {"a": {"type": "string"}, "b": {}}, "required": ["a"],
          "additionalProperties": False}, "{ a: string, b?: unknown }"),
        ({"description": "anything"}, "unknown"),
    ]  # fmt: skip
    for schema, expected in cases:
        assert jsdoc.type_of(schema, defs) == expected, schema


def test_a_reply_is_a_union_narrowed_by_ok_with_its_result_record() -> None:
    defs = exports.messages_schema()["$defs"]
    reply = jsdoc.type_of(defs["HelloReply"], defs)
    assert reply.startswith('({ type: "hello", id: unknown, ok: true, result: Versions')
    assert (
        '| { type: "hello", id: unknown, ok: false, result?: Versions, error: (Error | null)'
        in (reply)
    )


def test_what_the_types_cannot_say_is_refused() -> None:
    for schema in (
        {"type": "string", "pattern": "^a$"},
        {"$ref": "other.json#/x"},
        {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "string"}},
    ):
        with pytest.raises(jsdoc.SchemaTypeError):
            jsdoc.type_of(schema, {})


def test_a_description_cannot_end_the_comment_or_start_a_tag() -> None:
    lines = jsdoc.typedef(
        "X",
        {
            "type": "object",
            "description": "ends */ here @param x",
            "properties": {"a": {"type": "string", "description": "see @b and a@c"}},
            "required": ["a"],
            "additionalProperties": False,
        },
        {},
    )
    text = "\n".join(lines)
    assert text.count("*/") == 1 and "@param" not in text
    assert " * @property {string} a see at b and a@c" in lines


def typedef_names(text: str) -> set[str]:
    return set(re.findall(r"@typedef \{.*\} (\w+)$", text, flags=re.M))


def test_the_page_has_a_type_for_every_message_and_every_document_it_reads() -> None:
    lab = typedef_names((ROOT / "site" / "lab_types.js").read_text(encoding="utf-8"))
    schema = exports.messages_schema()["$defs"]
    assert set(schema) <= lab
    assert {"Trial", "Trace", "TraceHeader", "PredictionsDocument", "Receipt"} <= lab
    model = typedef_names((ROOT / "site" / "common" / "model_types.js").read_text("utf-8"))
    assert set(model_exports.messages_schema()["$defs"]) == model
    assert exports.types_module() == (ROOT / "site" / "lab_types.js").read_text(encoding="utf-8")
