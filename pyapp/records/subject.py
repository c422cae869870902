"""The locally trained reference subjects: what each is, written once (`SUBJECTS`).

Each is a ~1.3 M-parameter Llama-style model trained by `scripts/train_subject.py` under one
curriculum (`--curriculum`): `subject/reference-2` (tests/fixtures/subject) on single
primitives only, never a composition; `subject/recurrences-1` (tests/fixtures/subject2)
initialised from the first's weights, then trained on primitives and on whole affine
recurrences of one and two updates, never a determinant or a derivative. Their numbers are the
behaviour of real learned models, so they are evidence about *that subject*, never an LLM's:
every trace, prediction, report, page and `compare` row names a subject with its own `label`
under the evidence kind `reference-subject`. A subject is recognised by its config.json
digest (the two configs differ: the second carries `subject_curriculum`), and `reproduce`
refuses a trace that relabels one (its config with another evidence kind, the kind with a
config that is no subject's, or a recipe or model id that is another subject's).

`SUBJECT_RECIPE` & co. name the first subject, as before. tests/test_subject_labels.py and
tests/test_subject_model.py check every entry against its committed subject.json.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

SUBJECT_SOURCE: Final = "bundled-subject"
"""The catalogue source of a bundled subject (served by the site like the fixture)."""


@dataclass(frozen=True)
class Subject:
    """One locally trained reference subject."""

    key: str
    """Its catalogue key (site/models.json)."""
    model_id: str
    """Its model id: the folder under the site's `models/`."""
    folder: str
    """Its committed files, relative to the repository root."""
    parameters: int
    """Parameters (subject.json `parameters`)."""
    config_sha256: str | None
    """SHA-256 of its config.json: a model loaded with this config is this subject wherever
    it was served from. None while the subject is not trained yet (it is then unknown to the
    evidence rule, `reproduce` and the catalogue)."""
    curriculum: str
    """What it was trained on, in words (the end of its label)."""
    recipe: dict[str, str | int]
    """The training recipe in brief, recorded as the model's provenance (`subject_recipe`);
    the full recipe and the scripts' SHA-256 are in its subject.json."""

    @property
    def label(self) -> str:
        """The words beside every number the subject produced."""
        return (
            f"locally trained reference subject ({self.parameters / 1e6:.1f} M parameters, "
            f"{self.curriculum})"
        )


REFERENCE: Final = Subject(
    key="subject",
    model_id="subject/reference-2",
    folder="tests/fixtures/subject",
    parameters=1_335_840,
    config_sha256="fa870bce166898bfd0d8dec1f7d5675841b6cab026a1aeb39edc60d85f4a6ef2",
    curriculum="trained on primitives only",
    recipe={
        "script": "scripts/train_subject.py",
        "recipe_sha256": "e847a5d1744731812bafa5ad852f74dcfe4ff9b8ed49b5d281d4fe34a32530c1",
        "data_version": "subject-data/2",
        "steps": 16000,
        "batch": 48,
        "data_seed": 0,
        "model_seed": 2026,
        "parameters": 1_335_840,
    },
)
RECURRENCES: Final = Subject(
    key="subject2",
    model_id="subject/recurrences-1",
    folder="tests/fixtures/subject2",
    parameters=1_335_840,
    config_sha256="ae52b04bd2a14d467ce89025b381bca6795bbd5e696274f5c7320f46043a4265",
    curriculum="trained on primitives and one- and two-step recurrences",
    recipe={
        "script": "scripts/train_subject.py",
        "curriculum": "primitives+recurrences",
        "recipe_sha256": "e62445f2829dc091c640ac214f945463b9c87c1268e14d49140889e4415e1ada",
        "data_version": "subject-data/2+recurrences/1",
        "warm_start": "subject/reference-2",
        "steps": 900,
        "batch": 48,
        "data_seed": 1,
        "model_seed": 2027,
        "parameters": 1_335_840,
    },
)
SUBJECTS: Final = (REFERENCE, RECURRENCES)
"""Every locally trained reference subject, the first first."""


def trained_subjects() -> tuple[Subject, ...]:
    """The subjects whose files exist (a config digest is known)."""
    return tuple(s for s in SUBJECTS if s.config_sha256 is not None)


def subject_by_config(config_sha256: str | None) -> Subject | None:
    """The subject whose config.json has this digest, if any."""
    if config_sha256 is None:
        return None
    return next((s for s in trained_subjects() if s.config_sha256 == config_sha256), None)


def subject_by_model_id(model_id: str) -> Subject | None:
    """The subject of this catalogue model id, if any."""
    return next((s for s in SUBJECTS if s.model_id == model_id), None)


def subject_of(model_id: str, config_sha256: str | None) -> Subject:
    """The subject a `reference-subject` model is: by its config digest, else by its model id
    (a bundled load whose digest was not recorded), else the first."""
    return subject_by_config(config_sha256) or subject_by_model_id(model_id) or REFERENCE


SUBJECT_MODEL_ID: Final = REFERENCE.model_id
"""The first subject's model id."""
SUBJECT_PARAMETERS: Final = REFERENCE.parameters
"""Parameters of the first subject."""
SUBJECT_CONFIG_SHA256: Final = "fa870bce166898bfd0d8dec1f7d5675841b6cab026a1aeb39edc60d85f4a6ef2"
"""SHA-256 of the first subject's config.json."""
SUBJECT_LABEL: Final = REFERENCE.label
"""The first subject's label (the evidence kind's label where no model is named)."""
SUBJECT_RECIPE: Final = REFERENCE.recipe
"""The first subject's recipe in brief."""
