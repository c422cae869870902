"""Composition Lab: does a measured profile of arithmetic primitives predict a model's
success and cost on unseen compositions?

The same package runs natively (CLI, tests, offline reproduction) and in the browser
(Pyodide in a worker, reached through `pyapp.browser.bridge`).
"""

__version__ = "0.1.0"
