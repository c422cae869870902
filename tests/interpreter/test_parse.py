"""Parsing and validation: every parse-side code, whitespace, and exact limit boundaries."""

from __future__ import annotations

import pytest
from interpreter_builders import (
    chain,
    count_nodes,
    count_operations,
    error_of,
    full,
    registers_used,
    text_of,
    tree_depth,
)

from interpreter import (
    DEFAULT_LIMITS,
    ERROR_CODES,
    OPS,
    Limits,
    Op,
    ProgramError,
    Ref,
    canonical_program_text,
    parse_program,
    program_from_json,
    program_to_json,
)

MUL_AB = '{"op":"mul","args":[{"ref":"a"},{"ref":"b"}]}'
MUL_AB_TREE = Op("mul", (Ref("a"), Ref("b")))


def test_limits_defaults() -> None:
    assert Limits() == DEFAULT_LIMITS
    assert DEFAULT_LIMITS.max_output_bytes == 16384
    assert DEFAULT_LIMITS.max_nodes == 127
    assert DEFAULT_LIMITS.max_depth == 16
    assert DEFAULT_LIMITS.max_operations == 63
    assert DEFAULT_LIMITS.max_registers == 16
    assert OPS == ("add", "sub", "mul")


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_nodes", -1), ("max_depth", 0), ("max_operations", "63"), ("max_registers", True)],
)
def test_invalid_limits(field: str, value: object) -> None:
    error = error_of(Limits, **{field: value})
    assert error.code == "invalid_limits"
    assert error.limit == field.removeprefix("max_")


def test_parse_simple() -> None:
    assert parse_program(MUL_AB).tree == MUL_AB_TREE
    assert parse_program('{"ref":"x"}').tree == Ref("x")


@pytest.mark.parametrize(
    "text",
    [
        " " + MUL_AB,
        MUL_AB + "\n",
        "\n\t " + MUL_AB + " \r\n",
        '{ "op" : "mul" , "args" : [ { "ref" : "a" } , { "ref" : "b" } ] }',
        '{"args":[{"ref":"a"},{"ref":"b"}],"op":"mul"}',
    ],
)
def test_whitespace_and_key_order_allowed(text: str) -> None:
    assert parse_program(text).tree == MUL_AB_TREE


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "```json\n" + MUL_AB + "\n```",
        "```\n" + MUL_AB + "\n```",
        "Here is the program: " + MUL_AB,
        MUL_AB + " That multiplies a and b.",
        MUL_AB + MUL_AB,
        MUL_AB + "\n" + MUL_AB,
        MUL_AB + ",",
        "\ufeff" + MUL_AB,
        "{'op':'mul','args':[{'ref':'a'},{'ref':'b'}]}",
        '{"op":"mul","args":[{"ref":"a"},{"ref":"b"},]}',
        '{"op":"mul","args":[{"ref":"a"},{"ref":"b"}]',
        '{"ref":"a"',
        '{"ref":"a}',
        '{"ref":a}',
        "mul(a, b)",
        "a * b",
    ],
)
def test_not_json(text: str) -> None:
    error = error_of(parse_program, text)
    assert error.code == "not_json"


@pytest.mark.parametrize("value", [b'{"ref":"a"}', None, 42, ["{}"], {"ref": "a"}])
def test_not_text(value: object) -> None:
    error = error_of(parse_program, value)
    assert error.code == "not_text"
    assert error.value == type(value).__name__


def test_duplicate_key() -> None:
    error = error_of(parse_program, '{"ref":"a","ref":"b"}')
    assert (error.code, error.value) == ("duplicate_key", "ref")
    nested = '{"op":"add","args":[{"ref":"a"},{"ref":"a","ref":"a"}]}'
    assert error_of(parse_program, nested).code == "duplicate_key"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("1", "number"),
        ('{"op":"add","args":[{"ref":"a"},1]}', "number"),
        ('{"op":"add","args":[{"ref":"a"},1.5]}', "number"),
        ('{"op":"add","args":[{"ref":"a"},-1e3]}', "number"),
        ('{"op":"add","args":[{"ref":"a"},true]}', "boolean"),
        ('{"op":"add","args":[{"ref":"a"},null]}', "null"),
        ('{"op":"add","args":[{"ref":"a"},"b"]}', "string"),
        ('"a"', "string"),
        ("NaN", "NaN"),
        ('{"op":"add","args":[{"ref":"a"},Infinity]}', "Infinity"),
        ('{"op":"add","args":[{"ref":"a"},-Infinity]}', "-Infinity"),
    ],
)
def test_literal_not_allowed(text: str, kind: str) -> None:
    error = error_of(parse_program, text)
    assert error.code == "literal_not_allowed"
    assert error.value == kind


def test_literal_path_from_decoded_json() -> None:
    error = error_of(program_from_json, {"op": "add", "args": [{"ref": "a"}, True]})
    assert (error.code, error.path, error.value) == ("literal_not_allowed", "$.args[1]", "boolean")


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        ([], "$"),
        ({}, "$"),
        ({"ref": "a", "op": "add"}, "$"),
        ({"ref": "a", "extra": "x"}, "$"),
        ({"op": "add"}, "$"),
        ({"args": [{"ref": "a"}, {"ref": "b"}]}, "$"),
        ({"op": "add", "args": [{"ref": "a"}, {"ref": "b"}], "note": "x"}, "$"),
        ({"op": "add", "args": [{"ref": "a"}]}, "$"),
        ({"op": "add", "args": [{"ref": "a"}, {"ref": "b"}, {"ref": "c"}]}, "$"),
        ({"op": "add", "args": {"0": {"ref": "a"}, "1": {"ref": "b"}}}, "$"),
        ({"op": "add", "args": "ab"}, "$"),
        ({"op": ["add"], "args": [{"ref": "a"}, {"ref": "b"}]}, "$"),
        ({"op": None, "args": [{"ref": "a"}, {"ref": "b"}]}, "$"),
        ({"ref": True}, "$"),
        ({"ref": ["a"]}, "$"),
        ({"ref": None}, "$"),
        ({"op": "add", "args": [{"ref": "a"}, [{"ref": "b"}]]}, "$.args[1]"),
        ({"op": "add", "args": [{"ref": "a"}, {"name": "b"}]}, "$.args[1]"),
        ({"op": "add", "args": [{"op": "sub", "args": [{"ref": "a"}, {}]}, {"ref": "b"}]}, None),
    ],
)
def test_wrong_shape(obj: object, path: str | None) -> None:
    error = error_of(program_from_json, obj)
    assert error.code == "wrong_shape"
    if path is not None:
        assert error.path == path
    assert error_of(parse_program, text_of(obj)).code == "wrong_shape"


def test_numbers_are_refused_while_decoding() -> None:
    # program_from_json sees a non-string ref; parse_program never converts the number
    assert error_of(program_from_json, {"ref": 1}).code == "wrong_shape"
    assert error_of(parse_program, '{"ref":1}').code == "literal_not_allowed"
    assert error_of(parse_program, '{"ref":"a","n":1}').code == "literal_not_allowed"


def test_wrong_shape_path_nested() -> None:
    obj = {"op": "add", "args": [{"op": "sub", "args": [{"ref": "a"}, {}]}, {"ref": "b"}]}
    assert error_of(program_from_json, obj).path == "$.args[0].args[1]"


@pytest.mark.parametrize("op", ["div", "pow", "neg", "mod", "ADD", "Add", "", "add "])
def test_unknown_op(op: str) -> None:
    obj = {"op": op, "args": [{"ref": "a"}, {"ref": "b"}]}
    error = error_of(parse_program, text_of(obj))
    assert (error.code, error.path, error.value) == ("unknown_op", "$", op)


@pytest.mark.parametrize(
    "name", ["", "1a", "a-b", "a.b", "a b", "é", "a\n", "x" * 33, "__proto__.x", "\ud800"]
)
def test_invalid_register_name(name: str) -> None:
    error = error_of(program_from_json, {"op": "add", "args": [{"ref": "a"}, {"ref": name}]})
    assert (error.code, error.path) == ("invalid_register_name", "$.args[1]")
    assert error_of(parse_program, text_of({"ref": name})).code == "invalid_register_name"


@pytest.mark.parametrize("name", ["a", "_", "A_1", "x" * 32, "__proto__", "constructor"])
def test_valid_register_names(name: str) -> None:
    assert parse_program(text_of({"ref": name})).tree == Ref(name)


def test_depth_boundary() -> None:
    ok = chain(15)
    assert tree_depth(ok) == 16
    assert parse_program(canonical_program_text(ok)).tree == ok
    deep = chain(16)
    assert tree_depth(deep) == 17
    error = error_of(parse_program, canonical_program_text(deep))
    assert (error.code, error.limit, error.maximum, error.value) == (
        "limit_exceeded",
        "depth",
        16,
        17,
    )
    error = error_of(program_from_json, program_to_json(deep))
    assert (error.code, error.limit, error.maximum, error.value) == (
        "limit_exceeded",
        "depth",
        16,
        17,
    )
    assert error.path == "$" + ".args[0]" * 16


def test_operations_boundary() -> None:
    ok = full(7)
    assert (count_operations(ok), count_nodes(ok), tree_depth(ok)) == (63, 127, 7)
    assert parse_program(canonical_program_text(ok)).tree == ok
    over = Op("add", (ok, Ref("a")))
    assert (count_operations(over), count_nodes(over), tree_depth(over)) == (64, 129, 8)
    text = canonical_program_text(over)
    error = error_of(parse_program, text)
    assert (error.code, error.limit, error.maximum, error.value) == (
        "limit_exceeded",
        "operations",
        63,
        64,
    )


def test_nodes_boundary_with_custom_limits() -> None:
    limits = Limits(max_nodes=7)
    ok = full(3)
    assert count_nodes(ok) == 7
    assert parse_program(canonical_program_text(ok), limits).tree == ok
    error = error_of(parse_program, canonical_program_text(chain(4)), limits)
    assert (error.code, error.limit, error.maximum, error.value) == (
        "limit_exceeded",
        "nodes",
        7,
        8,
    )
    error = error_of(program_from_json, program_to_json(chain(4)), Limits(max_nodes=8))
    assert (error.limit, error.value) == ("nodes", 9)


def test_output_bytes_boundary() -> None:
    padding = 16384 - len(MUL_AB)
    exact = MUL_AB + " " * padding
    assert len(exact.encode()) == 16384
    assert parse_program(exact).tree == MUL_AB_TREE
    error = error_of(parse_program, exact + " ")
    assert (error.code, error.limit, error.maximum, error.value) == (
        "limit_exceeded",
        "output_bytes",
        16384,
        16385,
    )


def test_output_bytes_counts_utf8_not_characters() -> None:
    # "é" is two bytes in UTF-8: inside a string it is counted twice
    text = '{"ref":"' + "é" * 8188 + '"}'
    assert len(text) < 16384 < len(text.encode())
    error = error_of(parse_program, text)
    assert (error.code, error.limit) == ("limit_exceeded", "output_bytes")


def test_tree_measures_and_round_trip() -> None:
    tree = Op("sub", (Op("mul", (Ref("a"), Ref("b"))), Ref("c")))
    assert registers_used(tree) == frozenset({"a", "b", "c"})
    assert (count_nodes(tree), count_operations(tree), tree_depth(tree)) == (5, 2, 3)
    assert tree_depth(Ref("a")) == 1
    text = canonical_program_text(tree)
    assert text == (
        '{"op":"sub","args":[{"op":"mul","args":[{"ref":"a"},{"ref":"b"}]},{"ref":"c"}]}'
    )
    assert parse_program(text).tree == tree
    assert program_from_json(program_to_json(tree)).tree == tree


def test_program_error_to_json_has_all_six_keys() -> None:
    error = error_of(parse_program, "[")
    assert set(error.to_json()) == {"code", "message", "path", "limit", "maximum", "value"}
    assert error.code in ERROR_CODES
    assert isinstance(error, ProgramError)
