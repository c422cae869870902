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


def as_trace_2(document: dict[str, Any]) -> dict[str, Any]:
    """A trace/3 document as trace/2 wrote it: no hash chain (`prev_sha256`, the journal's
    and loads' `sequence`), no frozen task set, state-aware fit or reference forecast, and
    each freeze's profile hash as trace/2 computed it (over the profile without the chain
    head and fits)."""
    import copy

    from pyapp.predict import freeze_profile
    from pyapp.records import read_trace

    old = copy.deepcopy(document)
    old["schema_version"] = "trace/2"
    old["run"].pop("terms", None)  # trace/4's
    for record in old["freezes"]:
        record.pop("terms", None)
    records = [*old["trials"], *old["freezes"], *old["interruptions"]]
    records += [i["partial"] for i in old["interruptions"] if i.get("partial")]
    for record in records:
        record.pop("prev_sha256", None)
    for record in [*old["journal"], *((old.get("model") or {}).get("loads") or [])]:
        record.pop("sequence", None)
        record.pop("prev_sha256", None)
    for record in old["freezes"]:
        record.pop("task_set", None)
        record.pop("state_aware", None)
        record.pop("reference_probability", None)
    trace = read_trace(old)
    for record, typed in zip(old["freezes"], trace.freezes, strict=True):
        record["profile_sha256"] = freeze_profile(trace, typed).sha256
    return old


def rechained(document: dict[str, Any]) -> dict[str, Any]:
    """The document with its hash chain recomputed after an edit, as a forger would (the
    freezes' profile hashes are left as they are): tests of the checks other than the chain
    use it so that each check is seen alone."""
    from pyapp.records import genesis, links, read_trace, sha256_of

    if document.get("schema_version") not in ("trace/3", "trace/4"):
        return document
    trace = read_trace(document)
    run = document.get("run") or {}
    previous = genesis(str(run.get("run_id")), str(run.get("created_at")))
    for link in links(trace):
        if link.prev_sha256 is None:
            continue
        node: Any = document
        for part in link.where[2:].replace("]", "").replace("[", ".").split("."):
            node = node[int(part)] if part.isdigit() else node[part]
        node["prev_sha256"] = previous
        if isinstance(node.get("partial"), dict):
            node["partial"]["prev_sha256"] = previous
        previous = sha256_of(_record_at(document, link.where))
    return document


def _record_at(document: dict[str, Any], where: str) -> Any:
    """The typed record at a `$.trials[3]`-style place of a document."""
    from pyapp.records import read_trace

    trace: Any = read_trace(document)
    for part in where[2:].replace("]", "").replace("[", ".").split("."):
        trace = trace[int(part)] if part.isdigit() else getattr(trace, part)
    return trace
