"""The one generator of both channels: from a `pyapp.protocol.envelope.Channel` it writes the
channel's JSON Schema (`channel_schema`), its docs tables (`markdown_tables`), and, from the
constants a channel shares with JavaScript, a generated ES module (`js_module`).

The schema's shape is the same for both channels::

    {prefix}Request    one of the request records, each tagged (`type` const, `id`)
    {Reply record}     the envelope: ok with a result, or not ok with an error (and extras)
    {T}Reply           the reply to request type T: the envelope, its `result` T's result record
    {prefix}FailedReply  a refused reply (its type may be null: not even that was read)
    {prefix}AnyReply   any reply
    {prefix}Error      `error`: a code of the channel's codes and one line
    one union per event group (`Event`, `ModelEvent`, `PanelEvent`)
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any

from pyapp.protocol.envelope import Channel
from pyapp.records import JSON, json_schema


def reply_name(kind: str) -> str:
    """The schema's name for the reply to a request type: `sweep_run` → `SweepRunReply`."""
    return "".join(part.title() for part in kind.split("_")) + "Reply"


def merge_defs(defs: dict[str, Any], more: dict[str, Any]) -> None:
    """Add schema definitions; two different records of one name would silently clash."""
    for name, entry in more.items():
        if name in defs and defs[name] != entry:
            raise ValueError(f"two different records are named {name}")
        defs[name] = entry


def _tagged(channel: Channel, record: type, defs: dict[str, Any]) -> dict[str, Any]:
    """A message's schema with its tag (and, for requests, the `id` its reply repeats); a field
    with a default may be left out."""
    entry = dict(defs[record.__name__])
    properties = {"type": {"const": record.TYPE}, **entry["properties"]}  # type: ignore[attr-defined]
    if record in channel.requests:
        properties["id"] = dict(channel.id_schema)
    required = ["type"]
    for f in dataclasses.fields(record):
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
    return {**entry, "properties": properties, "required": required}


def _replies(channel: Channel, defs: dict[str, Any]) -> dict[str, Any]:
    """The envelope (ok with a result or not ok with an error, once), its error and one reply
    per request type."""
    envelope = channel.reply.__name__
    error = f"{channel.prefix}Error"
    entry = dict(defs[envelope])
    properties = dict(entry["properties"])
    properties["error"] = {**properties["error"], "anyOf": [{"$ref": f"#/$defs/{error}"}]}
    properties["error"]["anyOf"].append({"type": "null"})
    entry["properties"] = properties
    entry["oneOf"] = [
        {"properties": {"ok": {"const": True}}, "required": ["result"]},
        {"properties": {"ok": {"const": False}}, "required": ["error"]},
    ]
    out: dict[str, Any] = {envelope: entry}
    out[error] = {
        **defs["ErrorBody"],
        "properties": {
            "code": {"description": "A stable code.", "enum": list(channel.codes)},
            "message": {"description": "One line for a person.", "type": "string"},
        },
    }
    for r in channel.requests:
        kind = r.TYPE  # type: ignore[attr-defined]
        out[reply_name(kind)] = {
            "description": f"The reply to `{kind}`.",
            "allOf": [{"$ref": f"#/$defs/{envelope}"}],
            "properties": {
                "type": {"const": kind},
                "result": {"$ref": f"#/$defs/{channel.results[kind].__name__}"},
            },
        }
    out[f"{channel.prefix}FailedReply"] = {
        "description": "A refused request's reply (type and id null: not even those read).",
        "allOf": [{"$ref": f"#/$defs/{envelope}"}],
        "properties": {"ok": {"const": False}},
    }
    return out


def _refs(names: Iterable[str]) -> dict[str, Any]:
    return {"oneOf": [{"$ref": f"#/$defs/{name}"} for name in names]}


def channel_schema(channel: Channel) -> dict[str, JSON]:
    """The channel's JSON Schema: every request, reply and event."""
    defs: dict[str, Any] = {}
    messages = list(dict.fromkeys((*channel.requests, *channel.event_types.values())))
    roots = [*messages, *channel.results.values(), channel.reply, *channel.nested]
    for record in dict.fromkeys(roots):
        merge_defs(defs, json_schema(record, schema_id=channel.schema_id, title="")["$defs"])
    tagged = {m.__name__: _tagged(channel, m, defs) for m in messages}
    replies = _replies(channel, defs)
    defs.update(tagged)
    defs.update(replies)
    if not any('"#/$defs/ErrorBody"' in json.dumps(v) for k, v in defs.items() if k != "ErrorBody"):
        defs.pop("ErrorBody")
    p = channel.prefix
    any_reply = [reply_name(r.TYPE) for r in channel.requests]  # type: ignore[attr-defined]
    unions = {
        f"{p}Request": _refs(r.__name__ for r in channel.requests),
        f"{p}AnyReply": {"anyOf": _refs([*any_reply, f"{p}FailedReply"])["oneOf"]},
        **{g.name: _refs(e.__name__ for e in g.records) for g in channel.events},
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": channel.schema_id,
        "title": channel.title,
        "anyOf": [{"$ref": f"#/$defs/{name}"} for name in unions],
        "$defs": {**dict(sorted(defs.items())), **unions},
    }


def channel_table(channel: Channel) -> dict[str, JSON]:
    """What the one JavaScript envelope (site/common/envelope.js) knows of a channel: its
    title, the request types a reply answers, the event types by receiver, and whether a
    request's `id` is an integer (a failed reply echoes only an id of that kind)."""
    return {
        "title": channel.title,
        "replies": [r.TYPE for r in channel.requests],  # type: ignore[attr-defined]
        "events": {g.to: [e.TYPE for e in g.records] for g in channel.events},  # type: ignore[attr-defined]
        "integer_ids": channel.id_schema.get("type") == "integer",
    }


def js_module(header: str, constants: dict[str, JSON], indented: tuple[str, ...] = ()) -> str:
    """A generated ES module: `header` as comments, then each constant as a frozen export
    (those named in `indented` pretty-printed)."""
    lines = [f"// {line}".rstrip() for line in header.strip().splitlines()]
    lines.append("")
    for name, value in constants.items():
        text = json.dumps(value, ensure_ascii=False, indent=1 if name in indented else None)
        frozen = f"Object.freeze({text})" if isinstance(value, (dict, list)) else text
        lines.append(f"export const {name} = {frozen};")
    return "\n".join(lines) + "\n"


def _fields(record: type) -> str:
    names = []
    for f in dataclasses.fields(record):
        optional = f.default is not dataclasses.MISSING
        names.append(f"`{f.name}`" + ("?" if optional else ""))
    return ", ".join(names) or "—"


def _doc(record: type) -> str:
    return " ".join((record.__doc__ or "").split())


def markdown_tables(channel: Channel) -> str:
    """The channel's message tables (docs/hosting.md, docs/models.md), from its records."""
    answered = any(getattr(r, "ANSWERED_BY", "") for r in channel.requests)
    lines = [
        "| request `type` |"
        + (" answered by |" if answered else "")
        + " fields (`?`: optional) | reply `result` | what it does |",
        "|---|" + ("---|" if answered else "") + "---|---|---|",
    ]
    for r in channel.requests:
        kind = r.TYPE  # type: ignore[attr-defined]
        result = channel.results[kind]
        by = f" {r.ANSWERED_BY} |" if answered else ""  # type: ignore[attr-defined]
        row = f"| `{kind}` |{by} {_fields(r)} | `{result.__name__}`: {_fields(result)} |"
        lines.append(f"{row} {_doc(r)} |")
    if channel.nested:
        lines += ["", "| record | fields | what it is |", "|---|---|---|"]
        for record in channel.nested:
            lines.append(f"| `{record.__name__}` | {_fields(record)} | {_doc(record)} |")
    several = len(channel.events) > 1
    lines += ["", "| event `type` |" + (" to |" if several else "") + " fields | when |"]
    lines.append("|---|" + ("---|" if several else "") + "---|---|")
    for group in channel.events:
        for e in group.records:
            to = f" {group.to} |" if several else ""
            lines.append(f"| `{e.TYPE}` |{to} {_fields(e)} | {_doc(e)} |")  # type: ignore[attr-defined]
    for title, codes in (("reply `error.code`", channel.codes), *channel.more_codes):
        lines += ["", f"| {title} | meaning |", "|---|---|"]
        lines += [f"| `{code}` | {meaning} |" for code, meaning in codes.items()]
    return "\n".join(lines) + "\n"
