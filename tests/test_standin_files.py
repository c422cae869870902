"""The committed catalogue stand-ins (tests/fixtures/standins; scripts/build_standins.py):
their files, their npm tokenizer files and their reference prompts are what they were built
with, and the catalogue recognises each as a test fixture. Browser tests:
tests/browser/test_standins.py."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from pyapp.records import prompts
from pyapp.tasks import taskset

ROOT = Path(__file__).resolve().parents[1]
STANDINS = ROOT / "tests" / "fixtures" / "standins"
CATALOGUE = json.loads((ROOT / "site" / "models.json").read_text(encoding="utf-8"))
ENTRIES = [entry for entry in CATALOGUE["models"] if "standin" in entry]
NAMES = sorted({entry["standin"] for entry in ENTRIES})


def load(name: str, file: str) -> Any:
    return json.loads((STANDINS / name / file).read_text(encoding="utf-8"))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_architecture_of_the_catalogue_has_a_standin() -> None:
    hub = [entry for entry in CATALOGUE["models"] if entry["source"] == "hub"]
    assert hub and all("standin" in entry for entry in hub)
    assert NAMES == ["llama", "qwen2", "qwen3"]
    for entry in ENTRIES:
        meta = load(entry["standin"], "standin.json")
        assert entry["key"] in meta["stands_for"]
        assert meta["architecture"] == entry["architecture"]["class"]
        assert entry["chat_template_options"] == meta["template_options"]


@pytest.mark.parametrize("name", NAMES)
def test_files_and_config(name: str) -> None:
    meta = load(name, "standin.json")
    folder = STANDINS / name
    for file, info in meta["files"].items():
        assert sha256(folder / file) == info["sha256"], f"{name}/{file} differs from standin.json"
    assert meta["evidence"] == "fixture" and "not model evidence" in meta["label"]
    assert CATALOGUE["standin_config_sha256"][name] == meta["config_sha256"]
    assert meta["config_sha256"] != CATALOGUE["fixture_config_sha256"]
    config = load(name, "config.json")
    assert config["model_type"] == name and config["architectures"] == [meta["architecture"]]
    assert config["tie_word_embeddings"] is True
    assert config["num_key_value_heads"] < config["num_attention_heads"]  # grouped-query
    assert config["vocab_size"] == meta["vocab_size"] >= 128_000
    assert config["transformers.js_config"]["use_external_data_format"] == {"model.onnx": 1}
    onnx = {p.name for p in (folder / "onnx").iterdir()}
    assert onnx == {
        "model.onnx",
        "model.onnx_data",
        "model_fp16.onnx",
        "model_q4.onnx",
        "model_q4f16.onnx",
        "model_quantized.onnx",
    }
    total = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert total < 11_000_000  # the three stay under ~30 MB together


@pytest.mark.parametrize("name", NAMES)
def test_tokenizer_files_are_the_pinned_npm_ones(name: str) -> None:
    meta = load(name, "standin.json")
    package = ROOT / "node_modules" / meta["tokenizer_package"]
    if not (package / "models" / "tokenizer.json").is_file():
        message = "node_modules missing: npm ci --ignore-scripts (scripts/lab test runs it)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    version = json.loads((package / "package.json").read_text())["version"]
    assert version == meta["tokenizer_package_version"]
    for file, info in meta["tokenizer_files"].items():
        assert sha256(package / "models" / file) == info["sha256"], f"{file} changed"


@pytest.mark.parametrize("name", NAMES)
def test_reference_prompts_are_the_current_prompts(name: str) -> None:
    """reference.json holds prompts rendered by pyapp: rebuild the stand-ins if they change."""
    task = taskset.tasks_by_id(taskset.generate())["add-1"]
    wanted = [
        "Say hello.",
        prompts.render_chain_step("mul", 12, 34).text,
        prompts.render_task_prompt(
            prompts.INTEGER_ANSWER, task.registers, task.question, task.encoding
        ).text,
    ]
    got = [p["messages"][0]["content"] for p in load(name, "reference.json")["prompts"]]
    assert got == wanted, "prompts changed: python3 scripts/build_standins.py"
