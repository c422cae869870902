"""Running the conditions and judging them: running a reference or model program through the
interpreter (``interpret``), the typed failures and their kinds (``failures``), and the
model-only and model-program runners and the dispatch of a trial to its condition
(``run``), the controlled chain: its route, per-call judge and runner (``route``), and what
every model condition does with one call and its reply: the Cancel token, the timed call,
parsing one integer (``replies``). The records they build
and the model contract they call are in ``pyapp.records``."""
