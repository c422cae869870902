"""Reading untrusted JSON documents (traces, predictions, registers, requests) safely.

Every file the command line reads and every request the page bridge decodes goes through
`loads_document` (and, for files, `read_document`), which refuses — with an `InputError`
naming the file and the problem, never a traceback, never unbounded work:

| check                          | limit                        | code                  |
|--------------------------------|------------------------------|-----------------------|
| file size                      | `MAX_DOCUMENT_BYTES`         | `input_too_large`     |
| JSON nesting (arrays, objects) | `MAX_NESTING`, before decode | `input_too_deep`      |
| an integer literal's digits    | `MAX_INTEGER_DIGITS`         | `number_out_of_range` |
| a float that is not finite     | `1e400`, `NaN`, `Infinity`   | `number_out_of_range` |
| a key repeated in an object    | —                            | `duplicate_key`       |
| not UTF-8, not JSON, no file   | —                            | `unreadable_file`     |

The nesting scan is iterative and runs before `json.loads` (whose decoder recurses), so
100,000 `[` cost one pass over the text. `check_count` bounds list lengths (trials).
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Final, NoReturn

from pyapp.errors import InputError
from pyapp.records.base import JSON

#: Largest file `reproduce`, `score`, `compare` and `exec` read: a trace of 20,000 model
#: trials is 40–160 MB (trials with 4 KB replies), so these limits leave room for it.
MAX_DOCUMENT_BYTES: Final = 512 * 1024 * 1024
#: Deepest JSON nesting of a document (a trace nests a depth-16 program about 40 deep).
MAX_NESTING: Final = 64
#: Most digits of an integer literal (a seed has at most 20; every other integer fewer).
MAX_INTEGER_DIGITS: Final = 40
#: Most trials (and interruptions) in one trace.
MAX_TRIALS: Final = 100_000

_SCAN: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}"]', re.DOTALL)


def check_nesting(text: str, where: str, maximum: int = MAX_NESTING) -> None:
    """Refuse JSON nested deeper than `maximum` (strings are skipped whole)."""
    nesting = 0
    for match in _SCAN.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            nesting += 1
            if nesting > maximum:
                raise InputError(
                    "input_too_deep",
                    f"JSON nested deeper than {maximum} levels",
                    path=where,
                    limit="nesting",
                    maximum=maximum,
                    value=nesting,
                )
        elif token in ("]", "}"):
            nesting -= 1
        elif token == '"':
            return  # an unterminated string: json.loads refuses the text


def loads_document(text: str, where: str) -> JSON:
    """Decode one JSON document under the checks of this module's table."""

    def out_of_range(message: str, value: str) -> NoReturn:
        raise InputError("number_out_of_range", message, path=where, value=value[:40])

    def integer(literal: str) -> int:
        digits = len(literal.lstrip("-"))
        if digits > MAX_INTEGER_DIGITS:
            out_of_range(f"an integer of {digits} digits (at most {MAX_INTEGER_DIGITS})", literal)
        return int(literal)

    def number(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            out_of_range(f"the number {literal[:40]} is not a finite binary64 float", literal)
        return value

    def constant(name: str) -> NoReturn:
        out_of_range(f"{name} is not a JSON number (NaN and Infinity are refused)", name)

    def unique(pairs: list[tuple[str, JSON]]) -> dict[str, JSON]:
        found: dict[str, JSON] = {}
        for key, value in pairs:
            if key in found:
                raise InputError(
                    "duplicate_key", f"the key {key[:64]!r} appears twice in an object", path=where
                )
            found[key] = value
        return found

    check_nesting(text, where)
    try:
        return json.loads(
            text,
            parse_int=integer,
            parse_float=number,
            parse_constant=constant,
            object_pairs_hook=unique,
        )
    except json.JSONDecodeError as error:
        raise InputError(
            "unreadable_file",
            f"not JSON: {error.msg} at line {error.lineno} column {error.colno}",
            path=where,
        ) from None
    except RecursionError:  # unreachable below MAX_NESTING; a guard
        raise InputError("input_too_deep", "JSON nested too deeply", path=where) from None


def read_text(path: str | Path, max_bytes: int = MAX_DOCUMENT_BYTES) -> str:
    """The UTF-8 text of the regular file at `path`, refused (`InputError`) when it is
    missing, a folder, a pipe or device, larger than `max_bytes`, or not UTF-8."""
    where = str(path)
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise InputError("unreadable_file", "not a regular file", path=where)
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as error:
        raise InputError("unreadable_file", error.strerror or str(error), path=where) from None
    except ValueError as error:  # a NUL in the name
        raise InputError("unreadable_file", str(error), path=where[:200]) from None
    if len(data) > max_bytes:
        raise InputError(
            "input_too_large",
            f"larger than {max_bytes} bytes",
            path=where,
            limit="file_bytes",
            maximum=max_bytes,
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError("unreadable_file", f"not UTF-8 (byte {error.start})", path=where) from None


def read_document(path: str | Path, max_bytes: int = MAX_DOCUMENT_BYTES) -> JSON:
    """Read and decode the JSON file at `path` (`read_text`, then `loads_document`)."""
    return loads_document(read_text(path, max_bytes), str(path))


def check_count(items: JSON, what: str, maximum: int, where: str) -> None:
    """Refuse a JSON list longer than `maximum` (`input_too_large`)."""
    if isinstance(items, list) and len(items) > maximum:
        raise InputError(
            "input_too_large",
            f"{len(items)} {what}, over the limit of {maximum}",
            path=where,
            limit=what,
            maximum=maximum,
            value=len(items),
        )
