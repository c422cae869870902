"""The hash chain that makes a trace tamper-evident (trace/3).

Every record of a sweep — a trial, an interruption, a freeze, a journal entry, a model
load, a sealed run's held-out draw — carries `sequence` (its place in the run's timeline,
from 1, no gaps) and `prev_sha256`: the SHA-256 of the canonical JSON of the record just
before it in that timeline (for the first record: of the chain's genesis,
`{"chain": "composition-lab/1", "run_id": ..., "created_at": ...}`). Each freeze therefore
commits to the chain head at the moment it was made, and its profile hash covers that head.

Canonical JSON (`canonical_text`): the record as JSON, keys sorted, no whitespace, UTF-8,
a float that is a whole number written as an integer (`2.0` → `2`: JavaScript does not keep
the difference), and every field that a later version added as optional
(`optional_on_read`) left out while it holds its default — so a record written before
such a field existed hashes the same when read by code that has it.

`chain_mismatches` re-walks the chain of a trace/3 document: it names the first broken
link (a record deleted, inserted, reordered or edited before it) and every gap in the
sequence numbers. What it cannot catch: the chain is computed from the document alone, so
a forger who recomputes every later link (and the profile hashes) is caught only by a
receipt published before (`pyapp.records.receipt`). A truncated tail (the last records
removed) leaves a valid chain; the summary and the receipt's held-out list say how many
records there should be.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from pyapp.records.base import JSON, Mismatch, to_json

CHAIN_VERSION = "composition-lab/1"


_LEAVES = frozenset({str, int, bool, type(None)})
"""The types `canonical` keeps as they are (exactly these; a float may become an int)."""


def canonical(value: object) -> JSON:
    """A record as the JSON the chain hashes (see the module docstring)."""
    kind: Any = type(value)
    if kind in _LEAVES:
        return value  # (the common leaves first: a trace has millions)
    if kind is float:
        number: float = value  # type: ignore[assignment]
        return int(number) if number.is_integer() else number
    fields = _fields(kind)
    if fields is not None:  # a leaf field is kept without a call (most fields are leaves)
        out: dict[str, JSON] = {}
        for name, optional, default in fields:
            item = getattr(value, name)
            if optional and item == default:
                continue
            out[name] = item if type(item) in _LEAVES else canonical(item)
        return out
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, (list, tuple)):
        return [v if type(v) in _LEAVES else canonical(v) for v in value]
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in value.items()}
    return to_json(value)


@cache
def _fields(kind: type) -> tuple[tuple[str, bool, Any], ...] | None:
    """A record class's fields as the chain reads them: (name, left out while it holds its
    default, the default); None for anything that is not a record class."""
    if not dataclasses.is_dataclass(kind):
        return None
    return tuple(
        (
            f.name,
            bool(f.metadata.get("optional_on_read")) and f.default is not dataclasses.MISSING,
            f.default,
        )
        for f in dataclasses.fields(kind)
    )


def canonical_text(value: object) -> str:
    return json.dumps(canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_of(value: object) -> str:
    """SHA-256 (hex) of a record's canonical JSON."""
    return hashlib.sha256(canonical_text(value).encode("utf-8")).hexdigest()


def genesis(run_id: str, created_at: str) -> str:
    """The `prev_sha256` of a run's first record."""
    return sha256_of({"chain": CHAIN_VERSION, "run_id": run_id, "created_at": created_at})


@dataclass(frozen=True)
class Link:
    """One record of the timeline, as the chain sees it."""

    sequence: int | None
    prev_sha256: str | None
    where: str
    """Its place in the document (`$.trials[3]`)."""
    record: Any


def links(trace: Any) -> list[Link]:
    """Every chained kind of record of a trace, in timeline order (unsequenced ones first,
    in document order: they come from a version before the chain)."""
    found: list[Link] = []

    def add(records: Any, where: str) -> None:
        for i, record in enumerate(records):
            found.append(
                Link(
                    getattr(record, "sequence", None),
                    getattr(record, "prev_sha256", None),
                    f"{where}[{i}]",
                    record,
                )
            )

    add(trace.trials, "$.trials")
    add(trace.freezes, "$.freezes")
    add(trace.interruptions, "$.interruptions")
    add(trace.journal, "$.journal")
    if trace.model is not None:
        add(trace.model.loads, "$.model.loads")
    draw = getattr(trace, "draw", None)
    if draw is not None:  # a sealed run's held-out draw (one record, after the freezes)
        found.append(Link(draw.sequence, draw.prev_sha256, "$.draw", draw))
    kinds = ("$.trials", "$.freezes", "$.interruptions", "$.journal", "$.model.loads", "$.draw")
    order = {kind: n for n, kind in enumerate(kinds)}
    found.sort(
        key=lambda link: (
            link.sequence is not None,
            link.sequence or 0,
            order[link.where.partition("[")[0]],
        )
    )
    return found


def _chained(found: list[Link]) -> Iterator[tuple[int, Link]]:
    for index, link in enumerate(found):
        if link.prev_sha256 is not None:
            yield index, link


def chain_mismatches(trace: Any, required: bool) -> tuple[list[Mismatch], str | None]:
    """The chain's mismatches, and a note when (part of) the chain is absent. `required`:
    the document says trace/3, so every record must be chained, except a leading run of
    records written before the chain existed (a trace/2 sweep resumed under trace/3)."""
    found = links(trace)
    chained = list(_chained(found))
    if not found:
        return [], None
    if not chained:
        if required:
            return [Mismatch("$", "a trace/3 document whose records carry no chain")], None
        return [], (
            "chain absent (recorded before trace/3): a deleted, inserted, reordered or "
            "edited record is caught only where it changes a re-derived number"
        )
    first = chained[0][0]
    problems: list[Mismatch] = []
    unchained_late = [link for link in found[first:] if link.prev_sha256 is None]
    for link in unchained_late:
        problems.append(Mismatch(link.where, "a record without prev_sha256 inside the chain"))
    expected = (
        genesis(trace.run.run_id, trace.run.created_at)
        if first == 0
        else sha256_of(found[first - 1].record)
    )
    previous_sequence = found[first - 1].sequence if first > 0 else 0
    broken = False
    for link in found[first:]:
        if link.prev_sha256 is None:
            continue
        if not broken and link.prev_sha256 != expected:
            broken = True
            problems.append(
                Mismatch(
                    f"{link.where}.prev_sha256",
                    f"first broken link (sequence {link.sequence}): it is not the hash of the "
                    "record before it — a record was deleted, inserted, reordered or edited "
                    "before this one",
                )
            )
        if (
            link.sequence is not None
            and previous_sequence is not None
            and link.sequence != previous_sequence + 1
        ):
            problems.append(
                Mismatch(
                    f"{link.where}.sequence",
                    f"sequence gap: {previous_sequence} is followed by {link.sequence}",
                )
            )
        previous_sequence = link.sequence
        expected = sha256_of(link.record)
    note = None
    if first > 0:
        note = (
            f"chain absent for the first {first} records (recorded before trace/3): "
            "edits among them are caught only where they change a re-derived number"
        )
    return problems, note


def head(holder: Any, run_id: str, created_at: str) -> tuple[int, str]:
    """The latest sequence number and the chain head (the hash of the latest record, or the
    genesis when there is none) of anything holding trials, freezes, interruptions, a
    journal and a model (a trace, a sweep in progress)."""
    found = [link for link in links(holder) if link.sequence is not None]
    if not found:  # records without a place in the timeline are not chained yet
        return 0, genesis(run_id, created_at)
    sequence = max((link.sequence or 0 for link in found), default=0)
    return sequence, sha256_of(found[-1].record)
