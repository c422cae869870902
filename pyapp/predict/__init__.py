"""Profiles, predictions and scoring: the predictions document's records, versions and
schema (``predictions``), a profile built from a trace's trials (``profile``), the freeze
computed in one place — the frozen profile and its hash, the frozen state-aware fit and
reference forecast, sealing a freeze record, the hash of the predictions a receipt names
(``freeze``) —, both predictors' forecast of one held-out task (``forecast``), observing
and scoring the held-out tasks (``predictor``: ``score_trace``), the state-aware predictor
(``state_aware``), Wilson intervals and Brier scores (``metrics``), what a Brier score
means — skill against a reference forecast, Murphy's decomposition, the two predictors'
paired difference with intervals, and against climatology (``skill``) —, the study's
figures of a slice of held-out tasks — skill against climatology, rung-aware pooling,
success by steps (``slices``) — with their two named intervals, a percentile bootstrap over
tasks and Student-t across seeds (``intervals``), the degenerate-score flags and the
descriptive answer templates every place that shows scores calls (``flags``), the
confirmatory tests — one-sided bootstrap and exact binomial p-values, Holm, the
model-identity residual permutation test (``confirm``) —, laying runs
side by side
(``compare``), the one rule for when a profile is exploratory — held-out tasks keyed by
content per model and condition, journal leaks (``exploratory``) — and the rules by which a
recorded trial is never scored, applied by every reader (``never_scored``)."""

from pyapp.predict.compare import (
    ACROSS_RUNS,
    ACROSS_RUNS_COLUMN,
    ACROSS_RUNS_DEFINITION,
    across_runs_text,
    evidence_shown,
    incompatibilities,
    run_differences,
    skill_lines,
    skill_scores,
)
from pyapp.predict.confirm import bootstrap_p, exact_binomial_p, holm, residual_permutation
from pyapp.predict.exploratory import (
    content_sha256,
    keys_by_condition,
    model_names,
    previously_seen,
    reveals,
    same_model,
)
from pyapp.predict.flags import (
    ANSWER_LABEL,
    MIN_TASKS,
    Answer,
    answer,
    answer_lines,
    climatology_line,
    degenerate_flags,
    difference_answer,
    flag_lines,
    flags_of,
    headline,
    interval_text,
    lines_of,
    run_figures,
    signed,
)
from pyapp.predict.forecast import predict_product, predict_state_aware, task_steps
from pyapp.predict.freeze import (
    complete_freeze,
    freeze_condition,
    freeze_profile,
    frozen_as_recorded,
    frozen_protocol,
    predictions_sha256,
    rederive_reference,
    refit_state_aware,
)
from pyapp.predict.intervals import (
    ACROSS_SEEDS,
    BOOTSTRAP,
    DEFAULT_BOOTSTRAP_SEED,
    DEFAULT_RESAMPLES,
    NamedInterval,
    bootstrap,
    resample_indices,
)
from pyapp.predict.metrics import (
    METRIC_VERSION,
    METRIC_VERSIONS,
    Z_95,
    CalibrationCell,
    brier_score,
    calibration_cells,
    cost_errors,
    wilson_interval,
)
from pyapp.predict.never_scored import RULES, never_scored_line
from pyapp.predict.predictions import (
    ASSUMPTIONS_3,
    ConditionResult,
    FrozenProfile,
    Observation,
    OpProfile,
    Prediction,
    PredictionsDocument,
    Scores,
    as_version,
    predictions_schema,
    read_predictions,
    without_absent_fields,
)
from pyapp.predict.predictor import score, score_trace
from pyapp.predict.profile import heldout_tasks, tasks_of, tasks_of_trace
from pyapp.predict.sealing import (
    draw_mismatches,
    heldout_draw_seed,
    make_draw,
    study_draw_seed,
    study_seal_of,
)
from pyapp.predict.skill import CLIMATOLOGY, REFERENCE, RUNG_AWARE, Interval
from pyapp.predict.slices import (
    ALL_FAMILIES,
    CALIBRATION_BINS,
    RUN_SCOPE,
    SKILL_HALF_WIDTH,
    PredictorFigures,
    ScoredTask,
    SliceFigures,
    TaskColumns,
    scored_tasks,
    slice_figures,
    tasks_needed,
)
from pyapp.predict.state_aware import FEATURES, fit_logistic

__all__ = [
    "ACROSS_RUNS",
    "ACROSS_RUNS_COLUMN",
    "ACROSS_RUNS_DEFINITION",
    "ACROSS_SEEDS",
    "ALL_FAMILIES",
    "ANSWER_LABEL",
    "ASSUMPTIONS_3",
    "BOOTSTRAP",
    "CALIBRATION_BINS",
    "CLIMATOLOGY",
    "DEFAULT_BOOTSTRAP_SEED",
    "DEFAULT_RESAMPLES",
    "FEATURES",
    "METRIC_VERSION",
    "METRIC_VERSIONS",
    "MIN_TASKS",
    "REFERENCE",
    "RULES",
    "RUNG_AWARE",
    "RUN_SCOPE",
    "SKILL_HALF_WIDTH",
    "Z_95",
    "Answer",
    "CalibrationCell",
    "ConditionResult",
    "FrozenProfile",
    "Interval",
    "NamedInterval",
    "Observation",
    "OpProfile",
    "Prediction",
    "PredictionsDocument",
    "PredictorFigures",
    "ScoredTask",
    "Scores",
    "SliceFigures",
    "TaskColumns",
    "across_runs_text",
    "answer",
    "answer_lines",
    "as_version",
    "bootstrap",
    "bootstrap_p",
    "brier_score",
    "calibration_cells",
    "climatology_line",
    "complete_freeze",
    "content_sha256",
    "cost_errors",
    "degenerate_flags",
    "difference_answer",
    "draw_mismatches",
    "evidence_shown",
    "exact_binomial_p",
    "fit_logistic",
    "flag_lines",
    "flags_of",
    "freeze_condition",
    "freeze_profile",
    "frozen_as_recorded",
    "frozen_protocol",
    "headline",
    "heldout_draw_seed",
    "heldout_tasks",
    "holm",
    "incompatibilities",
    "interval_text",
    "keys_by_condition",
    "lines_of",
    "make_draw",
    "model_names",
    "never_scored_line",
    "predict_product",
    "predict_state_aware",
    "predictions_schema",
    "predictions_sha256",
    "previously_seen",
    "read_predictions",
    "rederive_reference",
    "refit_state_aware",
    "resample_indices",
    "residual_permutation",
    "reveals",
    "run_differences",
    "run_figures",
    "same_model",
    "score",
    "score_trace",
    "scored_tasks",
    "signed",
    "skill_lines",
    "skill_scores",
    "slice_figures",
    "study_draw_seed",
    "study_seal_of",
    "task_steps",
    "tasks_needed",
    "tasks_of",
    "tasks_of_trace",
    "wilson_interval",
    "without_absent_fields",
]
