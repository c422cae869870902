"""Run the page's protocol natively on the reference subject with onnxruntime (issue 26).

    build/fixture-venv/bin/python bench/subject_native.py --preset calibration-300 \\
        --seed 1729 --out runs/subject-native-300 [--dtype fp32]

The very functions the page's session calls (`Sweep`, `run_phase("measure")`, `freeze`,
`run_phase("heldout")`, `score_trace`) with a native adapter: the subject's own tokenizer
and ChatML template, greedy decoding with onnxruntime (one thread, past key values fed step
by step as transformers.js does), token caps as the page applies them. The trace is labelled
`reference-subject` with the subject's recipe, backend `native`; `python -m pyapp reproduce`
re-derives it. Writes trace.json and predictions.json into --out. onnxruntime is not a test
dependency: run it with the build venv that scripts/train_subject.py makes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyapp.conditions.run import MODEL_CONDITIONS  # noqa: E402
from pyapp.experiment.phases import Sweep, freeze, run_phase  # noqa: E402
from pyapp.predict.predictor import score_trace  # noqa: E402
from pyapp.records.base import to_json  # noqa: E402
from pyapp.records.model import (  # noqa: E402  # noqa: E402
    Caps,
    Completion,
    ModelProvenance,
    native_provenance,
    over_input_budget,
    text_sha256,
)
from pyapp.records.subject import (  # noqa: E402
    SUBJECT_CONFIG_SHA256,
    SUBJECT_MODEL_ID,
    SUBJECT_RECIPE,
    SUBJECT_SOURCE,
)
from pyapp.tasks.taskset import preset_params  # noqa: E402

SUBJECT = ROOT / "tests" / "fixtures" / "subject"
FILES = {"fp32": "model.onnx", "q8": "model_quantized.onnx"}


class NativeSubject:
    """The subject's ONNX graph under onnxruntime, greedy, as a `ModelAdapter`."""

    def __init__(self, dtype: str) -> None:
        import onnxruntime as ort
        from transformers import AutoConfig, PreTrainedTokenizerFast

        self.tok = PreTrainedTokenizerFast(tokenizer_file=str(SUBJECT / "tokenizer.json"))
        self.config = AutoConfig.from_pretrained(SUBJECT)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(
            str(SUBJECT / "onnx" / FILES[dtype]), options, providers=["CPUExecutionProvider"]
        )
        base = native_provenance(SUBJECT_MODEL_ID, "bundled", "synthetic")
        load = replace(base.loads[0], backend_requested="native", backend_actual="native")
        self._provenance: ModelProvenance = replace(
            base,
            dtype=dtype,
            source=SUBJECT_SOURCE,
            evidence="reference-subject",
            backend_requested="native",
            backend_actual="native",
            onnxruntime_version=ort.__version__,
            threads=1,
            loads=(load,),
            config_sha256=SUBJECT_CONFIG_SHA256,
            subject_recipe=dict(SUBJECT_RECIPE),
        )

    @property
    def provenance(self) -> ModelProvenance:
        return self._provenance

    def _greedy(self, prompt_ids: list[int], caps: Caps) -> tuple[list[int], str, float]:
        import numpy as np

        names = [i.name for i in self.session.get_inputs()]
        outputs = [o.name for o in self.session.get_outputs()]
        heads, dim = self.config.num_key_value_heads, self.config.head_dim
        past = {
            n: np.zeros((1, heads, 0, dim), dtype=np.float32)
            for n in names
            if n.startswith("past_key_values.")
        }
        ids, step_ids, new = list(prompt_ids), list(prompt_ids), []
        first_ms = 0.0
        started = time.perf_counter()
        finish = "length"
        while len(new) < caps.max_new_tokens:
            length = len(ids)
            feed: dict[str, Any] = {
                "input_ids": np.array([step_ids], dtype=np.int64),
                "attention_mask": np.ones((1, length), dtype=np.int64),
                **past,
            }
            if "position_ids" in names:
                feed["position_ids"] = np.arange(length - len(step_ids), length).reshape(1, -1)
            result = dict(zip(outputs, self.session.run(outputs, feed), strict=True))
            next_id = int(result["logits"][0, -1].argmax())
            past = {n: result[n.replace("past_key_values.", "present.")] for n in past}
            if not new:
                first_ms = (time.perf_counter() - started) * 1000
            new.append(next_id)
            ids.append(next_id)
            step_ids = [next_id]
            if next_id == self.config.eos_token_id:
                finish = "eos"
                break
            text = self.tok.decode(new)
            if len(text.encode("utf-8")) > caps.max_output_bytes:
                finish = "bytes"
                break
        return new, finish, first_ms

    async def generate(self, prompt: str, caps: Caps) -> Completion:
        templated = f"<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n"
        prompt_ids = self.tok(templated, add_special_tokens=False)["input_ids"]
        if len(prompt_ids) > caps.max_input_tokens:
            return over_input_budget(len(prompt_ids), caps, templated)
        started = time.perf_counter()
        new, finish, first_ms = self._greedy(prompt_ids, caps)
        generation_ms = (time.perf_counter() - started) * 1000
        text_ids = new[:-1] if finish == "eos" else new
        return Completion(
            text=self.tok.decode(text_ids),
            finish_reason=finish,  # type: ignore[arg-type]
            input_tokens=len(prompt_ids),
            output_tokens=len(new),
            output_token_ids=tuple(new),
            generation_ms=generation_ms,
            time_to_first_token_ms=first_ms,
            failure=None,
            input_text=templated,
            input_sha256=text_sha256(templated),
        )


async def run(preset: str, seed: int, dtype: str) -> tuple[Any, Any]:
    adapter = NativeSubject(dtype)
    sweep = Sweep(
        params=preset_params(preset, seed),
        conditions=("supplied-program", *MODEL_CONDITIONS),
        model=adapter.provenance,
        run_id=f"subject-native-{preset}-seed-{seed}",
    )
    done = 0

    def progress(*_: object) -> None:
        nonlocal done
        done += 1
        if done % 100 == 0:
            print(f"   {done} trials", flush=True)

    await run_phase(sweep, "measure", adapter, on_trial=progress)
    freeze(sweep)
    await run_phase(sweep, "heldout", adapter, on_trial=progress)
    trace = sweep.trace()
    return trace, score_trace(trace)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="calibration-300")
    parser.add_argument("--seed", type=int, default=1729)
    parser.add_argument("--dtype", choices=sorted(FILES), default="fp32")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    trace, predictions = asyncio.run(run(args.preset, args.seed, args.dtype))
    args.out.mkdir(parents=True, exist_ok=True)
    for name, document in (("trace.json", trace), ("predictions.json", predictions)):
        (args.out / name).write_text(json.dumps(to_json(document), ensure_ascii=False) + "\n")
    print(f"wrote {args.out}: {len(trace.trials)} trials", flush=True)


if __name__ == "__main__":
    main()
