"""A synthetic trace re-executed from its own specification (issue 37, audit by re-execution).

A synthetic model needs no files: the trace records its whole specification
(`model.synthetic`) and the task seed its draws are keyed by, so `reproduce` (and the page's
Open a trace) always generates every completion again and compares every field
(`pyapp.verify.rerun`). A rewritten answer, a relabelled run or a fabricated profile of a
synthetic run is found without any model download.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from pyapp.records import Caps, Completion, Trace, derived_evidence
from pyapp.synthetic.adapter import SyntheticAdapter
from pyapp.synthetic.language import written_name
from pyapp.tasks import Task
from pyapp.verify import Rerun
from pyapp.verify.rerun import rerun

NO_SPECIFICATION = (
    "the trace's records name a synthetic model, but its specification is not recorded "
    "(removed, or written before it was): it cannot be re-executed"
)


def _at_once(step: Coroutine[Any, Any, Completion]) -> Completion:
    """The synthetic model's `generate` awaits nothing: run it to its end here, inside or
    outside an event loop (the page's Python runs in one)."""
    try:
        step.send(None)
    except StopIteration as done:
        result: Completion = done.value
        return result
    step.close()
    raise RuntimeError("a synthetic generation waited for something")


def synthetic_rerun(trace: Trace, sample: int | None = None) -> Rerun | str | None:
    """Every completion of a synthetic trace generated again from its specification and
    compared field by field; a line saying why not when its specification is absent; None
    when the trace is not of a synthetic model."""
    model = trace.model
    if model is None or derived_evidence(model, trace.environment.clock) != "synthetic":
        return None
    spec = model.synthetic
    if spec is None:
        return NO_SPECIFICATION
    adapter = SyntheticAdapter(spec, trace.run.task_params.seed)

    def generate(prompt: str, caps: Caps) -> Completion:
        return _at_once(adapter.generate(prompt, caps))

    def begin(condition: str, task: Task) -> None:
        adapter.begin_trial(condition, task)

    name = f"synthetic/{written_name(spec)} from the trace's specification"
    return rerun(trace, name, generate, begin=begin, exact=True, sample=sample)
