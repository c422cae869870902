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
import model_build  # noqa: E402
import subject_data  # noqa: E402
import subject_eval  # noqa: E402

NEAR_TIE = 0.05
"""Top-two logit margin (fp32 logits) under which a greedy step counts as a near-tie: a
different runtime's rounding may pick the other token there."""
REFERENCE_NEW_TOKENS = 32
RECURRENCE_NEW_TOKENS = 128
"""A recurrence curriculum's reference prompts get room for a two-update program tree."""
EVAL_PER_CELL = 25
DTYPES = {"fp32": "model.onnx", "q8": "model_quantized.onnx"}
SCRIPTS = ("train_subject.py", "subject_data.py", "subject_eval.py", "subject_export.py")
"""The scripts a subject is built by, each hashed into its subject.json."""


def reference_prompts(recipe: dict[str, object] | None = None) -> list[dict[str, Any]]:
    """Named prompts: one per (op, digit count) in integer-answer/1 JSON from the evaluation
    domain, one chain-step/2 prose and one program per op, and two held-out compositions of
    the default seed (never trained on; capped at REFERENCE_NEW_TOKENS). A recurrence
    curriculum adds, after them, one evaluation recurrence per (format, updates) and the
    default seed's first recurrence as a program prompt."""
    from pyapp.records import prompts
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
    found = [
        {"name": name, "prompt": prompt, "max_new_tokens": REFERENCE_NEW_TOKENS}
        for name, prompt in rows
    ]
    if recipe is None or "curriculum" not in recipe:
        return found
    more = []
    for example in subject_data.recurrence_eval_set(per_cell=1):
        updates = example.prompt.rsplit("(after ", 1)[1].split(" ")[0]
        more.append((f"recurrence-{updates}u-{example.template_id.split('/')[0]}", example.prompt))
    task = tasks["recurrence-1"]
    text = prompts.render_task_prompt(
        prompts.REGISTER_PROGRAM, task.registers, task.question, task.encoding
    ).text
    more.append(("recurrence-1-register-program-examples", text))
    return found + [
        {"name": name, "prompt": prompt, "max_new_tokens": RECURRENCE_NEW_TOKENS}
        for name, prompt in more
    ]


def recipe_of(folder: Path) -> dict[str, object]:
    """The recipe a committed subject folder was trained on (its subject.json)."""
    info = json.loads((folder / "subject.json").read_text(encoding="utf-8"))
    recipe: dict[str, object] = info["recipe"]
    return recipe


def greedy(
    session: Any, config: Any, prompt_ids: list[int], eos: int, most: int = REFERENCE_NEW_TOKENS
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
    for _ in range(most):
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


def reference_replies(
    out: Path, tok: Any, config: Any, recipe: dict[str, object] | None = None
) -> list[dict[str, Any]]:
    eos = tok.convert_tokens_to_ids(build_fixture.IM_END)
    sessions = {dtype: _session(out / "onnx" / name) for dtype, name in DTYPES.items()}
    rows = []
    for ref in reference_prompts(recipe):
        prompt_ids = tok(build_fixture.chatml(ref["prompt"]), add_special_tokens=False)["input_ids"]
        row: dict[str, Any] = {
            "name": ref["name"],
            "messages": [{"role": "user", "content": ref["prompt"]}],
            "prompt_tokens": len(prompt_ids),
            "max_new_tokens": ref["max_new_tokens"],
        }
        for dtype, session in sessions.items():
            ids, margins = greedy(session, config, prompt_ids, eos, ref["max_new_tokens"])
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


TRAINED_ON = {
    "primitives": "single primitives only (add, sub, mul; operands 1-6 digits)",
    "primitives+recurrences": (
        "initialised from subject/reference-2's weights, then trained on single primitives "
        "(add, sub, mul; operands 1-6 digits) and whole affine recurrences of one and two "
        "updates with |a| in 50-99 (model-only and model-program prompts); never "
        "determinants or derivatives"
    ),
}
MODEL_IDS = {"primitives": "subject/reference-2", "primitives+recurrences": "subject/recurrences-1"}


def describe(out: Path, n_params: int, recipe: dict[str, object]) -> dict[str, Any]:
    import onnxruntime
    import torch
    import transformers

    curriculum = str(recipe.get("curriculum", subject_data.DEFAULT_CURRICULUM))
    extra = {} if "curriculum" not in recipe else {"model_id": MODEL_IDS[curriculum]}
    return {
        **extra,
        "what": "locally trained reference subject",
        "parameters": n_params,
        "trained_on": TRAINED_ON[curriculum],
        "recipe": recipe,
        "recipe_sha256": subject_data.recipe_digest(recipe),
        "data_version": recipe["data_version"],
        "script_sha256": {name: sha256(ROOT / "scripts" / name) for name in SCRIPTS},
        "pins": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "onnxruntime": onnxruntime.__version__,
        },
        "near_tie_margin": NEAR_TIE,
        "config_sha256": sha256(out / "config.json"),
    }


def eval_table(model: Any, tok: Any) -> dict[str, float]:
    """Exact-answer rate by op and digit count (both operands) on EVAL_PER_CELL evaluation
    examples per cell (integer-answer/1 JSON, never trained on), teacher-forced: equal to
    greedy decoding's exact-answer rate."""
    rates = subject_eval.evaluate(model, tok, subject_data.eval_set(per_cell=EVAL_PER_CELL))
    model.eval()
    return {key: round(value, 4) for key, value in sorted(rates.items())}


def recurrence_table(model: Any, tok: Any) -> dict[str, float]:
    """Exact-reply rate on EVAL_PER_CELL evaluation recurrences per (format, updates)
    (JSON registers from the second recipe's ranges, never trained on), teacher-forced."""
    examples = subject_data.recurrence_eval_set(per_cell=EVAL_PER_CELL)
    rates = {}
    for template_id in (subject_data.prompts.INTEGER_ANSWER, subject_data.prompts.REGISTER_PROGRAM):
        for updates in (1, 2):
            cell = [
                e
                for e in examples
                if e.template_id == template_id and f"(after {updates} updates)" in e.prompt
            ]
            (rate,) = subject_eval.evaluate(model, tok, cell).values()
            rates[f"{template_id}/{updates}"] = round(rate, 4)
    model.eval()
    return rates


def export(model: Any, tok: Any, out: Path, recipe: dict[str, object] | None = None) -> None:
    """Write the model folder (see the module docstring)."""
    recipe = subject_data.RECIPE if recipe is None else recipe
    from onnxruntime.quantization import QuantType, quantize_dynamic

    pad = tok.convert_tokens_to_ids(build_fixture.PAD)
    eos = tok.convert_tokens_to_ids(build_fixture.IM_END)
    model_build.export_onnx(model, tok, out, pad, eos)
    quantize_dynamic(
        out / "onnx" / "model.onnx",
        out / "onnx" / "model_quantized.onnx",
        weight_type=QuantType.QUInt8,
    )
    rows = reference_replies(out, tok, model.config, recipe)
    (out / "replies.json").write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n")
    n_params = sum(p.numel() for p in model.parameters())
    info = describe(out, n_params, recipe)
    info["eval_exact_rate"] = eval_table(model, tok)
    if "curriculum" in recipe:
        info["eval_recurrence_rate"] = recurrence_table(model, tok)
    (out / "subject.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
    write_subject_md(out, info, rows)
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"== wrote {out} ({total} bytes)", flush=True)
    for path in sorted(out.rglob("*")):
        if path.is_file():
            print(f"   {sha256(path)}  {path.stat().st_size:9}  {path.relative_to(out)}")


def _q8_column(row: dict[str, Any]) -> str:
    return "=" if row["q8"]["output_ids"] == row["fp32"]["output_ids"] else "differs"


def write_subject_md(out: Path, info: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    """SUBJECT.md: what the subject is, its recipe, what it learned, its reference replies."""
    rates = info["eval_exact_rate"]
    digits = range(1, subject_data.MAX_DIGITS + 1)
    table = [
        f"| {op} | " + " | ".join(f"{rates[f'{op}/{d}']:.2f}" for d in digits) + " |"
        for op in subject_data.OPS
    ]
    replies = [
        f"| `{r['name']}` | {r['prompt_tokens']} | `{r['fp32']['reply'][:40]}` | "
        f"{r['fp32']['finish']} | {r['fp32']['min_margin']:.3f} | "
        f"{r['fp32']['near_ties'] or '—'} | {_q8_column(r)} |"
        for r in rows
    ]
    files = sorted(p for p in out.rglob("*") if p.is_file() and p.name != "SUBJECT.md")
    hashes = [
        f"| `{p.relative_to(out).as_posix()}` | {p.stat().st_size} | `{sha256(p)}` |" for p in files
    ]
    recipe = json.dumps(info["recipe"], sort_keys=True)
    second = "curriculum" in info["recipe"]
    intro = SECOND_INTRO if second else FIRST_INTRO
    threads = (
        f"one thread count ({info['recipe']['threads']}) throughout"
        if second
        else f"one thread until step {info['recipe']['extended_from_step']:,}, then\n"
        f"  {info['recipe']['threads_after_extension']} (the recipe's `threads_after_extension`)"
    )
    more = _recurrence_section(info) if second else ""
    rebuild = (
        "python3 scripts/train_subject.py --curriculum primitives+recurrences"
        if second
        else "python3 scripts/train_subject.py"
    )
    work = "build/subject2-train/" if second else "build/subject-train/"
    held_out = (
        "The two prompts after the primitives' are held-out compositions of seed 1729 the\n"
        "subject never saw; then one evaluation recurrence per (prompt, updates), and seed\n"
        f"1729's first recurrence as a program prompt (at most {RECURRENCE_NEW_TOKENS} new tokens)."
        if second
        else "The last two prompts are held-out compositions of seed 1729 the subject\nnever saw."
    )
    text = f"""{intro.format(parameters=info["parameters"])}

- Tokenizer: byte-level BPE whose merges were learned from the primitive prompts with every
  digit removed (one token per digit, the sign its own token); each template's fixed
  instruction text and the `Question:` separator are single added tokens. ChatML template in
  `tokenizer_config.json`; eos `<|im_end|>`.
- Recipe ({info["recipe_sha256"][:12]}…, data generator `{info["data_version"]}`): `{recipe}`
- Pins: {", ".join(f"{k} {v}" for k, v in info["pins"].items())}; fixed seeds, deterministic
  algorithms, {threads}.
- `onnx/model.onnx` fp32 and `onnx/model_quantized.onnx` q8 (dynamic uint8), optimum-onnx
  `text-generation-with-past`.

## Exact-answer rate after training

{EVAL_PER_CELL} evaluation examples per cell (both operands with that many digits, a quarter
of b negative; integer-answer/1, JSON registers; never trained on), teacher-forced, which
equals greedy decoding:

| op | {" | ".join(f"{d} digits" for d in digits)} |
|---|{"---|" * len(digits)}
{chr(10).join(table)}
{more}
## Reference replies (`replies.json`)

Greedy ids by onnxruntime (fp32 and q8), at most {REFERENCE_NEW_TOKENS} new tokens. A step
whose top-two fp32 logits are within {NEAR_TIE} is a near-tie: another runtime may pick the
other token there, so a browser reply may part from these ids at or after the first near-tie
(listed, by step). {held_out}

| name | prompt tokens | fp32 reply | finish | smallest margin | near-ties | q8 ids |
|---|---|---|---|---|---|---|
{chr(10).join(replies)}

## Rebuild

    {rebuild}            # resumes from {work}
    {rebuild} --check    # rebuild into a temporary folder and compare

With the same pins the rebuild gives the same bytes (a fixed thread count at every step,
deterministic algorithms, fixed seeds, as `scripts/build_fixture.py`); `--check` says
whether it did, and fails unless its reference replies equal the committed ones exactly.

## Files (sha256)

| file | bytes | sha256 |
|---|---|---|
{chr(10).join(hashes)}
"""
    from pyapp.records import SUBJECTS

    (model_id,) = [
        s.model_id for s in SUBJECTS if s.recipe["recipe_sha256"] == info["recipe_sha256"]
    ]
    label = next(s.label for s in SUBJECTS if s.model_id == model_id)
    (out / "SUBJECT.md").write_text(text.replace("{SUBJECT_LABEL}", label))


def _recurrence_section(info: dict[str, Any]) -> str:
    rates = info["eval_recurrence_rate"]
    rows = [
        f"| {template} | {updates} | {rates[f'{template}/{updates}']:.2f} |"
        for template in ("integer-answer/1", "register-program-examples/2")
        for updates in (1, 2)
    ]
    return f"""
Whole affine recurrences x_(k+1) = a*x_k + b ({EVAL_PER_CELL} evaluation examples per cell,
|a| in 50-99 as in training, JSON registers, never trained on), exact reply (the integer, or
the reference program tree), teacher-forced:

| prompt | updates | exact |
|---|---|---|
{chr(10).join(rows)}
"""


FIRST_INTRO = """# reference-2 — a locally trained reference subject

A **{parameters:,}-parameter** Llama-style causal LM trained by
`scripts/train_subject.py` from a seeded random init on **single primitives only** (one add,
sub or mul, operands 1-6 digits, in this repository's own integer-answer, chain-step and
register-program prompts; `scripts/subject_data.py`). It never saw a composition. Nobody chose
its replies: what it gets right and wrong is what it learned. Its numbers are evidence about
this subject, never about a pretrained LLM; the app labels them "{{SUBJECT_LABEL}}"
(`pyapp/records/subject.py`)."""
SECOND_INTRO = """# recurrences-1 — a second locally trained reference subject

A **{parameters:,}-parameter** Llama-style causal LM, the same architecture and tokenizer as
subject/reference-2, **initialised from subject/reference-2's weights** and then trained by
`scripts/train_subject.py --curriculum primitives+recurrences` on **single primitives and
whole affine recurrences of one and two updates** (x_(k+1) = a*x_k + b with |a| in 50-99,
in this repository's own model-only and model-program prompts; `scripts/subject_data.py`).
It never saw a determinant or a derivative, nor any recurrence with |a| < 50 (every shipped
rung's). Nobody chose its replies: what it gets right and wrong is what it learned. Its
numbers are evidence about this subject, never about a pretrained LLM; the app labels them
"{{SUBJECT_LABEL}}" (`pyapp/records/subject.py`); docs/subject2.md says why it was trained
and the bar it was held to."""


def check(folder: Path) -> list[str]:
    """Greedy ids of every reference prompt, recomputed natively (onnxruntime) from the
    committed files, against replies.json: the mismatches (empty: reproduced exactly)."""
    from transformers import AutoConfig, PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))
    config = AutoConfig.from_pretrained(folder)
    eos = config.eos_token_id
    sessions = {dtype: _session(folder / "onnx" / name) for dtype, name in DTYPES.items()}
    rows = json.loads((folder / "replies.json").read_text(encoding="utf-8"))
    wanted = [r["prompt"] for r in reference_prompts(recipe_of(folder))]
    found = []
    if [r["messages"][0]["content"] for r in rows] != wanted:
        found.append("replies.json prompts are not what reference_prompts() renders today")
    for row in rows:
        text = build_fixture.chatml(row["messages"][0]["content"])
        prompt_ids = tok(text, add_special_tokens=False)["input_ids"]
        if len(prompt_ids) != row["prompt_tokens"]:
            found.append(
                f"{row['name']}: {len(prompt_ids)} prompt tokens, not {row['prompt_tokens']}"
            )
        for dtype, session in sessions.items():
            ids, _ = greedy(session, config, prompt_ids, eos, row["max_new_tokens"])
            if ids != row[dtype]["output_ids"]:
                found.append(f"{row['name']} {dtype}: {ids} != {row[dtype]['output_ids']}")
    return found


def main() -> None:
    """`python scripts/subject_export.py check DIR` (in build/fixture-venv): exit 1 when the
    committed subject does not reproduce its reference replies natively."""
    if len(sys.argv) != 3 or sys.argv[1] != "check":
        raise SystemExit("usage: subject_export.py check DIR")
    found = check(Path(sys.argv[2]))
    for line in found:
        print(line)
    print(f"native reproduction: {'ok' if not found else f'{len(found)} mismatches'}")
    raise SystemExit(1 if found else 0)


if __name__ == "__main__":
    main()
