"""Build the `tiny-chat` TEST FIXTURE model in tests/fixtures/tiny-chat (byte-reproducibly).

    python3 scripts/build_fixture.py [--out DIR] [--steps N]

A ~100k-parameter Llama (hidden 64, 2 layers) with a byte-level BPE tokenizer trained
from scratch on the fixture's own texts and a ChatML chat template. It is trained from a
fixed random init to MEMORISE a handful of exact prompt -> reply pairs (the prompts are
rendered by this repo's own `pyapp.records.prompts`), then exported to ONNX for transformers.js
(`text-generation-with-past`, optimum-onnx). It is a test fixture, not model evidence.

The script makes its own virtualenv (build/fixture-venv, ignored by git) from
scripts/fixture-requirements.txt and re-executes itself inside it with one thread and
fixed seeds. CI, the test command and the app never run it. After a prompt template
changes, tests/test_fixture_model.py fails until the fixture is rebuilt with this script.

Checks before writing: every reply is reproduced exactly (and ends with EOS) by greedy
decoding with transformers (torch) and with onnxruntime on the exported ONNX graph,
feeding past key values step by step as transformers.js does.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_build import (
    CHAT_TEMPLATE,
    DETERMINISTIC_ENV,
    IM_END,
    IM_START,
    PAD,
    SPECIAL_TOKENS,
    OrtCheck,
    bootstrap,
    chatml,
    configure_torch,
    export_onnx,
    quantize,
    requirements_digest,
    sha256,
)

__all__ = [  # re-exported for the other model builds and the tests
    "CHAT_TEMPLATE",
    "DETERMINISTIC_ENV",
    "IM_END",
    "IM_START",
    "PAD",
    "SPECIAL_TOKENS",
    "bootstrap",
    "chatml",
    "configure_torch",
    "requirements_digest",
    "sha256",
]

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / "build" / "fixture-venv"
REQUIREMENTS = ROOT / "scripts" / "fixture-requirements.txt"
DEFAULT_OUT = ROOT / "tests" / "fixtures" / "tiny-chat"

SEED = 1234
VOCAB_SIZE = 384
STEPS = 400
LEARNING_RATE = 1e-2
LONG_REPLY_MIN_TOKENS = 60
MAX_PROMPT_TOKENS = 1024

# --------------------------------------------------------------------------- bootstrap


def _in_build_venv() -> bool:
    return Path(sys.prefix).resolve() == VENV.resolve()


def _bootstrap() -> None:
    """Create/refresh build/fixture-venv and re-execute this script inside it."""
    bootstrap(VENV, REQUIREMENTS, Path(__file__))


# --------------------------------------------------------------------------- the pairs


def memorised_pairs() -> list[dict[str, Any]]:
    """The prompt -> reply pairs, rendered by the repo's own pyapp (stdlib only)."""
    sys.path.insert(0, str(ROOT))
    import interpreter
    from pyapp.records import prompts
    from pyapp.tasks import taskset as tasks

    by_id = tasks.tasks_by_id(tasks.generate())

    def task_prompt(template_id: str, task_id: str) -> str:
        task = by_id[task_id]
        return prompts.render_task_prompt(
            template_id, task.registers, task.question, task.encoding
        ).text

    recurrence = by_id["recurrence-1"]
    first = recurrence.program
    while isinstance(first.args[0], interpreter.Op) or isinstance(first.args[1], interpreter.Op):
        first = next(arg for arg in first.args if isinstance(arg, interpreter.Op))
    assert first.op == "mul", first
    left, right = (recurrence.registers[arg.name] for arg in first.args)
    # the fixture memorised chain-step/1 (the wording before chain-step/2)
    chain_v1 = prompts.render_chain_step("mul", left, right, "json", prompts.CHAIN_STEP_V1).text
    count = " ".join(str(i) for i in range(1, 65))

    rows = [
        (
            "correct-integer",
            task_prompt(prompts.INTEGER_ANSWER, "add-1"),
            str(by_id["add-1"].answer),
        ),
        (
            "wrong-integer",
            task_prompt(prompts.INTEGER_ANSWER, "sub-1"),
            str(by_id["sub-1"].answer + 1),
        ),
        ("prose", task_prompt(prompts.INTEGER_ANSWER, "mul-1"), "I think it is about 2.6 billion."),
        (
            "valid-program",
            task_prompt(prompts.REGISTER_PROGRAM, "recurrence-1"),
            interpreter.canonical_program_text(recurrence.program),
        ),
        (
            "invalid-program",
            task_prompt(prompts.REGISTER_PROGRAM, "determinant-1"),
            '{"op":"sub","args":[{"ref":"x2"}]}',
        ),
        (
            "chain-mul",
            chain_v1,
            str(left * right),
        ),
        ("greeting", "Say hello.", "Hello."),
        ("long-reply", "Count.", count),
    ]
    return [{"name": name, "prompt": prompt, "reply": reply} for name, prompt, reply in rows]


# --------------------------------------------------------------------------- build


def build(out: Path, steps: int) -> None:
    """Train, check, export and describe the fixture in `out`, one named step after another."""
    configure_torch()
    pairs = memorised_pairs()
    tok = _train_tokenizer(pairs)
    pad_id = tok.convert_tokens_to_ids(PAD)
    eos_id = tok.convert_tokens_to_ids(IM_END)
    examples = _tokenize_examples(tok, pairs)
    model, config = _new_model(pad_id, eos_id)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"== model: {n_params} parameters", flush=True)
    _train(model, examples, pad_id, eos_id, steps)
    _check_torch(model, tok, examples, pad_id, eos_id)
    export_onnx(model, tok, out, pad_id, eos_id)
    check = OrtCheck(out, examples, tok, config, eos_id)
    bad = check.run(out / "onnx" / "model.onnx")
    if bad:
        raise SystemExit(f"ONNX fp32 does not reproduce the replies: {bad}")
    quantize(out, check)
    _write_tables(out, examples, n_params, eos_id, steps)


def _train_tokenizer(pairs: list[dict[str, Any]]) -> Any:
    """A byte-level BPE trained on the fixture's own texts, wrapped as a transformers tokenizer."""
    import tokenizers
    from tokenizers import decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = tokenizers.Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    bpe.decoder = decoders.ByteLevel()
    bpe.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    corpus = [chatml(p["prompt"]) + p["reply"] + IM_END + "\n" for p in pairs]
    bpe.train_from_iterator(corpus, trainer=trainer)
    assert bpe.get_vocab_size() == VOCAB_SIZE, bpe.get_vocab_size()
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token=None,
        eos_token=IM_END,
        pad_token=PAD,
        unk_token=None,
        additional_special_tokens=[IM_START, IM_END],
        model_max_length=2048,
        clean_up_tokenization_spaces=False,
        chat_template=CHAT_TEMPLATE,
    )


def _tokenize_examples(tok: Any, pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each pair with its prompt and reply token ids, checked against the chat template."""
    examples = []
    for pair in pairs:
        messages = [{"role": "user", "content": pair["prompt"]}]
        templated = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        assert templated == chatml(pair["prompt"]), templated
        prompt_ids = tok(templated, add_special_tokens=False)["input_ids"]
        assert prompt_ids == tok.apply_chat_template(
            messages, tokenize=True, add_generation_prompt=True
        )
        reply_ids = tok(pair["reply"], add_special_tokens=False)["input_ids"]
        assert tok.decode(reply_ids) == pair["reply"]
        assert len(prompt_ids) <= MAX_PROMPT_TOKENS, (pair["name"], len(prompt_ids))
        examples.append({**pair, "prompt_ids": prompt_ids, "reply_ids": reply_ids})
        print(
            f"   {pair['name']:16} prompt {len(prompt_ids):4} tokens   "
            f"reply {len(reply_ids):3} tokens (+1 eos)",
            flush=True,
        )
    long_reply = next(e for e in examples if e["name"] == "long-reply")
    assert len(long_reply["reply_ids"]) >= LONG_REPLY_MIN_TOKENS
    return examples


def _new_model(pad_id: int, eos_id: int) -> tuple[Any, Any]:
    """The seeded, untrained Llama and its config."""
    import numpy as np
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    np.random.seed(SEED)
    config = LlamaConfig(
        vocab_size=VOCAB_SIZE,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        head_dim=16,
        max_position_embeddings=2048,
        rope_theta=10000.0,
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        bos_token_id=pad_id,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        use_cache=True,
        attn_implementation="eager",
    )
    return LlamaForCausalLM(config), config


def _batch(examples: list[dict[str, Any]], pad_id: int, eos_id: int) -> tuple[Any, Any, Any]:
    """Input ids, attention mask and labels (the reply and its EOS only) for every example."""
    import torch

    seqs = [e["prompt_ids"] + e["reply_ids"] + [eos_id] for e in examples]
    width = max(len(s) for s in seqs)
    input_ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(seqs), width), dtype=torch.long)
    labels = torch.full((len(seqs), width), -100, dtype=torch.long)
    for row, (example, seq) in enumerate(zip(examples, seqs, strict=True)):
        input_ids[row, : len(seq)] = torch.tensor(seq)
        attention[row, : len(seq)] = 1
        start = len(example["prompt_ids"])
        labels[row, start : len(seq)] = torch.tensor(seq[start:])
    return input_ids, attention, labels


def _train(
    model: Any, examples: list[dict[str, Any]], pad_id: int, eos_id: int, steps: int
) -> None:
    """Full-batch AdamW with warm-up and linear decay until the replies are memorised."""
    import torch

    input_ids, attention, labels = _batch(examples, pad_id, eos_id)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=LEARNING_RATE, betas=(0.9, 0.98), weight_decay=0.0
    )
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / 20) * max(0.05, 1 - step / steps)
    )
    model.train()
    for step in range(steps):
        loss = model(input_ids=input_ids, attention_mask=attention, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        if step % 50 == 0 or step == steps - 1:
            print(f"   step {step:4}  loss {loss.item():.6f}", flush=True)
    model.eval()


def _check_torch(
    model: Any, tok: Any, examples: list[dict[str, Any]], pad_id: int, eos_id: int
) -> None:
    """Greedy transformers (torch) generation reproduces every reply and its EOS."""
    import torch

    failures = []
    with torch.no_grad():
        for example in examples:
            want = example["reply_ids"] + [eos_id]
            ids = torch.tensor([example["prompt_ids"]])
            got = model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=len(want) + 4,
                do_sample=False,
                eos_token_id=eos_id,
                pad_token_id=pad_id,
            )[0, ids.shape[1] :].tolist()
            ok = got == want
            print(f"   torch  {example['name']:16} {'ok' if ok else 'MISMATCH'}", flush=True)
            if not ok:
                failures.append(("torch", example["name"], tok.decode(got)))
    if failures:
        raise SystemExit(f"memorisation failed: {failures}")


def _write_tables(
    out: Path, examples: list[dict[str, Any]], n_params: int, eos_id: int, steps: int
) -> None:
    """The machine-readable table (replies.json), FIXTURE.md, and the files' hashes."""
    replies = [
        {
            "name": e["name"],
            "messages": [{"role": "user", "content": e["prompt"]}],
            "reply": e["reply"],
            "finish": "eos",
            "prompt_tokens": len(e["prompt_ids"]),
            "reply_tokens": len(e["reply_ids"]),
            "output_ids": e["reply_ids"] + [eos_id],
        }
        for e in examples
    ]
    (out / "replies.json").write_text(json.dumps(replies, indent=2, ensure_ascii=False) + "\n")
    write_fixture_md(out, examples, n_params, eos_id, steps)

    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"== wrote {out} ({total} bytes)", flush=True)
    for path in sorted(out.rglob("*")):
        if path.is_file():
            print(f"   {sha256(path)}  {path.stat().st_size:8}  {path.relative_to(out)}")


SOURCES = {
    "correct-integer": "integer-answer/1, task add-1; reply = the answer",
    "wrong-integer": "integer-answer/1, task sub-1; reply = the answer + 1",
    "prose": "integer-answer/1, task mul-1; reply = prose, no integer",
    "valid-program": "register-program-examples/2, task recurrence-1; reply = reference program",
    "invalid-program": "register-program-examples/2, task determinant-1; reply = sub with 1 arg",
    "chain-mul": "chain-step/1, mul of recurrence-1's first update (a, x0); reply = the product",
    "greeting": "free prompt",
    "long-reply": "free prompt; reply >= 60 tokens (for max_new_tokens -> finish `length`)",
}


def write_fixture_md(
    out: Path, examples: list[dict[str, Any]], n_params: int, eos_id: int, steps: int
) -> None:
    import onnxruntime
    import tokenizers
    import torch
    import transformers

    rows = []
    for e in examples:
        reply = e["reply"] if len(e["reply"]) <= 60 else e["reply"][:40] + " … " + e["reply"][-6:]
        rows.append(
            f"| `{e['name']}` | {SOURCES[e['name']]} | {len(e['prompt_ids'])} "
            f"| `{reply}` | {len(e['reply_ids'])} + eos |"
        )
    files = sorted(p for p in out.rglob("*") if p.is_file() and p.name != "FIXTURE.md")
    hashes = [
        f"| `{p.relative_to(out).as_posix()}` | {p.stat().st_size} | `{sha256(p)}` |" for p in files
    ]
    text = f"""# tiny-chat — a TEST FIXTURE, not a model

**This is not model evidence.** `tiny-chat` is a ~{n_params // 1000}k-parameter Llama
(hidden 64, 2 layers, 4 heads) with a {VOCAB_SIZE}-token byte-level BPE vocabulary, trained
from a fixed random init for {steps} AdamW steps to *memorise* the {len(examples)} exact
prompt → reply pairs below. It knows nothing else and does no arithmetic; its replies are
what its builder chose. It exists so tests (native and browser, transformers.js) can load a
real ONNX causal LM with no hub and assert exact completions, EOS finish, `length` finish
and token counts. No result obtained with it may appear as a measurement of a model.

- Chat template: ChatML (`{IM_START}`, `{IM_END}`), stored in `tokenizer_config.json` as
  `chat_template`; eos = `{IM_END}` (id {eos_id}); no BOS is added.
- The chat input is one user message,
  `{IM_START}user\\n{{prompt}}{IM_END}\\n{IM_START}assistant\\n`, and each reply is
  followed by `{IM_END}`. Greedy decoding.
- `onnx/model.onnx`: fp32, optimum-onnx export for `text-generation-with-past` (inputs
  `input_ids`, `attention_mask`, `position_ids`, `past_key_values.N.key/value`).
  `onnx/model_quantized.onnx` (if present): dynamic uint8 weights (transformers.js
  `dtype: "q8"`); it is kept only when it reproduces every reply too.
- `replies.json`: the machine-readable table (`name`, `messages`, `reply`, `finish`,
  `prompt_tokens`, `reply_tokens` without eos, `output_ids` = reply ids + eos).
- Prompts are rendered by this repo's `pyapp.records.prompts`;
  `tests/test_fixture_model.py` fails when they change, and the fixture must then be rebuilt.

## Rebuild

    python3 scripts/build_fixture.py

It makes its own venv `build/fixture-venv` from `scripts/fixture-requirements.txt` (torch
{torch.__version__}, transformers {transformers.__version__}, tokenizers
{tokenizers.__version__}, onnxruntime {onnxruntime.__version__}, optimum-onnx), runs with one
thread and fixed seeds, checks every reply with transformers and with onnxruntime (greedy,
past key values fed step by step as transformers.js does), and rewrites this folder. The
output is byte-identical from run to run on the same pins. Never run by CI or the app.

## Memorised pairs

Token counts are of the fixture's tokenizer; prompt tokens include the chat template.

| name | prompt | prompt tokens | reply | reply tokens |
|---|---|---|---|---|
{chr(10).join(rows)}

## Files (sha256)

| file | bytes | sha256 |
|---|---|---|
{chr(10).join(hashes)}
"""
    (out / "FIXTURE.md").write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    parser.add_argument("--steps", type=int, default=STEPS, help="AdamW steps")
    args = parser.parse_args()
    if not _in_build_venv() or any(os.environ.get(k) != v for k, v in DETERMINISTIC_ENV.items()):
        _bootstrap()
    build(args.out.resolve(), args.steps)


if __name__ == "__main__":
    main()
