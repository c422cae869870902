"""Train the learned REFERENCE SUBJECT (tests/fixtures/subject), resumably, then export it.

    python3 scripts/train_subject.py [--curriculum NAME] [--out DIR] [--work DIR] [--steps N]

`--curriculum primitives` (the default) is the first subject's recipe, unchanged; its
output is tests/fixtures/subject. `--curriculum primitives+recurrences` is the second
subject's (subject/recurrences-1, tests/fixtures/subject2; `subject_data.RECURRENCES_RECIPE`):
initialised from the first subject's fp32 ONNX weights (`warm_start`), then trained on the
primitives and on whole affine recurrences of one and two updates. Its config.json carries
`subject_curriculum`, so the two subjects' configs (their identity, `pyapp.records.subject`)
differ although their architecture is the same.

A small Llama-style causal LM (`RECIPE` in scripts/subject_data.py: hidden 160, 4 layers)
with its own tokenizer and a ChatML chat template, trained from a seeded random init on
SINGLE PRIMITIVES ONLY (one add, sub or mul, operands 1-6 digits, in the project's own
integer-answer, chain-step and register-program prompts; `scripts/subject_data.py`). It
never sees a composition. Unlike the tiny-chat fixture its replies were chosen by nobody:
what it gets right and wrong is what it learned.

Tokenizer (a documented choice): byte-level BPE whose merges are learned from the primitive
prompts with every digit removed, so every digit is one token and a sign is its own token;
the fixed instruction text of each template (the part before the registers) and the
`Question:` separator are single added tokens, so a prompt is about 25-45 tokens.

Training: AdamW, linear warm-up then cosine decay, fixed step count and batch (the recipe),
one thread, deterministic algorithms, no dropout; batch `step` is a pure function of the
step (subject_data.batch), so a run may stop at any time and resume from the last
checkpoint in `--work` (build/subject-train, ignored by git) and give the same weights as an
uninterrupted run. Progress (step, loss, exact-answer accuracy on held-out-of-training
examples by op and digit count) goes to stdout.

Export (scripts/subject_export.py): optimum-onnx `text-generation-with-past`, fp32 and q8
(dynamic uint8) in the onnx-community layout, then the greedy ids of the reference prompts by
onnxruntime (past key values fed step by step, as transformers.js does) go to replies.json,
with the top-two logit margins (near-ties listed). Determinism: with the same pins the
rebuild is byte-identical (one thread, fixed seeds, as scripts/build_fixture.py);
`--check` rebuilds into a temporary folder and compares replies.json with the committed one.

The script makes the tiny fixture's venv (build/fixture-venv, scripts/fixture-requirements.txt)
and re-executes itself inside it (build_fixture.bootstrap). CI and the app never run it.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import build_fixture  # noqa: E402  (venv bootstrap, deterministic settings, ChatML)
import subject_data  # noqa: E402  (the recipe and the training stream, stdlib only)
import subject_eval  # noqa: E402  (examples as tensors; the teacher-forced exact-answer rate)
import subject_export  # noqa: E402  (the ONNX export, its replies and its tables)

RECIPE: dict[str, object] = subject_data.RECIPE
"""The active recipe (`--curriculum`; the first subject's by default)."""
OUTPUTS = {
    "primitives": (ROOT / "tests" / "fixtures" / "subject", ROOT / "build" / "subject-train"),
    "primitives+recurrences": (
        ROOT / "tests" / "fixtures" / "subject2",
        ROOT / "build" / "subject2-train",
    ),
}
"""Curriculum → (model folder, checkpoint folder)."""
DEFAULT_OUT, DEFAULT_WORK = OUTPUTS[subject_data.DEFAULT_CURRICULUM]
WARM_START_ONNX = {"subject/reference-2": ROOT / "tests" / "fixtures" / "subject" / "onnx"}
CHECKPOINT_EVERY = 50
EVAL_EVERY = 200


def _int(key: str) -> int:
    return int(RECIPE[key])  # type: ignore[call-overload]


# --------------------------------------------------------------------------- tokenizer


def template_pieces() -> list[str]:
    """The fixed instruction text of each primitive template as one added token each: the
    part before the registers, and the `Question:` separator."""
    from pyapp.records import prompts

    pieces = []
    for template_id in (prompts.INTEGER_ANSWER, prompts.CHAIN_STEP, prompts.REGISTER_PROGRAM):
        source = prompts.load_template(template_id).source.strip("\n")
        pieces.append(source.split("$registers")[0])
    pieces.append("\n\nQuestion: ")
    for piece in pieces:
        others = [p for p in pieces if p != piece]
        assert not any(piece in other for other in others), piece
    return pieces


def build_tokenizer() -> Any:
    import tokenizers
    from tokenizers import AddedToken, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = tokenizers.Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    bpe.decoder = decoders.ByteLevel()
    bpe.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=_int("vocab_bpe"),
        min_frequency=1,
        special_tokens=build_fixture.SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(subject_data.tokenizer_corpus(), trainer=trainer)
    bpe.add_tokens([AddedToken(p, normalized=False, special=False) for p in template_pieces()])
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token=None,
        eos_token=build_fixture.IM_END,
        pad_token=build_fixture.PAD,
        unk_token=None,
        additional_special_tokens=[build_fixture.IM_START, build_fixture.IM_END],
        model_max_length=2048,
        clean_up_tokenization_spaces=False,
        chat_template=build_fixture.CHAT_TEMPLATE,
    )
    for digit in "0123456789-":
        assert len(tok(digit, add_special_tokens=False)["input_ids"]) == 1
    sample = tok("-1234567", add_special_tokens=False)["input_ids"]
    assert len(sample) == 8, sample
    return tok


# --------------------------------------------------------------------------- model


def new_model(tok: Any) -> Any:
    import numpy as np
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    seed = _int("model_seed")
    torch.manual_seed(seed)
    np.random.seed(seed)
    pad = tok.convert_tokens_to_ids(build_fixture.PAD)
    eos = tok.convert_tokens_to_ids(build_fixture.IM_END)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=_int("hidden"),
        intermediate_size=_int("intermediate"),
        num_hidden_layers=_int("layers"),
        num_attention_heads=_int("heads"),
        num_key_value_heads=_int("heads"),
        head_dim=_int("hidden") // _int("heads"),
        max_position_embeddings=2048,
        rope_theta=10000.0,
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        bos_token_id=pad,
        eos_token_id=eos,
        pad_token_id=pad,
        use_cache=True,
        attn_implementation="eager",
    )
    if "curriculum" in RECIPE:  # the first subject's config stays byte-identical
        config.subject_curriculum = RECIPE["curriculum"]
    return LlamaForCausalLM(config)


def warm_start(model: Any, tok: Any, source: str) -> None:
    """Load `source`'s weights from its fp32 ONNX graph (the only form it was kept in): the
    embedding and norms are initializers of the same name, each Linear weight the transposed
    constant operand of its MatMul node (`/model/layers.N/self_attn/q_proj/MatMul`), the tied
    head the embedding. Checked by comparing the two runtimes' logits on one prompt."""
    import numpy as np
    import onnx
    import onnxruntime
    import torch
    from onnx import numpy_helper

    path = WARM_START_ONNX[source] / "model.onnx"
    from transformers import PreTrainedTokenizerFast

    theirs_tok = PreTrainedTokenizerFast.from_pretrained(str(path.parent.parent))
    if theirs_tok.get_vocab() != tok.get_vocab():
        raise SystemExit(f"warm start: {source}'s tokenizer is not this recipe's")
    graph = onnx.load(str(path)).graph
    found = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    for node in graph.node:  # a Linear's weight is an anonymous MatMul operand, transposed
        if node.op_type == "MatMul" and node.name.endswith("_proj/MatMul"):
            weight = [x for x in node.input if x in found]
            name = node.name.strip("/").removesuffix("/MatMul").replace("/", ".")
            if len(weight) == 1:
                found[f"{name}.weight"] = found[weight[0]].T
    state = model.state_dict()
    loaded = {}
    for name, tensor in state.items():
        key = "model.embed_tokens.weight" if name == "lm_head.weight" else name
        if key not in found:
            raise SystemExit(f"warm start: {name} is not an initializer of {path}")
        array = found[key]
        if tuple(array.shape) != tuple(tensor.shape):
            raise SystemExit(f"warm start: {name} {tuple(array.shape)} != {tuple(tensor.shape)}")
        loaded[name] = torch.from_numpy(np.array(array, dtype=np.float32))
    model.load_state_dict(loaded)
    ids = torch.tensor([[5, 17, 40, 99, 12, 7, 300, 41]])
    with torch.no_grad():
        ours = model(input_ids=ids).logits.numpy()
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feed: dict[str, Any] = {}
    for spec in session.get_inputs():
        if spec.name == "input_ids":
            feed[spec.name] = ids.numpy()
        elif spec.name == "attention_mask":
            feed[spec.name] = np.ones_like(ids.numpy())
        elif spec.name == "position_ids":
            feed[spec.name] = np.arange(ids.shape[1])[None, :]
        else:  # empty past key values
            shape = [1 if d == "batch_size" else 0 if isinstance(d, str) else d for d in spec.shape]
            feed[spec.name] = np.zeros(shape, dtype=np.float32)
    theirs = session.run(["logits"], feed)[0]
    diff = float(np.abs(ours - theirs).max())
    print(f"== warm start from {source}: {len(loaded)} tensors, logits max |diff| {diff:.2e}")
    if diff >= 1e-4:
        raise SystemExit(f"warm start: torch and onnxruntime logits differ by {diff}")


def lr_factor(step: int) -> float:
    """Linear warm-up, then a cosine over `first_horizon_steps`; from `extended_from_step`
    on, a second cosine from where the first had got to down to the floor at `steps` (the
    recipe was extended while it ran; a rebuild from scratch follows the same curve)."""
    warmup, steps = _int("warmup_steps"), _int("steps")
    horizon, extended = _int("first_horizon_steps"), _int("extended_from_step")
    floor = float(RECIPE["min_lr_ratio"])  # type: ignore[arg-type]
    if step < warmup:
        return (step + 1) / warmup

    def first(at: int) -> float:
        progress = (at - warmup) / max(1, horizon - warmup)
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))

    if step < extended:
        return first(step)
    progress = (step - extended) / max(1, steps - extended)
    return floor + (first(extended) - floor) * 0.5 * (1 + math.cos(math.pi * progress))


def threads_at(step: int) -> int:
    """Torch's intra-op threads for `step`: one, then `threads_after_extension` from
    `extended_from_step` on (a fixed count at every step keeps the rebuild deterministic);
    a recipe with `threads` uses that count throughout."""
    if "threads" in RECIPE:
        return _int("threads")
    return _int("threads_after_extension") if step >= _int("extended_from_step") else 1


def print_eval(step: int, rates: dict[str, Any]) -> None:
    rows = []
    for op in subject_data.OPS:
        cells = [rates[f"{op}/{d}"] for d in range(1, subject_data.MAX_DIGITS + 1)]
        rows.append(f"{op} " + " ".join(f"{c:.2f}" for c in cells))
    print(f"   eval step {step:5} (digits 1..6)  " + "  |  ".join(rows), flush=True)


def print_recurrence_eval(step: int, model: Any, tok: Any) -> None:
    """Exact-reply rate on held-out-of-training recurrences, by format and updates."""
    examples = subject_data.recurrence_eval_set()
    rows = []
    for template_id in (subject_data.prompts.INTEGER_ANSWER, subject_data.prompts.REGISTER_PROGRAM):
        for updates in (1, 2):
            cell = [
                e
                for e in examples
                if e.template_id == template_id and f"after {updates} update" in e.prompt
            ]
            (rate,) = subject_eval.evaluate(model, tok, cell).values()
            rows.append(f"{template_id.split('/')[0][:8]}x{updates} {rate:.2f}")
    print(f"   recurrences step {step:5}  " + "  ".join(rows), flush=True)


# --------------------------------------------------------------------------- training


def train(work: Path, steps: int) -> tuple[Any, Any]:
    """Train to `steps` (resuming from work/checkpoint.pt), return (model, tokenizer)."""
    import torch

    build_fixture.configure_torch()
    work.mkdir(parents=True, exist_ok=True)
    tok = build_tokenizer()
    pad = tok.convert_tokens_to_ids(build_fixture.PAD)
    model = new_model(tok)
    if "warm_start" in RECIPE:
        warm_start(model, tok, str(RECIPE["warm_start"]))
    n_params = sum(p.numel() for p in model.parameters())
    print(
        f"== subject: {n_params} parameters, vocab {len(tok)}, recipe "
        f"{subject_data.recipe_digest(RECIPE)[:12]}",
        flush=True,
    )
    betas = tuple(RECIPE["betas"])  # type: ignore[arg-type]
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=float(RECIPE["learning_rate"]),  # type: ignore[arg-type]
        betas=betas,
        weight_decay=float(RECIPE["weight_decay"]),  # type: ignore[arg-type]
    )
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor)
    checkpoint = work / "checkpoint.pt"
    start = 0
    if checkpoint.exists():
        state = torch.load(checkpoint, weights_only=False)
        if state["recipe"] != subject_data.recipe_digest(RECIPE):
            raise SystemExit(f"{checkpoint}: another recipe; delete it to start again")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        start = state["step"]
        print(f"== resumed at step {start}", flush=True)
    evals = subject_data.eval_set()
    model.train()
    began = time.monotonic()
    for step in range(start, steps):
        if torch.get_num_threads() != threads_at(step):
            torch.set_num_threads(threads_at(step))
        pairs = subject_eval.encode(tok, subject_data.batch(step, recipe=RECIPE))
        ids, mask, labels = subject_eval.tensors(pairs, pad)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), float(RECIPE["grad_clip"]))  # type: ignore[arg-type]
        optimizer.step()
        schedule.step()
        done = step + 1
        if done % 10 == 0:
            rate = (time.monotonic() - began) / (done - start)
            print(
                f"   step {done:5}/{steps}  loss {loss.item():.4f}  "
                f"lr {schedule.get_last_lr()[0]:.2e}  {rate:.2f} s/step",
                flush=True,
            )
        if done % EVAL_EVERY == 0 or done == steps:
            print_eval(done, subject_eval.evaluate(model, tok, evals))
            if "curriculum" in RECIPE:
                print_recurrence_eval(done, model, tok)
        if done % CHECKPOINT_EVERY == 0 or done == steps:
            state = {
                "recipe": subject_data.recipe_digest(RECIPE),
                "step": done,
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "schedule": schedule.state_dict(),
            }
            torch.save(state, work / "checkpoint.tmp")
            os.replace(work / "checkpoint.tmp", checkpoint)
    model.eval()
    return model, tok


def main() -> None:
    global RECIPE
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--curriculum",
        choices=sorted(subject_data.CURRICULA),
        default=subject_data.DEFAULT_CURRICULUM,
        help="the training recipe (default: the first subject's, primitives only)",
    )
    parser.add_argument("--out", type=Path, default=None, help="model folder to write")
    parser.add_argument("--work", type=Path, default=None, help="checkpoint folder")
    parser.add_argument("--steps", type=int, default=None, help="stop after N steps")
    parser.add_argument("--train-only", action="store_true", help="do not export")
    parser.add_argument(
        "--check",
        action="store_true",
        help="export into a temporary folder and compare with --out (exit 1 if they differ)",
    )
    args = parser.parse_args()
    RECIPE = subject_data.CURRICULA[args.curriculum]
    out_default, work_default = OUTPUTS[args.curriculum]
    args.out = out_default if args.out is None else args.out
    args.work = work_default if args.work is None else args.work
    args.steps = _int("steps") if args.steps is None else args.steps
    if not build_fixture._in_build_venv() or any(
        os.environ.get(k) != v for k, v in build_fixture.DETERMINISTIC_ENV.items()
    ):
        build_fixture.bootstrap(build_fixture.VENV, build_fixture.REQUIREMENTS, Path(__file__))
    model, tok = train(args.work.resolve(), args.steps)
    if args.train_only or args.steps != _int("steps"):
        print("== not exported (--train-only or a partial --steps)", flush=True)
        return
    if not args.check:
        subject_export.export(model, tok, args.out.resolve(), RECIPE)
        return
    with tempfile.TemporaryDirectory() as tmp:
        subject_export.export(model, tok, Path(tmp), RECIPE)
        differ = [
            p.relative_to(tmp).as_posix()
            for p in sorted(Path(tmp).rglob("*"))
            if p.is_file() and not _same(p, args.out.resolve() / p.relative_to(tmp))
        ]
    print(
        f"== rebuild differs from {args.out} in: {differ}" if differ else "== rebuild: same bytes"
    )
    replies_differ = "replies.json" in differ
    raise SystemExit(1 if replies_differ else 0)


def _same(a: Path, b: Path) -> bool:
    return b.is_file() and a.read_bytes() == b.read_bytes()


if __name__ == "__main__":
    main()
