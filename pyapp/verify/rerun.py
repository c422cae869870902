"""Audit by re-execution: every recorded completion generated again and compared (issue 37).

Re-derivation checks what follows from the files alone; it cannot tell a rewritten held-out
answer whose chain, profile and predictions were all recomputed from an honest one. Whoever
holds the model can: `rerun` sends each recorded prompt again, with its recorded caps, in the
recorded order, and compares what comes back with what the trace holds.

* A **synthetic** model (its whole specification and the task seed are in the trace) is
  deterministic and timed by its own virtual clock: every field of every completion is
  compared (`exact`). `reproduce` always does this (`pyapp.synthetic.rerun`).
* A **local ONNX model** (the fixture, the reference subjects, stand-ins) decodes greedily:
  text, finish reason and token counts (and ids, where both sides have them) are compared
  byte for byte; timings are not. A difference can be a near-tie between two tokens whose
  scores the two runtimes round differently (WebGPU against native): `rerun` names each
  difference, and says that it needs the logits to tell a near-tie from a rewrite.

What it cannot check: a hub model the auditor cannot load; the numerics of one runtime
against another beyond naming the differences. Interrupted attempts (`partial`) are not
re-run: they are never scored.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from pyapp.conditions import MODEL_CONDITIONS
from pyapp.predict import tasks_of_trace
from pyapp.records import Caps, Completion, Mismatch, Trace, Trial, to_json
from pyapp.tasks import Task

Generate = Callable[[str, Caps], Completion]
"""One generation of the re-run model: the prompt text and its caps in, a completion out."""
Explain = Callable[[str, Completion, Completion], "str | None"]
"""What explains a difference between a recorded completion and its re-execution (the prompt,
the recorded one, the new one): the native backend's logit margin where they part."""
Begin = Callable[[str, Task], None]
"""Told each trial (condition, task) before its first generation (a synthetic model keys its
draws by it, as the sweep's `before_trial` does)."""

GREEDY_FIELDS = ("text", "finish_reason", "input_tokens", "output_tokens", "output_token_ids")
"""What a re-run of a greedy model compares (not timings, which no two runs share)."""


@dataclass(frozen=True)
class Rerun:
    """What re-executing a trace found."""

    model: str
    """What re-ran it (`synthetic/… from its specification`, a local model's path)."""
    trials: int
    """Trials re-run."""
    of_trials: int
    """Model-condition trials in the trace (more than `trials` when sampled)."""
    completions: int
    """Completions generated again and compared."""
    exact: bool
    """Every field compared (a synthetic model on its virtual clock); else `GREEDY_FIELDS`."""
    mismatches: tuple[Mismatch, ...]
    """Each recorded completion that the model does not give again, by field."""

    def line(self) -> str:
        """The one line `reproduce` and the page print."""
        scope = "every field" if self.exact else "text, finish reason and token counts"
        sampled = f" (a sample of {self.trials} of {self.of_trials})" if self.sampled else ""
        if self.mismatches:
            return (
                f"re-executed with {self.model}: {len(self.mismatches)} difference(s) in "
                f"{self.completions} completions of {self.trials} trials{sampled}"
            )
        return (
            f"re-executed with {self.model}: all {self.completions} completions of "
            f"{self.trials} trials{sampled} generated again, {scope} identical"
        )

    @property
    def sampled(self) -> bool:
        return self.trials < self.of_trials


def _compared(
    recorded: Completion, again: Completion, exact: bool
) -> dict[str, tuple[object, object]]:
    """Field → (recorded, again) for each compared field that differs."""
    a, b = to_json(recorded), to_json(again)
    assert isinstance(a, dict) and isinstance(b, dict)
    names = sorted(set(a) | set(b)) if exact else list(GREEDY_FIELDS)
    if not exact and (a.get("output_token_ids") is None or b.get("output_token_ids") is None):
        names.remove("output_token_ids")  # one side did not record them: nothing to compare
    return {name: (a.get(name), b.get(name)) for name in names if a.get(name) != b.get(name)}


def _calls(trial: Trial) -> list[tuple[str, str, Caps, Completion]]:
    """(where, prompt text, caps, recorded completion) of each generation of a trial."""
    if trial.chain is not None:
        return [
            (f".chain.calls[{i}].completion", call.prompt.text, call.caps, call.completion)
            for i, call in enumerate(trial.chain.calls)
        ]
    if trial.prompt is None or trial.caps is None or trial.completion is None:
        return []
    return [(".completion", trial.prompt.text, trial.caps, trial.completion)]


def chosen(trace: Trace, sample: int | None) -> list[int]:
    """The indices of the trials to re-run: every model-condition trial, or `sample` of them
    drawn with the run id as seed (the same sample for every auditor of one trace)."""
    indices = [i for i, t in enumerate(trace.trials) if t.condition in MODEL_CONDITIONS]
    if sample is None or sample >= len(indices):
        return indices
    return sorted(random.Random(trace.run.run_id).sample(indices, sample))


def rerun(
    trace: Trace,
    model: str,
    generate: Generate,
    *,
    begin: Begin | None = None,
    exact: bool = False,
    sample: int | None = None,
    explain: Explain | None = None,
) -> Rerun:
    """Generate every recorded completion of `trace` again with `generate` and compare."""
    tasks = {t.id: t for t in tasks_of_trace(trace)}
    picked = chosen(trace, sample)
    found: list[Mismatch] = []
    completions = 0
    for index in picked:
        trial = trace.trials[index]
        task = tasks.get(trial.task_id)
        if task is None:
            continue  # named by re-derivation
        if begin is not None:
            begin(trial.condition, task)
        for where, prompt, caps, recorded in _calls(trial):
            again = generate(prompt, caps)
            completions += 1
            differ = _compared(recorded, again, exact)
            why = explain(prompt, recorded, again) if differ and explain is not None else None
            for name, (was, now) in differ.items():
                found.append(
                    Mismatch(
                        f"$.trials[{index}]{where}.{name}",
                        f"recorded {_short(was)}, re-executed {_short(now)} ({trial.trial_id})"
                        + (f"; {why}" if why else ""),
                    )
                )
    of_trials = sum(1 for t in trace.trials if t.condition in MODEL_CONDITIONS)
    return Rerun(model, len(picked), of_trials, completions, exact, tuple(found))


def _short(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
