"""The trace's schema versions: the current one (`SCHEMA_VERSION`), the older ones still
read (`LEGACY_SCHEMA_VERSIONS`), the marks of the fields trace/3 and trace/4 added
(`ADDED_IN_TRACE_3`, `ADDED_IN_TRACE_4`), the versions that carry the hash chain
(`CHAINED_VERSIONS`), and reading an older document: `version_problem` (a `schema_version`
its body contradicts) and `upgrade` (an older document as trace/4).
`pyapp.records.trace.read_trace` applies both; `reproduce` reads a document the same way.

trace/4 added one record, `RunTerms` (`pyapp.records.terms`: the chain protocol a run was
measured under), in the run, every freeze, the predictions' frozen profiles and the receipt;
a trace/3 document reads with it null (measured under the design's chain protocol, the only
one there was) and reproduces as before. A later field of trace/4 goes into `RunTerms` with
`ADDED_IN_TRACE_4`: no further bump."""

from __future__ import annotations

import json

from pyapp.records.base import JSON

SCHEMA_VERSION = "trace/4"
LEGACY_SCHEMA_VERSIONS = ("trace/1", "trace/2", "trace/3")
"""Older trace versions `upgrade` can still read (their new fields filled as unknown)."""

ADDED_IN_TRACE_3 = {"optional_on_read": True}
"""Fields trace/3 added: absent from older documents (read as null); `reproduce` requires
them in a trace/3 document."""

ADDED_IN_TRACE_4 = {"optional_on_read": True}
"""Fields trace/4 added (`RunTerms` where it is optional, and every field added to
`RunTerms` later): absent from older documents (read as null or the default)."""

CHAINED_VERSIONS = ("trace/3", SCHEMA_VERSION)
"""Versions whose records must carry the hash chain (`pyapp.records.chain`)."""


TRACE_2_FIELDS = ("revision_note", "run.generation", "run.faults")
"""Fields at the top of a document that only trace/2 writes (trace/1 never recorded them):
how `version_problem` tells a hand-edited `schema_version` from the document's body."""


def version_problem(document: JSON) -> str | None:
    """Why a document's `schema_version` does not fit its body: `trace/1` on a document that
    records trace/2's fields (a value other than the null or `[]` the upgrade fills in),
    `trace/2`, `trace/3` or `trace/4` on one that has none of them, `trace/2` on one whose
    records carry trace/3's hash chain, or a version older than trace/4 on one that records
    trace/4's terms (`run.terms`). None when they agree, or when the document is not a trace
    at all (that is reported where it does not fit the records)."""
    if not isinstance(document, dict) or not isinstance(document.get("run"), dict):
        return None
    found = {name: value for name in TRACE_2_FIELDS for value in _field(document, name)}
    present = [name for name in TRACE_2_FIELDS if name in found]
    recorded = [name for name in present if found[name] not in (None, [])]
    version = document.get("schema_version")
    if version == "trace/1" and recorded:
        return (
            f"says {version!r}, but the document records trace/2's {', '.join(recorded)} "
            f"({version} never recorded them): a newer document says its own version"
        )
    if version in ("trace/2", *CHAINED_VERSIONS) and not present:
        return (
            f"says {version!r}, but the document has none of trace/2's fields "
            f"({', '.join(TRACE_2_FIELDS)}): a trace/1 document says 'trace/1'"
        )
    if version == "trace/2" and _chained(document):
        return (
            "says 'trace/2', but its records carry trace/3's hash chain (prev_sha256): "
            "a trace/3 document says 'trace/3'"
        )
    if version in LEGACY_SCHEMA_VERSIONS and _field(document, "run.terms") not in ([], [None]):
        return (
            f"says {version!r}, but the document records trace/4's run.terms "
            f"({version} never recorded them): a newer document says {SCHEMA_VERSION!r}"
        )
    return None


def _chained(document: dict[str, JSON]) -> bool:
    """Whether any trial, freeze or interruption of a document carries a chain link."""
    for name in ("trials", "freezes", "interruptions", "journal"):
        for record in _as_list(document.get(name)):
            if isinstance(record, dict) and record.get("prev_sha256") is not None:
                return True
    return False


def _completions_of_trace_1(node: JSON) -> None:
    """Every completion in a trace/1 document: the model's input was not recorded."""
    if isinstance(node, dict):
        if "finish_reason" in node and "output_token_ids" in node:
            node.setdefault("input_text", None)
            node.setdefault("input_sha256", None)
        for value in node.values():
            _completions_of_trace_1(value)
    elif isinstance(node, list):
        for value in node:
            _completions_of_trace_1(value)


def upgrade(document: JSON) -> JSON:
    """An older document as trace/4. trace/3: only the version changes, and the run's terms
    read as null (measured under the design's chain protocol). trace/2: only the version
    changes (what trace/3 added,
    the hash chain, the frozen task set and state-aware fit, reads as null: `reproduce` says
    the chain is absent). trace/1: what it did not record is filled as unknown
    (timestamps, load ids, identities, generation settings: null; no faults); sequence
    numbers follow the recorded order: trials in order, each freeze after the trials it
    names, interruptions last (trace/1 did not record when they happened). Anything else
    is returned unchanged (and refused later if it is not a trace/4 document)."""
    if not isinstance(document, dict) or document.get("schema_version") not in (
        LEGACY_SCHEMA_VERSIONS
    ):
        return document
    if document.get("schema_version") in ("trace/2", "trace/3"):
        return _without_output_shown(
            _with_run_terms({**document, "schema_version": SCHEMA_VERSION})
        )
    doc = json.loads(json.dumps(document))
    doc["schema_version"] = SCHEMA_VERSION
    if isinstance(doc.get("run"), dict):
        doc["run"].setdefault("generation", None)
        doc["run"].setdefault("faults", [])
    doc.setdefault("revision_note", None)
    _with_run_terms(doc)
    if isinstance(doc.get("model"), dict):
        doc["model"].setdefault("revision_served_note", None)
        doc["model"].setdefault("wasm", None)
        doc["model"].setdefault("chat_template_options", {})  # trace/1 passed none
    counter = 0
    # anything that is not a list of objects is left as it is, and refused when read
    trials = _as_list(doc.get("trials"))
    freezes = [f for f in _as_list(doc.get("freezes")) if isinstance(f, dict)]

    def next_sequence() -> int:
        nonlocal counter
        counter += 1
        return counter

    def upgrade_trial(trial: JSON, sequence: int) -> None:
        if not isinstance(trial, dict):
            return
        trial.setdefault("sequence", sequence)
        for key in ("started_at", "ended_at", "load_id", "model_identity"):
            trial.setdefault(key, None)
        trial.setdefault("route_limits", None)

    for index in range(len(trials) + 1):
        for record in freezes:
            if _freeze_position(record, len(trials)) == index:
                record.setdefault("sequence", next_sequence())
        if index < len(trials):
            upgrade_trial(trials[index], next_sequence())
    _completions_of_trace_1(doc)
    for interruption in _as_list(doc.get("interruptions")):
        if isinstance(interruption, dict):
            sequence = next_sequence()
            cancelled = interruption.get("reason") == "cancelled"
            interruption.setdefault("sequence", sequence)
            interruption.setdefault("code", "cancelled" if cancelled else None)
            interruption.setdefault("message", None)
            upgrade_trial(interruption.get("partial"), sequence)
    return _without_output_shown(doc)


def _with_run_terms(document: dict[str, JSON]) -> dict[str, JSON]:
    """An older document's run with trace/4's terms as null (a copy of the run is made)."""
    run = document.get("run")
    if isinstance(run, dict) and "terms" not in run:
        document["run"] = {**run, "terms": None}
    return document


def _without_output_shown(document: dict[str, JSON]) -> dict[str, JSON]:
    """trace/1–2 interruptions said `output_shown: false` (never shown); trace/3 drops it."""
    interruptions = document.get("interruptions")
    if isinstance(interruptions, list):
        document["interruptions"] = [
            {k: v for k, v in i.items() if k != "output_shown"} if isinstance(i, dict) else i
            for i in interruptions
        ]
    return document


def _field(document: dict[str, JSON], name: str) -> list[JSON]:
    """The value of a dotted field (`run.faults`), as a list of one; `[]` when it is absent."""
    *parents, key = name.split(".")
    node: JSON = document
    for parent in parents:
        node = node.get(parent) if isinstance(node, dict) else None
    return [node[key]] if isinstance(node, dict) and key in node else []


def _as_list(value: JSON) -> list[JSON]:
    """A list as it is; anything else as no items (`from_json` refuses it later, by name)."""
    return value if isinstance(value, list) else []


def _freeze_position(record: dict[str, JSON], trials: int) -> int:
    """How many trials a trace/1 freeze came after: its `after_trials`, or after every trial
    when that is not a count within the list (so it still gets a sequence number, and
    `reproduce` names the bad `after_trials` instead of a missing `sequence`)."""
    after = record.get("after_trials")
    if isinstance(after, int) and not isinstance(after, bool) and 0 <= after <= trials:
        return after
    return trials
