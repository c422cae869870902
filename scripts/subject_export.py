"""Export the trained reference subject and record its reference replies (build venv only).

Called by scripts/train_subject.py after training. Writes, in the onnx-community layout of
tests/fixtures/*: config.json, generation_config.json, tokenizer files (ChatML template in
tokenizer_config.json), onnx/model.onnx (fp32) and onnx/model_quantized.onnx (q8, dynamic
uint8 weights), then `replies.json` (the reference prompts and their greedy ids by
onnxruntime, fp32 and q8, with the smallest top-two logit margin of each reply and the
steps whose margin is under NEAR_TIE), `subject.json` (what the subject is: parameters,
recipe, its digest, the training script's SHA-256) and SUBJECT.md.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import build_fixture  # noqa: E402
import subject_data  # noqa: E402

NEAR_TIE = 0.05
"""Top-two logit margin (fp32 logits) under which a greedy step counts as a near-tie: a
different runtime's rounding may pick the other token there."""
REFERENCE_NEW_TOKENS = 32
DTYPES = {"fp32": "model.onnx", "q8": "model_quantized.onnx"}


def reference_prompts() -> list[dict[str, Any]]:
    """Named prompts: one per (op, digit count) in integer-answer/1 JSON from the evaluation
    domain, one chain-step/2 prose and one program per op, and two held-out compositions of
    the default seed (never trained on; capped at REFERENCE_NEW_TOKENS)."""
    from pyapp.conditions import prompts
    from pyapp.tasks import taskset

    rows = []
    for example in subject_data.eval_set(per_cell=1):
        rows.append((f"{example.op}-{example.digits[0]}d", example.prompt))
    for op in subject_data.OPS:
        chain = subject_data.render(op, 417, -83, prompts.CHAIN_STEP, "prose")
        rows.append((f"{op}-chain-prose", chain.prompt))
        program = subject_data.render(op, 5, 7, prompts.REGISTER_PROGRAM, "json")
        rows.append((f"{op}-program", program.prompt))
    tasks = taskset.tasks_by_id(taskset.generate())
    for task_id, template in (
        ("recurrence-1", prompts.INTEGER_ANSWER),
        ("determinant-1", prompts.REGISTER_PROGRAM),
    ):
        task = tasks[task_id]
        text = prompts.render_task_prompt(
            template, task.registers, task.question, task.encoding
        ).text
        rows.append((f"{task_id}-{template.split('/')[0]}", text))
    return [{"name": name, "prompt": prompt} for name, prompt in rows]


def greedy(
    session: Any, config: Any, prompt_ids: list[int], eos: int
) -> tuple[list[int], list[float]]:
    """Greedy ids and each step's top-two logit margin, past key values fed step by step."""
    import numpy as np

    names = [i.name for i in session.get_inputs()]
    outputs = [o.name for o in session.get_outputs()]
    past = {
        n: np.zeros((1, config.num_key_value_heads, 0, config.head_dim), dtype=np.float32)
        for n in names
        if n.startswith("past_key_values.")
    }
    ids, step_ids, new, margins = list(prompt_ids), list(prompt_ids), [], []
    for _ in range(REFERENCE_NEW_TOKENS):
        length = len(ids)
        feed = {
            "input_ids": np.array([step_ids], dtype=np.int64),
            "attention_mask": np.ones((1, length), dtype=np.int64),
            **past,
        }
        if "position_ids" in names:
            feed["position_ids"] = np.arange(length - len(step_ids), length).reshape(1, -1)
        result = dict(zip(outputs, session.run(outputs, feed), strict=True))
        row = result["logits"][0, -1].astype(np.float64)
        top = np.argsort(-row, kind="stable")[:2]
        margins.append(float(row[top[0]] - row[top[1]]))
        next_id = int(row.argmax())
        past = {n: result[n.replace("past_key_values.", "present.")] for n in past}
        new.append(next_id)
        ids.append(next_id)
        step_ids = [next_id]
        if next_id == eos:
            break
    return new, margins


def _session(path: Path) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def reference_replies(out: Path, tok: Any, config: Any) -> list[dict[str, Any]]:
    eos = tok.convert_tokens_to_ids(build_fixture.IM_END)
    sessions = {dtype: _session(out / "onnx" / name) for dtype, name in DTYPES.items()}
    rows = []
    for ref in reference_prompts():
        prompt_ids = tok(build_fixture.chatml(ref["prompt"]), add_special_tokens=False)["input_ids"]
        row: dict[str, Any] = {
            "name": ref["name"],
            "messages": [{"role": "user", "content": ref["prompt"]}],
            "prompt_tokens": len(prompt_ids),
            "max_new_tokens": REFERENCE_NEW_TOKENS,
        }
        for dtype, session in sessions.items():
            ids, margins = greedy(session, config, prompt_ids, eos)
            text_ids = ids[:-1] if ids and ids[-1] == eos else ids
            row[dtype] = {
                "output_ids": ids,
                "reply": tok.decode(text_ids),
                "finish": "eos" if ids and ids[-1] == eos else "length",
                "min_margin": round(min(margins), 6),
                "near_ties": [i for i, m in enumerate(margins) if m < NEAR_TIE],
            }
        print(
            f"   {row['name']:28} fp32 {row['fp32']['reply']!r:24} q8 {row['q8']['reply']!r}",
            flush=True,
        )
        rows.append(row)
    return rows


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def describe(out: Path, n_params: int) -> dict[str, Any]:
    import onnxruntime
    import torch
    import transformers

    return {
        "what": "locally trained reference subject",
        "parameters": n_params,
        "trained_on": "single primitives only (add, sub, mul; operands 1-6 digits)",
        "recipe": subject_data.RECIPE,
        "recipe_sha256": subject_data.recipe_digest(),
        "data_version": subject_data.DATA_VERSION,
        "script_sha256": {
            name: sha256(ROOT / "scripts" / name)
            for name in ("train_subject.py", "subject_data.py", "subject_export.py")
        },
        "pins": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "onnxruntime": onnxruntime.__version__,
        },
        "near_tie_margin": NEAR_TIE,
        "config_sha256": sha256(out / "config.json"),
    }


def export(model: Any, tok: Any, out: Path) -> None:
    """Write the model folder (see the module docstring)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    pad = tok.convert_tokens_to_ids(build_fixture.PAD)
    eos = tok.convert_tokens_to_ids(build_fixture.IM_END)
    build_fixture._export(model, tok, out, pad, eos)
    quantize_dynamic(
        out / "onnx" / "model.onnx",
        out / "onnx" / "model_quantized.onnx",
        weight_type=QuantType.QUInt8,
    )
    rows = reference_replies(out, tok, model.config)
    (out / "replies.json").write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n")
    n_params = sum(p.numel() for p in model.parameters())
    info = describe(out, n_params)
    (out / "subject.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"== wrote {out} ({total} bytes)", flush=True)
    for path in sorted(out.rglob("*")):
        if path.is_file():
            print(f"   {sha256(path)}  {path.stat().st_size:9}  {path.relative_to(out)}")
