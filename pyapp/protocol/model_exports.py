"""The files generated from the model channel's messages (`pyapp.protocol.model_messages`):
`exports/model-messages.schema.json` (`messages_schema`: every request, reply and event of
the channel), `workers/model_protocol.js` (`js_module`: the names, codes, deadlines and the
schema the workers validate with, `constants`) and the message tables of docs/models.md
(`markdown_tables`). `python -m pyapp schema` writes them; a test fails when any of them drifts.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from pyapp.protocol.model_messages import (
    COMPLETION_CODES,
    ERROR_CODES,
    EVENTS,
    GRACE_MS,
    LOAD_TIMEOUT_MS,
    PANEL_EVENTS,
    REQUESTS,
    RESULTS,
    STALL_FLOOR_MS,
    STALL_STEP_FACTOR,
    TOKENS_EVERY_MS,
    WARMUP_TOKENS,
    ChatMessage,
    FileFetched,
    GenerateDebug,
    ModelMessage,
    ModelReply,
    ModelSpec,
    ReplyTiming,
)
from pyapp.records.base import JSON, json_schema
from pyapp.records.model import HardStop

SCHEMA_ID = "https://composition-lab.invalid/schemas/model-messages.schema.json"


def _tagged(record: type[ModelMessage], defs: dict[str, Any]) -> dict[str, Any]:
    """A message's schema with its tag (and, for requests, the `id` its reply repeats)."""
    entry = dict(defs[record.__name__])
    properties = {"type": {"const": record.TYPE}, **entry["properties"]}
    if record in REQUESTS:
        properties["id"] = {"description": "Repeated by the reply.", "type": "integer"}
    return {**entry, "properties": properties, "required": ["type", *entry["required"]]}


def _reply_def(kind: str) -> dict[str, Any]:
    """The reply to a request type: the envelope (ok with a result, or an error), with that
    type's result record."""
    result = RESULTS[kind].__name__
    return {
        "description": f"The reply to `{kind}`.",
        "allOf": [{"$ref": "#/$defs/ModelReply"}],
        "properties": {"type": {"const": kind}, "result": {"$ref": f"#/$defs/{result}"}},
    }


def messages_schema() -> dict[str, JSON]:
    """exports/model-messages.schema.json: every request, reply and event of the channel."""
    defs: dict[str, Any] = {}
    roots: list[type] = [*REQUESTS, *EVENTS, *PANEL_EVENTS, *RESULTS.values(), ModelReply]
    for record in roots:
        defs.update(json_schema(record, schema_id=SCHEMA_ID, title="")["$defs"])
    for message in dict.fromkeys((*REQUESTS, *EVENTS, *PANEL_EVENTS)):
        defs[message.__name__] = _tagged(message, defs)
    replies = {f"{r.__name__}Reply": _reply_def(r.TYPE) for r in REQUESTS}
    defs["ModelReply"]["properties"]["error"]["anyOf"][0] = {"$ref": "#/$defs/ModelError"}
    # Every reply: ok with its result, or not ok with an error (once, on the envelope).
    defs["ModelReply"]["oneOf"] = [
        {"properties": {"ok": {"const": True}}, "required": ["result"]},
        {"properties": {"ok": {"const": False}}, "required": ["error"]},
    ]
    defs["ModelError"] = {
        **defs.pop("ErrorBody"),
        "properties": {
            "code": {"description": "A stable code (ERROR_CODES).", "enum": list(ERROR_CODES)},
            "message": {"description": "One line for a person.", "type": "string"},
        },
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "Composition Lab model-worker messages (Python ⇄ model client ⇄ model worker)",
        "anyOf": [
            {"$ref": "#/$defs/ModelRequest"},
            {"$ref": "#/$defs/ModelReply"},
            {"$ref": "#/$defs/ModelEvent"},
            {"$ref": "#/$defs/PanelEvent"},
        ],
        "$defs": {
            **dict(sorted({**defs, **replies}.items())),
            "ModelRequest": {"oneOf": [{"$ref": f"#/$defs/{r.__name__}"} for r in REQUESTS]},
            "ModelEvent": {"oneOf": [{"$ref": f"#/$defs/{e.__name__}"} for e in EVENTS]},
            "PanelEvent": {"oneOf": [{"$ref": f"#/$defs/{e.__name__}"} for e in PANEL_EVENTS]},
        },
    }


def _name(type_: str) -> str:
    return type_.upper()


def constants() -> dict[str, JSON]:
    """What workers/model_protocol.js exports."""
    schema = messages_schema()
    return {
        "MODEL_TYPE": {_name(m.TYPE): m.TYPE for m in (*REQUESTS, *EVENTS, *PANEL_EVENTS)},
        "MODEL_REQUESTS": {r.TYPE: r.__name__ for r in REQUESTS},
        "MODEL_EVENTS": {e.TYPE: e.__name__ for e in EVENTS},
        "PANEL_EVENTS": {e.TYPE: e.__name__ for e in PANEL_EVENTS},
        "GRACE_MS": GRACE_MS,
        "LOAD_TIMEOUT_MS": LOAD_TIMEOUT_MS,
        "STALL_FLOOR_MS": STALL_FLOOR_MS,
        "STALL_STEP_FACTOR": STALL_STEP_FACTOR,
        "WARMUP_TOKENS": WARMUP_TOKENS,
        "TOKENS_EVERY_MS": TOKENS_EVERY_MS,
        "MODEL_REPLIES": {r.TYPE: f"{r.__name__}Reply" for r in REQUESTS},
        "MODEL_ERROR": {_name(code): code for code in ERROR_CODES},
        "MODEL_ERROR_CODES": dict(ERROR_CODES),
        "COMPLETION_FAILURE": {_name(code): code for code in COMPLETION_CODES},
        "MODEL_SCHEMA_DEFS": schema["$defs"],
    }


def js_module() -> str:
    """workers/model_protocol.js: the names, codes and schema as frozen JavaScript exports."""
    lines = [
        "// GENERATED by `python -m pyapp schema` from pyapp/protocol/model_messages.py: do not",
        "// edit. The model-worker channel's message names, error codes and JSON Schema",
        "// (exports/model-messages.schema.json); workers/model_check.js validates with it.",
        "// A test fails on drift.",
        "",
    ]
    for name, value in constants().items():
        indent = 1 if name == "MODEL_SCHEMA_DEFS" else None
        text = json.dumps(value, ensure_ascii=False, indent=indent)
        frozen = f"Object.freeze({text})" if isinstance(value, (dict, list)) else text
        lines.append(f"export const {name} = {frozen};")
    return "\n".join(lines) + "\n"


def _fields(record: type) -> str:
    names = []
    for f in dataclasses.fields(record):
        optional_field = f.default is not dataclasses.MISSING
        names.append(f"`{f.name}`" + ("?" if optional_field else ""))
    return ", ".join(names) or "—"


def markdown_tables() -> str:
    """The message tables of docs/models.md, generated from the records."""
    lines = [
        "| request `type` | answered by | fields (`?`: optional) | result | what it does |",
        "|---|---|---|---|---|",
    ]
    for r in REQUESTS:
        doc = " ".join((r.__doc__ or "").split())
        result = RESULTS[r.TYPE]
        lines.append(
            f"| `{r.TYPE}` | {r.ANSWERED_BY} | {_fields(r)} | `{result.__name__}`: "
            f"{_fields(result)} | {doc} |"
        )
    nested = (ModelSpec, ChatMessage, GenerateDebug, ReplyTiming, HardStop, FileFetched)
    lines += ["", "| record | fields | what it is |", "|---|---|---|"]
    for record in nested:
        doc = " ".join((record.__doc__ or "").split())
        lines.append(f"| `{record.__name__}` | {_fields(record)} | {doc} |")
    lines += ["", "| event `type` | to | fields | when |", "|---|---|---|---|"]
    for e, to in [*((e, "client") for e in EVENTS), *((e, "panel") for e in PANEL_EVENTS)]:
        doc = " ".join((e.__doc__ or "").split())
        lines.append(f"| `{e.TYPE}` | {to} | {_fields(e)} | {doc} |")
    lines += ["", "| reply `error.code` | meaning |", "|---|---|"]
    lines += [f"| `{code}` | {meaning} |" for code, meaning in ERROR_CODES.items()]
    lines += ["", "| completion `failure.code` | meaning |", "|---|---|"]
    lines += [f"| `{code}` | {meaning} |" for code, meaning in COMPLETION_CODES.items()]
    return "\n".join(lines) + "\n"
