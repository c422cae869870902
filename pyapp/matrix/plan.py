"""A matrix PLAN: the TOML file that names a study's axes and fixed options.

The plan is read with the standard library's `tomllib` into the frozen records below (a
docstring per field); `python -m pyapp schema` generates `exports/matrix-plan.schema.json`
from them, drift-checked like the other schemas. A plan that does not fit its records is
refused with one line naming the file and the key (`axes.models[2]`, `options.consent`).

    [axes]
    models = ["independent", "size-dependent:slope=1.2", "fixture",
              { id = "smollm2-135m", folder = "tests/fixtures/standins/llama" },
              { id = "HuggingFaceTB/SmolLM2-135M-Instruct", revision = "12fd…", dtype = "q4" }]
    seeds = [1, 2, 3]                     # or { first = 1, last = 40 }
    presets = ["design", "small"]         # pyapp.tasks PRESETS, a ladder, [parameter_sets.NAME]
    conditions = [["model-only", "controlled-chain"]]   # condition sets
    backends = ["wasm"]                   # wasm, webgpu (the page) or native (onnxruntime,
                                          # local ONNX models); synthetic cells are native

    [parameter_sets.small]
    primitives_per_op = 1

    [options]
    consent = true
    timeout_s = 900

    [[exclude]]
    model = "fixture"
    seed = 2

    [[hypotheses]]                        # pyapp.matrix.hypotheses: claims before the data
    id = "aware-beats-climatology"
    …

What the axes expand to, and what is checked, is `pyapp.matrix.cells`.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pyapp.errors import InputError, RecordError
from pyapp.matrix.hypotheses import Hypothesis, PriorExposure
from pyapp.records import JSON, from_json, json_schema, read_text

PLAN_SCHEMA: Literal["matrix-plan/1"] = "matrix-plan/1"
SCHEMA_ID = "https://composition-lab.invalid/schemas/matrix-plan.schema.json"
MAX_PLAN_BYTES = 1_000_000
"""A plan is a small text file; anything larger is refused before parsing."""

OPTIONAL = {"optional_on_read": True}
"""Metadata of a field the plan may leave out (it then reads as its default)."""


@dataclass(frozen=True)
class ModelEntry:
    """A model of the `models` axis written as a table (a plain string is `id` alone)."""

    id: str
    """A synthetic specification (`size-dependent:slope=1.2`, run natively by `simulate`), a
    catalogue key or model id (`fixture`, `smollm2-135m`), or any hub id `org/name` (a browser
    `sweep`)."""
    revision: str | None = field(default=None, metadata=OPTIONAL)
    """Browser models: the revision to load (default: the catalogue's, or `main`)."""
    dtype: str | None = field(default=None, metadata=OPTIONAL)
    """Browser models: the weights' dtype (default: the page's first choice)."""
    folder: str | None = field(default=None, metadata=OPTIONAL)
    """Browser models: a folder of the model's files, served locally as the hub (a stand-in;
    relative to the plan's folder)."""
    host: str | None = field(default=None, metadata=OPTIONAL)
    """Browser models: a hub-like server URL, or a folder laid out like the hub."""


@dataclass(frozen=True)
class SeedRange:
    """Task seeds `first`..`last`, both included."""

    first: int
    """The first seed."""
    last: int
    """The last seed (included)."""


@dataclass(frozen=True)
class Axes:
    """The axes whose cross product is the set of cells."""

    models: tuple[str | ModelEntry, ...]
    """Models: synthetic specifications and browser models (strings or tables)."""
    seeds: tuple[int, ...] | SeedRange
    """Task seeds: a list, or a range `{ first = A, last = B }`."""
    presets: tuple[str, ...] = field(default=("design",), metadata=OPTIONAL)
    """Task parameter sets: names of `pyapp.tasks.presets.PRESETS`, of a ladder
    (`pyapp.tasks.presets.LADDERS`: it stands for its rungs, easiest first, and each cell
    remembers its ladder and rung) or of the plan's `[parameter_sets.NAME]` tables."""
    conditions: tuple[tuple[str, ...], ...] = field(default=((),), metadata=OPTIONAL)
    """Condition sets, each a list of conditions; an empty list is the command's default
    (sweep: all four; simulate: the three model conditions)."""
    backends: tuple[Literal["wasm", "webgpu", "native"], ...] = field(
        default=("wasm",), metadata=OPTIONAL
    )
    """Backends of the sweep cells: `wasm` and `webgpu` in the page, `native` under onnxruntime
    without a browser (`sweep --backend native`: the fixture, the subject, a model with a local
    `folder` or `host`); synthetic cells run natively and take none."""


@dataclass(frozen=True)
class Options:
    """Fixed options, the same for every cell."""

    consent: bool = field(default=False, metadata=OPTIONAL)
    """Consent to download and load every browser model of the plan (the sweep's
    `--consent`); a plan with browser cells and no consent is refused."""
    ledger: str = field(default="cell", metadata=OPTIONAL)
    """Ledger of observed held-out tasks: `cell` (each cell keeps its own, in its folder),
    `shared` (one `ledger.json` in the output folder) or a file path."""
    timeout_s: float | None = field(default=None, metadata=OPTIONAL)
    """A browser cell stops (resumably) after this many seconds of one attempt."""
    page_params: dict[str, str] | None = field(default=None, metadata=OPTIONAL)
    """Extra query parameters for the page (the sweep's `--page-param`)."""
    chromium_flags: tuple[str, ...] = field(default=(), metadata=OPTIONAL)
    """Extra Chromium flags (the sweep's `--chromium-flag`)."""
    site: str | None = field(default=None, metadata=OPTIONAL)
    """The built site browser cells serve (default: build/site of this checkout)."""
    cpus_per_browser_cell: float = field(default=1.0, metadata=OPTIONAL)
    """Ray engine: CPUs a WASM browser cell asks for (a WebGPU cell asks for one GPU)."""
    cpus_per_synthetic_cell: float = field(default=0.5, metadata=OPTIONAL)
    """Ray engine: CPUs a synthetic cell asks for."""
    cpus_per_native_cell: float = field(default=1.0, metadata=OPTIONAL)
    """Ray engine: CPUs a native sweep cell asks for (onnxruntime runs one thread)."""
    retries: int = field(default=2, metadata=OPTIONAL)
    """Ray engine: how often a cell whose worker or node was lost is tried again."""
    chain_protocol: Literal["design", "extended"] = field(default="design", metadata=OPTIONAL)
    """The controlled chain's protocol of every cell (`--chain-protocol` of `sweep` and
    `simulate`; `pyapp.records.terms`): `design` (the default) or `extended` (every family
    routed, seven calls a route). A study pools only cells of one protocol."""
    sealed: bool | Literal["study"] = field(default=True, metadata=OPTIONAL)
    """How the cells' held-out tasks are sealed (docs/audit.md):

    - `true` (the default): every cell runs sealed (`--sealed` of `sweep` and `simulate`),
      its held-out tasks drawn after its own freeze, from the seed its profiles seal — each
      cell its own tasks;
    - `"study"`: every cell runs sealed, and the cells of one task seed share their held-out
      tasks: each stops at its freeze, and once all of them are frozen the matrix makes the
      seed's study-level seal from every one's own seal (`pyapp.matrix.seals`) and each draws
      from it (`--study-seal FILE`) — a comparison's subjects, a browser/native identity
      check;
    - `false`: unsealed, the held-out tasks follow from the task seed (known before the
      freeze; the meaning of every plan written before this option, which is why a plan
      saying `false` keeps the hash it had without it).

    A plan whose hypotheses compare two models (`versus`) needs `"study"` or `false`: their
    cells must share held-out tasks."""


@dataclass(frozen=True)
class Exclusion:
    """Cells to leave out: every key given must match (keys left out match anything)."""

    model: str | None = field(default=None, metadata=OPTIONAL)
    """A model's `id` as written in `axes.models`."""
    seed: int | None = field(default=None, metadata=OPTIONAL)
    """A task seed."""
    preset: str | None = field(default=None, metadata=OPTIONAL)
    """A preset or parameter-set name, or a ladder's (all its rungs)."""
    conditions: tuple[str, ...] | None = field(default=None, metadata=OPTIONAL)
    """A condition set, as written."""
    backend: str | None = field(default=None, metadata=OPTIONAL)
    """A backend (`wasm`, `webgpu`, `native`: synthetic cells and native sweeps)."""


@dataclass(frozen=True)
class Plan:
    """A matrix plan: axes, task parameter sets, fixed options, exclusions."""

    axes: Axes
    """The axes."""
    schema: Literal["matrix-plan/1"] = field(default=PLAN_SCHEMA, metadata=OPTIONAL)
    """Version of this schema."""
    name: str | None = field(default=None, metadata=OPTIONAL)
    """What the study is, in words (shown in the report)."""
    parameter_sets: dict[str, dict[str, JSON]] | None = field(default=None, metadata=OPTIONAL)
    """Named task parameter sets: NAME → {parameter: value} (as `--param` takes them)."""
    options: Options = field(default=Options(), metadata=OPTIONAL)
    """Fixed options."""
    exclude: tuple[Exclusion, ...] = field(default=(), metadata=OPTIONAL)
    """Cells left out of the cross product."""
    hypotheses: tuple[Hypothesis, ...] = field(default=(), metadata=OPTIONAL)
    """Claims fixed before the data (`pyapp.matrix.hypotheses`; docs/comparison.md): the
    matrix refuses to start until a study receipt freezes them."""
    prior_exposure: tuple[PriorExposure, ...] = field(default=(), metadata=OPTIONAL)
    """Seeds and task sets observed before this study (its cells may not repeat them)."""


def plan_schema() -> dict[str, JSON]:
    return json_schema(Plan, schema_id=SCHEMA_ID, title="Composition Lab matrix plan")


def _key(path: str) -> str:
    """`$.axes.models[2]` → `axes.models[2]`: the key as the plan's author wrote it."""
    return path.removeprefix("$").removeprefix(".") or "(top level)"


def read_plan(path: Path) -> Plan:
    """The plan in `path`; an `InputError` naming the file and the key when it cannot be."""
    text = read_text(path, MAX_PLAN_BYTES)  # a regular file, bounded, UTF-8 (one reader)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InputError("bad_plan", f"not TOML: {error}", path=str(path)) from None
    except RecursionError:  # tomllib recurses into nested arrays and tables
        raise InputError("bad_plan", "not TOML: nested too deeply", path=str(path)) from None
    try:
        plan: Plan = from_json(Plan, data)
    except RecordError as error:
        key = _key(error.path or "$")
        raise InputError("bad_plan", f"{key}: {error.message}", path=str(path)) from None
    except RecursionError:
        raise InputError("bad_plan", "a value nested too deeply", path=str(path)) from None
    return plan
