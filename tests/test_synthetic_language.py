"""The structure language (pyapp/synthetic/language.py): one validator for files and the
`NAME:key=value` shorthand, the new error sources, the spec recorded in the trace, and each
structure's own random stream (issue 27's reproducers)."""

import json
import math

import jsonschema
import pytest
from asyncrun import in_thread
from hypothesis import given, settings
from hypothesis import strategies as st

from pyapp.cli.main import main
from pyapp.records import (
    CostModel,
    ModelProvenance,
    SpecError,
    SyntheticSpec,
    carries,
    from_json,
    to_json,
)
from pyapp.synthetic import (
    KEYS,
    STRUCTURES,
    parse_spec,
    run_seed,
    shipped,
    shipped_data,
    spec_from_data,
    synthetic_model_schema,
    written_name,
)
from pyapp.tasks import TaskParams

REFUSED = [
    "size-dependent:cancel=0.9,rho=1",
    "independent:rho=0.9",
    "size-dependent:slope=nan",
    "size-dependent:pivot_digits=inf",
    "independent:call_ms=nan",
    "independent:call_ms=inf",
    "independent:digit_ms=nan",
    "independent:step_ms=1e308",
    "size-dependent:slope=1000",
    "size-dependent:slope=1e300",
    "size-dependent:pivot_digits=1e300",
    "size-dependent:slope=0",
]


def simulate(spec, params=None, conditions=("model-only", "model-program", "controlled-chain")):
    return in_thread(run_seed, spec, params or TaskParams(), conditions)


def by_task(run, condition):
    return {t.task_id: t for t in run.trace.trials if t.condition == condition}


@pytest.mark.parametrize("text", REFUSED)
def test_every_reproducer_is_refused_in_one_line_with_exit_2(text, tmp_path, capsys):
    argv = ["simulate", "--model", text, "--seeds", "1", "--out", str(tmp_path / "x")]
    assert in_thread(main, argv) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: --model:") and "\n" not in error
    key = text.split(":", 1)[1].split(",")[0].split("=")[0]
    assert key in error  # names the key
    assert not (tmp_path / "x").exists()


def test_a_key_of_a_missing_section_names_the_key_and_the_section():
    with pytest.raises(SpecError, match=r"^cancel: size-dependent has no cancellation section"):
        parse_spec("size-dependent:cancel=0.9,rho=1")
    with pytest.raises(SpecError, match=r"^rho: independent has no correlation"):
        parse_spec("independent:rho=0.9")


def test_the_shipped_files_fit_the_generated_schema_and_read_back():
    schema = synthetic_model_schema()
    for name in STRUCTURES:
        jsonschema.validate(shipped_data(name), schema)
        spec = shipped(name)
        assert written_name(spec) == name and spec.note
        assert spec_from_data(spec.as_data()) == spec
    assert {"depth", "carry", "encoding", "format"} <= set(STRUCTURES)


_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from(["json", "prose", "x", "", "1e999", "-0"]),
)


@settings(max_examples=300, deadline=None)
@given(
    name=st.sampled_from(STRUCTURES),
    items=st.lists(st.tuples(st.sampled_from([*KEYS, "bogus"]), _VALUES), max_size=4),
)
def test_the_parser_accepts_only_finite_meaningful_specs(name, items):
    text = name + (":" + ",".join(f"{k}={v}" for k, v in items) if items else "")
    try:
        spec = parse_spec(text)
    except SpecError as error:
        assert "\n" not in str(error) and str(error)
        return
    data = spec.as_data()
    for values in data.values():
        for value in values.values() if isinstance(values, dict) else [values]:
            if isinstance(value, float):
                assert math.isfinite(value)
    assert parse_spec(written_name(spec)) == spec if "@" not in written_name(spec) else True
    for op, left, right in (("mul", 99_999, -99_999), ("add", 999_999, 999_999)):
        p = spec.error_probability(op, left, right, "prose", 63)
        assert 0.0 <= p <= 1.0
    assert spec.cost.call_ms + 63 * (spec.cost.step_ms + 17 * spec.cost.digit_ms) < 1e7


def _toml(text, tmp_path, name="mine.toml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_structure_file_runs_and_the_whole_spec_is_in_the_trace(tmp_path, capsys):
    path = _toml(
        'structure = "mine"\nnote = "deep and carrying"\n[rates]\np_add = 0.0\np_sub = 0.0\n'
        "p_mul = 0.0\n[depth]\nfrom_step = 2\np_deep = 0.25\n[carry]\np_carry = 0.05\n",
        tmp_path,
    )
    out = tmp_path / "sim"
    argv = ["simulate", "--model", str(path), "--seeds", "2", "--out", str(out)]
    assert in_thread(main, argv) == 0
    trace = json.loads((out / "seed-2" / "trace.json").read_text())
    recorded = trace["model"]["synthetic"]
    spec = spec_from_data(recorded)
    assert spec.depth.from_step == 2 and spec.carry.p_carry == 0.05 and spec.structure == "mine"
    assert trace["model"]["revision"] == f"mine@{spec.sha256[:12]}"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["specification"]["depth"] == {"from_step": 2, "p_deep": 0.25}
    assert main(["reproduce", str(out / "seed-2" / "trace.json")]) == 0
    json_path = tmp_path / "same.json"
    json_path.write_text(json.dumps(recorded), encoding="utf-8")
    argv = ["simulate", "--model", str(json_path), "--seeds", "2", "--out", str(tmp_path / "j")]
    assert in_thread(main, argv) == 0


@pytest.mark.parametrize(
    ("content", "key"),
    [
        ('structure = "x"\n[size]\nslope = nan\npivot_digits = 4\n', "size.slope"),
        ('structure = "x"\n[size]\nslope = 1\n', "pivot_digits"),
        ('structure = "x"\n[cost]\ncall_ms = 1\nstep_ms = 1e308\ndigit_ms = 1\n', "cost.step_ms"),
        ('structure = "x"\n[rates]\np_add = 0.1\nbogus = 1\n', "rates"),
        ('structure = "x"\n[colour]\nhue = 1\n', "colour"),
        ('structure = "x"\n[depth]\nfrom_step = 2.5\np_deep = 1\n', "depth.from_step"),
        (
            'structure = "x"\n[rates]\np_add = 0\np_sub = 0\np_mul = 0\n[correlation]\nrho = 1\n',
            "correlation.rho",
        ),
        ("structure = \n", "TOML"),
    ],
)
def test_a_bad_structure_file_is_bad_data_exit_1_naming_file_and_key(
    content, key, tmp_path, capsys
):
    path = _toml(content, tmp_path)
    argv = ["simulate", "--model", str(path), "--seeds", "1", "--out", str(tmp_path / "x")]
    assert in_thread(main, argv) == 1
    error = capsys.readouterr().err.strip()
    assert str(path) in error and key in error and "\n" not in error


def test_a_missing_structure_file_is_bad_usage(tmp_path, capsys):
    argv = ["simulate", "--model", str(tmp_path / "nope.toml"), "--seeds", "1", "--out", "x"]
    assert main(argv) == 2
    assert "no such structure file" in capsys.readouterr().err


def test_a_trace_reads_its_spec_back_and_older_traces_read_without_it():
    spec = parse_spec("carry:p_carry=0.2")
    run = simulate(spec, conditions=("model-only",))
    assert run.trace.model.synthetic == spec
    model = to_json(run.trace.model)
    assert from_json(ModelProvenance, model).synthetic == spec
    del model["synthetic"]
    assert from_json(ModelProvenance, model).synthetic is None


def test_carries_and_borrows_are_counted_column_by_column():
    assert carries("add", 999, 1) == 3 and carries("add", 123, 456) == 0
    assert carries("sub", 1000, 1) == 3 and carries("sub", 5, 3) == 0
    assert carries("add", -1000, 1) == 3  # magnitudes subtracted: borrows
    assert carries("sub", -999, 1) == 3  # -999 - 1: magnitudes added
    assert carries("mul", 999, 999) == 0
    spec = parse_spec("carry")
    assert spec.error_probability("add", 123, 456) == 0.0
    assert spec.error_probability("add", 999, 1) == pytest.approx(1 - 0.9**3)


def test_depth_is_perfect_on_primitives_and_chains_and_fails_deep_whole_tasks():
    spec = parse_spec("depth:p_deep=1,p_add=0,p_sub=0,p_mul=0")
    run = simulate(spec)
    for condition in ("model-only", "model-program", "controlled-chain"):
        for trial in by_task(run, condition).values():
            steps = len(trial.task_id) and _steps(run, trial.task_id)
            if condition == "controlled-chain" or steps < 3:
                assert trial.correct or (trial.chain is not None and not trial.chain.calls)
            else:
                assert not trial.correct, (condition, trial.task_id)


def _steps(run, task_id):
    from pyapp.tasks import generate

    task = next(t for t in generate(run.trace.run.task_params) if t.id == task_id)
    return sum(1 for _ in _ops(task.program))


def _ops(node):
    from interpreter import Op

    if isinstance(node, Op):
        yield node
        for arg in node.args:
            yield from _ops(arg)


def test_encoding_format_and_program_sources_hit_what_they_name():
    encoding = simulate(parse_spec("encoding:p_encoding=1"), conditions=("model-only",))
    for trial in by_task(encoding, "model-only").values():
        task = next(t for t in encoding.trace.tasks if t.id == trial.task_id)
        assert trial.correct == (task.encoding == "json"), trial.task_id
    formats = simulate(parse_spec("format:p_unparseable=1"))
    for trial in formats.trace.trials:
        assert not trial.correct and trial.failure is not None
    program = simulate(parse_spec("program:p_deviate=1,p_add=0,p_sub=0,p_mul=0"))
    assert not any(t.correct for t in by_task(program, "model-program").values())
    assert all(t.correct for t in by_task(program, "model-only").values())


def test_structures_draw_from_their_own_streams():
    # The same rates, one structure with an extra source: under one shared stream the
    # cancelling structure's step verdicts were trial-for-trial those of `independent`.
    params = TaskParams(seed=3, recurrence_steps=(3, 3, 3, 3, 3, 3))
    a = simulate(parse_spec("independent:p_add=0.5,p_sub=0.5,p_mul=0.5"), params)
    b = simulate(parse_spec("cancelling:p_add=0.5,p_sub=0.5,p_mul=0.5,cancel=0.01"), params)
    first = [c.local_correct for t in a.trace.trials if t.chain for c in t.chain.calls[:1]]
    other = [c.local_correct for t in b.trace.trials if t.chain for c in t.chain.calls[:1]]
    assert len(first) == len(other) > 10 and first != other
    again = simulate(parse_spec("independent:p_add=0.5,p_sub=0.5,p_mul=0.5"), params)
    same = [c.local_correct for t in again.trace.trials if t.chain for c in t.chain.calls[:1]]
    assert same == first


def test_direct_construction_passes_the_same_validator():
    with pytest.raises(SpecError, match=r"cost\.call_ms"):
        SyntheticSpec("x", cost=CostModel(call_ms=math.inf))


def test_the_shipped_files_are_package_data():
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    assert "synthetic/structures/*.toml" in project["tool"]["setuptools"]["package-data"]["pyapp"]
    files = sorted(p.stem for p in (root / "pyapp" / "synthetic" / "structures").glob("*.toml"))
    assert files == sorted(STRUCTURES)
