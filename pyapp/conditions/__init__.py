"""Running the conditions and judging them: running a reference or model program through the
interpreter (``interpret``), the typed failures and their kinds (``failures``), and the
model-only, model-program and controlled-chain runners (``run``). The records they build
and the model contract they call are in ``pyapp.records``."""
