"""Property-based fuzzing of the public entry points (issue 12).

Random and mutated programs, registers, model replies, traces and predictions documents
go through `interpreter.run`, `parse_integer`, the CLI's commands (in-process) and the
bridge's `handle`. Each case asserts only: a typed outcome (a known error code), an exit
status of 0, 1 or 2, no traceback and no internal error, and a bounded time per case
(hypothesis's `deadline`, never a wall-clock assert).

CI runs `CI_EXAMPLES` cases per property (under 60 s in all on this 2-core machine);
`python bench/fuzz.py` (`FUZZ_LONG=1`, the `long` marker) runs `LONG_EXAMPLES` before a
release.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from asyncrun import run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_integrity import as_trace_1
from test_predict import known_model

import interpreter
from pyapp.browser import HANDLERS, handle
from pyapp.cli.main import main
from pyapp.conditions import parse_integer, run_supplied
from pyapp.errors import InputError
from pyapp.experiment import Sweep, freeze, run_phase
from pyapp.predict import score_trace
from pyapp.protocol import FAILURE_CODES
from pyapp.records import (
    FAULT_KINDS,
    MAX_DIGITS,
    MAX_HOOKS,
    ScriptedAdapter,
    fault_errors,
    loads_document,
    parse_hooks,
    read_document,
    to_json,
)
from pyapp.tasks import TaskParams

ROOT = Path(__file__).resolve().parents[1]
LONG = os.environ.get("FUZZ_LONG") == "1"
CI_EXAMPLES = 40
LONG_EXAMPLES = 2_000
FUZZ = settings(
    max_examples=LONG_EXAMPLES if LONG else CI_EXAMPLES,
    deadline=5_000,  # ms per case: a hang or a runaway parse fails the case
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=not LONG,  # CI is reproducible; the long run explores
)

# ---- hostile values --------------------------------------------------------------------

huge_ints = st.sampled_from([2**53, -(2**53), 2**64, -(2**64) - 1, 10**40, 10**400, 2**64 - 1])
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    huge_ints,
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
raw_texts = st.one_of(
    st.text(max_size=200),
    st.sampled_from(["[" * 5_000, "{" * 5_000, "NaN", "1e400", '{"a":1,"a":2}', "", "\x00"]),
    st.integers(1, 3_000).map(lambda n: '{"a":' * n + "1" + "}" * n),
)


def mutate(document: Any, data: st.DataObject) -> Any:
    """`document` with one random place replaced, deleted or deepened."""
    document = json.loads(json.dumps(document))
    holder: Any = None
    key: Any = None
    node = document
    for _ in range(data.draw(st.integers(0, 6))):
        if isinstance(node, dict) and node:
            holder, key = node, data.draw(st.sampled_from(sorted(node)))
        elif isinstance(node, list) and node:
            holder, key = node, data.draw(st.integers(0, len(node) - 1))
        else:
            break
        node = holder[key]
    if holder is None:
        return data.draw(json_values)
    action = data.draw(st.sampled_from(["replace", "delete", "deepen", "huge"]))
    if action == "delete" and isinstance(holder, dict):
        del holder[key]
    elif action == "deepen":
        nested: Any = holder[key]
        for _ in range(data.draw(st.integers(50, 200))):
            nested = [nested]
        holder[key] = nested
    elif action == "huge":
        holder[key] = data.draw(huge_ints)
    else:
        holder[key] = data.draw(json_values)
    return document


# ---- documents to mutate ------------------------------------------------------------------


def _small_documents() -> tuple[dict, dict, dict]:
    supplied = to_json(run_supplied(TaskParams(primitives_per_op=1, probe_pairs=1)))
    model = ScriptedAdapter(known_model)
    sweep = Sweep(
        params=TaskParams(primitives_per_op=1, probe_pairs=1),
        conditions=("model-only", "controlled-chain"),
        model=model.provenance,
    )
    assert run(run_phase(sweep, "measure", model))
    freeze(sweep)
    assert run(run_phase(sweep, "heldout", model))
    trace = sweep.trace()
    return supplied, to_json(trace), to_json(score_trace(trace))


SUPPLIED, MODEL_TRACE, PREDICTIONS = _small_documents()
TRACES = {"supplied": SUPPLIED, "model": MODEL_TRACE, "trace/1": as_trace_1(MODEL_TRACE)}
"""The documents mutated: a trace/1 one goes through the upgrade first (`upgrade`)."""
FOLDER = Path(tempfile.mkdtemp(prefix="fuzz-"))


def cli(*argv: str) -> tuple[int, str]:
    """`python -m pyapp ARGV` in-process: (exit status, stdout + stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(argv))
        except SystemExit as stop:
            status = int(stop.code or 0)
    text = out.getvalue() + err.getvalue()
    assert status in (0, 1, 2), text
    assert "Traceback" not in text and "internal" not in text.lower(), text
    return status, text


def write(name: str, content: str | bytes) -> str:
    path = FOLDER / name
    if isinstance(content, str):
        content = content.encode("utf-8", "surrogatepass")
    path.write_bytes(content)
    return str(path)


# ---- properties ---------------------------------------------------------------------------


node_texts = st.recursive(
    st.builds(lambda n: {"ref": n}, st.sampled_from(["a", "b", "zz", "", "1x"])),
    lambda inner: st.builds(
        lambda op, args: {"op": op, "args": args},
        st.sampled_from(["add", "sub", "mul", "div"]),
        st.lists(inner, min_size=0, max_size=3),
    ),
    max_leaves=20,
).map(json.dumps)


@FUZZ
@given(text=st.one_of(node_texts, raw_texts), registers=json_values)
def test_interpreter_run_gives_a_typed_outcome(text, registers) -> None:
    outcome = interpreter.run(text, registers)
    assert outcome["ok"] or outcome["error"]["code"] in interpreter.ERROR_CODES
    assert outcome["ok"] or outcome["error"]["code"] != "internal_error"


@FUZZ
@given(st.one_of(raw_texts, st.from_regex(r"\s*[+-]?0*[0-9]{0,30}\s*", fullmatch=True)))
def test_parse_integer_gives_a_typed_outcome(text) -> None:
    value, failure = parse_integer(text)
    assert (value is None) != (failure is None)
    assert failure is None or failure.code in ("invalid_integer", "integer_out_of_range")


@FUZZ
@given(data=st.data(), which=st.sampled_from(sorted(TRACES)))
def test_reproduce_and_score_on_mutated_traces(data, which) -> None:
    document = mutate(TRACES[which], data)
    path = write("trace.json", json.dumps(document))
    cli("reproduce", path)
    cli("score", path, "--out", str(FOLDER / "p.json"))
    # the page's "Open a trace" (the report's reader): a reply, never an internal error
    request = {"type": "trace_open", "id": 1, "trace_json": json.dumps(document)}
    reply = json.loads(handle(json.dumps(request)))
    assert reply["ok"] or reply["error"]["code"] in BRIDGE_CODES, reply


@FUZZ
@given(
    field=st.sampled_from(["trials", "freezes", "interruptions"]),
    item=st.none() | st.integers(0, 2),
    value=json_values,
)
def test_reproduce_reads_a_trace_1_document_with_a_junk_list(field, item, value) -> None:
    """The trace/1 upgrade walks these lists before any record is checked: a list that is
    not one, or an item that is not an object, is refused by name, never a traceback."""
    document = json.loads(json.dumps(TRACES["trace/1"]))
    if item is None or not document[field]:
        document[field] = value
    else:
        document[field][item % len(document[field])] = value
    status, _ = cli("reproduce", write("trace1.json", json.dumps(document)))
    assert status in (0, 1)


@FUZZ
@given(data=st.data())
def test_reproduce_predictions_and_compare_on_mutated_predictions(data) -> None:
    trace = write("model.json", json.dumps(MODEL_TRACE))
    path = write("predictions.json", json.dumps(mutate(PREDICTIONS, data)))
    cli("reproduce", trace, "--predictions", path)
    cli("compare", path, "--csv", str(FOLDER / "t.csv"))


@FUZZ
@given(
    program=st.one_of(node_texts, raw_texts),
    registers=st.one_of(raw_texts, json_values.map(json.dumps)),
)
def test_exec_on_random_files(program, registers) -> None:
    status, text = cli(
        "exec", write("program.json", program), "--registers", write("regs.json", registers)
    )
    assert status in (0, 1) and json.loads(text.splitlines()[0])["ok"] is (status == 0)


@FUZZ
@given(
    command=st.sampled_from(["reproduce", "score", "compare"]),
    content=st.one_of(raw_texts, st.binary(max_size=300)),
)
def test_commands_on_random_bytes(command, content) -> None:
    status, _ = cli(command, write("random.json", content))
    assert status == 1


@FUZZ
@given(
    key=st.sampled_from(["seed", "point", "recurrence_steps", "probe_pairs", "x"]),
    value=json_values,
)
def test_tasks_with_random_parameters(key, value) -> None:
    status, _ = cli("tasks", "--param", f"{key}={json.dumps(value)}", "--json")
    assert status in (0, 2)


BRIDGE_CODES = set(FAILURE_CODES) - {"internal_error"}


@FUZZ
@given(
    kind=st.one_of(st.sampled_from(sorted(r.TYPE for r in HANDLERS)), st.text(max_size=10)),
    params=json_values,
    seed=st.one_of(scalars, huge_ints),
    raw=st.none() | raw_texts,
)
def test_bridge_handle_answers_every_request(kind, params, seed, raw) -> None:
    if kind == "sympy_check":
        kind = "tasks"  # the same parameter path, without loading sympy per case
    request = (
        raw
        if raw is not None
        else json.dumps({"type": kind, "id": 1, "seed": seed, "params": params})
    )
    reply = json.loads(handle(request))
    assert isinstance(reply["ok"], bool)
    assert reply["ok"] or reply["error"]["code"] in BRIDGE_CODES, reply


@pytest.mark.long
def test_the_long_run_is_selected() -> None:
    """Present so `pytest -m long` has this module's marker; the long run sets FUZZ_LONG=1."""
    assert LONG or os.environ.get("FUZZ_LONG") is None


# ---- the fault grammar and the document reader (issue 24) ---------------------------------

digits = st.sampled_from(["0", "1", "9", "²", "٣", "３", "𝟙", "١", "⁹"])
fault_items = st.one_of(
    st.text(max_size=12),
    st.builds(
        lambda kind, n: f"{kind}@{''.join(n)}",
        st.sampled_from([*FAULT_KINDS, "Hang", "hang ", "x"]),
        st.lists(digits, max_size=8),
    ),
)
fault_values = st.lists(fault_items, max_size=4).map(",".join)


def _hook_ok(item: str) -> bool:
    """The grammar said again, independently of its regular expression."""
    kind, at, n = item.partition("@")
    ascii_number = n.isascii() and n.isdigit() and not n.startswith("0")
    return bool(at) and kind in FAULT_KINDS and ascii_number and len(n) <= MAX_DIGITS


@FUZZ
@given(text=fault_values)
def test_the_fault_grammar_refuses_exactly_what_is_off_it(text) -> None:
    hooks = [item.strip(" \t") for item in text.split(",") if item.strip(" \t")]
    valid = all(_hook_ok(item) for item in hooks) and len(hooks) <= MAX_HOOKS
    assert (not fault_errors(text)) == valid
    if valid:
        assert [f"{kind}@{n}" for kind, n in parse_hooks(text)] == hooks


@FUZZ
@given(kind=st.sampled_from(list(FAULT_KINDS)), n=st.integers(1, 10**MAX_DIGITS - 1))
def test_every_fault_in_range_round_trips(kind, n) -> None:
    assert parse_hooks(f"{kind}@{n}") == [(kind, n)]


def test_the_page_reads_the_fault_grammar_the_cli_checks() -> None:
    """site/faults.js (with the generated faults_grammar.js) against the Python grammar,
    on the issue's strings and a few hundred generated ones."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    rng = random.Random(24)
    pieces = ["hang", "bad_reply", "@", "1", "0", "9", "²", "٣", "３", ",", " ", "\t", "x"]
    texts = ["hang@²", "hang@" + "9" * 5000, "hang@01", "hang@٣", "hang@３", "hang@1", ""]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 12))) for _ in range(300)]
    valid = [f"{kind}@{rng.randint(1, 999_999)}" for kind in FAULT_KINDS for _ in range(5)]
    texts += [*valid, ", ".join(valid[:3]), " \thang@7 ,", ",".join(valid[:17])]
    script = (
        f"import {{ parseFaults }} from {json.dumps((ROOT / 'site' / 'faults.js').as_uri())};"
        "import { readFileSync } from 'node:fs';"
        "const texts = JSON.parse(readFileSync(0, 'utf8'));"
        "console.log(JSON.stringify(texts.map((t) => parseFaults(t).errors.length === 0)));"
    )
    done = subprocess.run(
        [node, "--input-type=module", "-e", script],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    page = json.loads(done.stdout)
    assert page == [not fault_errors(t) for t in texts]
    assert sum(page) >= len(valid)  # valid values are read alike too


@FUZZ
@given(
    content=st.one_of(
        st.binary(max_size=300),
        raw_texts.map(lambda t: t.encode("utf-8", "surrogatepass")),
        st.lists(
            st.sampled_from(['"', "\\ud800", "\\udc00", "\\ud83d", "a", "\\\\", "\\u0041"])
        ).map(lambda parts: ('{"k": "' + "".join(parts) + '"}').encode()),
    )
)
def test_the_document_reader_gives_text_or_one_refusal(content) -> None:
    path = write("document.json", content)
    try:
        document = read_document(path)
    except InputError as error:
        assert error.code in {
            "unreadable_file",
            "input_too_deep",
            "number_out_of_range",
            "duplicate_key",
            "lone_surrogate",
        }
        return
    json.dumps(document, ensure_ascii=False).encode("utf-8")  # every string is text


def _decoded(text: str, fast: bool) -> Any:
    try:
        return ("ok", loads_document(text, "doc", fast=fast))
    except InputError as error:
        return ("refused", error.code)


@FUZZ
@given(
    text=st.one_of(
        raw_texts,
        json_values.map(json.dumps),
        st.builds(
            lambda value, depth, number: (
                "[" * depth + json.dumps([value, "[{"]) + number + "]" * depth
            ),
            json_values,
            st.integers(0, 70),
            st.sampled_from(["", ",1e400", ",1e99", ",-0", "," + "9" * 41, ",NaN", ",1.5e-300"]),
        ),
    )
)
def test_the_fast_decode_refuses_exactly_what_the_checked_decode_refuses(text) -> None:
    fast, slow = _decoded(text, True), _decoded(text, False)
    assert fast[0] == slow[0] and (fast[0] == "refused" or fast[1] == slow[1]), (fast, slow)
