"""The one error base of Composition Lab, shared by the interpreter and ``pyapp``.

It lives in the interpreter package because the interpreter imports nothing from
``pyapp`` (``pyapp`` depends on the interpreter, never the reverse). The tree of every
error class is drawn in ``pyapp.errors``.

Every error has a stable machine-readable ``code`` and a human ``message``; a budget or
limit failure also names the ``limit``, its ``maximum`` and the offending ``value`` —
the same three fields wherever a budget is enforced (interpreter limits, route budgets,
task parameters, input files).
"""

from __future__ import annotations


class LabError(Exception):
    """Base of every typed error: ``code``, ``message``, optional limit fields."""

    code: str
    """Stable machine-readable code (what crosses boundaries and lands in traces)."""
    message: str
    """Human-readable explanation; not stable."""
    path: str | None
    """Where the problem is, when it has a place: a tree path (``$.args[0]``), a register
    (``registers.x``), a file name."""
    limit: str | None
    """For a budget or limit failure: the budget's name (``depth``, ``route_calls``, ...)."""
    maximum: int | None
    """For a budget or limit failure: the bound that was crossed."""
    value: int | str | None
    """The offending value, when there is one (a count, a name, a decimal integer)."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        path: str | None = None,
        limit: str | None = None,
        maximum: int | None = None,
        value: int | str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.path = path
        self.limit = limit
        self.maximum = maximum
        self.value = value

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    def to_json(self) -> dict[str, object]:
        """``code`` and ``message``, plus ``path``/``limit``/``maximum``/``value`` when set."""
        out: dict[str, object] = {"code": self.code, "message": self.message}
        for key in ("path", "limit", "maximum", "value"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out
