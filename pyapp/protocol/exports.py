"""The files generated from the page ⇄ Python messages (`pyapp.protocol.messages` and
`pyapp.protocol.results`): `exports/messages.schema.json` (`messages_schema`: every
request, every reply with its result record, every event), `site/lab_protocol.js`
(`js_module`: the names and constants the page shares with Python, `constants`) and the
message tables of docs/hosting.md (`markdown_tables`). `python -m pyapp schema` writes them; a
test fails when any of them drifts.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from pyapp.conditions.run import ALL_CONDITIONS, MODEL_CONDITIONS
from pyapp.protocol.messages import (
    CONTROL_LABEL,
    EVENTS,
    FAILURE_CODES,
    FIXTURE_LABEL,
    PAGE_REQUESTS,
    REQUEST_TIMEOUT_MS,
    REQUESTS,
    Message,
    Request,
)
from pyapp.protocol.results import RESULTS, ErrorBody
from pyapp.records.base import JSON, json_schema, to_json
from pyapp.records.evidence import EVIDENCE_LABELS, EVIDENCE_MEANINGS
from pyapp.records.model import CHAIN_CALL_CAPS, WHOLE_TASK_CAPS
from pyapp.synthetic.language import structure_notes
from pyapp.tasks.taskset import DEFAULT_SEED, GENERATOR_VERSION, PRESETS, PRIMITIVE_OPS

SCHEMA_ID = "https://composition-lab.invalid/schemas/messages.schema.json"


def _tagged(record: type[Message], schema: dict[str, Any]) -> dict[str, Any]:
    """A record's schema with its tag (and, for requests, an optional `id`) added."""
    entry = dict(schema["$defs"][record.__name__])
    properties = {"type": {"const": record.TYPE}, **entry["properties"]}
    required = ["type"]
    for f in dataclasses.fields(record):  # type: ignore[arg-type]
        if f.default is dataclasses.MISSING:
            required.append(f.name)
    if record in REQUESTS:
        properties = {**properties, "id": {"description": "Repeated by the reply."}}
    return {**entry, "properties": properties, "required": required}


def reply_name(request: type[Request]) -> str:
    """The schema's name for the reply to a request: `sweep_run` → `SweepRunReply`."""
    return "".join(part.title() for part in request.TYPE.split("_")) + "Reply"


def _reply(request: type[Request]) -> dict[str, Any]:
    """The reply envelope of one request, its `result` that request's `RESULT` record."""
    return {
        "description": f"The reply to `{request.TYPE}`.",
        "type": "object",
        "properties": {
            "type": {"const": request.TYPE},
            "id": {"description": "The request's id."},
            "ok": {"const": True},
            "result": {"$ref": f"#/$defs/{request.RESULT.__name__}"},
        },
        "required": ["type", "id", "ok", "result"],
        "additionalProperties": False,
    }


_FAILED_REPLY: dict[str, Any] = {
    "description": "The reply to a refused request (null type and id: not even those read).",
    "type": "object",
    "properties": {
        "type": {"type": ["string", "null"]},
        "id": {"description": "The request's id."},
        "ok": {"const": False},
        "error": {"$ref": "#/$defs/ErrorBody"},
    },
    "required": ["type", "id", "ok", "error"],
    "additionalProperties": False,
}


def _merge(defs: dict[str, Any], more: dict[str, Any]) -> None:
    """Add schema definitions; two different records of one name would silently clash."""
    for name, entry in more.items():
        if name in defs and defs[name] != entry:
            raise ValueError(f"two different records are named {name}")
        defs[name] = entry


def messages_schema() -> dict[str, JSON]:
    """exports/messages.schema.json: every request, every reply (each with its result record)
    and every event."""
    defs: dict[str, Any] = {}
    tagged: dict[str, Any] = {}
    for record in (*REQUESTS, *EVENTS):
        schema = json_schema(record, schema_id=SCHEMA_ID, title=record.__name__)
        _merge(defs, {k: v for k, v in schema["$defs"].items() if k != record.__name__})
        tagged[record.__name__] = _tagged(record, schema)
    for record_type in (*RESULTS, ErrorBody):
        _merge(defs, json_schema(record_type, schema_id=SCHEMA_ID, title="")["$defs"])
    _merge(defs, tagged)
    _merge(defs, {reply_name(r): _reply(r) for r in REQUESTS})
    _merge(defs, {"FailedReply": _FAILED_REPLY})
    replies = [{"$ref": f"#/$defs/{reply_name(r)}"} for r in REQUESTS]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "Composition Lab messages (page ⇄ Python worker)",
        "oneOf": [
            {"$ref": "#/$defs/Request"},
            {"$ref": "#/$defs/Reply"},
            {"$ref": "#/$defs/Event"},
        ],
        "$defs": {
            **dict(sorted(defs.items())),
            "Request": {"oneOf": [{"$ref": f"#/$defs/{r.__name__}"} for r in REQUESTS]},
            "Reply": {"oneOf": [*replies, {"$ref": "#/$defs/FailedReply"}]},
            "Event": {"oneOf": [{"$ref": f"#/$defs/{e.__name__}"} for e in EVENTS]},
            "FailureCode": {"enum": list(FAILURE_CODES)},
        },
    }


def constants() -> dict[str, JSON]:
    """The names and constants the page shares with Python (site/lab_protocol.js)."""

    return {
        "REQUEST_TYPES": [r.TYPE for r in REQUESTS],
        "PAGE_REQUEST_TYPES": [r.TYPE for r in PAGE_REQUESTS],
        "EVENT_TYPES": [e.TYPE for e in EVENTS],
        "ALL_CONDITIONS": list(ALL_CONDITIONS),
        "MODEL_CONDITIONS": list(MODEL_CONDITIONS),
        "CONTROL_CONDITION": "supplied-program",
        "OPS": list(PRIMITIVE_OPS),
        "WHOLE_TASK_CAPS": to_json(WHOLE_TASK_CAPS),
        "CHAIN_CALL_CAPS": to_json(CHAIN_CALL_CAPS),
        "DEFAULT_SEED": DEFAULT_SEED,
        "GENERATOR_VERSION": GENERATOR_VERSION,
        "FIXTURE_LABEL": FIXTURE_LABEL,
        "CONTROL_LABEL": CONTROL_LABEL,
        "REQUEST_TIMEOUT_MS": REQUEST_TIMEOUT_MS,
        "EVIDENCE_LABELS": dict(EVIDENCE_LABELS),
        "EVIDENCE_MEANINGS": dict(EVIDENCE_MEANINGS),
        "SYNTHETIC_MODELS": structure_notes(),
        "FAILURE_CODES": dict(FAILURE_CODES),
        "PRESETS": {name: dict(overrides) for name, overrides in PRESETS.items()},
    }


def markdown_tables() -> str:
    """The message tables the docs show (docs/hosting.md), generated from the records."""

    def fields(record: type) -> str:
        names = [
            f.name + ("" if f.default is dataclasses.MISSING else "?")
            for f in dataclasses.fields(record)
        ]
        return ", ".join(names) or "—"

    lines = [
        "| request `type` | fields (`?`: optional) | reply `result` | what it does |",
        "|---|---|---|---|",
    ]
    for r in REQUESTS:
        result = f"`{r.RESULT.__name__}`: {fields(r.RESULT)}"
        doc = " ".join((r.__doc__ or "").split())
        lines.append(f"| `{r.TYPE}` | {fields(r)} | {result} | {doc} |")
    lines += ["", "| event `type` | fields | when |", "|---|---|---|"]
    for e in EVENTS:
        lines.append(f"| `{e.TYPE}` | {fields(e)} | {' '.join((e.__doc__ or '').split())} |")
    lines += ["", "| error `code` | meaning |", "|---|---|"]
    lines += [f"| `{code}` | {meaning} |" for code, meaning in FAILURE_CODES.items()]
    return "\n".join(lines) + "\n"


def js_module() -> str:
    """site/lab_protocol.js: the constants as frozen JavaScript exports."""
    lines = [
        "// GENERATED by `python -m pyapp schema` from pyapp/protocol/messages.py: do not edit.",
        "// The message names and shared constants of the page ⇄ Python protocol;",
        "// exports/messages.schema.json describes every message. A test fails on drift.",
        "",
    ]
    for name, value in constants().items():
        text = json.dumps(value, ensure_ascii=False)
        frozen = f"Object.freeze({text})" if isinstance(value, (dict, list)) else text
        lines.append(f"export const {name} = {frozen};")
    return "\n".join(lines) + "\n"
