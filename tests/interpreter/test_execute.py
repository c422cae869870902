"""Execution: values, steps and paths, register validation, execution-side codes, run()."""

from __future__ import annotations

import json

import pytest
from interpreter_builders import chain, error_of, exact_value, full

from interpreter import (
    SAFE_INTEGER_MAX,
    Execution,
    Limits,
    Op,
    Ref,
    Step,
    canonical_program_text,
    execute,
    parse_program,
    run,
)


def test_each_op() -> None:
    registers = {"a": 7, "b": -3}
    assert execute(Op("add", (Ref("a"), Ref("b"))), registers).value == 4
    assert execute(Op("sub", (Ref("a"), Ref("b"))), registers).value == 10
    assert execute(Op("sub", (Ref("b"), Ref("a"))), registers).value == -10
    assert execute(Op("mul", (Ref("a"), Ref("b"))), registers).value == -21


def test_lone_leaf_has_no_steps() -> None:
    assert execute(Ref("x"), {"x": 5}) == Execution(5, ())


def test_steps_and_paths_post_order_left_first() -> None:
    # (a*b) - (c + (a - b))
    tree = Op(
        "sub",
        (
            Op("mul", (Ref("a"), Ref("b"))),
            Op("add", (Ref("c"), Op("sub", (Ref("a"), Ref("b"))))),
        ),
    )
    execution = execute(tree, {"a": 5, "b": 2, "c": 10})
    assert execution.value == 10 - 13
    assert execution.steps == (
        Step("$.args[0]", "mul", (5, 2), 10),
        Step("$.args[1].args[1]", "sub", (5, 2), 3),
        Step("$.args[1]", "add", (10, 3), 13),
        Step("$", "sub", (10, 13), -3),
    )
    assert execution.to_json() == {
        "value": -3,
        "steps": [
            {"path": "$.args[0]", "op": "mul", "operands": [5, 2], "result": 10},
            {"path": "$.args[1].args[1]", "op": "sub", "operands": [5, 2], "result": 3},
            {"path": "$.args[1]", "op": "add", "operands": [10, 3], "result": 13},
            {"path": "$", "op": "sub", "operands": [10, 13], "result": -3},
        ],
    }
    json.dumps(execution.to_json())  # JSON-ready


def test_affine_recurrence() -> None:
    # x1 = a*x0 + b, x2 = a*x1 + b
    x1 = Op("add", (Op("mul", (Ref("a"), Ref("x0"))), Ref("b")))
    x2 = Op("add", (Op("mul", (Ref("a"), x1)), Ref("b")))
    registers = {"a": 3, "b": -4, "x0": 7}
    assert execute(x2, registers).value == 3 * (3 * 7 - 4) - 4
    assert exact_value(x2, registers) == 47


def test_run_ok_and_error_shapes() -> None:
    text = '{"op":"mul","args":[{"ref":"a"},{"ref":"b"}]}'
    assert run(text, {"a": 6, "b": 7}) == {
        "ok": True,
        "value": 42,
        "steps": [{"path": "$", "op": "mul", "operands": [6, 7], "result": 42}],
    }
    result = run(text, {"a": 6})
    assert result == {
        "ok": False,
        "error": {
            "code": "unknown_register",
            "message": result["error"]["message"],  # type: ignore[index]
            "path": "$.args[1]",
            "limit": None,
            "maximum": None,
            "value": "b",
        },
    }
    json.dumps(result)


def test_unknown_register_first_in_evaluation_order() -> None:
    tree = Op("add", (Op("mul", (Ref("a"), Ref("x"))), Ref("y")))
    error = error_of(execute, tree, {"a": 1})
    assert (error.code, error.path, error.value) == ("unknown_register", "$.args[0].args[1]", "x")


def test_registers_boundary() -> None:
    sixteen = {f"r{i}": i for i in range(16)}
    assert execute(Ref("r15"), sixteen).value == 15
    error = error_of(execute, Ref("r0"), {**sixteen, "r16": 16})
    assert (error.code, error.limit, error.maximum, error.value, error.path) == (
        "limit_exceeded",
        "registers",
        16,
        17,
        "registers",
    )


@pytest.mark.parametrize("value", [True, False, 1.0, 2.5, "3", None, [1], float("nan")])
def test_invalid_register_value(value: object) -> None:
    error = error_of(execute, Ref("a"), {"a": 1, "b": value})
    assert (error.code, error.path) == ("invalid_register_value", "registers.b")
    assert error.value == type(value).__name__


def test_registers_not_a_mapping() -> None:
    error = error_of(execute, Ref("a"), [("a", 1)])
    assert (error.code, error.path) == ("invalid_register_value", "registers")


@pytest.mark.parametrize("name", ["", "1a", "a-b", "x" * 33, 7])
def test_invalid_register_name_in_registers(name: object) -> None:
    error = error_of(execute, Ref("a"), {name: 1})
    assert error.code == "invalid_register_name"


@pytest.mark.parametrize("value", [SAFE_INTEGER_MAX, -SAFE_INTEGER_MAX, 0])
def test_safe_register_values(value: int) -> None:
    assert execute(Ref("a"), {"a": value}).value == value


@pytest.mark.parametrize("value", [2**53, -(2**53), 10**20, -(10**100)])
def test_unsafe_register_values(value: int) -> None:
    error = error_of(execute, Ref("a"), {"a": value})
    assert (error.code, error.path, error.value) == ("unsafe_integer", "registers.a", str(value))


def test_unsafe_intermediate_reports_path_and_exact_value() -> None:
    tree = Op("sub", (Ref("z"), Op("add", (Ref("m"), Ref("one")))))
    error = error_of(execute, tree, {"z": 0, "m": SAFE_INTEGER_MAX, "one": 1})
    assert (error.code, error.path, error.value) == ("unsafe_integer", "$.args[1]", str(2**53))
    # the exact result would have been safe again: the bound is on every intermediate
    assert exact_value(tree, {"z": 0, "m": SAFE_INTEGER_MAX, "one": 1}) == -(2**53)


def test_sum_boundary() -> None:
    tree = Op("add", (Ref("a"), Ref("b")))
    assert execute(tree, {"a": 2**52, "b": 2**52 - 1}).value == SAFE_INTEGER_MAX
    assert error_of(execute, tree, {"a": 2**52, "b": 2**52}).value == str(2**53)
    assert execute(tree, {"a": -(2**52), "b": -(2**52) + 1}).value == -SAFE_INTEGER_MAX
    assert error_of(execute, tree, {"a": -(2**52), "b": -(2**52)}).value == str(-(2**53))
    sub = Op("sub", (Ref("a"), Ref("b")))
    assert error_of(execute, sub, {"a": 2**52, "b": -(2**52)}).code == "unsafe_integer"


def test_mul_boundary_near_square_root() -> None:
    tree = Op("mul", (Ref("a"), Ref("a")))
    assert 94906265**2 < 2**53 < 94906266**2
    assert execute(tree, {"a": 94906265}).value == 94906265**2
    error = error_of(execute, tree, {"a": 94906266})
    assert (error.code, error.path, error.value) == ("unsafe_integer", "$", str(94906266**2))


def test_mul_of_extremes_overflow_is_refused_not_rounded() -> None:
    tree = Op("mul", (Ref("a"), Ref("b")))
    error = error_of(execute, tree, {"a": SAFE_INTEGER_MAX, "b": -SAFE_INTEGER_MAX})
    assert (error.code, error.value) == ("unsafe_integer", str(-(SAFE_INTEGER_MAX**2)))


def test_execute_rechecks_hand_built_trees() -> None:
    assert error_of(execute, Op("div", (Ref("a"), Ref("a"))), {"a": 1}).code == "unknown_op"
    assert error_of(execute, chain(16), {"a": 1}).limit == "depth"
    assert error_of(execute, Op("add", (full(7), Ref("a"))), {"a": 1}).limit == "operations"
    assert error_of(execute, full(3), {"a": 1}, Limits(max_nodes=6)).limit == "nodes"
    bad = Op("add", (Ref("a"), "a"))  # type: ignore[arg-type]
    assert error_of(execute, bad, {"a": 1}).code == "wrong_shape"


def test_execute_at_depth_and_operation_limits() -> None:
    deep = chain(15, "mul")
    assert execute(deep, {"a": 1}).value == 1
    assert len(execute(deep, {"a": 1}).steps) == 15
    wide = full(7, "add")
    assert execute(wide, {"a": 3}).value == 3 * 64
    assert run(canonical_program_text(wide), {"a": 3})["value"] == 192


def test_run_never_raises_on_bad_inputs() -> None:
    assert run(None, {})["error"]["code"] == "not_text"  # type: ignore[arg-type, index]
    assert run('{"ref":"a"}', None)["error"]["code"] == "invalid_register_value"  # type: ignore[arg-type, index]
    assert run('{"ref":"a"}', {"a": 2**60})["error"]["code"] == "unsafe_integer"  # type: ignore[index]


def test_run_internal_error_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    import interpreter.executor as module

    def broken(text: str, limits: Limits) -> Ref:
        raise ZeroDivisionError

    monkeypatch.setattr(module, "parse_program", broken)
    result = run('{"ref":"a"}', {"a": 1})
    assert result["ok"] is False
    assert result["error"]["code"] == "internal_error"  # type: ignore[index]
    assert result["error"]["value"] == "ZeroDivisionError"  # type: ignore[index]


def test_parse_then_execute_matches_exact() -> None:
    text = '{"op":"sub","args":[{"op":"mul","args":[{"ref":"x"},{"ref":"y"}]},{"ref":"x"}]}'
    program = parse_program(text)
    registers = {"x": -12345, "y": 678}
    assert execute(program, registers).value == exact_value(program.tree, registers)
    assert exact_value(program.tree, registers) == -12345 * 678 + 12345


def test_validated_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import interpreter.program as module

    visits = [0]
    parts = module._parts

    def counted(obj: object, path: str) -> object:
        visits[0] += 1
        return parts(obj, path)

    tree = full(5, "mul")  # 31 nodes
    text = canonical_program_text(tree)
    monkeypatch.setattr(module, "_parts", counted)
    program = parse_program(text)
    assert visits[0] == 31  # parsing validates each node once
    assert (len(program.code), program.registers) == (31, frozenset({"a"}))
    assert program.tree == tree
    execution = execute(program, {"a": 1})
    assert visits[0] == 31  # executing a Program walks nothing again
    assert execute(tree, {"a": 1}) == execution
    assert visits[0] == 62  # a built tree is validated once, by the same walk
