"""Render the versioned prompt templates in `prompts/<name>/<version>.txt`.

Each rendered prompt records the template id (`name/version`) and the SHA-256 of the
template file's bytes, so a trace names exactly which wording produced each completion.

| template id                   | condition        | placeholders                 |
|-------------------------------|------------------|------------------------------|
| integer-answer/1              | model only       | registers, question          |
| register-program-examples/2   | model program    | registers, question          |
| chain-step/1                  | controlled chain | left, symbol, right          |
|                               | (old traces)     |                              |
| chain-step/2                  | controlled chain | registers, expression        |

`chain-step/2` renders the step's state in the task's encoding (operands as registers `a`
and `b`, a JSON block or prose), so the two halves of an encoding-probe pair are two
distinct measurements; `chain-step/1` (the bare `Compute L op R.`) stays for old traces.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from string import Template

INTEGER_ANSWER = "integer-answer/1"
REGISTER_PROGRAM = "register-program-examples/2"
CHAIN_STEP_V1 = "chain-step/1"
CHAIN_STEP = "chain-step/2"
TEMPLATE_IDS = (INTEGER_ANSWER, REGISTER_PROGRAM, CHAIN_STEP_V1, CHAIN_STEP)


@dataclass(frozen=True)
class RenderedPrompt:
    """A prompt as sent: the template it came from and the exact text."""

    template_id: str
    """Template name and version, e.g. `integer-answer/1`."""
    template_sha256: str
    """SHA-256 of the template file's UTF-8 bytes."""
    text: str
    """The rendered prompt text (the user message; the chat template is the model's)."""


@dataclass(frozen=True)
class PromptTemplate:
    template_id: str
    source: str
    sha256: str

    def render(self, values: Mapping[str, str]) -> RenderedPrompt:
        text = Template(self.source).substitute(values)
        return RenderedPrompt(self.template_id, self.sha256, text.strip("\n"))


@cache
def load_template(template_id: str) -> PromptTemplate:
    if template_id not in TEMPLATE_IDS:
        raise KeyError(f"unknown prompt template {template_id!r}; known: {TEMPLATE_IDS}")
    name, version = template_id.split("/")
    data = resources.files("prompts").joinpath(name, f"{version}.txt").read_bytes()
    return PromptTemplate(template_id, data.decode("utf-8"), hashlib.sha256(data).hexdigest())


def template_hashes() -> dict[str, str]:
    return {tid: load_template(tid).sha256 for tid in TEMPLATE_IDS}


def render_registers(registers: Mapping[str, int], encoding: str) -> str:
    """The same state in two encodings: a JSON register block, or prose."""
    if encoding == "json":
        return json.dumps(dict(registers))
    if encoding == "prose":
        return " ".join(f"Register {name} holds {value}." for name, value in registers.items())
    raise ValueError(f"unknown encoding {encoding!r}")


def render_task_prompt(
    template_id: str, registers: Mapping[str, int], question: str, encoding: str
) -> RenderedPrompt:
    values = {"registers": render_registers(registers, encoding), "question": question}
    return load_template(template_id).render(values)


def render_chain_step(
    op: str, left: int, right: int, encoding: str = "json", template_id: str = CHAIN_STEP
) -> RenderedPrompt:
    """One chain call's prompt. Version 2: the operands as registers `a`, `b` in the task's
    encoding; version 1 (old traces): `Compute L op R.` whatever the encoding."""
    symbol = {"add": "+", "sub": "-", "mul": "*"}[op]
    if template_id == CHAIN_STEP_V1:
        shown_right = f"({right})" if right < 0 else str(right)
        values = {"left": str(left), "symbol": symbol, "right": shown_right}
    elif template_id == CHAIN_STEP:
        registers = render_registers({"a": left, "b": right}, encoding)
        values = {"registers": registers, "expression": f"a {symbol} b"}
    else:
        raise KeyError(f"not a chain-step template: {template_id!r}")
    return load_template(template_id).render(values)
