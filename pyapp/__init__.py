"""Composition Lab: does a measured profile of arithmetic primitives predict a model's
success and cost on unseen compositions?

The same package runs natively (CLI, tests, offline reproduction) and in the browser
(Pyodide in a worker, reached through `pyapp.browser.bridge`).

Its rooms, from the bottom up (docs/architecture.md draws them; tests/test_house.py holds
the direction of their imports): `errors` (the one error tree), `tasks` (the task set of a
seed), `records` (record types, the model contract, prompts), `conditions` (running and
judging a condition), `predict` (profiles, predictions, scores), `verify` (re-deriving a
trace offline), `experiment` (measure -> freeze -> held-out), `synthetic` (validation
models and `simulate`), `native` (local ONNX models under onnxruntime, as the page runs
them), `report` (a run as one HTML file), `protocol` (every message and
name the page shares, and the files generated from them), `browser` (the page's handlers
and session), `host` (files and the static server), `sweep` (headless sweeps in the real
page, or natively), `matrix` (a study: many sweeps and simulations as one plan), `cli`
(the command line).
"""

__version__ = "0.1.0"
