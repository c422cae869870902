"""The one envelope both channels speak (page ⇄ Python, `pyapp.protocol.messages`; page ⇄ model
worker, `pyapp.protocol.model_messages`), and the description of a channel the generator
(`pyapp.protocol.generate`) writes its schema, JavaScript module and docs tables from.

One tag key, `type`, both ways, and an `id` pairing each reply with its request::

    request  {"type": T, "id": N, ...the fields of T's request record}
    reply    {"type": T, "id": N, "ok": true,  "result": T's result record, ...extras}
           | {"type": T, "id": N, "ok": false, "error": {"code": C, "message": str}, ...extras}
    event    {"type": E, ...the fields of E's event record}

A message record is a frozen dataclass with a `TYPE` (`Message`; a request, `Request`, also
names its reply's `RESULT` record); a field with a default may be left out
(it reads as its default). The functions here build and read that envelope for any channel:
`outgoing` (a request or an event as sent), `tag_of` and `read_record` (a decoded message's
record), `ok_reply` / `failed_reply` (a reply as sent) and `check_reply` (a decoded reply
answers the request). Each channel's module wraps them with its own error class and codes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pyapp.errors import RecordError, ReplyError
from pyapp.protocol.results import ErrorBody
from pyapp.records import JSON, from_json, to_json

TAG = "type"
"""The tag key of every message, both ways."""
ID = "id"
"""The key pairing a reply with its request."""
_OPTIONAL = {"optional_on_read": True}


class Message:
    """Base of every request and event record: `TYPE` is its tag."""

    TYPE: ClassVar[str]


class Request(Message):
    """Base of every request record: `RESULT` is the record its reply's `result` holds (the
    handler returns one, `pyapp.browser.bridge` checks it, the schema describes it)."""

    RESULT: ClassVar[type]


@dataclass(frozen=True)
class Reply:
    """The envelope of every reply of the page ⇄ Python channel (`ok` with the request's
    result record, or not `ok` with an error)."""

    type: str | None
    """The request's type (null when the request had none, or it could not be read)."""
    id: JSON
    """The request's id (null when the request had none, or it could not be read)."""
    ok: bool
    """Whether it succeeded."""
    result: JSON = field(default=None, metadata=_OPTIONAL)
    """The result record of the request's type (when ok)."""
    error: ErrorBody | None = field(default=None, metadata=_OPTIONAL)
    """Why it failed (when not ok): a code of the channel's codes and one line."""


@dataclass(frozen=True)
class EventGroup:
    """Events of a channel that go to one receiver."""

    name: str
    """The schema's name for the group (`Event`, `ModelEvent`, `PanelEvent`)."""
    to: str
    """Who receives them (`page`, `client`, `panel`)."""
    records: tuple[type, ...]
    """The event records, in the order the docs list them."""


@dataclass(frozen=True)
class Channel:
    """What the one generator (`pyapp.protocol.generate`) needs of a channel: its records,
    its codes, and the names its generated files use."""

    title: str
    """The schema's title."""
    schema_id: str
    """The schema's `$id`."""
    prefix: str
    """Of the schema's union names: `{prefix}Request`, `{prefix}AnyReply`, `{prefix}Error`."""
    requests: tuple[type, ...]
    """Every request record, in the order the docs list them."""
    results: Mapping[str, type]
    """The result record of each request type's ok reply."""
    events: tuple[EventGroup, ...]
    """Every event record, by receiver."""
    reply: type
    """The reply envelope's record (`Reply`, or one with a channel's extras)."""
    codes: Mapping[str, str]
    """The codes a failed reply's `error.code` carries, each with its meaning."""
    id_schema: Mapping[str, Any]
    """The schema of a request's `id`."""
    nested: tuple[type, ...] = ()
    """Records inside messages that the docs' tables describe as well."""
    more_codes: tuple[tuple[str, Mapping[str, str]], ...] = ()
    """Other code tables the docs show: (column title, codes)."""

    @property
    def request_types(self) -> dict[str, type]:
        return {r.TYPE: r for r in self.requests}  # type: ignore[attr-defined]

    @property
    def event_types(self) -> dict[str, type]:
        return {e.TYPE: e for group in self.events for e in group.records}  # type: ignore[attr-defined]


def outgoing(record: Any, request_id: JSON = None, *, request: bool = True) -> dict[str, JSON]:
    """A request (`{"type": T, "id": N, ...fields}`) or, `request=False`, an event
    (`{"type": E, ...fields}`) as sent. A request leaves out a field left at a default of null
    (it reads back the same); an event carries every field."""
    fields = to_json(record)
    assert isinstance(fields, dict)
    left_out = {
        f.name
        for f in dataclasses.fields(record)
        if request and f.default is None and getattr(record, f.name) is None
    }
    kept = {k: v for k, v in fields.items() if k not in left_out}
    head: dict[str, JSON] = {TAG: record.TYPE, ID: request_id} if request else {TAG: record.TYPE}
    return {**head, **kept}


def tag_of(data: JSON, what: str = "message") -> str:
    """The `type` of a decoded message; `RecordError` when it is not an object with one."""
    if not isinstance(data, dict):
        raise RecordError("$", f"{what} must be a JSON object with a string 'type'")
    kind = data.get(TAG)
    if not isinstance(kind, str):
        raise RecordError("$.type", f"{what} needs a string 'type'")
    return kind


def read_record(record: type, data: dict[str, JSON], *, request: bool) -> Any:
    """The record of a decoded message of that record's type: the envelope's keys dropped (a
    request's `id`; an event keeps an `id` field of its own), a field left out read as its
    default; `RecordError` naming the first field that does not fit."""
    drop = (TAG, ID) if request else (TAG,)
    fields = {k: v for k, v in data.items() if k not in drop}
    for f in dataclasses.fields(record):
        if f.name not in fields and f.default is not dataclasses.MISSING:
            fields[f.name] = to_json(f.default)
    return from_json(record, fields, f"${record.TYPE}")  # type: ignore[attr-defined]


def ok_reply(kind: JSON, request_id: JSON, result: object) -> dict[str, JSON]:
    """The reply to a request that succeeded: `result` is its request's result record."""
    return {TAG: kind, ID: request_id, "ok": True, "result": to_json(result)}


def failed_reply(kind: JSON, request_id: JSON, code: str, message: str) -> dict[str, JSON]:
    """The reply to a request that was refused (`code`: one of the channel's codes)."""
    error = to_json(ErrorBody(code=code, message=message))
    return {TAG: kind, ID: request_id, "ok": False, "error": error}


def check_reply(data: JSON, kind: str, request_id: JSON) -> dict[str, JSON]:
    """A decoded reply, checked to be an envelope answering request `kind`#`request_id`
    (`request_id` None: any id); `ReplyError` otherwise. The result is the caller's to read."""
    if not isinstance(data, dict):
        raise ReplyError("reply must be a JSON object")
    if data.get(TAG) != kind:
        raise ReplyError(f"reply type {data.get(TAG)!r} does not answer {kind!r}")
    if request_id is not None and data.get(ID) != request_id:
        raise ReplyError(f"reply id {data.get(ID)!r} does not answer request {request_id}")
    if not isinstance(data.get("ok"), bool):
        raise ReplyError("reply needs a boolean 'ok'")
    if data["ok"] and "result" not in data:
        raise ReplyError("ok reply without a result")
    return data
