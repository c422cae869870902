"""What kind of document a file is, checked once by every reader before anything else.

Every document this project writes says what it is: its `kind` (`composition-lab-trace`,
…) and, for most, a `schema_version` whose family names the kind too (`trace/3`). A ledger
says it by its `schema_version` alone (`sweep-ledger/2`). A reader given a document of
another kind — `reproduce TRACE --predictions matrix.json`, a `summary.json` of a matrix
where a predictions document belongs — refuses it in one line naming the file, the kind
found and the kind wanted (`wrong_kind`, exit 1) *before* comparing anything, so a valid
trace is never blamed for a file that was never a predictions document.

    check_kind(document, "predictions", path)     # the one check every reader calls
    read_kind(path, "trace")                       # read_document + check_kind

A document without `kind` is known by its `schema_version`'s family; one that names no
kind at all is refused the same way ("a document of no known kind"). New kinds (a study, a study
receipt) are a row of `KINDS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pyapp.errors import InputError
from pyapp.records.base import JSON
from pyapp.records.documents import MAX_DOCUMENT_BYTES, read_document


@dataclass(frozen=True)
class Kind:
    """One kind of document."""

    words: str
    """What it is, in words (`a predictions document`)."""
    kind: str | None
    """Its `kind` field (null: the kind has none, it is known by `schema_version`)."""
    schema_family: str | None
    """The family of its `schema_version` (`trace` for `trace/3`); null: it has none."""


KINDS: Final[dict[str, Kind]] = {
    "trace": Kind("a trace", "composition-lab-trace", "trace"),
    "predictions": Kind("a predictions document", "composition-lab-predictions", "predictions"),
    "receipt": Kind("a freeze receipt", "composition-lab-receipt", "receipt"),
    "sweep-run": Kind("a sweep's run.json", "composition-lab-sweep-run", "sweep-run"),
    "ledger": Kind("a ledger", None, "sweep-ledger"),
    "simulation-summary": Kind(
        "a simulate run's summary.json", "composition-lab-simulation-summary", None
    ),
    "matrix": Kind("a matrix's matrix.json", "composition-lab-matrix", "matrix"),
    "matrix-summary": Kind(
        "a matrix's summary.json", "composition-lab-matrix-summary", "matrix-summary"
    ),
    "study": Kind("a study's study.json", "composition-lab-study", "study"),
    "study-receipt": Kind(
        "a study receipt (study-receipt.json)", "composition-lab-study-receipt", "study-receipt"
    ),
    "study-seal": Kind(
        "a study seal (seals/seed-N.json)", "composition-lab-study-seal", "study-seal"
    ),
}
"""Every kind of document a command reads, by name."""


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def kind_of(document: JSON) -> str:
    """The name of `document`'s kind (a key of `KINDS`), or what it is instead in words
    (`kind 'x'`, `a JSON array`, `a document of no known kind`)."""
    if not isinstance(document, dict):
        names = {list: "a JSON array", str: "a JSON string", bool: "a JSON boolean"}
        return names.get(type(document), "a JSON number" if document is not None else "null")
    kind = document.get("kind")
    if kind is not None:
        for name, known in KINDS.items():
            if known.kind is not None and kind == known.kind:
                return name
        return f"a document of kind {_shown(kind)}"
    version = document.get("schema_version")
    if isinstance(version, str):
        family = version.partition("/")[0]
        for name, known in KINDS.items():
            if known.schema_family == family:
                return name
        return f"a document of schema_version {_shown(version)} and no kind"
    return "a document of no known kind (no kind, no schema_version)"


def describe(name: str) -> str:
    """A kind's name (or `kind_of`'s words) as a reader says it."""
    known = KINDS.get(name)
    if known is None:
        return name
    return f"{known.words} ({known.kind or f'{known.schema_family}/…'})"


def check_kind(document: JSON, wanted: str, where: str | Path) -> None:
    """Refuse `document` unless it is of the kind `wanted` (a key of `KINDS`): an
    `InputError` (`wrong_kind`) naming the file, the kind found and the kind wanted."""
    if wanted not in KINDS:
        raise ValueError(f"unknown document kind {wanted!r}")
    found = kind_of(document)
    if found != wanted:
        raise InputError(
            "wrong_kind",
            f"{describe(found)}, not {describe(wanted)}",
            path=str(where),
        )


def read_kind(path: str | Path, wanted: str, max_bytes: int = MAX_DOCUMENT_BYTES) -> JSON:
    """The document in `path` (the bounded reader), refused unless it is of kind `wanted`."""
    document = read_document(path, max_bytes)
    check_kind(document, wanted, path)
    return document
