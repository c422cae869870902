"""The native backend renders, tokenizes and decodes exactly as the page does (issue 34).

For the reference subject, the tiny-chat fixture and every catalogue stand-in (with the
catalogue's template options), the page's own code — the pinned @huggingface/transformers
under Node (tests/native_template_node.mjs) — and `pyapp.native` render the same prompts
(every model-only and model-program prompt of the design set, chain-step prompts in both
encodings, and a few awkward texts), get the same token ids, and decode the same id lists
(the prompts' own, special tokens included, and random ids over the whole vocabulary) to the
same text. Every template the native backend accepts (`VERIFIED`) is one compared here; any
other is refused with one line.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from nodescript import run_node_script

from pyapp.conditions import whole_task_prompt
from pyapp.native import (
    VERIFIED,
    ChatTemplate,
    NativeModelError,
    TokenizerText,
    find,
    template_text,
)
from pyapp.records import render_chain_step
from pyapp.sweep import standin_tokenizer
from pyapp.tasks import generate, preset_params

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
CATALOGUE = json.loads((ROOT / "site" / "models.json").read_text(encoding="utf-8"))
ODD = [
    "Résumé: 3 × 4 = ? ✓ 数字 — ok",
    "  leading and trailing spaces, a blank line\n\nand a tab\t. Done , isn't it ? \n",
    'quotes "a" and {"json": [1, -2]} and <|im_end|> typed as text',
]
"""Texts the protocol never sends but a template or tokenizer may treat differently."""


def models() -> list[tuple[str, tuple[Path, ...], dict[str, Any]]]:
    """(name, folders, template options): the subject, the fixture, each stand-in once per
    distinct template options the catalogue gives it."""
    found = [
        ("subject", (FIXTURES / "subject",), {}),
        ("fixture", (FIXTURES / "tiny-chat",), {}),
    ]
    seen = set()
    for entry in CATALOGUE["models"]:
        if "standin" not in entry:
            continue
        options = entry.get("chat_template_options") or {}
        key = (entry["standin"], json.dumps(options, sort_keys=True))
        if key in seen:
            continue
        seen.add(key)
        folder = FIXTURES / "standins" / entry["standin"]
        found.append((f"standin-{entry['standin']}", (folder, *standin_tokenizer(folder)), options))
    return found


def prompts() -> list[str]:
    tasks = generate(preset_params("design", 1729))
    texts = [
        whole_task_prompt(task, condition).text
        for task in tasks
        for condition in ("model-only", "model-program")
    ]
    for op, left, right in (("add", 7, -3), ("sub", -12, 40), ("mul", 123456, -7)):
        for encoding in ("json", "prose"):
            texts.append(render_chain_step(op, left, right, encoding).text)
    return [*texts, *ODD]


def tokenizer_files(folders: tuple[Path, ...]) -> tuple[Path, dict[str, Any], str]:
    json_path = find(folders, "tokenizer.json")
    config_path = find(folders, "tokenizer_config.json")
    if json_path is None or config_path is None:
        pytest.skip(f"no tokenizer files in {folders} (npm ci --ignore-scripts for stand-ins)")
    assert json_path.parent == config_path.parent
    config = json.loads(config_path.read_text(encoding="utf-8"))
    return json_path.parent, config, json_path.read_text(encoding="utf-8")


def id_lists(tokens: TokenizerText, prompt_ids: list[list[int]], seed: int) -> list[list[int]]:
    """The prompts' ids (special tokens included) and random lists over the vocabulary."""
    rng = random.Random(seed)
    top = max(tokens.vocab)
    lists = [ids for ids in prompt_ids[::7]]
    lists.append(tokens.encode("a , b . c ? d ! e ' f isn't I'm it's we've they're"))
    lists += [[rng.randrange(top + 1) for _ in range(rng.randint(1, 12))] for _ in range(40)]
    special = sorted(i for i, t in tokens.vocab.items() if t in tokens.added)
    lists += [[rng.choice([*special, 17, 220]) for _ in range(6)] for _ in range(5)]
    return lists


@pytest.fixture(scope="module")
def compared() -> list[dict[str, Any]]:
    """Per model: the page's answers and the native ones."""
    texts = prompts()
    cases, native = [], []
    built: dict[Path, TokenizerText] = {}  # two stand-ins share one tokenizer
    for seed, (name, folders, options) in enumerate(models()):
        folder, config, tokenizer_json = tokenizer_files(folders)
        template = ChatTemplate(config, options)
        tokens = built.get(folder) or built.setdefault(
            folder, TokenizerText(tokenizer_json, config)
        )
        rendered = [template.render(text) for text in texts]
        ids = [tokens.encode(text) for text in rendered]
        decode = id_lists(tokens, ids, seed)
        cases.append(
            {"folder": str(folder), "options": options, "prompts": texts, "decode": decode}
        )
        native.append(
            {
                "name": name,
                "sha256": template.sha256,
                "texts": rendered,
                "ids": ids,
                "decoded": [tokens.decode(d) for d in decode],
                "decode": decode,
            }
        )
    page = run_node_script("native_template_node.mjs", cases)
    return [{**n, "page": p} for n, p in zip(native, page, strict=True)]


def test_native_prompt_text_and_ids_are_the_pages(compared: list[dict[str, Any]]) -> None:
    assert {m["name"] for m in compared} >= {"subject", "fixture", "standin-llama"}
    for model in compared:
        page = model["page"]
        for i, (ours, theirs) in enumerate(zip(model["texts"], page["texts"], strict=True)):
            assert ours == theirs, (model["name"], i)
        for i, (ours, theirs) in enumerate(zip(model["ids"], page["ids"], strict=True)):
            assert ours == theirs, (model["name"], i, model["texts"][i][:60])


def test_native_decoding_is_the_pages(compared: list[dict[str, Any]]) -> None:
    for model in compared:
        pairs = zip(model["decoded"], model["page"]["decoded"], model["decode"], strict=True)
        for ours, theirs, ids in pairs:
            assert ours == theirs, (model["name"], ids)


def test_every_verified_template_is_one_compared_here(compared: list[dict[str, Any]]) -> None:
    assert set(VERIFIED) == {m["sha256"] for m in compared}


def test_a_template_not_compared_is_refused_in_one_line() -> None:
    config = json.loads((FIXTURES / "subject" / "tokenizer_config.json").read_text())
    edited = {**config, "chat_template": template_text(config) + "{{ '\\n' }}"}
    with pytest.raises(NativeModelError) as refused:
        ChatTemplate(edited, {})
    assert refused.value.code == "unverified_template"
    assert (
        "\n" not in refused.value.message and "run this model in the page" in refused.value.message
    )
    with pytest.raises(NativeModelError) as missing:
        ChatTemplate({}, {})
    assert missing.value.code == "unverified_template"


def test_a_decoder_it_does_not_follow_is_refused() -> None:
    text = (FIXTURES / "tiny-chat" / "tokenizer.json").read_text(encoding="utf-8")
    data = json.loads(text)
    data["decoder"] = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"}
    with pytest.raises(NativeModelError) as refused:
        TokenizerText(json.dumps(data), {})
    assert refused.value.code == "unverified_template"
