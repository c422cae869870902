"""Composition Lab: does a measured profile of arithmetic primitives predict a model's
success and cost on unseen compositions?

The same package runs natively (CLI, tests, offline reproduction) and in the browser
(Pyodide in a worker, reached through `pyapp.browser.bridge`).

Its rooms (docs/architecture.md draws them and the direction of their imports): `tasks`
(the task set of a seed), `conditions` (running and judging a condition), `records` (the
trace and its re-derivation), `predict` (profiles, predictions, scores), `experiment`
(measure -> freeze -> held-out), `browser` (the page's messages and session), `synthetic`
(validation models and `simulate`), `report` (a run as one HTML file), `sweep` (headless
sweeps in the real page), `cli` (the command line); `errors` draws the one error tree.
"""

__version__ = "0.1.0"
