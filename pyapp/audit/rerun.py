"""`python -m pyapp reproduce TRACE --rerun [--sample N]`: the trace re-executed with its model.

A synthetic trace is always re-executed, from its own specification, with or without
`--rerun` (`pyapp.synthetic.rerun`). With `--rerun`, a trace of a local ONNX model — the
test fixture, the reference subjects, the stand-ins — is re-executed too: each recorded
prompt is sent again, greedily, and each completion compared byte for byte
(`pyapp.verify.rerun`); `--sample N` re-runs N of its model-condition trials, drawn with
the run id as seed. That goes through one function, `native_generate`, the native backend's
generation of a local model (`pyapp/native`); where the backend is absent it says so, and
the trace is re-derived from its files alone.
"""

from __future__ import annotations

from collections.abc import Callable

from pyapp.audit.verdict import Rerunner
from pyapp.records.model import ModelProvenance
from pyapp.records.trace import Trace
from pyapp.synthetic.rerun import synthetic_rerun
from pyapp.verify.rerun import Generate, Rerun, rerun

NEEDS_NATIVE = (
    "--rerun: re-executing {model} needs the native backend (pyapp/native), which this "
    "checkout does not have: the trace was re-derived from its files alone"
)

Loader = Callable[[ModelProvenance], "tuple[str, Generate] | str"]
"""A local model's greedy generation: (what runs it, its generate function), or a line
saying why it cannot be loaded here (a hub model, a missing file, no backend)."""


def native_generate(model: ModelProvenance) -> tuple[str, Generate] | str:
    """The native backend's greedy generation of a local ONNX model (the fixture, the
    reference subjects, the stand-ins). The native backend (`pyapp/native`) has not landed:
    every model is answered with the line that says so."""
    return NEEDS_NATIVE.format(model=f"{model.model_id} @ {model.revision}")


def rerunner(sample: int | None = None, load: Loader = native_generate) -> Rerunner:
    """`--rerun`'s re-execution: a synthetic trace from its specification, any other
    model's through `load`; a run without a model (the control) has nothing to re-run."""

    def run(trace: Trace) -> Rerun | str | None:
        synthetic = synthetic_rerun(trace, sample)
        if synthetic is not None or trace.model is None:
            return synthetic
        loaded = load(trace.model)
        if isinstance(loaded, str):
            return loaded
        name, generate = loaded
        return rerun(trace, name, generate, sample=sample)

    return run
