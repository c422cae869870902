"""Re-deriving a record offline, above the runners and the predictors it re-runs:
``reproduce`` (regenerates the tasks, re-runs the interpreter and the judges on the recorded
completions, re-derives the profile, predictions and scores) and ``consistency`` (the rules
by which a trace's fields must agree with each other)."""
