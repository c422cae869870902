"""`DIR/study-receipt.json`: a study's hypotheses and analysis, frozen before any cell starts.

    python -m pyapp study-receipt PLAN --out DIR       # writes DIR/study-receipt.json
    python -m pyapp study-receipt PLAN --check FILE    # what the receipt says of PLAN now
    python -m pyapp matrix PLAN --out DIR               # refused without the receipt

The receipt holds the plan's hash (`plan_sha256`: the cells, hypotheses left out), every
hypothesis with its own SHA-256 and the resamples and seed of its bootstrap, the prior
exposure (seeds and task sets observed before), each cell's model by catalogue id and
config.json digest, its rung's task parameters and its seed (the held-out tasks: unsealed
seeds, the same for every model of the plan), the residual test's permutations, seed, α and
minimum n — and a `fingerprint`, the SHA-256 of its canonical JSON (`receipt_sha256`), so an
edit to the file is found. It is written once: never over an existing receipt, never into a
folder whose cells have started (`write_receipt`).

`python -m pyapp matrix` refuses a plan with `[[hypotheses]]` until its folder holds a
receipt of this plan (`require_receipt`). A hypothesis added to or edited in the plan after
the receipt is **post hoc** (`registration`): the study judges only the receipt's, and
labels the others post hoc, with no verdict.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from pyapp.errors import InputError, RecordError
from pyapp.host import REPO_ROOT, write_atomically
from pyapp.matrix.cells import Cell
from pyapp.matrix.check import plan_sha256
from pyapp.matrix.folder import check_entry
from pyapp.matrix.hypotheses import Hypothesis, PriorExposure, hypothesis_sha256
from pyapp.matrix.plan import Plan
from pyapp.predict import DEFAULT_RESAMPLES
from pyapp.records import (
    JSON,
    canonical_text,
    check_kind,
    document_text,
    from_json,
    json_schema,
    read_document,
)
from pyapp.sweep import bundled_folder, read_catalogue
from pyapp.tasks import GENERATOR_VERSION

RECEIPT_NAME = "study-receipt.json"
RECEIPT_SCHEMA: Literal["study-receipt/1"] = "study-receipt/1"
SCHEMA_ID = "https://composition-lab.invalid/schemas/study-receipt.schema.json"
RESIDUAL_PERMUTATIONS = 2000
"""Permutations of each model-identity residual test."""
RESIDUAL_ALPHA = 0.05
"""The residual tests' level (Holm across the study's residual tests)."""
RESIDUAL_MIN_N = 30
"""Fewer tasks seen by both subjects than this: the residual test is underpowered."""
HELD_OUT = (
    "unsealed task seeds fixed here, the same for every model of the plan: each cell's "
    "held-out tasks are generated from its seed and rung parameters alone"
)
HELD_OUT_SEALED = {
    True: "sealed: each cell's held-out tasks are drawn after its own freeze (generator "
    "tasks/2), from the seed its frozen profiles seal; this receipt fixes the task seeds, not "
    "the held-out tasks, which do not exist yet",
    "study": "sealed per task seed (a study-level seal): the cells of one seed stop at their "
    "freeze; once all are frozen the matrix makes the seed's seal from each one's own and "
    "every cell draws the same held-out tasks from it (generator tasks/2); this receipt "
    "fixes the task seeds, not the held-out tasks, which do not exist yet",
}
"""How the held-out tasks are fixed, by the plan's `options.sealed` (false: `HELD_OUT`)."""


@dataclass(frozen=True)
class FrozenHypothesis:
    """A hypothesis as the receipt froze it."""

    hypothesis: Hypothesis
    """The hypothesis."""
    sha256: str
    """SHA-256 of its canonical JSON (an edit changes it: the edited one is post hoc)."""
    resamples: int
    """Resamples of its bootstrap."""
    bootstrap_seed: int
    """Seed of its bootstrap's draws."""


@dataclass(frozen=True)
class ReceiptCell:
    """A cell of the plan: its model, task parameters and seed, fixed before it runs."""

    name: str
    """The cell's name."""
    model: str
    """The model as the plan writes it."""
    catalogue_id: str
    """The model's canonical identity (catalogue model id, or the synthetic spec)."""
    config_sha256: str | None
    """SHA-256 of the config.json it loads (a bundled or local model); null when the files
    are not local before the run (its trace records them)."""
    backend: str
    """Its backend."""
    seed: int
    """Its task seed (unsealed: the held-out tasks are fixed by it)."""
    preset: str
    """Its preset or rung."""
    ladder: str | None
    """The ladder of its rung."""
    rung: int | None
    """The rung's place on the ladder."""
    params: dict[str, JSON]
    """The rung's task-parameter overrides."""
    conditions: tuple[str, ...]
    """Its conditions."""


@dataclass(frozen=True)
class StudyReceipt:
    """study-receipt.json: what a confirmatory study committed to before its data."""

    schema_version: Literal["study-receipt/1"]
    """Version of this schema."""
    kind: Literal["composition-lab-study-receipt"]
    """Document kind."""
    created_at: str
    """UTC time it was written."""
    plan_name: str | None
    """The plan's name."""
    plan_sha256: str
    """The plan's hash (`pyapp.matrix.check.plan_sha256`: hypotheses left out)."""
    generator_version: str
    """The task generator's version (with seed and parameters it fixes the tasks)."""
    held_out: str
    """How the held-out tasks are fixed, in words."""
    seeds: tuple[int, ...]
    """The plan's task seeds."""
    hypotheses: tuple[FrozenHypothesis, ...]
    """The preregistered hypotheses."""
    prior_exposure: tuple[PriorExposure, ...]
    """Seeds and task sets observed before (none of the cells repeats one)."""
    cells: tuple[ReceiptCell, ...]
    """Every cell of the plan."""
    residual_permutations: int
    """Permutations of each model-identity residual test."""
    residual_seed: int
    """Seed of the residual tests' permutations."""
    residual_alpha: float
    """Their level (Holm across them)."""
    residual_min_n: int
    """Their minimum number of tasks seen by both subjects."""
    fingerprint: str
    """SHA-256 of this receipt's canonical JSON with `fingerprint` empty."""


def receipt_schema() -> dict[str, JSON]:
    return json_schema(StudyReceipt, schema_id=SCHEMA_ID, title="Composition Lab study receipt")


def receipt_sha256(receipt: StudyReceipt) -> str:
    """The fingerprint: SHA-256 of the canonical JSON with `fingerprint` empty."""
    text = canonical_text(replace(receipt, fingerprint=""))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _derived_seed(plan_sha: str, name: str) -> int:
    return int(hashlib.sha256(f"{plan_sha}:{name}".encode()).hexdigest()[:12], 16)


def _file_sha256(path: Path) -> str | None:
    if not path.is_file():
        return None
    return hashlib.sha256(path.read_bytes()).hexdigest()


def config_digest(cell: Cell, plan_path: Path, catalogue: dict[str, JSON] | None) -> str | None:
    """SHA-256 of the config.json the cell's model loads, when it is local now."""
    if cell.kind == "synthetic":
        return hashlib.sha256(cell.model_key.encode("utf-8")).hexdigest()
    if cell.folder is not None:
        return _file_sha256((plan_path.parent / cell.folder) / "config.json")
    models = catalogue.get("models") if isinstance(catalogue, dict) else None
    for entry in models if isinstance(models, list) else []:
        if isinstance(entry, dict) and entry.get("key") == cell.model:
            bundled = bundled_folder(str(entry.get("source")), str(entry.get("model_id")))
            return None if bundled is None else _file_sha256(bundled / "config.json")
    return None


def make_receipt(
    plan: Plan, plan_path: Path, cells: Sequence[Cell], created_at: str, site: Path
) -> StudyReceipt:
    """The receipt of a checked plan and its expanded cells."""
    sha = plan_sha256(plan)
    try:
        catalogue: dict[str, JSON] | None = read_catalogue(site)
    except Exception:  # no built site: the source catalogue, which the build copies
        catalogue = None
    if catalogue is None:
        try:
            catalogue = read_catalogue(REPO_ROOT / "site")
        except Exception:  # no catalogue at all: the digests of bundled models stay unknown
            catalogue = None
    frozen = tuple(
        FrozenHypothesis(h, hypothesis_sha256(h), DEFAULT_RESAMPLES, _derived_seed(sha, h.id))
        for h in plan.hypotheses
    )
    receipt = StudyReceipt(
        schema_version=RECEIPT_SCHEMA,
        kind="composition-lab-study-receipt",
        created_at=created_at,
        plan_name=plan.name,
        plan_sha256=sha,
        generator_version=GENERATOR_VERSION,
        held_out=HELD_OUT_SEALED.get(plan.options.sealed, HELD_OUT),
        seeds=tuple(sorted({c.seed for c in cells})),
        hypotheses=frozen,
        prior_exposure=plan.prior_exposure,
        cells=tuple(
            ReceiptCell(
                c.name,
                c.model,
                c.model_key,
                config_digest(c, plan_path, catalogue),
                c.backend,
                c.seed,
                c.preset,
                c.ladder,
                c.rung,
                dict(c.params),
                c.conditions,
            )
            for c in cells
        ),
        residual_permutations=RESIDUAL_PERMUTATIONS,
        residual_seed=_derived_seed(sha, "residuals"),
        residual_alpha=RESIDUAL_ALPHA,
        residual_min_n=RESIDUAL_MIN_N,
        fingerprint="",
    )
    return replace(receipt, fingerprint=receipt_sha256(receipt))


def write_receipt(out: Path, receipt: StudyReceipt) -> Path:
    """Write `out/study-receipt.json` once: refused over an existing receipt (an edited
    hypothesis stays post hoc) and in a folder whose cells have started."""
    path = out / RECEIPT_NAME
    check_entry(path, "file")
    if os.path.lexists(path):
        raise InputError(
            "receipt_exists",
            "a study receipt is already here: it is never rewritten (hypotheses added or "
            "edited now are post hoc)",
            path=str(path),
        )
    if os.path.lexists(out / "matrix.json") or os.path.lexists(out / "cells"):
        raise InputError(
            "cells_started",
            "the matrix has already run here: a receipt written now would follow the data",
            path=str(out),
        )
    write_atomically(path, document_text(receipt, "study-receipt"))
    return path


def read_receipt(path: Path) -> StudyReceipt:
    """The receipt in `path`, its fingerprint checked (`InputError` naming the file)."""
    document = read_document(path)
    check_kind(document, "study-receipt", path)
    try:
        receipt: StudyReceipt = from_json(StudyReceipt, document)
    except RecordError as error:
        raise InputError("bad_receipt", f"not a study receipt: {error}", path=str(path)) from None
    if receipt_sha256(receipt) != receipt.fingerprint:
        raise InputError(
            "receipt_edited",
            "its fingerprint does not match its content: the receipt was edited after it was "
            "written",
            path=str(path),
        )
    return receipt


def registration(
    hypothesis: Hypothesis, receipt: StudyReceipt | None
) -> Literal["preregistered", "post hoc"]:
    """`preregistered` when the receipt holds this hypothesis unchanged, else `post hoc`."""
    if receipt is None:
        return "post hoc"
    sha = hypothesis_sha256(hypothesis)
    return "preregistered" if any(f.sha256 == sha for f in receipt.hypotheses) else "post hoc"


def check_receipt(receipt: StudyReceipt, plan: Plan) -> list[str]:
    """What the receipt says of `plan` now, one line each: another plan's receipt, and each
    hypothesis added or edited after it (post hoc) or left out of the plan since."""
    if receipt.plan_sha256 != plan_sha256(plan):
        unsealed = replace(plan, options=replace(plan.options, sealed=False))
        if plan.options.sealed is True and receipt.plan_sha256 == plan_sha256(unsealed):
            return [
                f"another plan's receipt: it froze plan {receipt.plan_sha256[:12]}, run "
                "unsealed; this plan says nothing of `sealed`, whose default is now sealed "
                "(each cell's held-out tasks drawn after its freeze): write `sealed = false` "
                "under [options] to keep the receipt's plan, or make a new receipt"
            ]
        return [
            f"another plan's receipt: it froze plan {receipt.plan_sha256[:12]}, this plan is "
            f"{plan_sha256(plan)[:12]} (cells, seeds or options differ)"
        ]
    lines = []
    frozen = {f.hypothesis.id: f for f in receipt.hypotheses}
    for h in plan.hypotheses:
        if h.id not in frozen:
            lines.append(f"{h.id}: POST HOC (added after the study receipt)")
        elif frozen[h.id].sha256 != hypothesis_sha256(h):
            lines.append(f"{h.id}: POST HOC (edited after the study receipt)")
    ids = {h.id for h in plan.hypotheses}
    lines += [f"{i}: frozen in the receipt, no longer in the plan" for i in frozen if i not in ids]
    return lines


def require_receipt(out: Path, plan: Plan) -> StudyReceipt | None:
    """The folder's receipt when the plan has hypotheses (None when it has none); refused
    in one line when it is missing, edited or another plan's."""
    if not plan.hypotheses:
        return None
    path = out / RECEIPT_NAME
    if not os.path.lexists(path):
        raise InputError(
            "no_study_receipt",
            "the plan has [[hypotheses]]: freeze them first with `python -m pyapp "
            f"study-receipt PLAN --out {out}` (nothing has started)",
            path=str(path),
        )
    check_entry(path, "file")
    receipt = read_receipt(path)
    if receipt.plan_sha256 != plan_sha256(plan):
        raise InputError("wrong_study_receipt", check_receipt(receipt, plan)[0], path=str(path))
    return receipt
