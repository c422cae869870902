"""The one writer of every document this project writes, beside the one bounded reader.

Every trace, predictions document, receipt, sweep `run.json`, ledger, matrix document
(`matrix.json`, `summary.json`), simulate summary, study (`study.json`) and study receipt
is turned into text by `document_text`, whichever path writes it — `score`, the sweep's
checkpoints, the page's downloads, `simulate`, `matrix`, `study` — so one document is the
same bytes from every path (`tests/test_writer.py` writes each kind through each path and
compares them). The text is:

- UTF-8 as written (`ensure_ascii=False`: a `−` is one character, not `\\u2212`);
- refused when it holds NaN or ±Infinity (`NotJSONNumber`, a `ValueError`, naming the
  field): a number that is undefined is written as null with a reason beside it, never as
  a token other readers refuse (`pyapp.records.documents` refuses it on reading);
- of the kind it claims (`pyapp.records.kinds.check_kind`, before a byte is written);
- indented by 2 and ending in a newline; or, `compact=True`, on one line (the C encoder:
  `simulate`'s per-seed files, many and read by programs, where indenting would cost about
  a tenth of its throughput).

`line_text` is the same JSON on one line without a newline: one trial of `trials.jsonl`, a
header or a header change the page stores, the texts a reply or an event carries.

No hash is over these bytes: every hash is over canonical JSON (`pyapp.records.chain`), so
a change of layout here changes no hash, and files written before still read.
"""

from __future__ import annotations

import json
import math

from interpreter import LabError
from pyapp.records.base import JSON, to_json
from pyapp.records.kinds import check_kind


class NotJSONNumber(LabError, ValueError):
    """A document holds NaN or ±Infinity (which JSON has no token for) at a named field
    (code `not_json_number`; a `ValueError`, as the encoder's own refusal was)."""

    def __init__(self, message: str) -> None:
        super().__init__("not_json_number", message)


def _non_finite(value: JSON, path: str = "$") -> str | None:
    """The path of the first NaN or ±Infinity in `value`, or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path} = {value}"
    if isinstance(value, dict):
        items: list[tuple[str, JSON]] = [(f"{path}.{k}", v) for k, v in value.items()]
    elif isinstance(value, list):
        items = [(f"{path}[{i}]", v) for i, v in enumerate(value)]
    else:
        return None
    return next((found for p, v in items if (found := _non_finite(v, p)) is not None), None)


def _encoded(document: JSON, indent: int | None) -> str:
    try:
        return json.dumps(document, indent=indent, ensure_ascii=False, allow_nan=False)
    except ValueError:
        where = _non_finite(document) or "a number"
        raise NotJSONNumber(
            f"{where} is not a JSON number (an undefined number is null with a reason)"
        ) from None


def document_text(record: object, kind: str, *, compact: bool = False) -> str:
    """`record` (a record or its JSON) as the text of a document of `kind` (a key of
    `pyapp.records.kinds.KINDS`): indented by 2, or on one line when `compact`, with a
    final newline."""
    document = to_json(record)
    check_kind(document, kind, f"the {kind} document being written")
    return _encoded(document, None if compact else 2) + "\n"


def line_text(record: object) -> str:
    """`record` (a record or its JSON) as JSON on one line, without a newline: a line of a
    JSON-lines file, or a text a message carries."""
    return _encoded(to_json(record), None)
