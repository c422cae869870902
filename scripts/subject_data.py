"""The learned reference subject's training data and recipe (pure standard library).

`scripts/train_subject.py` trains the subject on the examples this module generates;
`tests/test_subject_data.py` regenerates the same stream (no torch needed) and proves that
no prompt of the default seed's task sets appears in it.

What the subject sees: SINGLE PRIMITIVES ONLY (one add, sub or mul of two integers a, b),
rendered with the project's own prompt templates (`pyapp.records.prompts`), in both
register encodings (JSON block and prose):

| format (weight)                  | template                     | target reply                 |
|----------------------------------|------------------------------|------------------------------|
| integer answer (9/20)            | integer-answer/1             | the exact result, e.g. `-42` |
| controlled-chain step (9/20)     | chain-step/2                 | the exact result             |
| one-operation program (2/20)     | register-program-examples/2  | `{"op": "add", "args": [...]}` |

The question is the task generator's own primitive question (`Compute a + b.`); the reply
is exactly what the parsers accept (`pyapp.conditions.replies.parse_integer`,
`interpreter.parse_program`), followed by the model's end-of-turn token. No composition
(recurrence, determinant, derivative, any tree of more than one operation) is ever shown.

Operands: the digit counts of a and b are drawn independently and uniformly from 1..6 for add
and sub, 1..5 for mul (the presets' ranges; so 1-digit operands are as frequent as 6-digit
ones), the magnitude uniformly within that digit count, negative one time in four (as the
task generator's `signed`). From step `short_operands_from_step` (1,750) on, the digit counts
are weighted toward short operands, 6:5:4:3:2:1 for 1..6 digits (every count keeps a share):
the first run of this recipe, all uniform, had learned only the units digit by step 1,700
(exact on 1-digit add 0.20, 0 beyond), so the rest of the budget goes mostly where the
digit-alignment is learned first. The switch is part of the recipe (a batch is still a pure
function of its step), so a rebuild from scratch makes the same stream. At step 3,600
(`extended_from_step`) the recipe was extended from 7,000 to 16,000 steps: by then it was
exact on most one-digit primitives but on almost nothing with two digits (0.02 on the
calibration-60 profile, teacher-forced), far from issue 26's bar, and the rest of the
90-minute budget allowed more steps at two threads. From that step on the learning rate
follows a second cosine from where the first (horizon 7,000) had got to, and torch runs two
intra-op threads (`train_subject.lr_factor`, `threads_at`); before it, one.

Seeds, disjoint from the task sets by construction: the task generator draws from
SplitMix64 streams seeded by a task seed; this generator never uses SplitMix64. Every draw
of training example (step, index) comes from SHA-256 in counter mode keyed by
`DOMAIN:seed:step:index` (`CounterRng`), so no task seed's stream is a training stream, and
any example can be regenerated alone. On top of that, every (op, a, b) that a task of the
default seed 1729 under any preset computes — profile primitives, encoding probes and every
operation of every held-out task's reference program (so every step of a correct chain
route), in both operand orders — is excluded and redrawn (`excluded_operations`). Other
seeds' small-operand tasks may well occur in training (there are only 18 one-digit
operands); the exclusion is exact for the default seed only.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import interpreter  # noqa: E402
from pyapp.records import prompts  # noqa: E402
from pyapp.tasks import presets, taskset  # noqa: E402

DATA_VERSION = "subject-data/2"
"""Version of this generator; a change to what any (seed, step, index) gives bumps it."""
DOMAIN = "composition-lab/subject-train/1"
"""Domain tag of the SHA-256 counter-mode draws (never a SplitMix64 task stream)."""
EVAL_DOMAIN = "composition-lab/subject-eval/1"
"""Domain of the progress evaluation examples (not trained on; same exclusions)."""

OPS = ("add", "sub", "mul")
MAX_DIGITS = 6
MUL_MAX_DIGITS = 5
"""mul operands stop at 5 digits, as the presets' mul probes do (`taskset.CALIBRATION_RANGES`):
a 6-by-6-digit product is 12 digits of target no 1.3 M-parameter model learns, whose loss
would only drown the learnable signal."""
FORMATS: tuple[tuple[str, str, int], ...] = (
    # (template id, encoding, weight out of 20)
    (prompts.INTEGER_ANSWER, "json", 5),
    (prompts.INTEGER_ANSWER, "prose", 4),
    (prompts.CHAIN_STEP, "json", 5),
    (prompts.CHAIN_STEP, "prose", 4),
    (prompts.REGISTER_PROGRAM, "json", 1),
    (prompts.REGISTER_PROGRAM, "prose", 1),
)
PRESETS = tuple(presets.CALIBRATION_PRESETS)
"""The presets whose default-seed operations the stream excludes: the three calibration sets
the subject was trained against (subject-data/2). The ladder rungs came later and are not
excluded (their one-digit operands may occur in training, as other seeds' small operands
may): adding them here would change the committed recipe's stream."""
EXCLUDED_SEED = taskset.DEFAULT_SEED

RECIPE: dict[str, object] = {
    "data_version": DATA_VERSION,
    "data_seed": 0,
    "model_seed": 2026,
    "steps": 16000,
    "first_horizon_steps": 7000,
    "extended_from_step": 3600,
    "threads_after_extension": 2,
    "batch": 48,
    "learning_rate": 2e-3,
    "min_lr_ratio": 0.05,
    "warmup_steps": 200,
    "mul_max_digits": 5,
    "short_operands_from_step": 1750,
    "digit_weights": [6, 5, 4, 3, 2, 1],
    "weight_decay": 0.01,
    "betas": [0.9, 0.98],
    "grad_clip": 1.0,
    "hidden": 160,
    "layers": 4,
    "heads": 5,
    "intermediate": 448,
    "vocab_bpe": 400,
}
"""The whole training recipe: `train_subject.py` reads it, its digest is in the checkpoint
and the model's provenance (a change restarts training)."""


def recipe_digest() -> str:
    return hashlib.sha256(json.dumps(RECIPE, sort_keys=True).encode()).hexdigest()


class CounterRng:
    """Uniform draws from SHA-256(key:counter): stdlib, identical on every Python."""

    def __init__(self, key: str) -> None:
        self._key = key.encode()
        self._counter = 0

    def u64(self) -> int:
        digest = hashlib.sha256(self._key + b":" + str(self._counter).encode()).digest()
        self._counter += 1
        return int.from_bytes(digest[:8], "big")

    def integer(self, low: int, high: int) -> int:
        """Uniform in [low, high] by rejection (no modulo bias)."""
        span = high - low + 1
        limit = (1 << 64) - ((1 << 64) % span)
        while True:
            draw = self.u64()
            if draw < limit:
                return low + draw % span


@dataclass(frozen=True)
class Example:
    """One training example: a primitive, the prompt that asks for it, the target reply."""

    op: str
    a: int
    b: int
    template_id: str
    encoding: str
    prompt: str
    reply: str

    @property
    def digits(self) -> tuple[int, int]:
        return len(str(abs(self.a))), len(str(abs(self.b)))


def result(op: str, a: int, b: int) -> int:
    return {"add": a + b, "sub": a - b, "mul": a * b}[op]


def program_reply(op: str) -> str:
    """The one-operation program, written as the prompt's own examples write programs."""
    return json.dumps({"op": op, "args": [{"ref": "a"}, {"ref": "b"}]})


@cache
def excluded_operations() -> frozenset[tuple[str, int, int]]:
    """Every (op, left, right) a task of the default seed computes, in both orders: the
    profile primitives and probes, and each operation of every task's reference program
    (for held-out recurrences, the steps of the correct chain route)."""
    found: set[tuple[str, int, int]] = set()
    for preset in PRESETS:
        for task in taskset.generate(taskset.preset_params(preset, EXCLUDED_SEED)):
            for step in interpreter.execute(task.program, task.registers).steps:
                left, right = step.operands
                found.add((step.op, left, right))
                found.add((step.op, right, left))
    return frozenset(found)


def _digits(rng: CounterRng, op: str, step: int) -> int:
    """An operand's digit count: uniform before `short_operands_from_step`, then weighted
    toward short operands by `digit_weights` (every count keeps a share)."""
    most = MUL_MAX_DIGITS if op == "mul" else MAX_DIGITS
    if step < int(RECIPE["short_operands_from_step"]):  # type: ignore[call-overload]
        return rng.integer(1, most)
    weights = list(RECIPE["digit_weights"])[:most]  # type: ignore[call-overload]
    pick = rng.integer(1, sum(weights))
    for digits, weight in enumerate(weights, start=1):
        if pick <= weight:
            return digits
        pick -= weight
    raise AssertionError("weights")


def _operand(rng: CounterRng, op: str, step: int) -> int:
    digits = _digits(rng, op, step)
    value = rng.integer(10 ** (digits - 1), 10**digits - 1)
    return -value if rng.integer(1, 4) == 1 else value


def _format(rng: CounterRng) -> tuple[str, str]:
    pick = rng.integer(1, sum(w for _, _, w in FORMATS))
    for template_id, encoding, weight in FORMATS:
        if pick <= weight:
            return template_id, encoding
        pick -= weight
    raise AssertionError("weights")


def render(op: str, a: int, b: int, template_id: str, encoding: str) -> Example:
    """The example for a primitive in one format, rendered by the project's templates."""
    if template_id == prompts.CHAIN_STEP:
        prompt = prompts.render_chain_step(op, a, b, encoding).text
    else:
        question = f"Compute a {taskset.SYMBOLS[op]} b."
        prompt = prompts.render_task_prompt(template_id, {"a": a, "b": b}, question, encoding).text
    reply = program_reply(op) if template_id == prompts.REGISTER_PROGRAM else str(result(op, a, b))
    return Example(op, a, b, template_id, encoding, prompt, reply)


def example(domain: str, seed: int, step: int, index: int) -> Example:
    """Example `index` of batch `step`: a pure function of its arguments."""
    rng = CounterRng(f"{domain}:{seed}:{step}:{index}")
    op = OPS[rng.integer(0, len(OPS) - 1)]
    template_id, encoding = _format(rng)
    excluded = excluded_operations()
    while True:
        a, b = _operand(rng, op, step), _operand(rng, op, step)
        if (op, a, b) not in excluded:
            return render(op, a, b, template_id, encoding)


def batch(step: int, seed: int | None = None, size: int | None = None) -> list[Example]:
    """The training batch of `step` under the recipe."""
    seed = int(RECIPE["data_seed"]) if seed is None else seed  # type: ignore[call-overload]
    size = int(RECIPE["batch"]) if size is None else size  # type: ignore[call-overload]
    return [example(DOMAIN, seed, step, i) for i in range(size)]


def training_stream(steps: int | None = None) -> Iterator[Example]:
    """Every training example of the recipe, in order."""
    total = int(RECIPE["steps"]) if steps is None else steps  # type: ignore[call-overload]
    for step in range(total):
        yield from batch(step)


def eval_set(per_cell: int = 4) -> list[Example]:
    """Progress examples: `per_cell` per (op, digits of a = digits of b), integer-answer/1
    JSON, from the evaluation domain (never trained on)."""
    out = []
    for op in OPS:
        for digits in range(1, MAX_DIGITS + 1):
            for i in range(per_cell):
                rng = CounterRng(f"{EVAL_DOMAIN}:{op}:{digits}:{i}")
                while True:
                    a = rng.integer(10 ** (digits - 1), 10**digits - 1)
                    b = rng.integer(10 ** (digits - 1), 10**digits - 1)
                    if rng.integer(1, 4) == 1:
                        b = -b
                    if (op, a, b) not in excluded_operations():
                        break
                out.append(render(op, a, b, prompts.INTEGER_ANSWER, "json"))
    return out


def tokenizer_corpus() -> list[str]:
    """Texts the tokenizer's merges are learned from: the primitive prompts' words and the
    program reply, with every digit removed (so no merge contains a digit: one token per
    digit)."""
    texts = ["user\nassistant\n"]
    for op in OPS:
        for template_id, encoding, _ in FORMATS:
            ex = render(op, 12, -34, template_id, encoding)
            texts.append(ex.prompt + "\n" + program_reply(op))
    return ["".join(c for c in t if not c.isdigit()) for t in texts]
