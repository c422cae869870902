"""The learned reference subject: what it is, written once (tests/fixtures/subject).

A ~1.3 M-parameter Llama-style model trained by `scripts/train_subject.py` on single
primitives only (one add, sub or mul in the project's own prompts; never a composition). Its
numbers are the behaviour of a real learned model, so they are evidence about *this subject*,
but never an LLM's: every trace, prediction, report, page and `compare` row names it with
`SUBJECT_LABEL` under the evidence kind `reference-subject`, and `reproduce` refuses a trace
that relabels it (its config.json digest with another evidence kind, or the kind with another
config). `SUBJECT_RECIPE` is the provenance a trace records for it (`subject_recipe`);
tests/test_subject_labels.py checks every constant here against the committed
tests/fixtures/subject/subject.json.
"""

from __future__ import annotations

from typing import Final

SUBJECT_SOURCE: Final = "bundled-subject"
"""The catalogue source of the bundled subject (served by the site like the fixture)."""
SUBJECT_MODEL_ID: Final = "subject/reference-2"
"""Its model id: the folder under the site's `models/`."""
SUBJECT_PARAMETERS: Final = 1_335_840
"""Parameters of the committed subject (subject.json `parameters`)."""
SUBJECT_CONFIG_SHA256: Final = "fa870bce166898bfd0d8dec1f7d5675841b6cab026a1aeb39edc60d85f4a6ef2"
"""SHA-256 of its config.json: a model loaded with this config is the subject wherever it
was served from."""
SUBJECT_LABEL: Final = (
    f"locally trained reference subject ({SUBJECT_PARAMETERS / 1e6:.1f} M parameters, "
    "trained on primitives only)"
)
"""The words beside every number the subject produced."""
SUBJECT_RECIPE: Final[dict[str, str | int]] = {
    "script": "scripts/train_subject.py",
    "recipe_sha256": "e847a5d1744731812bafa5ad852f74dcfe4ff9b8ed49b5d281d4fe34a32530c1",
    "data_version": "subject-data/2",
    "steps": 16000,
    "batch": 48,
    "data_seed": 0,
    "model_seed": 2026,
    "parameters": SUBJECT_PARAMETERS,
}
"""The training recipe in brief, recorded as the model's provenance (`subject_recipe`); the
full recipe and the scripts' SHA-256 are in tests/fixtures/subject/subject.json."""
