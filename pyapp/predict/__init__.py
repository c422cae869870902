"""Profiles, predictions and scoring: the product predictor and its scores (``predictor``),
the state-aware predictor (``state_aware``), Wilson intervals and Brier scores
(``metrics``), and laying runs side by side (``compare``)."""
