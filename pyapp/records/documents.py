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
| not a regular file             | FIFO, device, folder, socket | `unreadable_file`     |
| a lone UTF-16 surrogate        | `"\\ud800"` in a string      | `lone_surrogate`      |
| one line of a JSON-lines file  | `MAX_LINE_BYTES`             | `input_too_large`     |
| lines of a JSON-lines file     | `MAX_TRIALS` (by default)    | `input_too_large`     |

This is the one reader for every file a command reads from a stranger: traces, predictions,
registers, a run folder's `run.json`, the sweep's `trials.jsonl` (streamed by `read_lines`,
bounded per line and in count), ledgers. A large document can be read a value at a time
(`stream_object`: the report's `trace.json`, each trial handed over as it is decoded, under
the same checks; anything it refuses is left to `read_document` to name). `open_regular` is
the gate: it checks with `os.stat` that the path is a regular file *before* opening it and
opens with `O_NONBLOCK`, so a FIFO can neither hang the open nor be read; a device
(`/dev/zero`) is refused before one byte is read; the size comes from `fstat` on the opened
file (a swapped file is checked again) and the read itself stops at the limit. Text must be
strict UTF-8. A JSON escape that decodes to a lone surrogate (`"\\ud800"`) is refused,
naming the field, so no writer fails later with `UnicodeEncodeError`.

The nesting scan is iterative and runs before `json.loads` (whose decoder recurses), so
100,000 `[` cost one pass over the text. `check_count` bounds list lengths (trials).
Typed validation (`from_json` into the records) follows the read, before any use.
"""

from __future__ import annotations

import codecs
import itertools
import json
import math
import os
import re
import stat
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO, Final, NoReturn

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
#: Longest line of a JSON-lines file (`trials.jsonl`: one trial, whose replies are capped at
#: a few KB each, is far below this).
MAX_LINE_BYTES: Final = 4 * 1024 * 1024

#: Bytes read at a time when a document is streamed (`stream_object`).
STREAM_CHUNK_BYTES: Final = 1024 * 1024

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


_STRING: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET: Final = re.compile(r"[^\[\]{}]+")
_ALL_DIGITS_ZERO: Final = str.maketrans("123456789", "000000000")
_NEEDS_HOOKS: Final = (
    "0" * (MAX_INTEGER_DIGITS + 1),  # an integer (or a mantissa) too long
    *(e + sign + "000" for e in "eE" for sign in ("", "+", "-")),  # an exponent of 3 digits
    "NaN",
    "Infinity",
)


def plain(text: str, maximum: int = MAX_NESTING) -> bool:
    """Whether `text` may be decoded without the per-value hooks: outside its strings there
    is no integer of more than `MAX_INTEGER_DIGITS` digits, no exponent of 3 digits or more,
    no NaN or Infinity (so every number decodes finite and short), and its brackets nest at
    most `maximum` deep. Every step is a C-speed pass over the text (the brackets left once
    the strings are removed lose one level of innermost pairs per pass)."""
    outside = _STRING.sub('""', text)
    flat = outside.translate(_ALL_DIGITS_ZERO)  # C-speed: every digit is "0"
    if any(needle in flat for needle in _NEEDS_HOOKS):
        return False
    brackets = _NOT_BRACKET.sub("", outside).replace("{", "[").replace("}", "]")
    for _ in range(maximum):
        if not brackets:
            return True
        brackets = brackets.replace("[]", "")
    return not brackets


def loads_document(text: str, where: str, *, fast: bool = True) -> JSON:
    """Decode one JSON document under the checks of this module's table.

    A document that is `plain` (every trace and predictions document this project writes)
    is decoded by the C decoder with one light hook (repeated keys); any other goes through
    the iterative nesting scan and a hook per number. Both refuse exactly the same
    documents (`tests/test_fuzz.py` checks it); `fast=False` forces the second."""

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
        found: dict[str, JSON] = dict(pairs)
        if len(found) == len(pairs):
            return found
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise InputError(
                    "duplicate_key", f"the key {key[:64]!r} appears twice in an object", path=where
                )
            seen.add(key)
        return found  # unreachable: a shorter dict means a repeated key

    try:
        if fast and plain(text):
            document: JSON = json.loads(text, object_pairs_hook=unique)
        else:
            check_nesting(text, where)
            document = json.loads(
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
    if _ESCAPED_SURROGATE.search(text) or (not text.isascii() and not _is_text(text)):
        check_surrogates(document, where)
    return document


_KINDS: Final = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _not_regular(mode: int) -> str | None:
    """What a file of `mode` is, when it is not a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _too_large(
    where: str, maximum: int, what: str = "bytes", value: int | None = None
) -> InputError:
    return InputError(
        "input_too_large",
        f"larger than {maximum} {what}" if value is None else f"{value} {what}, over {maximum}",
        path=where,
        limit="file_bytes" if what == "bytes" else what,
        maximum=maximum,
        value=value,
    )


def open_regular(path: str | Path, max_bytes: int = MAX_DOCUMENT_BYTES) -> BinaryIO:
    """The regular file at `path`, opened for reading in binary; `InputError` when it is
    missing, not a regular file (checked before opening, and again on the opened file), or
    larger than `max_bytes`. Opened with `O_NONBLOCK`: a FIFO swapped in never blocks."""
    where = str(path)
    fd = -1
    try:
        kind = _not_regular(os.stat(path).st_mode)
        if kind is not None:
            raise InputError("unreadable_file", f"not a regular file: {kind}", path=where)
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
        opened = os.fstat(fd)
        kind = _not_regular(opened.st_mode)
        if kind is not None:
            raise InputError("unreadable_file", f"not a regular file: {kind}", path=where)
        if opened.st_size > max_bytes:
            raise _too_large(where, max_bytes)
        handle = os.fdopen(fd, "rb")
        fd = -1
        return handle
    except OSError as error:
        raise InputError("unreadable_file", error.strerror or str(error), path=where) from None
    except ValueError as error:  # a NUL in the name
        raise InputError("unreadable_file", str(error)[:200], path=where[:200]) from None
    finally:
        if fd >= 0:
            os.close(fd)


def _decode(data: bytes, where: str, line: int | None = None) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        at = f"line {line}, byte {error.start}" if line is not None else f"byte {error.start}"
        raise InputError("unreadable_file", f"not UTF-8 ({at})", path=where) from None


def read_text(path: str | Path, max_bytes: int = MAX_DOCUMENT_BYTES) -> str:
    """The UTF-8 text of the regular file at `path`, refused (`InputError`) when it is
    missing, a folder, a pipe or device, larger than `max_bytes`, or not UTF-8."""
    where = str(path)
    with open_regular(path, max_bytes) as handle:
        try:
            data = handle.read(max_bytes + 1)
        except OSError as error:
            raise InputError("unreadable_file", error.strerror or str(error), path=where) from None
    if len(data) > max_bytes:  # it grew after the check
        raise _too_large(where, max_bytes)
    return _decode(data, where)


def read_lines(
    path: str | Path,
    max_lines: int = MAX_TRIALS,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_bytes: int = MAX_DOCUMENT_BYTES,
) -> Iterator[tuple[str | None, bool]]:
    """The lines of a JSON-lines file, streamed: `(text, ended)` per line, `text` without
    its newline; `ended` is false only for a last line with no newline after it (a write cut
    short), whose text is None when it is not even UTF-8. Refused (`InputError`) like
    `read_text`, and when a line is longer than `max_line_bytes` or there are more than
    `max_lines` non-empty lines. Memory: one line at a time."""
    where = str(path)
    count = 0
    with open_regular(path, max_bytes) as handle:
        for number in itertools.count(1):
            try:
                raw = handle.readline(max_line_bytes + 1)
            except OSError as error:
                message = error.strerror or str(error)
                raise InputError("unreadable_file", message, path=where) from None
            if not raw:
                return
            ended = raw.endswith(b"\n")
            if len(raw) > max_line_bytes and not (ended and len(raw) == max_line_bytes + 1):
                raise _too_large(f"{where}:{number}", max_line_bytes, "line_bytes")
            body = raw[:-1] if ended else raw
            if body.strip():
                count += 1
                if count > max_lines:
                    raise _too_large(where, max_lines, "lines", count)
            if not ended:
                try:
                    yield body.decode("utf-8"), False
                except UnicodeDecodeError:
                    yield None, False
                return
            yield _decode(body, where, number), True


_ESCAPED_SURROGATE: Final = re.compile(r"\\u[dD][89a-fA-F]")


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_surrogates(value: JSON, where: str) -> None:
    """Refuse a decoded document holding a lone UTF-16 surrogate in a string or a key
    (`lone_surrogate`, naming the field): it is not text, and every writer would fail on it."""
    stack: list[tuple[JSON, str]] = [(value, "$")]
    while stack:
        item, at = stack.pop()
        if isinstance(item, str):
            bad = not _is_text(item)
        elif isinstance(item, dict):
            bad = False
            for key, inner in item.items():
                if not _is_text(key):
                    bad, at = True, f"{at} (a key)"
                    break
                stack.append((inner, f"{at}.{key}"))
        elif isinstance(item, list):
            bad = False
            stack.extend((inner, f"{at}[{i}]") for i, inner in enumerate(item))
        else:
            bad = False
        if bad:
            raise InputError(
                "lone_surrogate",
                f"{at[:120].encode('utf-8', 'backslashreplace').decode()}: a string holds a "
                "lone UTF-16 surrogate (such as \\ud800), which is not text",
                path=where,
            )


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


# ---- a large document, a value at a time ---------------------------------------------------

_BLANK: Final = re.compile(r"[ \t\n\r]*")


class _Cursor:
    """A window over a file's text: what is not decoded yet, refilled a chunk at a time."""

    def __init__(self, handle: BinaryIO, max_bytes: int, chunk_bytes: int) -> None:
        self.handle, self.max_bytes, self.chunk_bytes = handle, max_bytes, chunk_bytes
        self.decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.text, self.at, self.read, self.ended = "", 0, 0, False
        self.largest = 0
        """The longest the window has been (characters): what the tests bound."""

    def fill(self) -> bool:
        """One more chunk in the window; False at the end of the file."""
        if self.ended:
            return False
        data = self.handle.read(self.chunk_bytes)
        self.read += len(data)
        if self.read > self.max_bytes:
            raise ValueError("the file grew past its limit")
        self.ended = not data
        self.text = self.text[self.at :] + self.decoder.decode(data, final=self.ended)
        self.at = 0
        self.largest = max(self.largest, len(self.text))
        return not self.ended

    def next_char(self) -> str:
        """The next character that is not blank ("" at the end), not consumed."""
        while True:
            self.at = _BLANK.match(self.text, self.at).end()  # type: ignore[union-attr]
            if self.at < len(self.text) or not self.fill():
                return self.text[self.at : self.at + 1]

    def take(self, char: str) -> None:
        if self.next_char() != char:
            raise ValueError(f"expected {char!r}")
        self.at += 1

    def value(self, decoders: tuple[json.JSONDecoder, json.JSONDecoder], nesting: int) -> JSON:
        """The next JSON value, under `loads_document`'s checks (`InputError`, `ValueError`
        when it is not JSON); the window grows until the value fits in it. As in
        `loads_document`, a `plain` value is decoded by the C decoder alone, any other again
        with a hook per number (`decoders`: the two)."""
        decoder, strict = decoders
        self.next_char()
        while True:
            if not self.ended and len(self.text) - self.at < self.chunk_bytes // 2:
                self.fill()
                continue
            try:
                value, end = decoder.raw_decode(self.text, self.at)
            except json.JSONDecodeError:
                if self.fill():
                    continue
                raise
            if end == len(self.text) and self.fill():  # a number may go on in the next chunk
                continue
            break
        text = self.text[self.at : end]
        self.at = end
        if not plain(text, nesting):
            check_nesting(text, "", nesting)
            value = strict.decode(text)
        if _ESCAPED_SURROGATE.search(text) or (not text.isascii() and not _is_text(text)):
            check_surrogates(value, "")
        return value


def _decoders() -> tuple[json.JSONDecoder, json.JSONDecoder]:
    """`loads_document`'s two decoders: repeated keys refused, and with it numbers and
    constants checked by hooks."""

    def integer(literal: str) -> int:
        if len(literal.lstrip("-")) > MAX_INTEGER_DIGITS:
            raise ValueError("an integer too long")
        return int(literal)

    def number(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            raise ValueError("a number that is not finite")
        return value

    def constant(name: str) -> NoReturn:
        raise ValueError(f"{name} is not a JSON number")

    def unique(pairs: list[tuple[str, JSON]]) -> dict[str, JSON]:
        found: dict[str, JSON] = dict(pairs)
        if len(found) != len(pairs):
            raise ValueError("a repeated key")
        return found

    return json.JSONDecoder(object_pairs_hook=unique), json.JSONDecoder(
        parse_int=integer, parse_float=number, parse_constant=constant, object_pairs_hook=unique
    )


def stream_object(
    path: str | Path,
    items: Mapping[str, Callable[[JSON, str, dict[str, Any]], Any]],
    max_bytes: int = MAX_DOCUMENT_BYTES,
    chunk_bytes: int | None = None,
) -> tuple[dict[str, Any], int] | None:
    """A JSON object document read one top-level value at a time, and the arrays named in
    `items` one item at a time: each item is decoded under `loads_document`'s checks and
    handed at once to its function with where it is (`$.trials[3]`) and the members read
    before the array (the object so far), and the object returned
    holds the list of what the function returned in the array's place. Returns the object
    and the longest the reading window grew (characters).

    Memory: the largest top-level value outside the named arrays, one item and a chunk — a
    100,000-trial trace is never held as text or as one JSON tree. Refused like `read_text`
    before anything is decoded (`InputError`: not a regular file, too large). None when
    anything else is wrong (not UTF-8, not JSON, over a JSON limit, not an object whose named
    values are arrays): the caller then reads the file whole with `read_document`, which
    names the refusal exactly as it always has. An exception raised by a function passes
    through. `chunk_bytes`: default `STREAM_CHUNK_BYTES`."""
    decoders = _decoders()
    with open_regular(path, max_bytes) as handle:
        cursor = _Cursor(handle, max_bytes, chunk_bytes or STREAM_CHUNK_BYTES)
        try:
            document = _stream_members(cursor, decoders, items)
        except (InputError, ValueError, RecursionError, OSError):
            return None  # (UnicodeDecodeError and json.JSONDecodeError are ValueErrors)
    return document, cursor.largest


def _stream_members(
    cursor: _Cursor,
    decoder: tuple[json.JSONDecoder, json.JSONDecoder],
    items: Mapping[str, Callable[[JSON, str, dict[str, Any]], Any]],
) -> dict[str, Any]:
    document: dict[str, Any] = {}
    cursor.take("{")
    if cursor.next_char() == "}":
        cursor.at += 1
    else:
        while True:
            key = cursor.value(decoder, 1)
            if not isinstance(key, str) or key in document:
                raise ValueError("a key that is not a string, or a repeated key")
            cursor.take(":")
            if key in items:
                document[key] = _stream_items(cursor, decoder, key, items[key], document)
            else:
                document[key] = cursor.value(decoder, MAX_NESTING - 1)
            if cursor.next_char() == "}":
                cursor.at += 1
                break
            cursor.take(",")
    if cursor.next_char() != "":
        raise ValueError("text after the document")
    return document


def _stream_items(
    cursor: _Cursor,
    decoder: tuple[json.JSONDecoder, json.JSONDecoder],
    key: str,
    each: Callable[[JSON, str, dict[str, Any]], Any],
    before: dict[str, Any],
) -> list[Any]:
    out: list[Any] = []
    cursor.take("[")
    if cursor.next_char() == "]":
        cursor.at += 1
        return out
    while True:
        out.append(each(cursor.value(decoder, MAX_NESTING - 2), f"$.{key}[{len(out)}]", before))
        if cursor.next_char() == "]":
            cursor.at += 1
            return out
        cursor.take(",")
