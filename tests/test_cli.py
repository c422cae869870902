import json
import subprocess
import sys
from pathlib import Path

import pytest
from tracecheck import assert_valid_trace

ROOT = Path(__file__).resolve().parent.parent


def pyapp(*args, cwd=ROOT):
    return subprocess.run(
        [sys.executable, "-m", "pyapp", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def test_tasks_json_lists_the_24_default_tasks():
    done = pyapp("tasks", "--seed", "1729", "--json")
    assert done.returncode == 0, done.stderr
    tasks = json.loads(done.stdout)
    assert len(tasks) == 24
    assert tasks[0]["id"] == "add-1" and isinstance(tasks[0]["answer"], int)


def test_tasks_table_and_parameter_override():
    done = pyapp("tasks", "--param", "primitives_per_op=3", "--param", "probe_pairs=0")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 9 + 6
    assert lines[0].startswith("add-1")


def test_tasks_refuses_bad_parameters_without_a_traceback():
    done = pyapp("tasks", "--param", "nonsense=3")
    assert done.returncode == 2 and "unexpected keys ['nonsense']" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.fixture()
def files(tmp_path):
    def write(name, text):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return str(path)

    return write


def test_exec_success(files):
    program = files("p.json", '{"op":"mul","args":[{"ref":"a"},{"ref":"b"}]}\n')
    registers = files("r.json", '{"a": 6, "b": -7}')
    done = pyapp("exec", program, "--registers", registers)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "ok": True,
        "value": -42,
        "steps": [{"path": "$", "op": "mul", "operands": [6, -7], "result": -42}],
    }


@pytest.mark.parametrize(
    ("program", "registers", "code"),
    [
        ("Sure! The answer is 42.", '{"a": 1}', "not_json"),
        ('{"op":"div","args":[{"ref":"a"},{"ref":"a"}]}', '{"a": 1}', "unknown_op"),
        ('{"op":"add","args":[{"ref":"a"},{"ref":"zz"}]}', '{"a": 1}', "unknown_register"),
        ('{"op":"mul","args":[{"ref":"a"},{"ref":"a"}]}', '{"a": 9007199254740991}', None),
        ("[" * 16384, '{"a": 1}', "limit_exceeded"),
        ('{"op":"add","args":[{"ref":"a"},{"ref":"a"}]}', "[1, 2]", "unreadable_registers_file"),
        ('{"op":"add","args":[{"ref":"a"},{"ref":"a"}]}', "{not json", "unreadable_registers_file"),
    ],
)
def test_exec_failures_are_typed_json_with_exit_1(files, program, registers, code):
    done = pyapp("exec", files("p.json", program), "--registers", files("r.json", registers))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["ok"] is False
    assert outcome["error"]["code"] == (code or "unsafe_integer")


def test_exec_missing_file_is_a_typed_error(tmp_path):
    done = pyapp("exec", str(tmp_path / "nope.json"), "--registers", str(tmp_path / "r.json"))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert json.loads(done.stdout)["error"]["code"] == "unreadable_program_file"


def test_run_then_reproduce(tmp_path):
    out = tmp_path / "runs" / "trace.json"
    done = pyapp("run", "--seed", "1729", "--condition", "supplied-program", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "24 correct" in done.stdout and "not model evidence" in done.stdout
    document = json.loads(out.read_text(encoding="utf-8"))
    assert_valid_trace(document)
    assert [t["correct"] for t in document["trials"]] == [True] * 24
    assert not list(out.parent.glob(".*.tmp")), "atomic write left a temporary file"

    done = pyapp("reproduce", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "24 trials re-derived exactly" in done.stdout

    document["trials"][5]["result"] += 1
    out.write_text(json.dumps(document), encoding="utf-8")
    done = pyapp("reproduce", str(out))
    assert done.returncode == 1
    assert "MISMATCH $.trials[5].result" in done.stdout


def test_run_offers_only_the_condition_it_can_run(tmp_path):
    """Issue 23 §8: `run` offered model conditions that always exited 2; it offers the one it
    runs (its help names `sweep` for the model conditions)."""
    helped = pyapp("run", "--help")
    assert "{supplied-program}" in helped.stdout and "sweep" in helped.stdout
    assert "model-only" not in helped.stdout.replace("\n", " ")
    done = pyapp("run", "--condition", "model-only", "--out", str(tmp_path / "t.json"))
    assert done.returncode == 2 and "invalid choice: 'model-only'" in done.stderr
    assert not (tmp_path / "t.json").exists()


def test_reproduce_unreadable_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    done = pyapp("reproduce", str(bad))
    assert done.returncode == 1 and str(bad) in done.stderr and "not JSON" in done.stderr


def test_schema_check_passes_on_the_committed_schema():
    done = pyapp("schema", "--check")
    assert done.returncode == 0, done.stdout
