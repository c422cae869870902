"""Auditing a run: one re-derivation for every reader, above the synthetic models it
re-executes: ``verdict`` (``audit``: `reproduce`, the trace as re-derived, its predictions, a
predictions document and a receipt compared, completeness, the re-execution; the mismatches
and the verdict lines that the command line, the page, `report` and the sweep all show) and
``rerun`` (``reproduce --rerun``: a trace re-executed with the model itself, a synthetic one
from its specification, a local ONNX model through the native backend)."""

from pyapp.audit.rerun import native_loader, rerunner
from pyapp.audit.verdict import Rerunner, audit, verdict_lines

__all__ = [
    "Rerunner",
    "audit",
    "native_loader",
    "rerunner",
    "verdict_lines",
]
