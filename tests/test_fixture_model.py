"""The tiny-chat test-fixture model (tests/fixtures/tiny-chat) is intact and current.

Stdlib + pyapp only: no torch, onnxruntime or tokenizers here. The fixture is rebuilt with
`python3 scripts/build_fixture.py` (never by CI); these tests fail when its files drift from
the sha256 recorded in FIXTURE.md, or when the prompts it memorised are no longer what
`pyapp.records.prompts` renders (a prompt revision forces a rebuild).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).parent / "fixtures" / "tiny-chat"
REQUIRED = (
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "onnx/model.onnx",
    "replies.json",
    "FIXTURE.md",
)
HASH_ROW = re.compile(r"^\| `([^`]+)` \| (\d+) \| `([0-9a-f]{64})` \|$")
IM_START, IM_END = "<|im_start|>", "<|im_end|>"


def _json(name: str) -> Any:
    return json.loads((FIXTURE / name).read_text(encoding="utf-8"))


def _files() -> dict[str, Path]:
    return {p.relative_to(FIXTURE).as_posix(): p for p in FIXTURE.rglob("*") if p.is_file()}


def _recorded_hashes() -> dict[str, tuple[int, str]]:
    rows = {}
    for line in (FIXTURE / "FIXTURE.md").read_text(encoding="utf-8").splitlines():
        match = HASH_ROW.match(line)
        if match:
            rows[match.group(1)] = (int(match.group(2)), match.group(3))
    return rows


def _expected() -> dict[str, tuple[str, str]]:
    """name -> (prompt text, reply) as the repo renders them today: the pairs the build
    script would memorise now (scripts/build_fixture.py, stdlib + pyapp only here)."""
    path = Path(__file__).resolve().parent.parent / "scripts" / "build_fixture.py"
    spec = importlib.util.spec_from_file_location("build_fixture", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {pair["name"]: (pair["prompt"], pair["reply"]) for pair in module.memorised_pairs()}


def test_fixture_folder_exists_and_is_small() -> None:
    files = _files()
    for name in REQUIRED:
        assert name in files, f"{name} missing from {FIXTURE}"
    total = sum(p.stat().st_size for p in files.values())
    assert total < 2 * 1024 * 1024, f"fixture is {total} bytes (limit 2 MiB)"


def test_every_file_matches_the_sha256_in_fixture_md() -> None:
    recorded = _recorded_hashes()
    files = {name: path for name, path in _files().items() if name != "FIXTURE.md"}
    assert sorted(recorded) == sorted(files), "FIXTURE.md's file table and the folder differ"
    for name, path in files.items():
        data = path.read_bytes()
        size, digest = recorded[name]
        assert len(data) == size, f"{name}: {len(data)} bytes, FIXTURE.md says {size}"
        assert hashlib.sha256(data).hexdigest() == digest, f"{name}: sha256 differs from FIXTURE.md"


def test_fixture_md_says_it_is_a_test_fixture() -> None:
    text = (FIXTURE / "FIXTURE.md").read_text(encoding="utf-8")
    assert "TEST FIXTURE" in text
    assert "not model evidence" in text
    assert "scripts/build_fixture.py" in text


def test_replies_json_prompts_are_what_pyapp_renders_today() -> None:
    replies = _json("replies.json")
    expected = _expected()
    assert [row["name"] for row in replies] == list(expected)
    for row in replies:
        prompt, reply = expected[row["name"]]
        assert row["messages"] == [{"role": "user", "content": prompt}], (
            f"{row['name']}: the prompt changed; rebuild with python3 scripts/build_fixture.py"
        )
        assert row["reply"] == reply, row["name"]
        assert row["finish"] == "eos"


def test_replies_json_token_fields_are_consistent() -> None:
    config = _json("config.json")
    for row in _json("replies.json"):
        ids = row["output_ids"]
        assert len(ids) == row["reply_tokens"] + 1
        assert ids[-1] == config["eos_token_id"]
        assert config["eos_token_id"] not in ids[:-1]
        assert all(0 <= i < config["vocab_size"] for i in ids)
        assert 0 < row["prompt_tokens"] <= 1024, row["name"]
    long_reply = next(row for row in _json("replies.json") if row["name"] == "long-reply")
    assert long_reply["reply_tokens"] >= 60


def test_config_is_a_tiny_llama() -> None:
    config = _json("config.json")
    assert config["model_type"] == "llama"
    assert config["hidden_size"] <= 64
    assert config["num_hidden_layers"] <= 2
    assert config["vocab_size"] <= 512
    hidden, inter, vocab = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    head_dim = config.get("head_dim") or hidden // config["num_attention_heads"]
    q_o = 2 * hidden * config["num_attention_heads"] * head_dim
    k_v = 2 * hidden * config["num_key_value_heads"] * head_dim
    per_layer = q_o + k_v + 3 * hidden * inter + 2 * hidden
    embeddings = vocab * hidden * (1 if config["tie_word_embeddings"] else 2)
    parameters = embeddings + config["num_hidden_layers"] * per_layer + hidden
    assert parameters <= 150_000, parameters


def test_tokenizer_has_the_chatml_template_and_eos() -> None:
    tokenizer_config = _json("tokenizer_config.json")
    template = tokenizer_config["chat_template"]
    assert IM_START in template and IM_END in template
    assert tokenizer_config["eos_token"] == IM_END
    added = {t["content"]: t["id"] for t in _json("tokenizer.json")["added_tokens"]}
    assert added[IM_END] == _json("config.json")["eos_token_id"]
    assert added[IM_END] == _json("generation_config.json")["eos_token_id"]
    assert IM_START in added


def test_the_page_knows_the_fixture_by_its_config() -> None:
    """site/models.json carries the fixture's config.json hash, so a copy of the fixture
    served from any host is still labelled a test fixture, never model evidence."""
    import hashlib
    import json

    site = Path(__file__).resolve().parent.parent / "site"
    catalogue = json.loads((site / "models.json").read_text(encoding="utf-8"))
    config = (FIXTURE / "config.json").read_bytes()
    assert catalogue["fixture_config_sha256"] == hashlib.sha256(config).hexdigest()
