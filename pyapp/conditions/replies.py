"""What every model condition does with one call and its reply: the Cancel token checked
before each call (`CancelToken`), the timed call whose generation time leaves out waits for
a load and the bridge (`timed_generate`, `load_wait_ns`), the failure a completion carries
before any parsing (`generation_failure`), a trial's failure record (`failure`), and
exactly one decimal integer (`parse_integer`). The whole-task runners (`run`) and the
controlled chain (`route`) share them; `reproduce` re-runs the same parsers."""

from __future__ import annotations

import re
from collections.abc import Callable

from pyapp.errors import Cancelled
from pyapp.records import Caps, Completion, Failure, ModelAdapter, now_ns

_INTEGER = re.compile(r"\s*([+-]?[0-9]+)\s*", re.ASCII)
_MAX_DIGITS = 20  # more digits than any safe integer has: refused before int() is called


class CancelToken:
    """Set by the page's Cancel button (or a test); checked before every model call.

    `poll`, when given, is asked too (the browser passes a function that reads the main
    thread's Cancel flag, so a cancel reaches a controller that is busy awaiting calls)."""

    def __init__(self, poll: Callable[[], bool] | None = None) -> None:
        self._cancelled = False
        self._poll = poll

    def cancel(self) -> None:
        self._cancelled = True

    @property
    def cancelled(self) -> bool:
        if not self._cancelled and self._poll is not None and self._poll():
            self._cancelled = True
        return self._cancelled


def parse_integer(text: str) -> tuple[int | None, Failure | None]:
    """Exactly one decimal integer (optional sign, surrounding whitespace), nothing else."""
    match = _INTEGER.fullmatch(text)
    if match is None:
        shown = text if len(text) <= 80 else text[:77] + "..."
        return None, failure(
            "invalid_integer", "parse", f"the reply is not exactly one decimal integer: {shown!r}"
        )
    sign, digits = match.group(1)[:1], match.group(1).lstrip("+-")
    significant = digits.lstrip("0") or "0"
    if len(significant) > _MAX_DIGITS:
        return None, failure(
            "integer_out_of_range",
            "parse",
            f"{len(significant)} significant digits: beyond any safe integer",
            limit="digits",
            maximum=_MAX_DIGITS,
            value=len(significant),
        )
    # int() of the significant digits only: a reply of 4,300 leading zeros and a 7 is 7,
    # never Python's int-string digit-limit ValueError.
    value = int(significant)
    return (-value if sign == "-" else value), None


def failure(
    code: str,
    stage: str,
    message: str,
    *,
    limit: str | None = None,
    maximum: int | None = None,
    value: int | str | None = None,
) -> Failure:
    """A trial's failure record; a budget failure names its `limit`, `maximum` and `value`
    (the fields every `LabError` carries, `pyapp.errors`)."""
    return Failure(
        code=code,
        stage=stage,  # type: ignore[arg-type]
        message=message,
        path=None,
        limit=limit,
        maximum=maximum,
        value=value,
    )


def generation_failure(completion: Completion) -> Failure | None:
    """The failure a completion carries before any parsing: no generation, or it broke."""
    if completion.failure is not None:
        return failure(completion.failure.code, "generation", completion.failure.message)
    if completion.finish_reason in ("timeout", "cancelled", "error"):
        return failure(
            completion.finish_reason, "generation", f"generation ended: {completion.finish_reason}"
        )
    return None


def load_wait_ns(completion: Completion, elapsed_ns: int) -> int:
    """The part of a call's wall time that is not the model's: waiting for a pending load or
    reload (the client's `timing.load_wait_ms`, kept as `completion.load_wait_ms`) and the
    bridge (`completion.bridge_ms`), at most the call."""
    waits = [w for w in (completion.load_wait_ms, completion.bridge_ms) if w is not None and w > 0]
    return min(elapsed_ns, int(sum(waits) * 1e6))


async def timed_generate(
    adapter: ModelAdapter, text: str, caps: Caps, cancel: CancelToken | None
) -> tuple[Completion, float, int]:
    """One call: its completion, its generation time (the call's wall time less any wait for
    a load or reload and the bridge's share, never the model's cost) and those in ns."""
    if cancel is not None and cancel.cancelled:
        raise Cancelled
    start = now_ns()
    completion = await adapter.generate(text, caps)
    elapsed = now_ns() - start
    wait = load_wait_ns(completion, elapsed)
    return completion, (elapsed - wait) / 1e6, wait
