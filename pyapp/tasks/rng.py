"""A small explicit PRNG (SplitMix64) so that a seed means the same tasks everywhere.

`random.Random` would do on one interpreter, but its algorithms for `randint` and
friends are implementation details that have changed between CPython versions.
SplitMix64 is a dozen lines of integer arithmetic, identical on CPython 3.11 and on
Pyodide's CPython 3.14, and the tests pin its first outputs.
"""

from __future__ import annotations

_MASK64 = (1 << 64) - 1


class SplitMix64:
    """Deterministic 64-bit generator (Steele, Lea & Flood 2014)."""

    def __init__(self, seed: int) -> None:
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise TypeError("seed must be an int")
        self._state = seed & _MASK64

    def next_u64(self) -> int:
        self._state = (self._state + 0x9E3779B97F4A7C15) & _MASK64
        z = self._state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        return z ^ (z >> 31)

    def integer(self, low: int, high: int) -> int:
        """Uniform integer in [low, high], by rejection (no modulo bias)."""
        if high < low:
            raise ValueError(f"empty range [{low}, {high}]")
        span = high - low + 1
        if span > 1 << 64:  # the rejection bound would be 0: the loop would never end
            raise ValueError(f"range [{low}, {high}] is wider than 2**64 values")
        limit = (1 << 64) - ((1 << 64) % span)
        while True:
            draw = self.next_u64()
            if draw < limit:
                return low + draw % span

    def chance(self, numerator: int, denominator: int) -> bool:
        """True with probability numerator/denominator."""
        return self.integer(1, denominator) <= numerator

    def signed(self, magnitude_low: int, magnitude_high: int, negative_in: int = 4) -> int:
        """A magnitude in [low, high], negative with probability 1/negative_in."""
        value = self.integer(magnitude_low, magnitude_high)
        return -value if self.chance(1, negative_in) else value
