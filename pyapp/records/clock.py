"""The clock behind every timing in a trace, and its resolution.

A measured zero can mean a phase was shorter than the clock's resolution (browsers coarsen
their clocks deliberately), so every trace records both the declared resolution and the
smallest non-zero step actually observed between successive reads.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

CLOCK_NAME = "time.perf_counter_ns"


@dataclass(frozen=True)
class ClockInfo:
    """Which clock timed the phases, and how finely it ticks."""

    name: str
    """The Python clock function used for every timing in this trace."""
    declared_resolution_ms: float
    """Resolution the runtime declares (`time.get_clock_info`), in milliseconds."""
    measured_resolution_ms: float | None
    """Smallest non-zero difference seen between successive reads (null if none was seen)."""


VIRTUAL_CLOCK = ClockInfo(
    name="synthetic virtual clock (advanced only by the synthetic cost model)",
    declared_resolution_ms=1e-6,
    measured_resolution_ms=None,
)
"""The clock of a synthetic model's run (`pyapp.synthetic.adapter.VirtualClock`): a trace
timed by it was made by a synthetic model, whatever its model record says
(`pyapp.records.evidence.derived_evidence`)."""

_source: Callable[[], int] = time.perf_counter_ns


def now_ns() -> int:
    """The current reading of the clock in force (`time.perf_counter_ns` unless a
    virtual clock was installed with `using`)."""
    return _source()


@contextmanager
def using(source: Callable[[], int]) -> Iterator[None]:
    """Time everything inside the block with `source` (nanoseconds) instead of the real
    clock. Synthetic validation runs install a virtual clock that only their cost model
    advances, so the trial timings they record are the cost model's, not the host's."""
    global _source
    previous, _source = _source, source
    try:
        yield
    finally:
        _source = previous


def elapsed_ms(start_ns: int, end_ns: int) -> float:
    return (end_ns - start_ns) / 1e6


def measure_clock(samples: int = 2000) -> ClockInfo:
    smallest: int | None = None
    previous = time.perf_counter_ns()
    for _ in range(samples):
        current = time.perf_counter_ns()
        step = current - previous
        if step > 0 and (smallest is None or step < smallest):
            smallest = step
        previous = current
    declared = time.get_clock_info("perf_counter").resolution * 1e3
    return ClockInfo(
        name=CLOCK_NAME,
        declared_resolution_ms=declared,
        measured_resolution_ms=None if smallest is None else smallest / 1e6,
    )
