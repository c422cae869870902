"""Task parameters from JSON: the one reader of a seed and parameter overrides, whoever
sends them (a page request, the command line's `--seed`/`--preset`/`--param`, a sweep's
`run.json`). Defaults are `TaskParams()`'s; the checks are the record's own (`from_json`
and `TaskParams`' validation), so every caller refuses the same values with the same text.
"""

from __future__ import annotations

from pyapp.records.base import JSON, from_json, to_json
from pyapp.tasks import TaskParams


def task_params(seed: int | None, params: dict[str, JSON] | None) -> TaskParams:
    """TaskParams from a `seed` and optional `params` overrides; raises `RecordError`."""
    merged = to_json(TaskParams())
    assert isinstance(merged, dict)
    merged.update(params or {})
    if seed is not None:
        merged["seed"] = seed
    result: TaskParams = from_json(TaskParams, merged)
    return result
