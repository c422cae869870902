"""The specification of a synthetic model: which error structure, with which numbers.

A synthetic model answers one primitive *step* at a time (a chain call is one step; a
model-only answer is the reference tree computed step by step; a model-program tree is
written node by node). Each step is wrong with a probability the specification fixes:

| structure        | P(step wrong)                             | dependence between steps       |
|------------------|-------------------------------------------|--------------------------------|
| `independent`    | p_op                                      | none                           |
| `size-dependent` | σ(logit p_op + slope·(D − pivot_digits))  | none                           |
| `correlated`     | p_op                                      | with probability `rho` all of  |
|                  |                                           | a trial's steps share one draw |
| `cancelling`     | p_op                                      | after a wrong step the next    |
|                  |                                           | compensates, prob. `cancel`    |

`p_op` is `p_add`, `p_sub` or `p_mul`; D is the digit count of the larger operand (the
operands the step actually sees); σ is the logistic function. A *compensating* step returns
the value the step would have had on the exact operands: it is locally wrong, but the
composition is back on its exact track (the final answer can be right with a step wrong).

The cost model (the synthetic clock, in milliseconds, and synthetic token counts):
one generation costs `call_ms` plus, per step it computes, `step_ms + digit_ms·d` where d is
the digit count of the step's output; input tokens are ⌈prompt bytes / 4⌉ and output
tokens ⌈reply bytes / 4⌉.

A spec is written `NAME` or `NAME:key=value,key=value` (e.g. `size-dependent:slope=1.2`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Literal, get_args

from interpreter.lab_error import LabError

Structure = Literal["independent", "size-dependent", "correlated", "cancelling"]
STRUCTURES: tuple[Structure, ...] = get_args(Structure)
STRUCTURE_NOTES: dict[Structure, str] = {
    "independent": "each step wrong with a fixed per-op probability, independently",
    "size-dependent": "a step is wrong more often the more digits its larger operand has",
    "correlated": "a per-trial latent makes a trial's steps fail together",
    "cancelling": "after a wrong step the next often compensates: right answer, a step wrong",
}
"""Each structure in one line (the page's catalogue group "synthetic (validation)")."""


class SpecError(LabError, ValueError):
    """A synthetic model specification that cannot be used (code `bad_synthetic_spec`)."""

    def __init__(self, message: str) -> None:
        super().__init__("bad_synthetic_spec", message)


@dataclass(frozen=True)
class SyntheticSpec:
    """A synthetic model: its error structure, its numbers and its cost model."""

    structure: Structure
    """Which error structure (see the module docstring)."""
    seed: int = 0
    """Model seed, combined with the task seed and the trial id in every draw."""
    p_add: float = 0.05
    """Probability that an add step is wrong (at `pivot_digits` for `size-dependent`)."""
    p_sub: float = 0.08
    """Probability that a sub step is wrong."""
    p_mul: float = 0.15
    """Probability that a mul step is wrong."""
    slope: float = 0.9
    """`size-dependent`: increase of the log-odds of a wrong step per operand digit."""
    pivot_digits: float = 4.0
    """`size-dependent`: the digit count at which P(wrong) equals p_op."""
    rho: float = 0.6
    """`correlated`: probability that all steps of a trial share one latent draw."""
    cancel: float = 0.8
    """`cancelling`: probability that the step after a wrong one compensates."""
    call_ms: float = 40.0
    """Cost model: milliseconds per generation call."""
    step_ms: float = 12.0
    """Cost model: milliseconds per step computed (or tree node written)."""
    digit_ms: float = 3.0
    """Cost model: milliseconds per digit of a computed step's output."""

    def __post_init__(self) -> None:
        if self.structure not in STRUCTURES:
            raise SpecError(
                f"unknown synthetic structure {self.structure!r}; known: {', '.join(STRUCTURES)}"
            )
        for name in ("p_add", "p_sub", "p_mul", "rho", "cancel"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise SpecError(f"{name} must be in [0, 1], got {value}")
        for name in ("call_ms", "step_ms", "digit_ms"):
            if getattr(self, name) < 0:
                raise SpecError(f"{name} must be non-negative")

    @property
    def name(self) -> str:
        """The spec as written: structure, then every field that differs from its default."""
        default = SyntheticSpec(self.structure)
        changed = [
            f"{f.name}={getattr(self, f.name)}"
            for f in dataclasses.fields(self)
            if f.name != "structure" and getattr(self, f.name) != getattr(default, f.name)
        ]
        return self.structure + (":" + ",".join(changed) if changed else "")

    def base_rate(self, op: str) -> float:
        return {"add": self.p_add, "sub": self.p_sub, "mul": self.p_mul}[op]

    def error_probability(self, op: str, left: int, right: int) -> float:
        """P(this step is wrong) on the operands the step actually sees."""
        p = self.base_rate(op)
        if self.structure != "size-dependent" or p in (0.0, 1.0):
            return p
        larger = max(digits(left), digits(right))
        logit = math.log(p / (1 - p)) + self.slope * (larger - self.pivot_digits)
        return 1.0 / (1.0 + math.exp(-logit))

    @property
    def shared_latent(self) -> float:
        """Probability that a trial's steps share one draw (`rho` for `correlated`)."""
        return self.rho if self.structure == "correlated" else 0.0

    @property
    def compensation(self) -> float:
        """Probability that a step after a wrong one compensates (`cancel` for `cancelling`)."""
        return self.cancel if self.structure == "cancelling" else 0.0


def digits(value: int) -> int:
    """Decimal digits of |value| (0 has one digit)."""
    return len(str(abs(value)))


def parse_spec(text: str) -> SyntheticSpec:
    """`NAME` or `NAME:key=value,...` → a spec (one-line `SpecError` when it cannot)."""
    name, _, rest = text.partition(":")
    values: dict[str, object] = {}
    kinds = {f.name: f.type for f in dataclasses.fields(SyntheticSpec)}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, sep, raw = item.partition("=")
        if not sep or key not in kinds or key == "structure":
            known = ", ".join(k for k in kinds if k != "structure")
            raise SpecError(f"bad synthetic parameter {item!r} (KEY=VALUE with KEY one of {known})")
        try:
            values[key] = int(raw) if kinds[key] in ("int", int) else float(raw)
        except ValueError:
            raise SpecError(f"{key}: {raw!r} is not a number") from None
    if name not in STRUCTURES:
        raise SpecError(f"unknown synthetic structure {name!r}; known: {', '.join(STRUCTURES)}")
    return SyntheticSpec(name, **values)  # type: ignore[arg-type]
