"""A plan checked whole, with bounds, before anything is allocated or started.

`check_plan` runs first in `pyapp.matrix.cells.expand`, on the plan's records as read, and
refuses a plan with one line naming the file and the key (`bad_plan`, exit 1):

- every string bounded (`MAX_STRING_CHARS`; names, preset names and paths tighter, below)
  and free of control characters; every path short enough for the file system (each part at
  most 255 bytes);
- every number finite, and each option in its range (`RANGES`): `timeout_s` in (0, 86,400],
  `cpus_per_*` in (0, 1,024], `retries` 0..100; seeds 0..2^64−1 (what the task generator
  accepts);
- every list bounded (`MAX_ENTRIES`) and nothing nested deeper than `MAX_NESTING`;
- duplicates refused on every axis (models written alike, seeds, presets, condition sets
  as sets, backends), among exclusions, and among parameter sets whose parameters are equal
  (naming both keys: two names for one task set would be two cells of one task set);
- the number of cells counted arithmetically — a seed range is never listed — and refused
  over `MAX_CELLS`, and the exclusion checks (exclusions × cells) bounded.

`seed_values` gives the seeds lazily (a `range` for a range), and `folder_name` bounds a
cell's folder name: a name over `MAX_FOLDER_CHARS` keeps its start and ends in a hash of the
whole name, so no model specification ever becomes a raw file name. docs/scale.md lists the
ranges.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

from pyapp.errors import InputError, RecordError
from pyapp.matrix.hypotheses import check_hypotheses
from pyapp.matrix.plan import ModelEntry, Options, Plan, SeedRange
from pyapp.records import JSON, task_params, to_json
from pyapp.synthetic import STRUCTURES
from pyapp.tasks import PRESETS, SEED_LIMIT, TaskParams, rungs_of

MAX_CELLS: Final = 100_000
"""Most cells one plan may make (before its exclusions)."""
MAX_EXCLUSION_CHECKS: Final = 2_000_000
"""Most exclusion checks (exclusions × cells): each exclusion is tried on every cell."""
MAX_ENTRIES: Final = 1_000
"""Most entries of an axis other than the seeds, of the exclusions, of the parameter sets
and of any list or table inside them."""
MAX_SEED_LIST: Final = MAX_CELLS
"""Most seeds written out as a list."""
MAX_NESTING: Final = 8
"""Deepest nesting of lists and tables inside a plan's values (a parameter set's pairs)."""
MAX_STRING_CHARS: Final = 4_096
"""Longest string anywhere in a plan."""
MAX_NAME_CHARS: Final = {"name": 1_000, "model": 1_000, "preset": 64}
"""Longest plan name, model id (a synthetic specification or a hub id) and preset name."""
MAX_PATH_PART_BYTES: Final = 255
"""Longest part of a path, in bytes (the file system's own limit)."""
MAX_HYPOTHESIS_SEEDS: Final = 10_000
"""A plan with hypotheses or prior exposure lists its seeds to check them (at most this)."""
MAX_FOLDER_CHARS: Final = 120
"""Longest cell folder name: a longer name is cut and ends in a hash of the whole name."""
RANGES: Final[dict[str, tuple[float, float, bool]]] = {
    "timeout_s": (0.0, 86_400.0, False),
    "cpus_per_browser_cell": (0.0, 1_024.0, False),
    "cpus_per_synthetic_cell": (0.0, 1_024.0, False),
    "retries": (0, 100, True),
}
"""options.KEY → (low, high, low included): every number option's documented range."""


def _bad(plan_path: Path, key: str, message: str) -> InputError:
    shown = key if len(key) <= 200 else key[:197] + "..."
    return InputError("bad_plan", f"{shown}: {message}", path=str(plan_path))


def _walk(value: JSON, key: str) -> Iterator[tuple[str, JSON, int]]:
    """Every value inside `value` with its key and nesting depth (iteratively)."""
    stack: list[tuple[str, JSON, int]] = [(key, value, 0)]
    while stack:
        where, item, depth = stack.pop()
        yield where, item, depth
        if isinstance(item, dict):
            stack += [(f"{where}.{k}" if where else str(k), v, depth + 1) for k, v in item.items()]
        elif isinstance(item, list):
            stack += [(f"{where}[{i}]", v, depth + 1) for i, v in enumerate(item)]


def _check_values(plan_json: JSON, plan_path: Path) -> None:
    """Every string bounded and printable, every number finite, every list bounded."""
    for where, item, depth in _walk(plan_json, ""):
        key = where or "(top level)"
        if depth > MAX_NESTING:
            raise _bad(plan_path, key, f"nested deeper than {MAX_NESTING} levels")
        if isinstance(item, str):
            if len(item) > MAX_STRING_CHARS:
                raise _bad(plan_path, key, f"a string over {MAX_STRING_CHARS} characters")
            if any(ord(c) < 32 or ord(c) == 127 for c in item):
                raise _bad(plan_path, key, "a control character (NUL, newline, ...) in a string")
        elif isinstance(item, float) and not math.isfinite(item):
            raise _bad(plan_path, key, f"{item} is not a finite number")
        elif isinstance(item, list | dict) and len(item) > MAX_ENTRIES and key != "axes.seeds":
            raise _bad(plan_path, key, f"more than {MAX_ENTRIES} entries")
        if isinstance(item, dict):
            for name in item:
                if len(name) > MAX_STRING_CHARS or any(ord(c) < 32 for c in name):
                    raise _bad(plan_path, key, "a key too long or with a control character")


def _check_options(plan: Plan, plan_path: Path) -> None:
    for name, (low, high, low_included) in RANGES.items():
        value = getattr(plan.options, name)
        if value is None:
            continue
        inside = (low <= value if low_included else low < value) and value <= high
        if not inside:
            shown = "[" if low_included else "("
            raise _bad(
                plan_path,
                f"options.{name}",
                f"{value} is outside {shown}{low:g}, {high:g}]",
            )
    for key, path in _paths(plan):
        _check_path(plan_path, key, path)


def _paths(plan: Plan) -> Iterator[tuple[str, str]]:
    """Every file or folder path the plan names, with its key."""
    if plan.options.site is not None:
        yield "options.site", plan.options.site
    if plan.options.ledger not in ("cell", "shared"):
        yield "options.ledger", plan.options.ledger
    for i, value in enumerate(plan.axes.models):
        if isinstance(value, ModelEntry):
            if value.folder is not None:
                yield f"axes.models[{i}].folder", value.folder
            if value.host is not None and "://" not in value.host:
                yield f"axes.models[{i}].host", value.host


def _check_path(plan_path: Path, key: str, path: str) -> None:
    if not path:
        raise _bad(plan_path, key, "an empty path")
    for part in Path(path).parts:
        if len(part.encode("utf-8", "surrogatepass")) > MAX_PATH_PART_BYTES:
            raise _bad(plan_path, key, f"a part of the path over {MAX_PATH_PART_BYTES} bytes")


def _check_names(plan: Plan, plan_path: Path) -> None:
    if plan.name is not None and len(plan.name) > MAX_NAME_CHARS["name"]:
        raise _bad(plan_path, "name", f"over {MAX_NAME_CHARS['name']} characters")
    for i, value in enumerate(plan.axes.models):
        model = value.id if isinstance(value, ModelEntry) else value
        if not model or len(model) > MAX_NAME_CHARS["model"]:
            raise _bad(plan_path, f"axes.models[{i}]", "a model id of 1 to 1,000 characters")
    names = [*plan.axes.presets, *(plan.parameter_sets or {})]
    for name in names:
        if not name or len(name) > MAX_NAME_CHARS["preset"]:
            key = f"parameter_sets.{name[:40]}" if name not in plan.axes.presets else "axes.presets"
            raise _bad(plan_path, key, f"a preset name of 1 to {MAX_NAME_CHARS['preset']} chars")


def _first_duplicate(values: Sequence[object]) -> tuple[int, int] | None:
    seen: dict[str, int] = {}
    for j, value in enumerate(values):
        key = json.dumps(value, sort_keys=True, default=str)
        if key in seen:
            return seen[key], j
        seen[key] = j
    return None


def _check_duplicates(plan: Plan, plan_path: Path) -> None:
    axes = plan.axes
    lists: list[tuple[str, Sequence[object]]] = [
        ("axes.models", [to_json(m) for m in axes.models]),
        ("axes.presets", list(axes.presets)),
        ("axes.conditions", [sorted(c) for c in axes.conditions]),
        ("axes.backends", list(axes.backends)),
        ("exclude", [to_json(e) for e in plan.exclude]),
    ]
    if not isinstance(axes.seeds, SeedRange):
        lists.append(("axes.seeds", list(axes.seeds)))
    for key, values in lists:
        found = _first_duplicate(values)
        if found is not None:
            i, j = found
            raise _bad(plan_path, f"{key}[{j}]", f"a duplicate of {key}[{i}]")
    _check_equal_parameter_sets(plan, plan_path)


def _effective(overrides: dict[str, JSON]) -> TaskParams | None:
    try:
        return task_params(0, overrides)
    except RecordError:
        return None  # refused later, naming its key (`pyapp.matrix.cells.parameter_sets`)


def _check_equal_parameter_sets(plan: Plan, plan_path: Path) -> None:
    """Two names for one task set: refused naming both keys (the axis' presets by the task
    parameters they give, every parameter set of the plan by its own parameters)."""
    named = plan.parameter_sets or {}
    found: dict[str, str] = {}
    for i, name in enumerate(plan.axes.presets):
        overrides = named.get(name, PRESETS.get(name))
        if overrides is None:
            continue  # an unknown preset: refused later, naming its key
        params = _effective(dict(overrides))
        key = f"parameter_sets.{name}" if name in named else f"axes.presets[{i}] ({name!r})"
        identity = json.dumps(to_json(params), sort_keys=True) if params else f"?{name}"
        if identity in found:
            raise _bad(
                plan_path, key, f"the same task parameters as {found[identity]} (one task set)"
            )
        found[identity] = key
    written: dict[str, str] = {}
    for name, overrides in named.items():
        identity = json.dumps(overrides, sort_keys=True)
        if identity in written:
            raise _bad(
                plan_path,
                f"parameter_sets.{name}",
                f"the same parameters as parameter_sets.{written[identity]}",
            )
        written[identity] = name


def seed_count(plan: Plan) -> int:
    """How many seeds the axis gives, counted (a range is never listed)."""
    seeds = plan.axes.seeds
    if isinstance(seeds, SeedRange):
        return max(0, seeds.last - seeds.first + 1)
    return len(seeds)


def _check_seeds(plan: Plan, plan_path: Path) -> None:
    seeds = plan.axes.seeds
    if isinstance(seeds, SeedRange):
        for name in ("first", "last"):
            value = getattr(seeds, name)
            if not 0 <= value < SEED_LIMIT:
                raise _bad(plan_path, f"axes.seeds.{name}", _seed_outside(value))
        return
    if len(seeds) > MAX_SEED_LIST:
        raise _bad(plan_path, "axes.seeds", f"more than {MAX_SEED_LIST} seeds")
    for i, seed in enumerate(seeds):
        if not 0 <= seed < SEED_LIMIT:
            raise _bad(plan_path, f"axes.seeds[{i}]", _seed_outside(seed))


def _seed_outside(seed: int) -> str:
    shown = str(seed) if abs(seed) < 10**30 else f"an integer of {abs(seed).bit_length()} bits"
    return f"seed {shown} is outside 0..{SEED_LIMIT - 1} (2^64-1)"


def cell_count(plan: Plan) -> int:
    """The cells of the cross product (before exclusions), counted: a synthetic model makes
    one backend's cells (`native`), any other one per backend."""
    backends = len(plan.axes.backends)
    per_seed = sum(
        1
        if (m.id if isinstance(m, ModelEntry) else m).partition(":")[0] in STRUCTURES
        else backends
        for m in plan.axes.models
    )
    return per_seed * len(plan.axes.presets) * len(plan.axes.conditions) * seed_count(plan)


def check_plan(plan: Plan, plan_path: Path) -> None:
    """The whole plan within its bounds (see the module docstring), or an `InputError`
    naming the key; nothing is listed or allocated before the counts are known."""
    _check_values(to_json(plan), plan_path)
    _check_names(plan, plan_path)
    _check_options(plan, plan_path)
    _check_seeds(plan, plan_path)
    _check_duplicates(plan, plan_path)
    _check_hypotheses(plan, plan_path)
    cells = cell_count(plan)
    if cells > MAX_CELLS:
        raise _bad(plan_path, "axes", f"{cells:,} cells: more than {MAX_CELLS:,}")
    if cells * len(plan.exclude) > MAX_EXCLUSION_CHECKS:
        raise _bad(
            plan_path,
            "exclude",
            f"{len(plan.exclude)} exclusions over {cells:,} cells: more than "
            f"{MAX_EXCLUSION_CHECKS:,} checks (fewer exclusions, or a smaller plan)",
        )


def _check_hypotheses(plan: Plan, plan_path: Path) -> None:
    if not plan.hypotheses and not plan.prior_exposure:
        return
    models = [m if isinstance(m, str) else m.id for m in plan.axes.models]
    conditions = sorted({c for s in plan.axes.conditions for c in s})
    presets = [r for p in plan.axes.presets for r in (rungs_of(p) or (p,))]
    seeds = seed_values(plan)
    if len(seeds) > MAX_HYPOTHESIS_SEEDS:
        raise _bad(plan_path, "axes.seeds", f"more than {MAX_HYPOTHESIS_SEEDS} with hypotheses")
    check_hypotheses(
        plan.hypotheses, plan.prior_exposure, models, conditions, seeds, presets, plan_path
    )
    paired = [i for i, h in enumerate(plan.hypotheses) if h.versus is not None]
    if paired and plan.options.sealed is True:
        raise _bad(
            plan_path,
            "options.sealed",
            f"hypotheses[{paired[0]}] compares two models on the same held-out tasks, which "
            'cells sealed each on its own do not share: say sealed = "study" (one seal per '
            "task seed, made once every cell of it is frozen) or sealed = false",
        )


def seed_values(plan: Plan) -> Sequence[int]:
    """The seeds of a checked plan, lazily: a `range` for a range, else the list."""
    seeds = plan.axes.seeds
    if isinstance(seeds, SeedRange):
        return range(seeds.first, seeds.last + 1)
    return tuple(seeds)


def folder_name(name: str) -> str:
    """A cell's folder name: `name` itself, or — over `MAX_FOLDER_CHARS` — its start and a
    hash of the whole (so a long model specification never becomes a raw file name)."""
    if len(name) <= MAX_FOLDER_CHARS:
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:16]
    return f"{name[: MAX_FOLDER_CHARS - 18].rstrip('-_.')}-h{digest}"


HASHED_OPTIONS = frozenset(
    {
        "consent", "ledger", "timeout_s", "page_params", "chromium_flags", "site",
        "cpus_per_browser_cell", "cpus_per_synthetic_cell", "cpus_per_native_cell", "retries",
        "chain_protocol",
    }
)  # fmt: skip
"""The plan options every plan hash has held since study receipts exist. An option added
later is hashed only when a plan sets it away from the value that keeps a plan's meaning from
before the option (`LEGACY_VALUES`, else its default), so a plan written before the option,
or saying that value, keeps its hash (and its study receipt stays valid)."""
LEGACY_VALUES: dict[str, JSON] = {"sealed": False}
"""Options whose default changed when they were added: the value every plan meant before
(`sealed`: plans were unsealed; the default is now sealed, so a plan written before it that
does not say `sealed = false` hashes differently: its meaning changed, and its receipt no
longer fits it)."""


def plan_sha256(plan: Plan) -> str:
    """SHA-256 of the parsed plan's canonical JSON: the same plan however it is written
    (comments, order, spacing); a study's `[[hypotheses]]` and `[[prior_exposure]]` are
    outside it (the study receipt holds them), and so is an option newer than
    `HASHED_OPTIONS` left at its default."""
    document = to_json(plan)
    assert isinstance(document, dict)
    document.pop("hypotheses", None)
    document.pop("prior_exposure", None)
    options = document.get("options")
    defaults = to_json(Options())
    if isinstance(options, dict) and isinstance(defaults, dict):
        for name in set(options) - HASHED_OPTIONS:
            if options[name] == LEGACY_VALUES.get(name, defaults.get(name)):
                del options[name]
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
