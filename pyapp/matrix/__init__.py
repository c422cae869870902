"""Matrix runs: many models × seeds × presets as one plan (`python -m pyapp matrix`).

    plan.py         the PLAN (TOML) as typed records; generates exports/matrix-plan.schema.json
    check.py        the plan checked whole with bounds (ranges counted, numbers in range,
                    duplicates, lengths) before anything is made; cells' folder names
    cells.py        the plan's cells: the cross product less exclusions, checked, named
    runner.py       one attempt at one cell: `python -m pyapp simulate|sweep` as a subprocess
                    in DIR/cells/NAME/ (resume through the sweep's own --resume); the only
                    code the engines share
    engines.py      local (a thread pool of --jobs cell processes) and ray (a Ray task per cell)
    coordinator.py  the command: check, hold the folder, run the cells to run, record, Ctrl-C
    folder.py       the output folder as a record: one writer (a lock, or --wait), plain
                    entries only (no symlinks), another command's folder refused, atomic
                    writes that merge nothing unread (reusable by `study`)
    cellfiles.py    what each cell's own files say: missing, unfinished, re-derives (cached by
                    their hash) or not; which cell a trace is; a plan that changes a cell refused
    state.py        DIR/matrix.json: every cell's state, attempts, timings, errors, what its
                    files said (atomic; decided from the files, not trusted)
    progress.py     the progress line: done / running / failed / waiting, ETA
    summary.py      DIR/summary.json: a row per cell, pooled rows where pooling is allowed
    report.py       DIR/report.html
    cli.py          the command line of `matrix`
    hypotheses.py   a plan's [[hypotheses]] and [[prior_exposure]]: claims before the data
    study_receipt.py DIR/study-receipt.json: hypotheses, cells, seeds frozen before any cell
                    starts (fingerprint; the matrix refuses a plan with hypotheses without it)
    seals.py        a plan's `sealed = "study"`: each seed's study-level seal, made once all its
                    cells are frozen (DIR/seals/seed-N.json), and the check of a cell's seal

See docs/scale.md.
"""

from pyapp.matrix.cellfiles import check_match, files_sha256, result_options
from pyapp.matrix.cells import (
    CONDITION_ABBREVIATIONS,
    Cell,
    check_engine_resources,
    expand,
    site_of,
)
from pyapp.matrix.check import MAX_FOLDER_CHARS, folder_name, plan_sha256, seed_values
from pyapp.matrix.cli import add_parser
from pyapp.matrix.coordinator import OWN_ENTRIES
from pyapp.matrix.folder import CELL_ENTRIES, check_entry, claim_folder, hold_folder
from pyapp.matrix.hypotheses import (
    ALL_FAMILIES,
    POOLED,
    TWO_MODELS,
    Hypothesis,
    check_hypotheses,
    hypothesis_sha256,
)
from pyapp.matrix.plan import plan_schema, read_plan
from pyapp.matrix.report import render
from pyapp.matrix.seals import own_seal, seal_problem
from pyapp.matrix.state import CellState, FilesCheck, MatrixRecord, now, state_schema
from pyapp.matrix.study_receipt import (
    RECEIPT_NAME,
    RESIDUAL_ALPHA,
    RESIDUAL_MIN_N,
    RESIDUAL_PERMUTATIONS,
    FrozenHypothesis,
    StudyReceipt,
    check_receipt,
    make_receipt,
    read_receipt,
    receipt_schema,
    registration,
    require_receipt,
    write_receipt,
)
from pyapp.matrix.summary import (
    NOTE,
    SUMMARY_SCHEMA,
    MatrixSummary,
    across_seeds_rows,
    predictions_path,
)

__all__ = [
    "ALL_FAMILIES",
    "CELL_ENTRIES",
    "CONDITION_ABBREVIATIONS",
    "MAX_FOLDER_CHARS",
    "NOTE",
    "OWN_ENTRIES",
    "POOLED",
    "RECEIPT_NAME",
    "RESIDUAL_ALPHA",
    "RESIDUAL_MIN_N",
    "RESIDUAL_PERMUTATIONS",
    "SUMMARY_SCHEMA",
    "TWO_MODELS",
    "Cell",
    "CellState",
    "FilesCheck",
    "FrozenHypothesis",
    "Hypothesis",
    "MatrixRecord",
    "MatrixSummary",
    "StudyReceipt",
    "across_seeds_rows",
    "add_parser",
    "check_engine_resources",
    "check_entry",
    "check_hypotheses",
    "check_match",
    "check_receipt",
    "claim_folder",
    "expand",
    "files_sha256",
    "folder_name",
    "hold_folder",
    "hypothesis_sha256",
    "make_receipt",
    "now",
    "own_seal",
    "plan_schema",
    "plan_sha256",
    "predictions_path",
    "read_plan",
    "read_receipt",
    "receipt_schema",
    "registration",
    "render",
    "require_receipt",
    "result_options",
    "seal_problem",
    "seed_values",
    "site_of",
    "state_schema",
    "write_receipt",
]
