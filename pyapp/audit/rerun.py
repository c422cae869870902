"""`python -m pyapp reproduce TRACE --rerun [--sample N]`: the trace re-executed with its model.

A synthetic trace is always re-executed, from its own specification, with or without
`--rerun` (`pyapp.synthetic.rerun`). With `--rerun`, a trace of a local ONNX model — the
test fixture, the reference subjects (bundled), a stand-in or any local model given with
`--model-folder` — is re-executed too, through the native backend (`native_loader`,
`pyapp.native`): each recorded prompt is sent again, greedily, with its recorded caps, and
each completion compared byte for byte (`pyapp.verify.rerun`); `--sample N` re-runs N of
its model-condition trials, drawn with the run id as seed. A difference names where the two
generations part and the native logits' margin there (a near-tie, as in docs/subject.md,
when it is small: WebGPU's numerics against native). A model it cannot load — a hub model
without local files, files whose config.json is not the trace's, a model the native backend
refuses — is said in one line, and the trace is re-derived from its files alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from pyapp.audit.verdict import Rerunner
from pyapp.native import NativeIdentity, NativeModelError, Source, load_native, read_model
from pyapp.records import Caps, Completion, ModelProvenance, Trace
from pyapp.synthetic import synthetic_rerun
from pyapp.verify import Explain, Generate, Rerun
from pyapp.verify.rerun import rerun

Loader = Callable[[ModelProvenance], "tuple[str, Generate, Explain | None] | str"]
"""A local model's greedy generation: (what runs it, its generate function, what explains a
difference), or a line saying why it cannot be loaded here (a hub model, no files, no
backend)."""


def native_loader(bundled: Callable[[str, str], Path | None], folder: Path | None = None) -> Loader:
    """The native backend's generation of a trace's local ONNX model (`pyapp.native`): its
    files from `folder` (`--model-folder`), else the bundled fixture's or subject's
    (`bundled`: (source, model id) → folder, or None), checked to be the trace's (the same
    config.json digest) and loaded once. Greedy, as the page decodes; a difference is
    explained by the logits' margin where the two generations part (a near-tie when it is
    small)."""

    def load(model: ModelProvenance) -> tuple[str, Generate, Explain | None] | str:
        where = (folder,) if folder is not None else ()
        found = None if where else bundled(model.source, model.model_id)
        if found is not None:
            where = (found,)
        if not where:
            return (
                f"--rerun: {model.model_id} ({model.source}) is not a bundled model: give its "
                "files with --model-folder (a hub model the auditor cannot load cannot be "
                "re-executed)"
            )
        source: Source = "local-folder"
        if model.source == "bundled-fixture" or model.source == "bundled-subject":
            source = model.source
        identity = NativeIdentity(
            model.model_id, model.revision, source, dict(model.chat_template_options)
        )
        try:
            files = read_model(where, model.dtype)
            if model.config_sha256 is not None and files.config_sha256 != model.config_sha256:
                return (
                    f"--rerun: the files in {where[0]} are not the trace's model (config.json "
                    f"{files.config_sha256[:12]}…, the trace's {model.config_sha256[:12]}…)"
                )
            adapter = load_native(files, identity)
        except NativeModelError as error:
            return f"--rerun: {model.model_id}: {error.message}"

        def generate(prompt: str, caps: Caps) -> Completion:
            return asyncio.run(adapter.generate(prompt, caps))

        def explain(prompt: str, recorded: Completion, again: Completion) -> str | None:
            ids, other = recorded.output_token_ids, again.output_token_ids
            if ids is None or other is None:
                return None
            at = next((i for i, (a, b) in enumerate(zip(ids, other, strict=False)) if a != b), None)
            if at is None:
                return None
            gap = adapter.margins(prompt, list(other[: at + 1]))[at]
            return f"they part at token {at}, where the top two logits differ by {gap:.6f}"

        return f"{model.model_id} natively (onnxruntime)", generate, explain

    return load


def rerunner(sample: int | None = None, load: Loader | None = None) -> Rerunner:
    """`--rerun`'s re-execution: a synthetic trace from its specification, any other
    model's through `load`; a run without a model (the control) has nothing to re-run."""

    def run(trace: Trace) -> Rerun | str | None:
        synthetic = synthetic_rerun(trace, sample)
        if synthetic is not None or trace.model is None:
            return synthetic
        if load is None:
            return f"--rerun: nothing loads {trace.model.model_id} here"
        loaded = load(trace.model)
        if isinstance(loaded, str):
            return loaded
        name, generate, explain = loaded
        return rerun(trace, name, generate, sample=sample, explain=explain)

    return run
