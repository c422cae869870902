"""The reference subjects' examples as tensors, and the teacher-forced exact-answer rate
(`evaluate`): shared by the training (scripts/train_subject.py, which reports it as it goes)
and the export (scripts/subject_export.py, whose tables in subject.json it fills), so that
neither imports the other. Torch is imported inside the functions that use it: the module
is imported before the script re-executes itself inside the build venv."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import build_fixture  # noqa: E402  (ChatML and the special tokens)
import subject_data  # noqa: E402  (the examples)


def encode(tok: Any, examples: list[subject_data.Example]) -> list[tuple[list[int], list[int]]]:
    """(prompt ids with the chat template, reply ids + eos) of each example."""
    eos = tok.convert_tokens_to_ids(build_fixture.IM_END)
    prompts = tok([build_fixture.chatml(e.prompt) for e in examples], add_special_tokens=False)
    replies = tok([e.reply for e in examples], add_special_tokens=False)
    return [(p, [*r, eos]) for p, r in zip(prompts["input_ids"], replies["input_ids"], strict=True)]


def tensors(pairs: list[tuple[list[int], list[int]]], pad: int) -> tuple[Any, Any, Any]:
    """Input ids, attention mask and labels (reply and eos only), right-padded."""
    import torch

    width = max(len(p) + len(r) for p, r in pairs)
    ids = torch.full((len(pairs), width), pad, dtype=torch.long)
    mask = torch.zeros((len(pairs), width), dtype=torch.long)
    labels = torch.full((len(pairs), width), -100, dtype=torch.long)
    for row, (prompt, reply) in enumerate(pairs):
        seq = prompt + reply
        ids[row, : len(seq)] = torch.tensor(seq)
        mask[row, : len(seq)] = 1
        labels[row, len(prompt) : len(seq)] = torch.tensor(reply)
    return ids, mask, labels


def evaluate(model: Any, tok: Any, examples: list[subject_data.Example]) -> dict[str, Any]:
    """Exact-answer rate by op and digit count. A teacher-forced pass whose argmax equals
    every reply token (and eos) is exactly the case where greedy decoding gives the reply."""
    import torch

    pad = tok.convert_tokens_to_ids(build_fixture.PAD)
    pairs = encode(tok, examples)
    ids, mask, labels = tensors(pairs, pad)
    model.eval()
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask).logits
    model.train()
    guess = logits[:, :-1].argmax(-1)
    gold = labels[:, 1:]
    ok = ((guess == gold) | (gold == -100)).all(dim=1).tolist()
    cells: dict[str, list[int]] = {}
    for example, right in zip(examples, ok, strict=True):
        cells.setdefault(f"{example.op}/{example.digits[0]}", []).append(int(right))
    return {key: sum(v) / len(v) for key, v in cells.items()}
