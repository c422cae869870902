"""A plan's cells: the cross product of its axes, less its exclusions, each checked.

A cell is exactly one existing run: a synthetic model is one `python -m pyapp simulate`
of one seed (native, backend `native`); any other model is one `python -m pyapp sweep`
(the real page, headless, on `wasm` or `webgpu`; or, backend `native`, the same sweep under
onnxruntime without a browser, for a model whose files are local: `pyapp.sweep.native`).
`expand` checks everything a cell needs before anything runs
and refuses a bad plan with one line naming the key: an unknown model (the page's catalogue,
`pyapp.sweep.options.choose_model`, and the synthetic structures, `pyapp.records.synthetic_spec`,
decide what is known), an axis that makes no cell, two entries that make the same cells, an
exclusion that matches nothing, browser cells without `options.consent`, a native cell whose
model the native backend cannot run as the page would (no local files, a chat template not
compared with the page's: `pyapp.sweep.native.model_files`).

A cell's name is stable (it is its folder, `DIR/cells/NAME/`): model, backend, parameter
set, condition set and seed, e.g. `size-dependent-slope=1.2_native_design_default_s7`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pyapp.conditions import ALL_CONDITIONS
from pyapp.errors import InputError, RecordError, UsageError
from pyapp.host import REPO_ROOT
from pyapp.matrix.check import MAX_CELLS, check_plan, folder_name, seed_values
from pyapp.matrix.plan import Exclusion, ModelEntry, Plan
from pyapp.records import CONDITIONS, JSON, SpecError, task_params
from pyapp.sweep import (
    Options,
    SetupError,
    choose_model,
    choose_native,
    model_files,
    read_catalogue,
)
from pyapp.synthetic import STRUCTURES, parse_spec, written_name
from pyapp.tasks import LADDERS, PRESETS, ladder_of

CONDITION_ABBREVIATIONS: dict[str, str] = {c.name: c.short for c in CONDITIONS}


@dataclass(frozen=True)
class Cell:
    """One cell of a matrix: one `simulate` (synthetic) or `sweep` (browser) run."""

    name: str
    """Stable name, also its folder under `DIR/cells/`."""
    kind: Literal["synthetic", "browser"]
    """`synthetic`: `python -m pyapp simulate`; `browser`: `python -m pyapp sweep` (in the
    page, or natively when `backend` is `native`)."""
    model: str
    """The model as the plan wrote it (`id`)."""
    model_key: str
    """The model's canonical identity: the synthetic spec as `simulate` names it, or the
    catalogue's model id (with revision, dtype and folder when given)."""
    revision: str | None
    """Browser cells: revision asked for."""
    dtype: str | None
    """Browser cells: dtype asked for."""
    folder: str | None
    """Browser cells: a folder served as the hub (absolute)."""
    host: str | None
    """Browser cells: a hub-like server or folder."""
    fixture: bool
    """Browser cells: the model is the bundled test fixture (never model evidence)."""
    backend: str
    """`wasm` or `webgpu` (a sweep in the page), `native` (synthetic, or a sweep under
    onnxruntime)."""
    seed: int
    """Task seed."""
    preset: str
    """The parameter set's name."""
    params: dict[str, JSON]
    """Task parameter overrides of the parameter set (the commands' `--param`)."""
    conditions: tuple[str, ...]
    """Condition set; empty: the command's default."""
    ladder: str | None = field(default=None, metadata={"optional_on_read": True})
    """The ladder whose rung `preset` is, when `axes.presets` named a ladder
    (`pyapp.tasks.presets.LADDERS`); null otherwise. `python -m pyapp study` checks it
    against the rung the cell's trace parameters are (`pyapp.tasks.taskset.preset_of`)."""
    rung: int | None = field(default=None, metadata={"optional_on_read": True})
    """The rung's place on its ladder, 1 the easiest; null when not a rung."""

    @property
    def task_key(self) -> str:
        """What cells must share to be pooled: everything but the seed."""
        return json.dumps(
            [self.kind, self.model_key, self.backend, self.params, list(self.conditions)],
            sort_keys=True,
        )


def slug(text: str) -> str:
    """`text` as a file name part: letters, digits and `.=+-`; anything else becomes `-`."""
    return re.sub(r"[^A-Za-z0-9.=+-]+", "-", text).strip("-") or "x"


def _bad(plan_path: Path, key: str, message: str) -> InputError:
    return InputError("bad_plan", f"{key}: {message}", path=str(plan_path))


@dataclass(frozen=True)
class _Model:
    """A model of the axis, resolved."""

    index: int
    entry: ModelEntry
    kind: Literal["synthetic", "browser"]
    key: str
    fixture: bool


def _entry(value: str | ModelEntry) -> ModelEntry:
    return ModelEntry(id=value) if isinstance(value, str) else value


def _catalogue(plan: Plan, plan_path: Path) -> dict[str, Any]:
    """The page's model catalogue (the built site's, else the source's `site/models.json`)."""

    site = site_of(plan, plan_path)
    try:
        return read_catalogue(site if (site / "models.json").exists() else REPO_ROOT / "site")
    except SetupError as error:
        raise _bad(plan_path, "options.site", error.message) from None


def site_of(plan: Plan, plan_path: Path) -> Path:
    """The built site browser cells serve."""
    if plan.options.site is None:
        return REPO_ROOT / "build" / "site"
    return (plan_path.parent / plan.options.site).resolve()


def resolve_models(plan: Plan, plan_path: Path) -> list[_Model]:
    """Every model of the axis as synthetic or browser, or a refusal naming its key."""

    models: list[_Model] = []
    catalogue: dict[str, Any] | None = None
    for i, value in enumerate(plan.axes.models):
        entry, key = _entry(value), f"axes.models[{i}]"
        if entry.id.partition(":")[0] in STRUCTURES:
            if any(v is not None for v in (entry.revision, entry.dtype, entry.folder, entry.host)):
                raise _bad(
                    plan_path,
                    key,
                    f"{entry.id!r} is synthetic: it takes no revision, dtype, folder or host",
                )
            try:
                spec = parse_spec(entry.id)
            except SpecError as error:
                raise _bad(plan_path, key, str(error)) from None
            models.append(_Model(i, entry, "synthetic", written_name(spec), False))
            continue
        if entry.folder is not None:
            folder = (plan_path.parent / entry.folder).resolve()
            if not folder.is_dir():
                raise _bad(plan_path, f"{key}.folder", f"{folder} is not a folder")
            entry = ModelEntry(entry.id, entry.revision, entry.dtype, str(folder), entry.host)
        if entry.host is not None and "://" not in entry.host:  # a folder laid out like the hub
            host = (plan_path.parent / entry.host).resolve()
            if not host.is_dir():
                raise _bad(plan_path, f"{key}.host", f"{host} is neither a URL nor a folder")
            entry = ModelEntry(entry.id, entry.revision, entry.dtype, entry.folder, str(host))
        catalogue = catalogue if catalogue is not None else _catalogue(plan, plan_path)
        options = Options(
            entry.id,
            "wasm",
            entry.dtype,
            entry.revision,
            0,
            {},
            None,
            entry.host,
            entry.folder,
            [],
            {},
        )
        try:
            choice = choose_model(options, catalogue)
        except UsageError as error:
            raise _bad(
                plan_path, key, f"unknown model {entry.id!r}: " + error.message.partition(": ")[2]
            ) from None
        if not plan.options.consent:
            source = (
                "the bundled fixture"
                if choice.fixture
                else (entry.folder or entry.host or "the hub")
            )
            raise _bad(
                plan_path,
                "options.consent",
                f"{key} {entry.id!r} loads a model "
                f"(from {source}): set consent = true to consent to every browser "
                "model of the plan; nothing was started",
            )
        identity = [choice.model_id, entry.revision or choice.revision, entry.dtype, entry.folder]
        models.append(_Model(i, entry, "browser", json.dumps(identity), choice.fixture))
    return models


def _axis_names(plan: Plan) -> list[tuple[int, str]]:
    """The `axes.presets` entries with a ladder's name replaced by its rungs, each with the
    index of the entry that named it."""
    named = plan.parameter_sets or {}
    return [
        (i, rung)
        for i, name in enumerate(plan.axes.presets)
        for rung in (LADDERS[name] if name in LADDERS and name not in named else (name,))
    ]


def parameter_sets(plan: Plan, plan_path: Path) -> dict[str, dict[str, JSON]]:
    """The presets of the axis → their overrides, each checked by the page's own check; a
    ladder's name (`pyapp.tasks.presets.LADDERS`) stands for its rungs, easiest first."""

    chosen: dict[str, dict[str, JSON]] = {}
    named = plan.parameter_sets or {}
    for i, name in _axis_names(plan):
        if name in named:
            overrides, key = dict(named[name]), f"parameter_sets.{name}"
        elif name in PRESETS:
            overrides, key = dict(PRESETS[name]), f"axes.presets[{i}]"
        else:
            known = ", ".join([*PRESETS, *LADDERS, *named])
            raise _bad(plan_path, f"axes.presets[{i}]", f"unknown preset {name!r}; known: {known}")
        if name in chosen:
            raise _bad(plan_path, f"axes.presets[{i}]", f"{name!r} is named twice")
        if "seed" in overrides:
            raise _bad(plan_path, f"{key}.seed", "the seed is an axis (axes.seeds)")
        try:
            task_params(0, overrides)
        except RecordError as error:
            raise _bad(plan_path, key, str(error)) from None
        chosen[name] = overrides
    return chosen


def seeds_of(plan: Plan, plan_path: Path) -> Sequence[int]:
    """The seeds, lazily: a range is never listed (`check_plan` has bounded them)."""
    return seed_values(plan)


def condition_sets(plan: Plan, plan_path: Path) -> list[tuple[str, ...]]:
    for i, chosen in enumerate(plan.axes.conditions):
        for j, condition in enumerate(chosen):
            if condition not in ALL_CONDITIONS:
                raise _bad(
                    plan_path,
                    f"axes.conditions[{i}][{j}]",
                    f"unknown condition {condition!r}; known: {', '.join(ALL_CONDITIONS)}",
                )
        if len(set(chosen)) != len(chosen):
            raise _bad(plan_path, f"axes.conditions[{i}]", "a condition appears twice")
    return [tuple(c) for c in plan.axes.conditions]


def _excluded(exclusion: Exclusion, cell: Cell) -> bool:
    return (
        exclusion.model in (None, cell.model)
        and exclusion.seed in (None, cell.seed)
        and exclusion.preset in (None, cell.preset, cell.ladder)
        and exclusion.backend in (None, cell.backend)
        and (exclusion.conditions is None or tuple(exclusion.conditions) == cell.conditions)
    )


def _cell(
    model: _Model,
    backend: str,
    preset: str,
    params: dict[str, JSON],
    conditions: tuple[str, ...],
    seed: int,
) -> Cell:
    entry = model.entry
    model_part = entry.id + (f"@{entry.revision[:12]}" if entry.revision else "")
    model_part += f"-{entry.dtype}" if entry.dtype else ""
    model_part += "-folder" if entry.folder else ""
    conds = "+".join(CONDITION_ABBREVIATIONS[c] for c in conditions) or "default"
    name = folder_name("_".join(slug(p) for p in (model_part, backend, preset, conds, f"s{seed}")))
    place = ladder_of(preset) if params == PRESETS.get(preset) else None
    return Cell(
        name,
        model.kind,
        entry.id,
        model.key,
        entry.revision,
        entry.dtype,
        entry.folder,
        entry.host,
        model.fixture,
        backend,
        seed,
        preset,
        params,
        conditions,
        None if place is None else place[0],
        None if place is None else place[1],
    )


def expand(plan: Plan, plan_path: Path) -> list[Cell]:
    """The plan's cells in a stable order (models, backends, presets, conditions, seeds),
    or an `InputError` naming the key of the first problem."""
    check_plan(plan, plan_path)  # bounds, ranges, duplicates, counts: before anything is made
    for axis in ("models", "presets", "conditions"):
        if not getattr(plan.axes, axis):
            raise _bad(plan_path, f"axes.{axis}", "an axis that makes no cell (it is empty)")
    seeds = seeds_of(plan, plan_path)
    if not seeds:
        raise _bad(plan_path, "axes.seeds", "an axis that makes no cell (no seed)")
    models = resolve_models(plan, plan_path)
    presets = parameter_sets(plan, plan_path)
    entry_of = {name: i for i, name in _axis_names(plan)}
    conditions = condition_sets(plan, plan_path)
    if any(m.kind == "browser" for m in models) and not plan.axes.backends:
        raise _bad(
            plan_path, "axes.backends", "an axis that makes no cell (browser models need a backend)"
        )
    if "native" in plan.axes.backends:
        for model in models:
            if model.kind == "browser":
                check_native(model, plan_path)
    cells: list[Cell] = []
    where: dict[tuple[str, ...], str] = {}
    names: dict[str, str] = {}
    for model in models:
        backends = ("native",) if model.kind == "synthetic" else plan.axes.backends
        for backend in backends:
            for preset, params in presets.items():
                p = entry_of[preset]
                for c, chosen in enumerate(conditions):
                    for seed in seeds:
                        cell = _cell(model, backend, preset, params, chosen, seed)
                        axis_key = f"axes.models[{model.index}]"
                        identity = (cell.task_key, str(seed))
                        if identity in where:
                            raise _bad(
                                plan_path,
                                axis_key,
                                f"duplicate cells: {cell.name} is also made by {where[identity]}",
                            )
                        if cell.name in names:
                            raise _bad(
                                plan_path,
                                axis_key,
                                f"cell name {cell.name} is also "
                                f"the name of a cell of {names[cell.name]}",
                            )
                        where[identity] = names[cell.name] = (
                            f"{axis_key}, axes.presets[{p}], axes.conditions[{c}]"
                        )
                        cells.append(cell)
                        if len(cells) > MAX_CELLS:
                            raise _bad(plan_path, "axes", f"more than {MAX_CELLS} cells")
    return exclude(plan, plan_path, cells)


def check_native(model: _Model, plan_path: Path) -> None:
    """The model's files can run natively as the page would (local, a verified chat template,
    no logits processor), or the plan is refused naming the model's key."""
    entry = model.entry
    options = Options(
        entry.id,
        "native",
        entry.dtype,
        entry.revision,
        0,
        {},
        None,
        entry.host,
        entry.folder,
        [],
        {},
    )
    try:
        model_files(options, choose_native(options))
    except (SetupError, UsageError) as error:
        raise _bad(
            plan_path,
            f"axes.models[{model.index}]",
            f"{entry.id!r} cannot run on backend native: {error.message}",
        ) from None


def exclude(plan: Plan, plan_path: Path, cells: Sequence[Cell]) -> list[Cell]:
    """`cells` less the plan's exclusions; an exclusion that matches nothing is refused (a
    typo would otherwise run cells the author meant to leave out)."""
    kept = list(cells)
    for i, exclusion in enumerate(plan.exclude):
        if not any(_excluded(exclusion, cell) for cell in cells):
            raise _bad(plan_path, f"exclude[{i}]", "matches no cell of the plan")
        kept = [cell for cell in kept if not _excluded(exclusion, cell)]
    if not kept:
        raise _bad(plan_path, "exclude", "leaves no cell to run")
    return kept


def check_engine_resources(cells: Sequence[Cell], gpus: float, plan_path: Path) -> None:
    """A WebGPU cell needs a GPU: refused, naming the cell, on a cluster that has none."""
    for cell in cells:
        if cell.kind == "browser" and cell.backend == "webgpu" and gpus < 1:
            raise _bad(
                plan_path,
                "axes.backends",
                f"cell {cell.name} runs on WebGPU and asks "
                "for a GPU, but the Ray cluster has none (use wasm, or add GPU nodes)",
            )


def describe(cell: Cell) -> str:
    """What would run, in one line (the `--dry-run` listing)."""
    what = (
        "simulate (native, synthetic)"
        if cell.kind == "synthetic"
        else (f"sweep ({cell.backend}{', TEST FIXTURE' if cell.fixture else ''})")
    )
    conditions = ",".join(cell.conditions) or "default conditions"
    return f"{cell.name}: {what}, model {cell.model}, seed {cell.seed}, {cell.preset}, {conditions}"
