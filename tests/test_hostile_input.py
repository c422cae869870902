"""Issue 12's reproducers: hostile parameters, model replies, files and arguments.

Each item is a test: no hang (every hostile range is refused before generation), no
traceback (the CLI is called in-process and its stderr read), exit 1 for a bad file or
data and 2 for bad usage, with one line naming the file and the problem."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from asyncrun import run
from hypothesis import given, settings
from hypothesis import strategies as st
from promptread import chain_operands

import interpreter
from interpreter import LabError
from pyapp.browser import handle
from pyapp.cli.main import main
from pyapp.conditions import parse_integer, run_supplied
from pyapp.errors import ParamsError
from pyapp.experiment import Sweep, freeze, run_phase
from pyapp.records import MAX_NESTING, ScriptedAdapter, ScriptedReply, document_text, to_json
from pyapp.records import trace as trace_module
from pyapp.tasks import MAX_COUNT, MAX_TASKS, SplitMix64, TaskParams, generate

SAFE = interpreter.SAFE_INTEGER_MAX
RECURRENCE = "recurrence_a/recurrence_b/recurrence_x0/recurrence_steps"


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    """Run `python -m pyapp ARGV` in-process: (exit status, stdout, stderr)."""
    try:
        status = main(list(argv))
    except SystemExit as stop:  # argparse's own usage errors
        status = int(stop.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "Traceback" not in out
    return status, out, err


def one_line_error(err: str, *needles: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines and lines[-1].startswith(("error:", "python -m pyapp")), err
    for needle in needles:
        assert needle in err, (needle, err)


# ---- task parameters --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"addsub_magnitude": (0, 100_000_000_000_000_000_000_000)}, "addsub_magnitude"),
        ({"point": (0, 2**64)}, "point"),
        ({"mul_magnitude": (1, 10**8)}, "mul_magnitude"),  # a·b would pass 2**53
        ({"coordinate": (1, 40_000_000)}, "coordinate"),
        ({"coefficient": (1, 10**6), "point": (1, 10**5)}, "coefficient/point"),
        ({"coefficient": (0, 0), "point": (0, 151_808_417)}, "point"),  # x0·x0 alone
        ({"recurrence_a": (2, 10**6), "recurrence_steps": (6,)}, RECURRENCE),
        ({"recurrence_steps": (2,) * (MAX_COUNT + 1)}, "recurrence_steps"),
        ({"recurrence_steps": (7,)}, "recurrence_steps"),
        ({"primitives_per_op": 100_000}, "primitives_per_op"),
        ({"probe_pairs": MAX_COUNT, "primitives_per_op": MAX_COUNT}, "task_count"),
        ({"seed": -1}, "seed"),
        ({"seed": 2**64}, "seed"),
        ({"seed": 1729 + 2**64}, "seed"),
        ({"determinants": True}, "determinants"),
    ],
)
def test_unsafe_parameters_are_refused_naming_the_parameter(kwargs, named) -> None:
    with pytest.raises(ParamsError) as caught:
        TaskParams(**kwargs)
    assert caught.value.code == "bad_params" and caught.value.limit == named
    assert caught.value.message.startswith(named)


def test_the_largest_allowed_seed_and_counts_work() -> None:
    assert len(generate(TaskParams(seed=2**64 - 1))) == 24
    assert (
        TaskParams(primitives_per_op=MAX_COUNT // 2, probe_pairs=MAX_COUNT // 4).task_count
        <= MAX_TASKS
    )


ranges = st.integers(0, 2**30).flatmap(lambda high: st.tuples(st.integers(0, high), st.just(high)))


@settings(max_examples=60, deadline=None)
@given(
    addsub=ranges, mul=ranges, a=ranges, b=ranges, x0=ranges, coordinate=ranges,
    coefficient=ranges, point=ranges,
    steps=st.lists(st.integers(1, 6), max_size=3).map(tuple),
    seed=st.integers(0, 2**64 - 1),
)  # fmt: skip
def test_accepted_parameters_always_generate(
    addsub, mul, a, b, x0, coordinate, coefficient, point, steps, seed
) -> None:
    """The worst-case bound is sound: parameters that pass validation never make
    generation fail (no unsafe_integer, no oracle disagreement, no hang)."""
    try:
        params = TaskParams(
            seed=seed, primitives_per_op=1, recurrence_steps=steps, determinants=1,
            derivatives=1, probe_pairs=1, addsub_magnitude=addsub, mul_magnitude=mul,
            recurrence_a=a, recurrence_b=b, recurrence_x0=x0, coordinate=coordinate,
            coefficient=coefficient, point=point,
        )  # fmt: skip
    except ParamsError:
        return
    assert all(abs(task.answer) <= SAFE for task in generate(params))


def test_splitmix_draws_the_widest_allowed_range_and_refuses_wider() -> None:
    rng = SplitMix64(0)
    assert all(0 <= rng.integer(0, SAFE) <= SAFE for _ in range(100))
    assert 0 <= rng.integer(0, 2**64 - 1) < 2**64
    with pytest.raises(ValueError, match="wider than 2"):
        rng.integer(0, 2**64)  # once an endless loop


def test_cli_refuses_a_range_wider_than_the_generator_at_once(capsys) -> None:
    status, _, err = cli(
        capsys, "tasks", "--param", "addsub_magnitude=[0,100000000000000000000000]"
    )
    assert status == 2
    one_line_error(err, "addsub_magnitude")


@pytest.mark.parametrize("seed", ["-5", str(2**64), str(1729 + 2**64), "1" * 5000, "x"])
def test_cli_refuses_seeds_outside_0_to_2_64(capsys, seed) -> None:
    status, _, err = cli(capsys, "tasks", "--seed", seed)
    assert status == 2 and "seed" in err


def test_bridge_answers_unsafe_parameters_and_deep_json_as_typed_errors() -> None:
    reply = json.loads(
        handle(json.dumps({"type": "tasks", "id": 1, "params": {"point": [0, 2**64]}}))
    )
    assert reply["error"]["code"] == "bad_params" and "point" in reply["error"]["message"]
    for text in ["[" * 100_000, '{"type": "tasks", "id": 1, "seed": NaN}', '{"a":1,"a":2}']:
        reply = json.loads(handle(text))
        assert reply["ok"] is False and reply["error"]["code"] == "bad_request"


# ---- model replies -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [("0" * 4300 + "7", 7), ("-" + "0" * 5000 + "1", -1), ("+" + "0" * 10_000, 0)],
)
def test_parse_integer_reads_long_zero_padding(text, value) -> None:
    assert parse_integer(text) == (value, None)


@settings(max_examples=300, deadline=5000)
@given(st.text() | st.from_regex(r"\s*[+-]?[0-9]{0,6000}\s*", fullmatch=True))
def test_parse_integer_never_raises(text) -> None:
    value, failure = parse_integer(text)
    assert (value is None) != (failure is None)
    if failure is not None:
        assert failure.code in ("invalid_integer", "integer_out_of_range")


def hostile_model(prompt: str, caps) -> ScriptedReply:
    if chain_operands(prompt) is not None:
        return ScriptedReply("-" + "0" * 5000 + "1", input_tokens=10, output_tokens=1)
    return ScriptedReply("0" * 4300 + "7", input_tokens=10, output_tokens=1)


@pytest.fixture(scope="module")
def hostile_trace(tmp_path_factory) -> Path:
    """A live sweep whose deterministic model answers with 4,300 zeros and a 7 (and, in
    chains, a minus sign and 5,000 zeros and a 1): every trial is recorded."""
    model = ScriptedAdapter(hostile_model)
    sweep = Sweep(
        params=TaskParams(), conditions=("model-only", "controlled-chain"), model=model.provenance
    )
    assert run(run_phase(sweep, "measure", model))
    freeze(sweep)
    assert run(run_phase(sweep, "heldout", model))
    path = tmp_path_factory.mktemp("hostile") / "trace.json"
    path.write_text(json.dumps(to_json(sweep.trace())), encoding="utf-8")
    return path


def test_a_hostile_model_reply_is_a_recorded_outcome(hostile_trace) -> None:
    trace = trace_module.loads(hostile_trace.read_text(encoding="utf-8"))
    only = [t for t in trace.trials if t.condition == "model-only"]
    assert len(only) == 24 and {t.result for t in only} == {7}
    chains = [t for t in trace.trials if t.condition == "controlled-chain" and t.chain.calls]
    assert chains and all(t.chain.calls[0].parsed == -1 for t in chains)


def test_reproduce_and_score_read_the_hostile_trace(hostile_trace, capsys, tmp_path) -> None:
    out = tmp_path / "predictions.json"
    assert cli(capsys, "score", str(hostile_trace), "--out", str(out))[0] == 0
    status, printed, _ = cli(capsys, "reproduce", str(hostile_trace), "--predictions", str(out))
    assert status == 0 and "re-derived exactly" in printed


# ---- hostile files ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def supplied_trace() -> dict:
    return to_json(run_supplied(TaskParams()))


@pytest.fixture(scope="module")
def model_trace(hostile_trace) -> dict:
    return json.loads(hostile_trace.read_text(encoding="utf-8"))


def write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def deep_program(depth: int) -> str:
    node = '{"ref": "a"}'
    for _ in range(depth):
        node = '{"op": "add", "args": [' + node + ', {"ref": "b"}]}'
    return node


DEEP = "[" * 100_000


@pytest.mark.parametrize(
    "argv",
    [
        ["reproduce", "{bad}"],
        ["reproduce", "{good}", "--predictions", "{bad}"],
        ["score", "{bad}"],
        ["compare", "{bad}"],
        ["exec", "{program}", "--registers", "{bad}"],
    ],
)
@pytest.mark.parametrize(
    ("content", "problem"),
    [
        pytest.param(DEEP, "nested deeper", id="100000-brackets"),
        ('{"a": NaN}', "NaN"),
        ('{"a": Infinity}', "Infinity"),
        ('{"a": 1e400}', "not a finite"),
        ('{"a": ' + "1" + "0" * 400 + "}", "digits"),
        ('{"a": 1, "a": 2}', "twice"),
        ("\udcff", "not UTF-8"),
        ("{", "not JSON"),
    ],
)
def test_hostile_files_exit_1_naming_the_file(
    capsys, tmp_path, supplied_trace, argv, content, problem
):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content.encode("utf-8", "surrogateescape"))
    good = write(tmp_path, "good.json", json.dumps(supplied_trace))
    program = write(tmp_path, "program.json", '{"op": "add", "args": [{"ref": "a"}, {"ref": "b"}]}')
    filled = [a.format(bad=bad, good=good, program=program) for a in argv]
    status, out, err = cli(capsys, *filled)
    assert status == 1
    assert str(bad) in out + err and problem in out + err


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda t: t["trials"][0]["budget"].update(max_depth=0), "max_depth"),
        (lambda t: t["trials"][0]["budget"].update(max_output_bytes=-1), "max_output_bytes"),
        (lambda t: t["run"]["task_params"].update(point=[0, 2**64]), "point"),
        (lambda t: t["run"]["task_params"].update(mul_magnitude=[0, 10**8]), "mul_magnitude"),
        (lambda t: t["run"]["task_params"].update(recurrence_steps=[2] * 60_000), "recurrence"),
        (lambda t: t["run"]["task_params"].update(seed=-1), "seed"),
        (lambda t: t["trials"][0]["timings"].update(parse_ms="x"), "parse_ms"),
    ],
)
def test_invalid_trace_data_exits_1_naming_the_file(capsys, tmp_path, model_trace, change, problem):
    document = json.loads(json.dumps(model_trace))
    change(document)
    path = write(tmp_path, "trace.json", json.dumps(document))
    for command in ("reproduce", "score"):
        status, _, err = cli(capsys, command, path)
        assert status == 1
        one_line_error(err, path, problem)


def test_unknown_task_and_overflowing_numbers_are_reported(capsys, tmp_path, model_trace):
    document = json.loads(json.dumps(model_trace))
    document["trials"][0]["task_id"] = "nope"
    path = write(tmp_path, "unknown.json", json.dumps(document))
    status, out, err = cli(capsys, "score", path)
    assert status == 1 and "'nope'" in err
    status, out, err = cli(capsys, "reproduce", path)
    assert status == 1 and "'nope'" in out

    document = json.loads(json.dumps(model_trace))
    for trial in document["trials"]:
        trial["timings"]["generation_ms"] = 1.7e308
    path = write(tmp_path, "huge.json", json.dumps(document))
    out_path = tmp_path / "p.json"
    status, _, err = cli(capsys, "score", path, "--out", str(out_path))
    assert status == 1 and "too large" in err and not out_path.exists()


def test_a_900_deep_program_field_is_refused(capsys, tmp_path, supplied_trace) -> None:
    text = json.dumps(supplied_trace).replace(
        '"program": {', '"program": ' + deep_program(900) + ', "x": {', 1
    )
    path = write(tmp_path, "deep.json", text)
    status, _, err = cli(capsys, "reproduce", path)
    assert status == 1
    one_line_error(err, path, f"deeper than {MAX_NESTING}")


def test_registers_with_a_duplicate_key_are_refused(capsys, tmp_path) -> None:
    program = write(tmp_path, "p.json", '{"op": "add", "args": [{"ref": "a"}, {"ref": "a"}]}')
    registers = write(tmp_path, "r.json", '{"a": 1, "a": 2}')
    status, out, _ = cli(capsys, "exec", program, "--registers", registers)
    error = json.loads(out)["error"]
    assert status == 1 and error["code"] == "unreadable_registers_file"
    assert registers in error["message"] and "twice" in error["message"]


def test_tasks_param_with_deep_json_is_usage(capsys) -> None:
    status, _, err = cli(capsys, "tasks", "--param", "point=" + DEEP)
    assert status == 2
    one_line_error(err, "--param point", "nested deeper")


# ---- output paths and ports ----------------------------------------------------------


@pytest.mark.parametrize("where", ["directory", "under_a_file"])
@pytest.mark.parametrize("option", ["run", "score", "csv", "markdown"])
def test_bad_output_paths_are_usage_errors(capsys, tmp_path, hostile_trace, where, option):
    (tmp_path / "file").write_text("x", encoding="utf-8")
    target = str(tmp_path) if where == "directory" else str(tmp_path / "file" / "out.json")
    predictions = tmp_path / "p.json"
    assert cli(capsys, "score", str(hostile_trace), "--out", str(predictions))[0] == 0
    argv = {
        "run": ["run", "--condition", "supplied-program", "--out", target],
        "score": ["score", str(hostile_trace), "--out", target],
        "csv": ["compare", str(predictions), "--csv", target],
        "markdown": ["compare", str(predictions), "--markdown", target],
    }[option]
    status, _, err = cli(capsys, *argv)
    assert status == 2
    one_line_error(err, target)


def test_a_write_that_fails_is_one_line(capsys, tmp_path, monkeypatch) -> None:
    import pyapp.cli.main as cli_main

    def refuse(path, text):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(cli_main, "write_atomically", refuse)
    target = str(tmp_path / "t.json")
    status, _, err = cli(capsys, "run", "--condition", "supplied-program", "--out", target)
    assert status == 1
    one_line_error(err, target, "Permission denied")


@pytest.mark.parametrize("port", ["99999", "-5", "http"])
def test_serve_refuses_bad_ports(capsys, port) -> None:
    status, _, err = cli(capsys, "serve", "--port", port)
    assert status == 2 and "--port" in err


def test_serve_reports_a_port_in_use_and_an_address_it_cannot_bind(capsys, tmp_path) -> None:
    (tmp_path / "index.html").write_text("x", encoding="utf-8")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        status, _, err = cli(capsys, "serve", "--dir", str(tmp_path), "--port", port)
        assert status == 1
        one_line_error(err, f"127.0.0.1:{port}")
    status, _, err = cli(
        capsys, "serve", "--dir", str(tmp_path), "--host", "192.0.2.1", "--port", "0"
    )
    assert status == 1
    one_line_error(err, "192.0.2.1")


# ---- sizes ------------------------------------------------------------------------------


def test_count_limits_refuse_at_once(capsys, tmp_path, supplied_trace, monkeypatch) -> None:
    import pyapp.cli.main as cli_main

    monkeypatch.setattr(cli_main, "MAX_TRIALS", 10)
    path = write(tmp_path, "t.json", json.dumps(supplied_trace))
    status, _, err = cli(capsys, "reproduce", path)
    assert status == 1
    one_line_error(err, path, "24 trials, over the limit of 10")


def test_a_file_over_the_size_limit_is_refused(tmp_path, monkeypatch) -> None:
    from pyapp.errors import InputError
    from pyapp.records import documents

    path = tmp_path / "big.json"
    path.write_text("[" + "0," * 100 + "0]", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        documents.read_document(path, max_bytes=100)
    assert caught.value.code == "input_too_large" and caught.value.maximum == 100
    assert isinstance(caught.value, LabError)


@pytest.mark.long
def test_a_trace_of_20000_trials_still_reproduces(capsys, tmp_path) -> None:
    """About 40 s here: part of the long run (`python bench/fuzz.py`), not of CI."""
    params = TaskParams(primitives_per_op=6_670, probe_pairs=0)
    trace = run_supplied(params)
    assert len(trace.trials) >= 20_000
    path = tmp_path / "big.json"
    path.write_text(document_text(trace, "trace"), encoding="utf-8")
    status, out, _ = cli(capsys, "reproduce", str(path))
    assert status == 0 and f"{len(trace.trials)} trials re-derived exactly" in out


def test_a_20000_trial_model_trace_is_within_every_input_limit(tmp_path, model_trace) -> None:
    """CI's share of the check above: 20,000 trials like the hostile sweep's (4-5 KB
    replies, written with indentation as the sweep writes them) stay under the size and
    count limits with room to spare, and a 2,000-trial slice reads as a Trace."""
    from pyapp.cli import read_trace_document, valid_trace
    from pyapp.records import MAX_DOCUMENT_BYTES, MAX_TRIALS

    trials = model_trace["trials"]
    per_trial = sum(len(json.dumps(t, indent=2).encode("utf-8")) for t in trials) / len(trials)
    assert 20_000 * per_trial < MAX_DOCUMENT_BYTES / 2 and MAX_TRIALS > 20_000
    document = json.loads(json.dumps(model_trace))
    document["trials"] = [trials[i % len(trials)] for i in range(2_000)]
    path = tmp_path / "big.json"
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    assert len(valid_trace(read_trace_document(str(path)), str(path)).trials) == 2_000


@pytest.mark.parametrize("value", [2**53, -(2**60), 2**1000 - 1, 10**400])
def test_unsafe_integer_value_is_what_the_error_table_promises(value) -> None:
    """interpreter/errors.py and the spec: the exact decimal string, or `<integer of N
    bits>` beyond 1,000 bits; for a register and for an intermediate alike."""
    promised = (
        str(value) if value.bit_length() <= 1000 else f"<integer of {value.bit_length()} bits>"
    )
    register = interpreter.run('{"ref": "a"}', {"a": value})["error"]
    assert (register["code"], register["value"]) == ("unsafe_integer", promised)
    half = 2**52 if value > 0 else -(2**52)
    product = interpreter.run('{"op": "add", "args": [{"ref": "a"}, {"ref": "a"}]}', {"a": half})
    assert product["error"]["code"] == "unsafe_integer"
    assert product["error"]["value"] == str(2 * half)
