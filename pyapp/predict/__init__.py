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
descriptive answer templates every place that shows scores calls (``flags``), laying runs
side by side
(``compare``), and the one rule for when a profile is exploratory — held-out tasks keyed by
content per model and condition, journal leaks (``exploratory``)."""
