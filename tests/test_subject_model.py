"""The committed reference subjects (tests/fixtures/subject, issue 26; tests/fixtures/subject2,
issue 36): what each says it is (a subject not trained yet is skipped, with the reason).

Stdlib + pyapp: the files and their budget (25 MB), subject.json against the constants the
app labels it with (`pyapp.records.subject`), the recipe against scripts/subject_data.py,
and replies.json against the prompts rendered today. The native reproduction (onnxruntime
greedy ids of every reference prompt, fp32 and q8, equal to replies.json) runs in the build
venv that scripts/train_subject.py makes (build/fixture-venv): the test command's venv has no
onnxruntime, so without that venv it is skipped with the reason.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pyapp.records import SUBJECTS, Subject, subject

ROOT = Path(__file__).resolve().parent.parent
SUBJECT = ROOT / "tests" / "fixtures" / "subject"
BUILD_PYTHON = ROOT / "build" / "fixture-venv" / "bin" / "python"
sys.path.insert(0, str(ROOT / "scripts"))
import subject_data  # noqa: E402
import subject_export  # noqa: E402

FILES = (
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "onnx/model.onnx",
    "onnx/model_quantized.onnx",
    "replies.json",
    "subject.json",
    "SUBJECT.md",
)
BUDGET_BYTES = 25 * 1024 * 1024


def info(folder: Path = SUBJECT) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "subject.json").read_text(encoding="utf-8"))
    return data


@pytest.fixture(params=SUBJECTS, ids=lambda s: s.key)
def trained(request: pytest.FixtureRequest) -> Subject:
    """Each subject whose files are committed and whose digest is filled in."""
    found: Subject = request.param
    if not (ROOT / found.folder / "subject.json").is_file():
        pytest.skip(f"{found.model_id} is not trained yet ({found.folder} is absent)")
    if found.config_sha256 is None:
        pytest.fail(f"{found.folder} exists: fill in {found.model_id}'s config_sha256")
    return found


def test_the_files_are_there_and_within_budget(trained: Subject) -> None:
    folder = ROOT / trained.folder
    for name in FILES:
        assert (folder / name).is_file(), name
    total = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert total <= BUDGET_BYTES, total


def test_each_subject_is_what_its_subject_json_says(trained: Subject) -> None:
    folder = ROOT / trained.folder
    data = info(folder)
    config = folder / "config.json"
    assert hashlib.sha256(config.read_bytes()).hexdigest() == trained.config_sha256
    assert data["config_sha256"] == trained.config_sha256
    assert data["parameters"] == trained.parameters == trained.recipe["parameters"]
    assert f"{data['parameters'] / 1e6:.1f} M parameters" in trained.label
    recipe = subject_data.CURRICULA[data["recipe"].get("curriculum", "primitives")]
    assert data["recipe"] == recipe
    assert data["recipe_sha256"] == trained.recipe["recipe_sha256"]
    assert data["recipe_sha256"] == subject_data.recipe_digest(recipe)
    for key in ("steps", "batch", "data_seed", "model_seed", "data_version"):
        assert trained.recipe[key] == recipe[key], key
    catalogue = json.loads((ROOT / "site" / "models.json").read_text(encoding="utf-8"))
    (entry,) = [e for e in catalogue["models"] if e["key"] == trained.key]
    assert (entry["model_id"], entry["source"]) == (trained.model_id, subject.SUBJECT_SOURCE)
    assert trained.curriculum.removeprefix("trained on ") in entry["label"]
    assert trained.folder in entry["note"]
    rows = json.loads((folder / "replies.json").read_text(encoding="utf-8"))
    wanted = subject_export.reference_prompts(recipe)
    assert [r["messages"][0]["content"] for r in rows] == [w["prompt"] for w in wanted]
    assert [r["max_new_tokens"] for r in rows] == [w["max_new_tokens"] for w in wanted]


def test_the_two_subjects_configs_differ_only_by_the_curriculum() -> None:
    first = json.loads((SUBJECT / "config.json").read_text(encoding="utf-8"))
    second_path = ROOT / subject.RECURRENCES.folder / "config.json"
    if not second_path.is_file():
        pytest.skip("the second subject is not trained yet")
    second = json.loads(second_path.read_text(encoding="utf-8"))
    assert second.pop("subject_curriculum") == "primitives+recurrences"
    assert "subject_curriculum" not in first and first == second


def test_the_app_labels_it_with_what_subject_json_says() -> None:
    data = info()
    config = SUBJECT / "config.json"
    assert hashlib.sha256(config.read_bytes()).hexdigest() == subject.SUBJECT_CONFIG_SHA256
    assert data["config_sha256"] == subject.SUBJECT_CONFIG_SHA256
    assert data["parameters"] == subject.SUBJECT_PARAMETERS
    assert f"{data['parameters'] / 1e6:.1f} M parameters" in subject.SUBJECT_LABEL
    assert data["recipe"] == subject_data.RECIPE
    assert data["recipe_sha256"] == subject.SUBJECT_RECIPE["recipe_sha256"]
    assert data["recipe_sha256"] == subject_data.recipe_digest()
    for key in ("steps", "batch", "data_seed", "model_seed"):
        assert subject.SUBJECT_RECIPE[key] == subject_data.RECIPE[key], key
    assert subject.SUBJECT_RECIPE["data_version"] == subject_data.DATA_VERSION
    catalogue = json.loads((ROOT / "site" / "models.json").read_text(encoding="utf-8"))
    assert catalogue["subject_config_sha256"] == subject.SUBJECT_CONFIG_SHA256
    entry = catalogue["models"][0]  # the first entry: the suggested first run offline
    assert (entry["key"], entry["model_id"], entry["source"]) == (
        "subject",
        subject.SUBJECT_MODEL_ID,
        subject.SUBJECT_SOURCE,
    )


def test_replies_json_prompts_are_what_pyapp_renders_today() -> None:
    rows = json.loads((SUBJECT / "replies.json").read_text(encoding="utf-8"))
    wanted = subject_export.reference_prompts()
    assert [r["name"] for r in rows] == [w["name"] for w in wanted]
    assert [r["messages"][0]["content"] for r in rows] == [w["prompt"] for w in wanted]
    for row in rows:
        for dtype in subject_export.DTYPES:
            reply = row[dtype]
            assert 1 <= len(reply["output_ids"]) <= row["max_new_tokens"]
            assert (reply["finish"] == "eos") == (reply["output_ids"][-1] == 2)
            # near-ties are listed, by step, under the stated margin
            assert all(0 <= i < len(reply["output_ids"]) for i in reply["near_ties"])
            assert (reply["min_margin"] < subject_export.NEAR_TIE) == bool(reply["near_ties"])


def test_native_onnxruntime_reproduces_the_reference_replies(trained: Subject) -> None:
    if not BUILD_PYTHON.exists():
        pytest.skip(
            "build/fixture-venv is absent (onnxruntime is not a test dependency): make it "
            "once with `python3 scripts/build_fixture.py --out /tmp/x`"
        )
    result = subprocess.run(
        [
            str(BUILD_PYTHON),
            str(ROOT / "scripts" / "subject_export.py"),
            "check",
            str(ROOT / trained.folder),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"},
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "native reproduction: ok" in result.stdout
