"""Strict parsing of a model's whole output into a validated ``Program``.

The checks run cheapest and most protective first:

1. the output is a ``str`` (``not_text``);
2. its UTF-8 length is within ``max_output_bytes`` (``limit_exceeded``, output_bytes);
3. a pre-scan of bracket nesting outside strings refuses anything nested deeper than
   a tree of ``max_depth`` needs (a tree of depth d nests JSON 2d - 1 deep), *before*
   ``json.loads`` -- whose decoder recurses -- ever sees it;
4. ``json.loads`` of the whole text (surrounding JSON whitespace allowed, nothing
   else: prose, code fences and trailing text are ``not_json``), with hooks that
   refuse duplicate keys and every number *without converting it* (a 10,000-digit
   literal is never turned into an ``int``);
5. ``program_from_json``: shape, ops, names and counts, once, into a ``Program``.
"""

from __future__ import annotations

import json
import re
from typing import Final, NoReturn

from interpreter.errors import ProgramError, mistyped, quote
from interpreter.limits import DEFAULT_LIMITS, Limits
from interpreter.program import Program, program_from_json

#: A complete JSON string (skipped whole), a bracket, or a lone quote that opens a
#: string never closed (the scan stops there; ``json.loads`` will refuse the text).
_SCAN: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}"]', re.DOTALL)

#: Every byte but brackets, quotes and backslashes; and ``{}`` folded onto ``[]``.
_NOT_STRUCTURE: Final = bytes(set(range(256)) - set(b'[]{}"\\'))
_FOLD: Final = bytes.maketrans(b"{}", b"[]")
#: Peeling rounds tried before the exact scan decides (keeps a huge ``max_depth`` linear).
_ROUNDS: Final = 64


def _shallow(data: bytes, limits: Limits) -> bool:
    """True when the UTF-8 text is certainly nested no deeper than ``2 * max_depth - 1``.

    The common case, at C speed: with no backslash, strings are the spans between
    quote pairs; when none holds a bracket, deleting every other byte leaves ``""``
    per string and the brackets, and peeling innermost ``[]`` pairs empties a
    balanced sequence in exactly its nesting depth of rounds. Anything else (escapes,
    brackets in strings, unbalanced or too deep) is left to the exact scan.
    """
    brackets = data.translate(_FOLD, _NOT_STRUCTURE).replace(b'""', b"")
    if b'"' in brackets or b"\\" in brackets:
        return False
    for _ in range(min(2 * limits.max_depth - 1, _ROUNDS)):
        if not brackets:
            return True
        peeled = brackets.replace(b"[]", b"")
        if len(peeled) == len(brackets):
            return False
        brackets = peeled
    return not brackets


def _check_nesting(text: str, limits: Limits) -> None:
    """Refuse JSON nesting deeper than a tree of ``max_depth`` can need.

    Nesting ``n`` implies a tree of depth at least ``n // 2 + 1`` (objects and
    ``args`` lists alternate), so this refuses exactly nesting > 2 * max_depth - 1.
    Iterative and stops at the first breach: a 16 KB run of ``[`` costs 32 steps.
    """
    nesting = 0
    for match in _SCAN.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            nesting += 1
            if nesting // 2 + 1 > limits.max_depth:
                raise limits.exceeded("depth", nesting // 2 + 1)
        elif token in ("]", "}"):
            nesting -= 1
        elif token == '"':
            return


def _refuse_number(text: str) -> NoReturn:
    raise ProgramError(
        "literal_not_allowed",
        f"number literal {quote(text)!r}: the language has no literals",
        value="number",
    )


def _refuse_constant(text: str) -> NoReturn:
    raise ProgramError(
        "literal_not_allowed",
        f"{text} is not allowed: the language has no literals",
        value=text,
    )


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    unique = dict(pairs)
    if len(unique) < len(pairs):  # name the first key that repeats
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ProgramError(
                    "duplicate_key",
                    f"duplicate key {quote(key)!r} in an object",
                    value=quote(key),
                )
            seen.add(key)
    return unique


def parse_program(text: str, limits: Limits = DEFAULT_LIMITS) -> Program:
    """Parse a model's whole output as exactly one register tree, validated into a
    ``Program``, or raise ``ProgramError``."""
    if not isinstance(text, str):
        raise mistyped("not_text", "a program is text (str)", text)
    # Lone surrogates (possible in a JavaScript string) count as 3 bytes, as a
    # browser's WTF-8 would, instead of failing to encode.
    data = text.encode("utf-8", "surrogatepass")
    if len(data) > limits.max_output_bytes:
        raise limits.exceeded("output_bytes", len(data))
    if not _shallow(data, limits):
        _check_nesting(text, limits)
    try:
        decoded: object = json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_int=_refuse_number,
            parse_float=_refuse_number,
            parse_constant=_refuse_constant,
        )
    except json.JSONDecodeError as error:
        raise ProgramError(
            "not_json",
            f"the output must be exactly one JSON tree: {error.msg} at line {error.lineno}"
            f" column {error.colno}",
        ) from None
    except RecursionError:  # unreachable after _check_nesting, unless max_depth is huge
        raise ProgramError(
            "limit_exceeded",
            "JSON nesting too deep to decode",
            limit="depth",
            maximum=limits.max_depth,
        ) from None
    return program_from_json(decoded, limits)
