"""Profiles, predictions and scoring: the product predictor and its scores (``predictor``),
the state-aware predictor (``state_aware``), Wilson intervals and Brier scores
(``metrics``), what a Brier score means — skill against a reference forecast, Murphy's
decomposition, the two predictors' paired difference with intervals (``skill``) — and
laying runs side by side (``compare``), and the one rule for when a profile is exploratory
— held-out tasks keyed by content per model and condition, journal leaks (``exploratory``)."""
