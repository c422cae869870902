"""Long lists in a report: all rows up to a stated number, past it summaries and a sample.

A report of a 100,000-trial run must stay readable and small (under 20 MB): past
`MAX_LISTED_ROWS` rows a list (trials, tasks, interruptions) shows a summary table of the
counts per group and a sample of `SAMPLE_ROWS` rows with their raw records — every k-th
row, plus the first row of each group so that every kind of outcome has an example — and
says so, with the counts. The full record of every trial is the trace itself.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

#: Most rows a report lists in full; a longer list is summarised and sampled.
MAX_LISTED_ROWS: Final = 2_000
#: About how many rows the sample of a longer list holds (every k-th row), plus the first
#: row of each group (at most `MAX_GROUP_EXAMPLES` groups).
SAMPLE_ROWS: Final = 1_000
MAX_GROUP_EXAMPLES: Final = 200

Item = TypeVar("Item")


@dataclass(frozen=True)
class Listed(Generic[Item]):
    """The rows a report shows of a list, and how they were chosen."""

    rows: list[Item]
    """The rows shown, in their order in the list."""
    total: int
    """Rows in the whole list."""
    stride: int | None
    """Every `stride`-th row is in the sample; null when every row is shown."""
    counts: list[tuple[Hashable, int]]
    """Rows per group, most common first (only when sampled)."""

    @property
    def sampled(self) -> bool:
        return self.stride is not None

    def note(self, what: str, source: str) -> str:
        """The sentence that says what is shown (empty when everything is)."""
        if self.stride is None:
            return ""
        return (
            f"{self.total:,} {what} are more than this report lists ({MAX_LISTED_ROWS:,}): "
            f"shown are counts per group and a sample of {len(self.rows):,} — every "
            f"{self.stride:,}th and the first of each group. The full record of every one is "
            f"{source}."
        )


def listed(
    items: Sequence[Item],
    group: Callable[[Item], Hashable],
    maximum: int | None = None,
    sample_rows: int | None = None,
) -> Listed[Item]:
    """All of `items` when there are at most `maximum` (default `MAX_LISTED_ROWS`); else
    a sample and the counts per `group`."""
    maximum = MAX_LISTED_ROWS if maximum is None else maximum
    sample_rows = SAMPLE_ROWS if sample_rows is None else sample_rows
    total = len(items)
    if total <= maximum:
        return Listed(list(items), total, None, [])
    stride = max(1, math.ceil(total / max(1, sample_rows)))
    chosen = set(range(0, total, stride))
    counts: Counter[Hashable] = Counter()
    first: dict[Hashable, int] = {}
    for i, item in enumerate(items):
        key = group(item)
        counts[key] += 1
        if key not in first and len(first) < MAX_GROUP_EXAMPLES:
            first[key] = i
    chosen.update(first.values())
    return Listed([items[i] for i in sorted(chosen)], total, stride, counts.most_common())
