"""The documents under docs/ against the code: the specification's numbers cannot drift.

`docs/specification.md` keeps its limits, budgets, defaults, prompt hashes and failure codes
in Markdown tables whose first column is a stable key in backticks and whose second column
is a Python literal. These tests parse those tables and compare every value with the code's
own constants, in both directions (nothing missing, nothing extra). They also check that the
predictor's worked examples still come from the generator, and that README.md links the
three documents. The failure-code table is checked against every code the Python sources
and the page's JavaScript (the model worker, its client, the panels) actually produce, and
the JavaScript constants the specification cites are read from the files themselves.
"""

from __future__ import annotations

import ast
import re
from dataclasses import fields
from pathlib import Path

import pytest

import interpreter
from pyapp.cli import main as cli_main
from pyapp.conditions import FAILURE_KINDS, is_interruption, kind_of, route_of
from pyapp.conditions.replies import _MAX_DIGITS
from pyapp.experiment import PAUSE_AFTER
from pyapp.host import serve
from pyapp.predict import metrics
from pyapp.protocol import messages, model_messages
from pyapp.records import (
    DEFAULT_ROUTE_LIMITS,
    DESIGN_CHAIN,
    EVIDENCE_LABELS,
    EXTENDED_CHAIN,
    TRACE_2_FIELDS,
    budget_of,
    documents,
    model,
    prompts,
)
from pyapp.tasks import taskset as tasks

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SPEC = DOCS / "specification.md"
PREDICTOR = DOCS / "predictor.md"
REVIEW = DOCS / "source-review.md"
SOURCES = [*sorted((ROOT / "pyapp").rglob("*.py")), *sorted((ROOT / "interpreter").rglob("*.py"))]
SOURCES.append(ROOT / "site" / "python_worker" / "lab_worker.py")
JS_SOURCES = sorted((ROOT / "site").rglob("*.js"))

ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|(.*)\|\s*$")


def table_rows(text: str, header: str) -> dict[str, list[str]]:
    """Rows of the first Markdown table whose header line starts with `header`:
    first-column key (in backticks) -> the other cells, stripped."""
    lines = text.splitlines()
    start = next(
        (i for i, line in enumerate(lines) if line.replace(" ", "").startswith(header)), None
    )
    assert start is not None, f"no table with header {header!r}"
    rows: dict[str, list[str]] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        match = ROW.match(line)
        assert match, f"row without a backticked key: {line!r}"
        key = match.group(1)
        assert key not in rows, f"duplicate key {key!r}"
        rows[key] = [cell.strip() for cell in match.group(2).split("|")]
    assert rows, f"table {header!r} is empty"
    return rows


def literal(cell: str) -> object:
    """The Python literal in a cell written as `value`."""
    match = re.fullmatch(r"`([^`]*)`", cell)
    assert match, f"value cell is not one backticked literal: {cell!r}"
    return ast.literal_eval(match.group(1))


def keyed_values(text: str) -> dict[str, object]:
    """Every `| key | value | meaning |` table in the text, merged: key -> value."""
    header = "|key|value|meaning|"
    values: dict[str, object] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.replace(" ", "").startswith(header):
            for key, cells in table_rows("\n".join(lines[i:]), header).items():
                assert key not in values, f"key {key!r} appears in two tables"
                values[key] = literal(cells[0])
    assert len(values) > 20, "the spec's key/value tables went missing"
    return values


def expected_constants() -> dict[str, object]:
    """The same keys, from the code."""
    expected: dict[str, object] = {
        "client.grace_ms": model_messages.GRACE_MS,
        "client.load_timeout_ms": model_messages.LOAD_TIMEOUT_MS,
        "client.stall_floor_ms": model_messages.STALL_FLOOR_MS,
        "client.stall_step_factor": model_messages.STALL_STEP_FACTOR,
        "client.warmup_tokens": model_messages.WARMUP_TOKENS,
        "client.tokens_every_ms": model_messages.TOKENS_EVERY_MS,
        "page.request_timeout_ms": messages.REQUEST_TIMEOUT_MS,
        "generator_version": tasks.GENERATOR_VERSION,
        "default_seed": tasks.DEFAULT_SEED,
        "default_task_count": len(tasks.generate()),
        "limits.safe_integer_max": interpreter.SAFE_INTEGER_MAX,
        "limits.tool_calls": budget_of(interpreter.DEFAULT_LIMITS).tool_calls,
        "limits.retries": budget_of(interpreter.DEFAULT_LIMITS).retries,
        "parse_integer.max_digits": _MAX_DIGITS,
        "sweep.pause_after": PAUSE_AFTER,
    }
    expected.update(
        {
            "task_params.seed_limit": tasks.SEED_LIMIT,
            "task_params.max_count": tasks.MAX_COUNT,
            "task_params.max_recurrence_steps": tasks.MAX_RECURRENCE_STEPS,
            "task_params.max_tasks": tasks.MAX_TASKS,
            "input.max_document_bytes": documents.MAX_DOCUMENT_BYTES,
            "input.max_nesting": documents.MAX_NESTING,
            "input.max_integer_digits": documents.MAX_INTEGER_DIGITS,
            "input.max_trials": documents.MAX_TRIALS,
            "input.max_line_bytes": documents.MAX_LINE_BYTES,
            "compare.max_runs": cli_main.MAX_COMPARED_RUNS,
            "serve.idle_timeout_s": serve.IDLE_TIMEOUT_S,
            "serve.handler_timeout_s": serve.HANDLER_TIMEOUT_S,
            "serve.head_timeout_s": serve.HEAD_TIMEOUT_S,
            "serve.max_head_bytes": serve.MAX_HEAD_BYTES,
            "serve.max_workers": serve.MAX_WORKERS,
            "serve.max_waiting": serve.MAX_WAITING,
        }
    )
    for kind, label in EVIDENCE_LABELS.items():
        expected[f"evidence_label.{kind}"] = label
    params = tasks.TaskParams()
    for f in fields(params):
        if f.name != "seed":
            expected[f"task_params.{f.name}"] = getattr(params, f.name)
    for f in fields(interpreter.DEFAULT_LIMITS):
        expected[f"limits.{f.name}"] = getattr(interpreter.DEFAULT_LIMITS, f.name)
    for prefix, caps in (
        ("whole_task", model.WHOLE_TASK_CAPS),
        ("chain_call", model.CHAIN_CALL_CAPS),
    ):
        for f in fields(caps):
            expected[f"{prefix}.{f.name}"] = getattr(caps, f.name)
    for f in fields(DEFAULT_ROUTE_LIMITS):
        if f.name != "call":
            expected[f"route.{f.name}"] = getattr(DEFAULT_ROUTE_LIMITS, f.name)
            expected[f"extended_route.{f.name}"] = getattr(EXTENDED_CHAIN.limits, f.name)
    return expected


def spec_text() -> str:
    return SPEC.read_text(encoding="utf-8")


def test_every_number_in_the_spec_tables_is_the_codes() -> None:
    documented = keyed_values(spec_text())
    expected = expected_constants()
    assert sorted(documented) == sorted(expected), (
        f"missing from the spec: {sorted(set(expected) - set(documented))}; "
        f"not in the code: {sorted(set(documented) - set(expected))}"
    )
    wrong = {k: (documented[k], expected[k]) for k in expected if documented[k] != expected[k]}
    assert not wrong, f"spec value != code value: {wrong}"


def test_the_route_uses_the_chain_call_caps() -> None:
    assert DEFAULT_ROUTE_LIMITS.call == model.CHAIN_CALL_CAPS
    assert DESIGN_CHAIN.limits == DEFAULT_ROUTE_LIMITS
    assert EXTENDED_CHAIN.limits.call == model.CHAIN_CALL_CAPS  # per call unchanged


def test_the_specs_route_tables_are_the_routes() -> None:
    """docs/specification.md draws each new family's route as a table: it is `route_of`."""
    text = spec_text()
    by_id = tasks.tasks_by_id(tasks.generate())
    for task_id, start in (
        ("determinant-1", "* `triangle_determinant` (extended"),
        ("derivative-1", "* `cubic_derivative` (extended"),
    ):
        lines = [line.strip() for line in text[text.index(start) :].splitlines()]
        head = lines.index("| call | op | left | right | value |")
        cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines[head + 2 :]]
        drawn = [(row[1], _source(row[2]), _source(row[3])) for row in cells[:7]]
        assert [row[0] for row in cells[:7]] == [str(i) for i in range(7)]
        planned = [(c.op, c.left, c.right) for c in route_of(by_id[task_id])]
        assert drawn == planned, task_id


def _source(cell: str) -> str:
    """A route table's operand cell as a planned call's source (`x2` → `register:x2`)."""
    cell = cell.strip("` ")
    return f"call:{cell.split()[1]}" if cell.startswith("call ") else f"register:{cell}"


def test_prompt_hashes_are_the_template_files() -> None:
    rows = table_rows(spec_text(), "|template|condition|SHA-256")
    documented = {key: re.sub(r"`", "", cells[-1]) for key, cells in rows.items()}
    assert documented == prompts.template_hashes()


FAILURE_CALL = re.compile(
    r"\b(?:failure|failed|ProgramError|BridgeError|PhaseError|RequestError"
    r"|ModelFailure|_error|InputError|__init__)\(\s*\"([a-z_]+)\""
)
CODE_FIELD = re.compile(r"\"code\":\s*\"([a-z_]+)\"")
FINISH_REASON_CODES = {"timeout", "cancelled", "error"}
"""Codes a failure takes from `completion.finish_reason`
(pyapp.conditions.replies.generation_failure)."""


JS_CODE_PATTERNS = (
    # an error or failure object: {code: "busy", message}
    re.compile(r"\bcode:\s*\"([a-z_]+)\""),
    # the code as a call's first argument: new LoadError("bad_request", ...), failAll(...)
    re.compile(r"\b(?:LoadError|failAll)\(\s*\"([a-z_]+)\""),
    # replyError(type, id, "busy", ...), client.refuse(spec, backend, "backend_unavailable", ...)
    re.compile(r"\b(?:replyError|refuse)\(\s*[^,()]+,\s*[^,()]+,\s*\"([a-z_]+)\""),
    # noGeneration(inputTokens, input, "input_budget", ...)
    re.compile(r"\bnoGeneration\(\s*[^,()]+,\s*[^,()]+,\s*\"([a-z_]+)\""),
)
JS_CODE_NAME = re.compile(r"\b(?:MODEL_ERROR|COMPLETION_FAILURE)\.([A-Z_]+)\b")
"""A generated code constant (site/common/model_protocol.js): `MODEL_ERROR.BUSY` is `busy`."""
JS_CODE_CHOICE = re.compile(r"\bcode\s*=\s*([^;]*);")
"""`const code = cond ? "download_failed" : "load_failed";`: the chosen literals count."""


def js_codes() -> set[str]:
    """Failure codes the page's JavaScript produces (model worker, client, panels)."""
    codes: set[str] = set()
    for path in JS_SOURCES:
        text = path.read_text(encoding="utf-8")
        for pattern in JS_CODE_PATTERNS:
            codes |= set(pattern.findall(text))
        if path.name != "model_protocol.js":  # the generated list itself produces nothing
            codes |= {name.lower() for name in JS_CODE_NAME.findall(text)}
        for choice in JS_CODE_CHOICE.findall(text):
            codes |= set(re.findall(r"[?:]\s*\"([a-z_]+)\"", choice))
    return codes


def produced_codes() -> set[str]:
    codes = set(interpreter.ERROR_CODES) | FINISH_REASON_CODES
    for path in SOURCES:
        text = path.read_text(encoding="utf-8")
        codes |= set(FAILURE_CALL.findall(text)) | set(CODE_FIELD.findall(text))
    codes |= js_codes()
    codes.discard("code")
    return codes


def test_failure_code_table_is_complete_and_real() -> None:
    documented = set(table_rows(spec_text(), "|code|kind|raisedby|meaning|"))
    produced = produced_codes()
    assert set(interpreter.ERROR_CODES) <= documented
    assert not produced - documented, (
        f"codes the code produces but the spec omits: {produced - documented}"
    )
    assert not documented - produced, (
        f"codes the spec lists but no code produces: {documented - produced}"
    )


def test_every_produced_code_is_classified_once_as_the_spec_says() -> None:
    """The classification table (model outcome vs infrastructure, ...) covers exactly the
    codes the code base can produce, and the spec's kind column is that table."""
    produced = produced_codes()
    assert set(FAILURE_KINDS) == produced, (
        f"unclassified: {produced - set(FAILURE_KINDS)}; "
        f"classified but never produced: {set(FAILURE_KINDS) - produced}"
    )
    rows = table_rows(spec_text(), "|code|kind|raisedby|meaning|")
    documented = {code: cells[0] for code, cells in rows.items()}
    assert documented == FAILURE_KINDS


def test_the_classification_names_the_issues_examples() -> None:
    for code in ("not_loaded", "busy", "worker_error", "bad_reply", "load_failed", "bridge_error"):
        assert kind_of(code) == "infrastructure" and is_interruption(code)
    for code in ("invalid_integer", "not_json", "timeout", "route_timeout", "input_budget"):
        assert kind_of(code) == "outcome" and not is_interruption(code)
    assert is_interruption("cancelled") and not is_interruption("unsupported")


def test_the_failure_scan_finds_the_condition_codes() -> None:
    """Guard against the scan itself going blind (e.g. a refactor of `failure(...)`)."""
    expected = {
        "invalid_integer",
        "integer_out_of_range",
        "input_budget",
        "route_input_budget",
        "route_output_budget",
        "route_call_budget",
        "route_timeout",
        "unsupported",
        "not_frozen",
        "already_observed",
        "bad_request",
        "unknown_type",
        "bad_params",
        "runtime_load_failed",
        "unreadable_program_file",
        "unreadable_registers_file",
    }
    assert expected <= produced_codes()


def test_the_javascript_scan_finds_the_model_codes() -> None:
    """The same guard for the page's JavaScript: the model worker's and its client's codes."""
    expected = {
        "not_loaded",
        "busy",
        "bad_request",
        "unknown_type",
        "input_budget",
        "timeout",
        "cancelled",
        "terminated",
        "worker_error",
        "backend_unavailable",
        "dtype_unsupported",
        "download_failed",
        "load_failed",
        "load_timeout",
    }
    assert expected <= js_codes(), f"the JS scan missed {expected - js_codes()}"
    assert "bad_reply" in produced_codes()  # pyapp.browser.model's failed("bad_reply", ...)


def test_schemas_named_in_the_spec_exist() -> None:
    for name in ("trace.schema.json", "predictions.schema.json"):
        assert f"../exports/{name}" in spec_text()
        assert (ROOT / "exports" / name).is_file()


def test_the_fields_that_tell_trace_2_from_trace_1_are_the_specs() -> None:
    """`read_trace` refuses a `schema_version` its body contradicts by these fields."""
    text = " ".join(spec_text().split())
    found = re.search(r"\(`trace/1` on a document that records (.*?);", text)
    assert found is not None
    assert re.findall(r"`([a-z_.]+)`", found.group(1)) == list(TRACE_2_FIELDS)


# ---- predictor.md: the worked examples come from the generator -------------------------


def test_predictor_worked_examples_are_the_generators() -> None:
    text = " ".join(PREDICTOR.read_text(encoding="utf-8").split())
    by_id = tasks.tasks_by_id(tasks.generate())
    rec, det = by_id["recurrence-1"], by_id["determinant-1"]
    r = rec.registers
    assert f"a = {r['a']}, b = {r['b']}, x0 = {r['x0']}" in text
    assert str(rec.answer) in text
    x1 = r["a"] * r["x0"] + r["b"]
    assert str(r["a"] * r["x0"]) in text and str(x1) in text
    # the scripted cancellation: call 0 answered 10 too high, call 1 10 too low
    assert str(r["a"] * r["x0"] + 10) in text and str(x1 + 10) in text
    d = det.registers
    for name in ("x1", "y1", "x2", "y2", "x3", "y3"):
        assert f"{name} = {d[name]}" in text
    left = (d["x2"] - d["x1"]) * (d["y3"] - d["y1"])
    right = (d["x3"] - d["x1"]) * (d["y2"] - d["y1"])
    assert str(left) in text and str(right) in text and str(det.answer) in text


def test_predictor_wilson_numbers_are_the_metrics() -> None:
    text = PREDICTOR.read_text(encoding="utf-8")
    for successes in (6, 5, 3, 0):
        low, high = metrics.wilson_interval(successes, 6)
        assert f"{successes}/6 | [{low:.2f}, {high:.2f}]" in text


# ---- links ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["specification.md", "predictor.md", "source-review.md"])
def test_readme_links_each_document(name: str) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"](docs/{name})" in readme
    assert (DOCS / name).is_file()


def test_relative_links_in_the_documents_resolve() -> None:
    """Every relative link (file part) in docs/*.md names a file or folder that exists,
    and every `::test_name` beside a test link names a function in that file."""
    for doc in (SPEC, PREDICTOR, REVIEW):
        text = doc.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" in target:
                continue
            assert (doc.parent / target).exists(), f"{doc.name}: broken link {target}"
        for path, name in re.findall(r"\]\((\.\./tests/[^)#\s]+\.py)\)`?::(\w+)", text):
            source = (doc.parent / path).read_text(encoding="utf-8")
            assert re.search(rf"^(?:async )?def {name}\(", source, re.M), (
                f"{doc.name}: {path} has no test {name}"
            )


def test_the_codes_of_no_generation_are_the_specs() -> None:
    """docs/specification.md §10 "Consistency" lists the codes a null finish allows."""
    text = " ".join(spec_text().split())
    found = re.search(r"`pyapp\.records\.model\.NO_GENERATION_CODES`: (.*?)\)", text)
    assert found is not None
    assert re.findall(r"`([a-z_]+)`", found.group(1)) == sorted(model.NO_GENERATION_CODES)
    assert all(model.finish_for(code) is None for code in model.NO_GENERATION_CODES)
    assert [model.finish_for(c) for c in ("timeout", "cancelled", "worker_error")] == [
        "timeout",
        "cancelled",
        "error",
    ]
