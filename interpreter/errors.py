"""The one error type of the register-tree interpreter, and its stable codes.

Every failure of parsing, validation or execution -- whatever the input -- is a
:class:`ProgramError`. Nothing else escapes the public functions on hostile input
(no ``RecursionError``, ``ValueError``, ``TypeError``, ``MemoryError``); ``run()``
never raises at all. The ``code`` is what crosses the worker boundary and lands in
traces, so codes are stable; messages are for people and may change.

Hierarchy (the project's whole tree is drawn in ``pyapp.errors``)::

    Exception
    └── LabError(code, message, path, limit, maximum, value)   interpreter.lab_error
        └── ProgramError

Fields: ``path`` is a JSONPath-like location in the tree (``$``, ``$.args[0]``,
``$.args[1].args[0]``) or ``registers.NAME``; ``limit`` names the ``Limits`` field
without its ``max_`` prefix; ``maximum`` is that field's value; ``value`` is the
offending value (long strings are truncated; integers outside the safe domain are
decimal strings, because a JSON reader in JavaScript would round them).

Where they are made: each failure is raised in one place; a value of the wrong type
(not text, a non-string ``op``/``ref``, a non-object node, non-int registers or
limits) goes through the one helper :func:`mistyped`, and every crossed limit
through ``Limits.exceeded``, so the same failure always has the same fields.

Codes (the single list; ``ERROR_CODES`` holds the same names)::

    code                    meaning                                        fields set
    ----------------------  ---------------------------------------------  -----------------------
    not_text                the program is not a ``str``                   value: type name
    not_json                not exactly one JSON value: prose, code        --
                            fences, trailing text, bad syntax, empty
    duplicate_key           a JSON object repeats a key                    value: the key
    literal_not_allowed     a number, NaN/Infinity, true/false, null or    path (when known),
                            string where a node belongs (no literals)      value: the kind
    wrong_shape             a node is not exactly ``{"op","args"}`` or     path, value (if any)
                            ``{"ref"}``; ``args`` not a list of exactly
                            two; ``op``/``ref`` not a string
    unknown_op              ``op`` is not add, sub or mul                  path, value: the op
    invalid_register_name   a name does not match                          path, value: the name
                            ``^[A-Za-z_][A-Za-z0-9_]{0,31}$``
    limit_exceeded          a ``Limits`` bound was crossed: output_bytes,  limit, maximum, value,
                            depth, nodes, operations or registers          path (when known)
    invalid_register_value  a register value is not an ``int`` (``bool``   path: registers.NAME,
                            refused), or registers are not a mapping       value: type name
    unsafe_integer          a register or intermediate is not finite or    path, value: decimal
                            outside ``|v| <= 2**53 - 1``                   string of the exact int
                                                                           (``<integer of N
                                                                           bits>`` past 1,000)
    unknown_register        a ``ref`` names a register not supplied        path, value: the name
    cross_check_mismatch    binary64 and exact ``int`` disagree            path, value: exact int
                            (unreachable while the safe bound holds)       as a decimal string
    invalid_limits          a ``Limits`` field is not a non-negative       limit, value
                            ``int`` (``max_depth``: at least 1)
    internal_error          an unexpected exception inside ``run()``       value: exception type
                            (unreachable; a guard)                         name
"""

from __future__ import annotations

from typing import Final

from interpreter.lab_error import LabError

ERROR_CODES: Final[tuple[str, ...]] = (
    "not_text",
    "not_json",
    "duplicate_key",
    "literal_not_allowed",
    "wrong_shape",
    "unknown_op",
    "invalid_register_name",
    "limit_exceeded",
    "invalid_register_value",
    "unsafe_integer",
    "unknown_register",
    "cross_check_mismatch",
    "invalid_limits",
    "internal_error",
)

#: Strings quoted back in errors (names, keys, ops) are cut to this many characters.
_QUOTE_MAX: Final = 64


class ProgramError(LabError):
    """A typed, reported failure of a register-tree program: never a crash.

    Its fields are the base's (``interpreter.lab_error``): ``code`` (one of
    ``ERROR_CODES``), ``message``, ``path`` (``$.args[0]`` or ``registers.x``), ``limit``
    (for ``limit_exceeded``/``invalid_limits``: the limit's name), ``maximum`` (the bound
    crossed) and ``value`` (a count, a name, a type name or a decimal integer)."""

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def to_json(self) -> dict[str, object]:
        """All six fields as a JSON-ready dict (absent fields are ``None``)."""
        return {
            "code": self.code,
            "message": self.message,
            "path": self.path,
            "limit": self.limit,
            "maximum": self.maximum,
            "value": self.value,
        }


def mistyped(
    code: str, what: str, obj: object, *, path: str | None = None, limit: str | None = None
) -> ProgramError:
    """The error for a value of the wrong type: ``"<what>, not <type>"``, whose ``value``
    is the type's name (never the value itself, which may be huge or hostile)."""
    kind = type(obj).__name__
    return ProgramError(code, f"{what}, not {kind}", path=path, limit=limit, value=kind)


def quote(text: str) -> str:
    """``text`` cut to a short length, safe to put into an error's ``value``."""
    if len(text) <= _QUOTE_MAX:
        return text
    return text[:_QUOTE_MAX] + f"...(+{len(text) - _QUOTE_MAX} chars)"


def integer_text(value: int) -> str:
    """A decimal string for ``value``, or a size description when it is enormous.

    ``str()`` of an int with more than 4,300 digits raises ``ValueError`` in CPython,
    so a hostile register value must never reach it.
    """
    bits = abs(value).bit_length()
    if bits <= 1000:
        return str(value)
    sign = "-" if value < 0 else ""
    return f"{sign}<integer of {bits} bits>"
