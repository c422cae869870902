"""The specification of a synthetic model: error sources composed as data.

A synthetic model answers one primitive *step* at a time (a chain call is one step; a
model-only answer is the reference tree computed step by step; a model-program tree is
written node by node). A specification composes these error sources (each a section of a
TOML or JSON file, `pyapp.synthetic.language`; absent = off):

- `rates` (`p_add`, `p_sub`, `p_mul`): the base P(step wrong) per op;
- `size` (`slope`, `pivot_digits`): the base rate's log-odds + slope·(D − pivot_digits),
  D the digit count of the larger operand the step sees;
- `carry` (`p_carry`): add/sub steps drop each carry or borrow with probability p_carry;
- `depth` (`from_step`, `p_deep`): the k-th and later step *within one generation* is wrong
  with p_deep (k = from_step; a chain call computes one step, so chains and primitives never
  reach k ≥ 2);
- `encoding` (`affected`, `p_encoding`): a step of a task rendered in `affected` (json or
  prose) is wrong with p_encoding (assumption A4);
- `format` (`p_unparseable`): a whole reply is prose (neither an integer nor a program),
  once per generation;
- `program` (`p_deviate`): a written program node deviates from the reference (its op
  corrupted), on top of the step rule;
- `correlation` (`rho`): with probability rho a trial's steps share one latent draw;
- `cancellation` (`cancel`): after a wrong step the next compensates, probability cancel;
- `cost` (`call_ms`, `step_ms`, `digit_ms`): one generation costs call_ms + Σ per step
  (step_ms + digit_ms·digits of the step's output).

A step is right only if it survives every source that applies to it: P(step wrong) =
1 − (1 − p_rate′)·(1 − p_carry)^carries·(1 − p_encoding)·(1 − p_deep), with p_rate′ the base
rate after the size effect. A *compensating* step returns the value the step would have had
on the exact operands: locally wrong, but the composition is back on its exact track.
Input tokens are ⌈prompt bytes / 4⌉ and output tokens ⌈reply bytes / 4⌉.

Every record below validates itself when built (range, finiteness and meaning: a section
that would change nothing is refused, naming its key), so a file, the `NAME:key=value`
shorthand and a trace's copy all pass the one validator.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal

from interpreter import LabError

_OPTIONAL: dict[str, Any] = {"optional_on_read": True}
MAX_COST_MS = 10_000.0
"""Largest cost-model parameter (ms): ten seconds per call, step or digit is far beyond any
real model's cost, and keeps the virtual clock's nanoseconds far from overflow."""
MAX_SLOPE = 5.0
"""Largest |slope| (log-odds per digit): at 5 the error rate goes from ~0 to ~1 within two
digits; a steeper slope is a step function and better written as two structures."""
MAX_PIVOT = 16.0
"""Safe integers have at most 16 digits: a pivot beyond that is never reached."""
MAX_SEED = 2**63 - 1


class SpecError(LabError, ValueError):
    """A synthetic model specification that cannot be used (code `bad_synthetic_spec`);
    the message names the key (`section.key: ...`)."""

    def __init__(self, message: str) -> None:
        super().__init__("bad_synthetic_spec", message)


def _number(where: str, value: float, low: float, high: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpecError(f"{where}: expected a number, got {value!r}")
    if not math.isfinite(value):
        raise SpecError(f"{where}: {value} is not a finite number")
    if not low <= value <= high:
        raise SpecError(f"{where}: {value} is out of range [{low:g}, {high:g}]")


def _probability(where: str, value: float, *, zero_ok: bool = False) -> None:
    _number(where, value, 0.0, 1.0)
    if value == 0 and not zero_ok:
        raise SpecError(f"{where}: 0 has no effect; leave the section out instead")


@dataclass(frozen=True)
class OpRates:
    """Base probability that a step of each op is wrong."""

    p_add: float = 0.05
    """P(an add step is wrong) (at `pivot_digits` when `size` is on)."""
    p_sub: float = 0.08
    """P(a sub step is wrong)."""
    p_mul: float = 0.15
    """P(a mul step is wrong)."""

    def __post_init__(self) -> None:
        for name in ("p_add", "p_sub", "p_mul"):
            _probability(f"rates.{name}", getattr(self, name), zero_ok=True)

    def of(self, op: str) -> float:
        return {"add": self.p_add, "sub": self.p_sub, "mul": self.p_mul}[op]


@dataclass(frozen=True)
class SizeEffect:
    """The base rate's log-odds grow with the larger operand's digit count."""

    slope: float = 0.9
    """Increase of the log-odds of a wrong step per digit of the larger operand."""
    pivot_digits: float = 4.0
    """The digit count at which P(wrong) equals the base rate."""

    def __post_init__(self) -> None:
        _number("size.slope", self.slope, -MAX_SLOPE, MAX_SLOPE)
        if self.slope == 0:
            raise SpecError("size.slope: 0 has no effect; leave the section out instead")
        _number("size.pivot_digits", self.pivot_digits, 1.0, MAX_PIVOT)


@dataclass(frozen=True)
class CarryEffect:
    """Add and sub steps go wrong at their carries and borrows."""

    p_carry: float = 0.1
    """P(one carry or borrow is dropped); a step with c carries survives with (1 − p)^c."""

    def __post_init__(self) -> None:
        _probability("carry.p_carry", self.p_carry)


@dataclass(frozen=True)
class DepthEffect:
    """Late steps of one generation go wrong: the failure of composition itself."""

    from_step: int = 3
    """k: the k-th and every later step computed within one generation is affected."""
    p_deep: float = 0.5
    """P(an affected step is wrong)."""

    def __post_init__(self) -> None:
        if isinstance(self.from_step, bool) or not isinstance(self.from_step, int):
            raise SpecError(f"depth.from_step: expected an integer, got {self.from_step!r}")
        if not 1 <= self.from_step <= 63:
            raise SpecError(f"depth.from_step: {self.from_step} is out of range [1, 63]")
        _probability("depth.p_deep", self.p_deep)


@dataclass(frozen=True)
class EncodingEffect:
    """Steps of tasks rendered in one encoding go wrong more often (assumption A4)."""

    affected: Literal["json", "prose"] = "prose"
    """The encoding that hurts."""
    p_encoding: float = 0.3
    """P(a step of a task in that encoding is wrong), on top of the other sources."""

    def __post_init__(self) -> None:
        if self.affected not in ("json", "prose"):
            raise SpecError(f"encoding.affected: {self.affected!r} is not json or prose")
        _probability("encoding.p_encoding", self.p_encoding)


@dataclass(frozen=True)
class FormatEffect:
    """Whole replies that cannot be parsed."""

    p_unparseable: float = 0.1
    """P(a generation's reply is prose instead of an integer or a program)."""

    def __post_init__(self) -> None:
        _probability("format.p_unparseable", self.p_unparseable)


@dataclass(frozen=True)
class ProgramEffect:
    """A written program that deviates from the reference."""

    p_deviate: float = 0.2
    """P(a written node's op is corrupted), on top of the step rule (model-program only)."""

    def __post_init__(self) -> None:
        _probability("program.p_deviate", self.p_deviate)


@dataclass(frozen=True)
class Correlation:
    """Within-trial correlation of step errors."""

    rho: float = 0.6
    """P(all steps of a trial share one latent uniform draw)."""

    def __post_init__(self) -> None:
        _probability("correlation.rho", self.rho)


@dataclass(frozen=True)
class Cancellation:
    """Errors that cancel: the step after a wrong one compensates."""

    cancel: float = 0.8
    """P(the step after a wrong one returns the exact-track value)."""

    def __post_init__(self) -> None:
        _probability("cancellation.cancel", self.cancel)


@dataclass(frozen=True)
class CostModel:
    """The synthetic clock, in milliseconds."""

    call_ms: float = 40.0
    """Milliseconds per generation call."""
    step_ms: float = 12.0
    """Milliseconds per step computed (or tree node written)."""
    digit_ms: float = 3.0
    """Milliseconds per digit of a computed step's output."""

    def __post_init__(self) -> None:
        for name in ("call_ms", "step_ms", "digit_ms"):
            _number(f"cost.{name}", getattr(self, name), 0.0, MAX_COST_MS)


SECTIONS: tuple[str, ...] = (
    "rates",
    "size",
    "carry",
    "depth",
    "encoding",
    "format",
    "program",
    "correlation",
    "cancellation",
    "cost",
)


@dataclass(frozen=True)
class SyntheticSpec:
    """A synthetic model: its name, seed, error sources and cost model (see the module)."""

    structure: str
    """The structure's name (a shipped one, `pyapp/synthetic/structures/NAME.toml`, or the
    name a file gives itself); lower-case letters, digits and `-`."""
    note: str = field(default="", metadata=_OPTIONAL)
    """What the structure is, in one line."""
    seed: int = field(default=0, metadata=_OPTIONAL)
    """Model seed: part of the specification, so of its random stream."""
    rates: OpRates = field(default=OpRates(), metadata=_OPTIONAL)
    """Base P(step wrong) per op."""
    size: SizeEffect | None = field(default=None, metadata=_OPTIONAL)
    """Operand-size effect; null: off."""
    carry: CarryEffect | None = field(default=None, metadata=_OPTIONAL)
    """Carries and borrows; null: off."""
    depth: DepthEffect | None = field(default=None, metadata=_OPTIONAL)
    """Position within one generation; null: off."""
    encoding: EncodingEffect | None = field(default=None, metadata=_OPTIONAL)
    """Encoding effect; null: off."""
    format: FormatEffect | None = field(default=None, metadata=_OPTIONAL)
    """Unparseable replies; null: off."""
    program: ProgramEffect | None = field(default=None, metadata=_OPTIONAL)
    """Written programs that deviate from the reference; null: off."""
    correlation: Correlation | None = field(default=None, metadata=_OPTIONAL)
    """Within-trial correlation; null: off."""
    cancellation: Cancellation | None = field(default=None, metadata=_OPTIONAL)
    """Cancelling errors; null: off."""
    cost: CostModel = field(default=CostModel(), metadata=_OPTIONAL)
    """The cost model."""

    def __post_init__(self) -> None:
        name = self.structure
        if (
            not isinstance(name, str)
            or not 1 <= len(name) <= 64
            or not all(c.islower() or c.isdigit() or c == "-" for c in name)
            or not name[0].isalnum()
        ):
            raise SpecError(f"structure: {name!r} must be 1-64 of a-z, 0-9 and -")
        if not isinstance(self.note, str) or len(self.note) > 400 or "\n" in self.note:
            raise SpecError("note: one line of at most 400 characters")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise SpecError(f"seed: expected an integer, got {self.seed!r}")
        if not 0 <= self.seed <= MAX_SEED:
            raise SpecError(f"seed: {self.seed} is out of range [0, 2**63 - 1]")
        rates = (self.rates.p_add, self.rates.p_sub, self.rates.p_mul)
        if self.size is not None and all(p in (0.0, 1.0) for p in rates):
            raise SpecError(
                "size.slope: has no effect when every base rate is 0 or 1; leave size out"
            )
        can_fail = any(rates) or any(
            s is not None for s in (self.size, self.carry, self.depth, self.encoding)
        )
        for section, key in (("correlation", "rho"), ("cancellation", "cancel")):
            if getattr(self, section) is not None and not can_fail:
                raise SpecError(f"{section}.{key}: has no effect: no step can be wrong")

    # ---- identity ---------------------------------------------------------------------

    def as_data(self) -> dict[str, Any]:
        """The specification as plain data (absent sections left out), as a file holds it."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    @property
    def sha256(self) -> str:
        """SHA-256 of the canonical JSON of the whole specification: its random stream."""
        canonical = json.dumps(self.as_data(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    @property
    def sources(self) -> tuple[str, ...]:
        """The sections that are on (rates and cost always are)."""
        return tuple(s for s in SECTIONS if getattr(self, s) is not None)

    # ---- the step rule ----------------------------------------------------------------

    def error_probability(
        self, op: str, left: int, right: int, encoding: str = "json", position: int = 1
    ) -> float:
        """P(this step is wrong) on the operands it actually sees, for a task rendered in
        `encoding`, as the `position`-th step (from 1) computed within one generation."""
        p = self.rates.of(op)
        if self.size is not None and 0.0 < p < 1.0:
            larger = max(digits(left), digits(right))
            logit = math.log(p / (1 - p)) + self.size.slope * (larger - self.size.pivot_digits)
            p = logistic(logit)
        factors = []
        if self.carry is not None and (count := carries(op, left, right)):
            factors.append((1.0 - self.carry.p_carry) ** count)
        if self.encoding is not None and encoding == self.encoding.affected:
            factors.append(1.0 - self.encoding.p_encoding)
        if self.depth is not None and position >= self.depth.from_step:
            factors.append(1.0 - self.depth.p_deep)
        if not factors:
            return p  # exactly the base rate (no 1 − (1 − p) rounding)
        return 1.0 - (1.0 - p) * math.prod(factors)

    @property
    def shared_latent(self) -> float:
        """P(a trial's steps share one draw) (`correlation.rho`, else 0)."""
        return self.correlation.rho if self.correlation is not None else 0.0

    @property
    def compensation(self) -> float:
        """P(a step after a wrong one compensates) (`cancellation.cancel`, else 0)."""
        return self.cancellation.cancel if self.cancellation is not None else 0.0

    @property
    def unparseable(self) -> float:
        return self.format.p_unparseable if self.format is not None else 0.0

    @property
    def deviation(self) -> float:
        return self.program.p_deviate if self.program is not None else 0.0


def logistic(z: float) -> float:
    """σ(z) without overflow for any finite z."""
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def digits(value: int) -> int:
    """Decimal digits of |value| (0 has one digit)."""
    return len(str(abs(value)))


def carries(op: str, left: int, right: int) -> int:
    """Carries (same-sign magnitudes added) or borrows (magnitudes subtracted) of an add or
    sub step done column by column; 0 for mul."""
    if op == "mul":
        return 0
    other = right if op == "add" else -right
    x, y = abs(left), abs(other)
    count = carry = 0
    if (left >= 0) == (other >= 0):
        while x or y:
            carry = 1 if x % 10 + y % 10 + carry >= 10 else 0
            count += carry
            x, y = x // 10, y // 10
        return count
    x, y = max(x, y), min(x, y)
    while x or y:
        carry = 1 if x % 10 - y % 10 - carry < 0 else 0
        count += carry
        x, y = x // 10, y // 10
    return count
