"""The model channel written once (pyapp/protocol/model_messages.py): generated files match the
records, the JavaScript validator (site/common/model_check.js, run under Node) agrees with
`jsonschema` on the same messages, and the workers use the generated names."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from nodescript import run_node_script
from test_browser_model import COMPLETION, PROVENANCE
from test_browser_model import LOAD as LOAD_RECORD

from pyapp.cli import model_channel_files
from pyapp.errors import RecordError
from pyapp.protocol import model_exports as exports
from pyapp.protocol import model_messages as mm
from pyapp.records import Caps, field_docs

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "site"
CAPS = {"max_input_tokens": 64, "max_new_tokens": 8, "max_output_bytes": 100, "timeout_ms": 1000}
SPEC: dict[str, Any] = {
    "model_id": "fixture/tiny-chat",
    "revision": "bundled",
    "dtype": "fp32",
    "source": "bundled-fixture",
    "host": None,
    "local_path": "/models/",
    "chat_template_options": {},
    "fixture_config_sha256": ["ac08f6c4"],
    "supported_model_types": ["llama", "qwen3"],
}
LOAD = {
    "type": "load",
    "id": 1,
    "model": SPEC,
    "backend": "wasm",
    "wasm_base": "/t/",
    "threads": None,
}
LOAD_RESULT: dict[str, Any] = {
    "backend_actual": "wasm",
    "dtype": "fp32",
    "transformers_js_version": "4.3.2",
    "onnxruntime_version": "1.31.0-dev",
    "threads": 2,
    "cross_origin_isolated": True,
    "user_agent": "HeadlessChrome",
    "adapter": None,
    "revision_served": None,
    "chat_template_options": {},
    "revision_served_note": None,
    "wasm": {"threads": 2, "simd": True, "cross_origin_isolated": True, "threads_allowed": True},
    "is_test_fixture": True,
    "config_sha256": "ac08f6c4",
    "download_bytes": 830_000,
    "runtime_bytes": 0,
    "download_ms": 120.5,
    "setup_ms": 1256.75,
    "warmup_ms": 30.0,
    "files": [{"file": "http://127.0.0.1/models/fixture/tiny-chat/onnx/model.onnx", "bytes": 1}],
}


def changed(value: dict[str, Any], path: str, new: Any) -> dict[str, Any]:
    """A deep copy of `value` with the dotted `path` set to `new` (or removed: `...`)."""
    copied = copy.deepcopy(value)
    *parents, last = path.split(".")
    target = copied
    for name in parents:
        target = target[name]
    if new is ...:
        del target[last]
    else:
        target[last] = new
    return copied


def ok(kind: str, result: Any, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "id": 3, "ok": True, "result": result, **extra}


def failed(kind: str, code: str) -> dict[str, Any]:
    return {"type": kind, "id": 3, "ok": False, "error": {"code": code, "message": "why"}}


GENERATE = {"type": "generate", "id": 2, "prompt": "Say hello.", "caps": CAPS}
PROGRESS = {"type": "progress", "id": 1, "file": "a", "status": "done", "loaded": 5, "total": 5}
CASES: list[tuple[str, Any]] = [
    ("Load", LOAD),
    ("Load", {k: v for k, v in LOAD.items() if k != "threads"}),
    ("Load", changed(LOAD, "backend", "cuda")),
    ("Load", changed(LOAD, "threads", 2.5)),
    ("Load", changed(LOAD, "model.model_id", ...)),
    ("Load", changed(LOAD, "model.fixture_config_sha256", "ac08f6c4")),
    ("Load", changed(LOAD, "model.fixture_config_sha256", [1])),
    ("Load", changed(LOAD, "model.chat_template_options", {"enable_thinking": False})),
    ("Load", changed(LOAD, "model.chat_template_options", {"x": None})),
    ("Generate", GENERATE),
    ("Generate", changed(GENERATE, "caps.timeout_ms", "soon")),
    ("Generate", changed(GENERATE, "caps", ...)),
    ("Generate", changed(GENERATE, "colour", "red")),
    ("Generate", changed(GENERATE, "id", "two")),
    ("Generate", changed(GENERATE, "type", "load")),
    ("Generate", {**GENERATE, "debug": {"stall_ms": 2_000_000_000}}),
    ("Generate", {**GENERATE, "debug": {"step_delay_ms": "slow"}}),
    (
        "Generate",
        {"type": "generate", "id": 2, "caps": CAPS, "messages": [{"role": "user", "content": "x"}]},
    ),
    ("Generate", {"type": "generate", "id": 2, "caps": CAPS, "messages": [{"role": "user"}]}),
    ("Interrupt", {"type": "interrupt", "id": 4, "target": 2, "reason": "timeout"}),
    ("Interrupt", {"type": "interrupt", "id": 4, "target": 2, "reason": "whim"}),
    ("Provenance", {"type": "provenance", "id": 5}),
    ("LoadReply", ok("load", LOAD_RESULT)),
    ("LoadReply", ok("load", changed(LOAD_RESULT, "files", [{"file": "x"}]))),
    ("LoadReply", failed("load", "backend_unavailable")),
    ("GenerateReply", ok("generate", COMPLETION, elapsed_ms=12.5)),
    ("GenerateReply", ok("generate", COMPLETION, timing={"worker_ms": None, "client_ms": 3.0})),
    ("GenerateReply", ok("generate", {"text": 42, "injected": "bad_reply@1"})),
    ("GenerateReply", ok("generate", None)),
    ("GenerateReply", {"type": "generate", "id": 3, "ok": True}),
    ("GenerateReply", failed("generate", "terminated")),
    ("GenerateReply", failed("generate", "teleported")),
    ("GenerateReply", {"type": "generate", "id": None, "ok": False}),
    ("InterruptReply", ok("interrupt", {"interrupted": True})),
    ("InterruptReply", ok("interrupt", {"interrupted": "yes"})),
    ("ProvenanceReply", ok("provenance", PROVENANCE)),
    ("ProvenanceReply", ok("provenance", {**PROVENANCE, "flops": 0})),
    (
        "Progress",
        {"type": "progress", "id": 1, "file": "a", "status": "done", "loaded": 5, "total": 5},
    ),
    (
        "Progress",
        {"type": "progress", "id": 1, "file": "a", "status": "done", "loaded": "5", "total": 5},
    ),
    ("FirstToken", {"type": "first_token", "id": 2}),
    ("FirstToken", {"type": "first_token"}),
    ("StateChanged", {"type": "state", "state": "loading", "reason": "consent"}),
    ("StateChanged", {"type": "state", "state": "unloaded", "why": "terminated"}),
    (
        "StateChanged",
        {"type": "state", "state": "loaded", "record": LOAD_RECORD, "result": LOAD_RESULT},
    ),
    ("StateChanged", {"type": "state", "state": "asleep"}),
    ("StateChanged", {"kind": "state", "state": "loading"}),
    ("LoadDone", {"type": "load_done", "record": LOAD_RECORD, "result": LOAD_RESULT}),
    ("LoadDone", {"type": "load_done", "record": {**LOAD_RECORD, "ok": False}, "result": None}),
    ("LoadDone", {"type": "load_done", "record": LOAD_RECORD}),
    (
        "LoadDone",
        {"type": "load_done", "record": {**LOAD_RECORD, "reason": "whim"}, "result": None},
    ),
    ("PanelEvent", PROGRESS),
    ("PanelEvent", {"type": "first_token", "id": 2}),
]
REQUESTS: list[tuple[Any, str | None]] = [
    (GENERATE, None),
    (LOAD, None),
    ({"type": "teleport", "id": 1}, "unknown_type"),
    ("not an object", "bad_request"),
    ({"id": 1}, "bad_request"),
    ({**GENERATE, "messages": [{"role": "user", "content": "x"}]}, "bad_request"),
    ({"type": "generate", "id": 2, "caps": CAPS}, "bad_request"),
    (changed(GENERATE, "caps.max_new_tokens", None), "bad_request"),
]


def run_node(cases: dict[str, Any]) -> Any:
    return run_node_script("model_check_node.mjs", cases)


def schema_for(name: str) -> jsonschema.Draft202012Validator:
    schema = exports.messages_schema()
    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": schema["$defs"]})


def test_generated_files_match_the_records() -> None:
    for path, text in model_channel_files().items():
        assert path.read_text(encoding="utf-8") == text, f"{path.name}: run python -m pyapp schema"
    docs = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    for record in (*mm.REQUESTS, *mm.EVENTS):
        assert f"| `{record.TYPE}` |" in docs
    for code in (*mm.ERROR_CODES, *mm.COMPLETION_CODES):
        assert f"| `{code}` |" in docs
    jsonschema.Draft202012Validator.check_schema(exports.messages_schema())


def test_every_field_says_what_it_is() -> None:
    records = {
        *mm.REQUESTS,
        *mm.EVENTS,
        *mm.PANEL_EVENTS,
        mm.ModelSpec,
        mm.ChatMessage,
        mm.GenerateDebug,
        mm.LoadResult,
        mm.FileFetched,
        mm.InterruptResult,
        mm.ReplyTiming,
        mm.ModelReply,
    }
    for record in records:
        assert record.__doc__, record
        undocumented = [
            f.name
            for f in dataclasses.fields(record)  # type: ignore[arg-type]
            if f.name not in field_docs(record)
        ]
        assert undocumented == [], f"{record.__name__}: {undocumented}"


def test_python_builds_requests_that_fit_the_schema() -> None:
    caps = Caps(**CAPS)
    generate = mm.request(mm.Generate(caps=caps, prompt="Say hello."), 2)
    assert generate == GENERATE  # fields left at null are left out
    provenance = mm.request(mm.Provenance(), 5)
    for name, message in (("Generate", generate), ("Provenance", provenance)):
        schema_for(name).validate(message)
        schema_for("ModelRequest").validate(message)
        assert mm.request(mm.parse_message(message), message["id"]) == message


@pytest.mark.parametrize(
    ("message", "fragment"),
    [
        ({"type": "teleport"}, "unknown message type"),
        ("hello", "string 'type'"),
        ({**GENERATE, "messages": [{"role": "user", "content": "x"}]}, "exactly one"),
        ({"type": "generate", "id": 1, "prompt": "x"}, "missing keys ['caps']"),
        ({"type": "interrupt", "id": 1, "target": 2, "reason": "whim"}, "reason"),
        ({"type": "progress", "id": 1, "file": "a"}, "missing keys"),
    ],
)
def test_python_refuses_a_message_that_does_not_fit(message: Any, fragment: str) -> None:
    with pytest.raises(RecordError, match=re.escape(fragment)):
        mm.parse_message(message)


def test_the_javascript_validator_agrees_with_jsonschema() -> None:
    """Every case: site/common/model_check.js finds a problem exactly when `jsonschema` does."""
    answer = run_node({"schema": CASES, "requests": [message for message, _ in REQUESTS]})
    verdicts = []
    for (name, value), found in zip(CASES, answer["schema"], strict=True):
        fits = schema_for(name).is_valid(value)
        verdicts.append((name, fits, found))
        assert fits == (found is None), (name, value, found)
    # The corpus exercises both verdicts for every kind of message.
    for name in {n for n, _ in CASES}:
        outcomes = {fits for n, fits, _ in verdicts if n == name}
        assert outcomes == {True, False} or name in {"Provenance"}, name
    for (message, code), refused in zip(REQUESTS, answer["requests"], strict=True):
        assert (refused or {}).get("code") == code, (message, refused)


def test_the_javascript_messages_name_the_path_of_the_first_problem() -> None:
    answer = run_node({"schema": [], "requests": [changed(GENERATE, "caps.timeout_ms", "soon")]})
    assert answer["requests"][0] == {
        "code": "bad_request",
        "message": 'generate: $.caps.timeout_ms: expected integer, got "soon"',
    }


NAME_USE = re.compile(r"\b(MODEL_TYPE|MODEL_ERROR|COMPLETION_FAILURE)\.([A-Z_]+)\b")
TYPE_LITERAL = re.compile(
    r"(?:\b(?:type|kind)\s*(?:===|!==|:)\s*|\bsend\(\s*)"
    r"\"(load|generate|interrupt|provenance|progress|first_token|state|load_done)\""
)


def worker_sources() -> dict[str, str]:
    paths = (
        "model_worker/model_worker.js",
        "model_worker/generation.js",
        "model_worker/load_provenance.js",
        "model_client.js",
        "common/model_check.js",
        "models_panel.js",
    )
    return {Path(p).name: (SITE / p).read_text(encoding="utf-8") for p in paths}


def test_the_workers_use_the_generated_names_only() -> None:
    constants = exports.constants()
    for name, text in worker_sources().items():
        code = re.sub(r"//[^\n]*", "", text)
        for group, key in NAME_USE.findall(code):
            assert key in constants[group], f"{name}: {group}.{key} is not generated"
        assert TYPE_LITERAL.findall(code) == [], f"{name}: a message type written by hand"
        assert not re.search(r"\bevent\.kind\b|\bkind:", code), f"{name}: a second tag key"


def test_the_client_constants_are_pythons() -> None:
    """GRACE_MS and LOAD_TIMEOUT_MS are generated into model_protocol.js, not written in JS."""
    protocol = (SITE / "common" / "model_protocol.js").read_text(encoding="utf-8")
    for name in ("GRACE_MS", "LOAD_TIMEOUT_MS"):
        assert f"export const {name} = {getattr(mm, name)};" in protocol
        for source, text in worker_sources().items():
            assert not re.search(rf"\bconst\s+{name}\s*=", text), f"{source} defines {name}"
    client = worker_sources()["model_client.js"]
    assert re.search(r"import \{[^}]*\bGRACE_MS\b[^}]*\bLOAD_TIMEOUT_MS\b[^}]*\} from", client)


def test_each_request_is_answered_where_the_records_say() -> None:
    worker = worker_sources()["model_worker.js"]
    handled = set(re.findall(r"\[MODEL_TYPE\.([A-Z_]+)\]\s*\(", worker))
    by_worker = {r.TYPE.upper() for r in mm.REQUESTS if r.ANSWERED_BY.startswith("worker")}
    assert handled == by_worker
    client = worker_sources()["model_client.js"]
    call = client[client.index("async call(") :]
    assert {"PROVENANCE", "GENERATE"} <= set(re.findall(r"MODEL_TYPE\.([A-Z_]+)", call))


def run_client(specs: list[dict[str, Any]]) -> tuple[list[Any], str]:
    """site/model_client.js under Node with a stand-in worker (tests/model_client_node.mjs):
    per catalogue entry, what it posted, what it told the panel, its ModelLoad; and stderr."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed (scripts/lab installs the npm packages with it)")
    done = subprocess.run(
        [node, "--no-warnings", str(ROOT / "tests" / "model_client_node.mjs")],
        input=json.dumps({"specs": specs}),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def test_the_client_builds_its_load_request_and_panel_events_from_the_records() -> None:
    entry = {key: value for key, value in SPEC.items() if value is not None}
    entry |= {"key": "fixture", "label": "a catalogue field that is not the spec's"}
    bad = {**entry, "model_id": 5}
    (fits, refused), stderr = run_client([entry, bad])
    # A catalogue entry becomes exactly the generated ModelSpec, validated before it is sent.
    [posted] = fits["posted"]
    schema_for("Load").validate(posted)
    wasm_base = "http://127.0.0.1:8000/transformers/"  # the stand-in page's location
    assert mm.parse_message(posted) == mm.parse_message({**LOAD, "wasm_base": wasm_base})
    # Every event the panel is told fits PANEL_EVENTS, tagged by `type` alone.
    events = [*fits["events"], *refused["events"]]
    for event in events:
        schema_for("PanelEvent").validate(event)
        assert "kind" not in event
    assert [e["type"] for e in fits["events"]] == ["state", "state", "load_done"]
    assert [e.get("state") for e in fits["events"]] == ["loading", "failed", None]
    # A load request that does not fit is never sent: a refused load, `bad_request`.
    assert refused["posted"] == []
    assert refused["record"]["error_code"] == "bad_request"
    assert "$.model.model_id: expected string" in refused["record"]["error_message"]
    assert [e["type"] for e in refused["events"]] == ["state", "load_done"]
    assert "does not fit" not in stderr, stderr
