"""Hostile programs and deliberately missing features: each is a typed code, and cheap.

Cheap is counted, not timed: a nesting bomb never reaches the JSON decoder, and a
validating walk visits at most the nodes its limits allow."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from interpreter_builders import error_of, text_of

import interpreter.program
from interpreter import (
    SAFE_INTEGER_MAX,
    Limits,
    Op,
    ProgramError,
    Ref,
    execute,
    parse_program,
    program_from_json,
    run,
)

BIG = Limits(max_output_bytes=10**7)


@pytest.fixture
def no_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the JSON decoder is ever called."""

    def refuse(*args: object, **kwargs: object) -> object:
        raise AssertionError("json.loads was reached")

    monkeypatch.setattr(json, "loads", refuse)


@contextmanager
def visits_at_most(bound: int, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Assert that the validating walk looks at no more than ``bound`` nodes."""
    seen = [0]
    parts = interpreter.program._parts

    def counted(obj: object, path: str) -> object:
        seen[0] += 1
        return parts(obj, path)

    monkeypatch.setattr(interpreter.program, "_parts", counted)
    yield
    assert 0 < seen[0] <= bound


# --- nesting bombs --------------------------------------------------------------------


@pytest.mark.parametrize(
    "opener", ["[", "{", '{"a":', '{"op":"add","args":['], ids=["list", "object", "key", "op"]
)
@pytest.mark.usefixtures("no_decoding")
def test_run_of_openers_under_default_limits(opener: str) -> None:
    text = (opener * 16384)[: 16384 - 1]
    error = error_of(parse_program, text)
    assert (error.code, error.limit, error.maximum) == ("limit_exceeded", "depth", 16)


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"a":' * 100_000 + "1" + "}" * 100_000,
        '{"op":"add","args":[' * 100_000,
        '{"op":"add","args":[' * 100_000 + '{"ref":"a"},{"ref":"a"}' + "]}" * 100_000,
    ],
    ids=["lists", "objects", "open-tree", "closed-tree"],
)
@pytest.mark.usefixtures("no_decoding")
def test_hundred_thousand_deep_with_raised_byte_limit(text: str) -> None:
    error = error_of(parse_program, text, BIG)
    result = run(text, {"a": 1}, BIG)
    assert (error.code, error.limit) == ("limit_exceeded", "depth")
    assert result["error"]["code"] == "limit_exceeded"  # type: ignore[index]


def test_brackets_inside_strings_do_not_count() -> None:
    text = '{"ref":"' + "[" * 1000 + '"}'
    # the name is invalid, but the nesting scan skipped the string
    assert error_of(parse_program, text).code == "invalid_register_name"
    escaped = '{"ref":"\\"' + "[" * 100 + '"}'
    assert error_of(parse_program, escaped).code == "invalid_register_name"


def test_unterminated_string_then_brackets() -> None:
    text = '{"ref":"a' + "[" * 5000
    assert error_of(parse_program, text).code == "not_json"


def test_deep_dict_to_program_from_json(monkeypatch: pytest.MonkeyPatch) -> None:
    node: object = {"ref": "a"}
    for _ in range(100_000):
        node = {"op": "add", "args": [node, {"ref": "a"}]}
    with visits_at_most(17, monkeypatch):  # down the left spine to depth 17
        error = error_of(program_from_json, node)
    assert (error.code, error.limit, error.value) == ("limit_exceeded", "depth", 17)
    garbage: object = []
    for _ in range(100_000):
        garbage = {"x": garbage}
    assert error_of(program_from_json, garbage).code == "wrong_shape"


def test_self_sharing_structure_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    # 60 levels of sharing describe 2**60 nodes; the walk stops at the first limit
    node: object = {"ref": "a"}
    for _ in range(60):
        node = {"op": "add", "args": [node, node]}
    with visits_at_most(128, monkeypatch):  # max_nodes + 1
        error = error_of(program_from_json, node, Limits(max_depth=100))
    assert (error.code, error.limit) == ("limit_exceeded", "operations")
    shared = Ref("a")
    tree: Op | Ref = shared
    for _ in range(60):
        tree = Op("add", (tree, tree))
    with visits_at_most(128, monkeypatch):
        error = error_of(execute, tree, {"a": 1}, Limits(max_depth=100))
    assert error.code == "limit_exceeded"


def test_cyclic_structure_is_bounded() -> None:
    node: dict[str, object] = {"op": "add"}
    node["args"] = [node, node]
    error = error_of(program_from_json, node)
    assert error.code == "limit_exceeded"


# --- numbers and literals ---------------------------------------------------------------


def test_huge_integer_literal_is_never_converted() -> None:
    digits = "9" * 10_000
    for text in [digits, '{"op":"add","args":[{"ref":"a"},' + digits + "]}", "-" + digits]:
        error = error_of(parse_program, text, BIG)
        assert (error.code, error.value) == ("literal_not_allowed", "number")
        assert len(error.message) < 200


def test_huge_float_literals() -> None:
    for text in ["1e999999", "-1e-999999", "0." + "1" * 10_000, "1" * 5000 + ".5e5"]:
        assert error_of(parse_program, text, BIG).code == "literal_not_allowed"


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity(constant: str) -> None:
    error = error_of(parse_program, '{"op":"add","args":[{"ref":"a"},' + constant + "]}")
    assert (error.code, error.value) == ("literal_not_allowed", constant)


@pytest.mark.parametrize(
    ("literal", "kind"), [("true", "boolean"), ("false", "boolean"), ("null", "null")]
)
def test_booleans_and_null(literal: str, kind: str) -> None:
    assert error_of(parse_program, literal).value == kind
    error = error_of(parse_program, '{"op":"mul","args":[' + literal + ',{"ref":"a"}]}')
    assert (error.code, error.path, error.value) == ("literal_not_allowed", "$.args[0]", kind)


@pytest.mark.parametrize("literal", ["1.5", "0", "-0", "1e3", "0.1"])
def test_float_and_int_literals(literal: str) -> None:
    assert error_of(parse_program, literal).code == "literal_not_allowed"


def test_huge_register_values() -> None:
    error = error_of(execute, Ref("a"), {"a": 10**100_000})  # never passed to str()
    assert error.code == "unsafe_integer"
    assert error.value == "<integer of 332193 bits>"
    assert error_of(execute, Ref("a"), {"a": -(10**100_000)}).value == "-<integer of 332193 bits>"


@pytest.mark.parametrize("value", [SAFE_INTEGER_MAX, -SAFE_INTEGER_MAX])
def test_safe_extremes_ok(value: int) -> None:
    assert run('{"ref":"a"}', {"a": value})["value"] == value


@pytest.mark.parametrize("value", [2**53, -(2**53)])
def test_first_unsafe_refused(value: int) -> None:
    error = run('{"ref":"a"}', {"a": value})["error"]
    assert error["code"] == "unsafe_integer"  # type: ignore[index]
    assert error["value"] == str(value)  # type: ignore[index]


def test_overflowing_mul() -> None:
    text = '{"op":"mul","args":[{"ref":"a"},{"op":"mul","args":[{"ref":"a"},{"ref":"a"}]}]}'
    error = run(text, {"a": 2**20})["error"]
    assert error == {
        "code": "unsafe_integer",
        "message": error["message"],  # type: ignore[index]
        "path": "$",
        "limit": None,
        "maximum": None,
        "value": str(2**60),
    }


# --- keys, text and types ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"ref":"a","ref":"a"}',
        '{"op":"add","op":"mul","args":[{"ref":"a"},{"ref":"b"}]}',
        '{"op":"add","args":[{"ref":"a"},{"ref":"b"}],"args":[{"ref":"a"},{"ref":"b"}]}',
    ],
)
def test_duplicate_keys(text: str) -> None:
    assert error_of(parse_program, text).code == "duplicate_key"


@pytest.mark.parametrize("key", ["__proto__", "constructor", "prototype", "__class__"])
def test_prototype_keys_are_extra_keys(key: str) -> None:
    obj = {"ref": "a", key: {"ref": "b"}}
    assert error_of(parse_program, text_of(obj)).code == "wrong_shape"
    obj = {key: {"polluted": True}}
    assert error_of(parse_program, text_of(obj)).code == "wrong_shape"
    op = {"op": "add", "args": [{"ref": "a"}, {"ref": "b"}], key: {}}
    assert error_of(parse_program, text_of(op)).code == "wrong_shape"


@pytest.mark.parametrize("value", [b'{"ref":"a"}', bytearray(b"{}"), None, 1, 1.5, [], {}])
def test_non_str_input(value: object) -> None:
    assert error_of(parse_program, value).code == "not_text"
    assert run(value, {})["error"]["code"] == "not_text"  # type: ignore[arg-type, index]


def test_lone_surrogates() -> None:
    assert error_of(parse_program, '{"ref":"\ud800"}').code == "invalid_register_name"
    assert error_of(parse_program, '{"ref":"\\ud800"}').code == "invalid_register_name"
    assert error_of(parse_program, "\udfff").code == "not_json"
    assert error_of(parse_program, '{"ref":"a"}\ud800').code == "not_json"
    assert run('{"ref":"\ud800\udc00x"}', {})["error"]["code"] == "invalid_register_name"  # type: ignore[index]


def test_control_and_unicode_noise() -> None:
    for text in ['{"ref":"a"}\x00', '\x00{"ref":"a"}', '{"ref":"a\x00"}', '\u00a0{"ref":"a"}']:
        assert error_of(parse_program, text).code in {"not_json", "invalid_register_name"}


def test_long_keys_and_names_are_truncated_in_errors() -> None:
    key = "k" * 5000
    error = error_of(parse_program, text_of({"ref": "a", key: {"ref": "a"}}))
    assert error.code == "wrong_shape"
    assert len(str(error.value)) < 200
    error = error_of(parse_program, text_of({"ref": "n" * 5000}))
    assert error.code == "invalid_register_name"
    assert len(str(error.value)) < 200
    error = error_of(parse_program, text_of({"op": "o" * 5000, "args": []}))
    assert (error.code, len(str(error.value)) < 200) == ("unknown_op", True)


# --- deliberately missing features -----------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "code"),
    [
        ({"op": "div", "args": [{"ref": "a"}, {"ref": "b"}]}, "unknown_op"),
        ({"op": "pow", "args": [{"ref": "a"}, {"ref": "b"}]}, "unknown_op"),
        ({"op": "neg", "args": [{"ref": "a"}]}, "unknown_op"),
        ({"op": "eval", "args": [{"ref": "a"}, {"ref": "b"}]}, "unknown_op"),
        ({"op": "add", "args": [{"ref": "a"}, {"const": "b"}]}, "wrong_shape"),
        ({"op": "add", "args": [{"ref": "a"}, {"value": "b"}]}, "wrong_shape"),
        ({"let": "x", "be": {"ref": "a"}}, "wrong_shape"),
        ({"loop": {"ref": "a"}}, "wrong_shape"),
        ({"import": "os"}, "wrong_shape"),
        ({"ref": "a.b"}, "invalid_register_name"),
        ({"ref": "a[0]"}, "invalid_register_name"),
        ({"ref": "__import__('os')"}, "invalid_register_name"),
        ({"ref": {"ref": "a"}}, "wrong_shape"),
        ({"op": {"op": "add"}, "args": [{"ref": "a"}, {"ref": "b"}]}, "wrong_shape"),
        ({"op": "add", "args": [{"ref": "a"}, {"ref": "b"}], "comment": "x"}, "wrong_shape"),
        ({"op": "add", "args": [{"ref": "a"}, "b"]}, "literal_not_allowed"),
    ],
)
def test_missing_features(obj: object, code: str) -> None:
    assert error_of(parse_program, text_of(obj)).code == code
    assert error_of(program_from_json, obj).code == code


def test_literals_in_decoded_objects() -> None:
    for literal, kind in [(1, "number"), (1.5, "number"), (True, "boolean"), (None, "null")]:
        obj = {"op": "add", "args": [{"ref": "a"}, literal]}
        assert error_of(program_from_json, obj).value == kind
    assert error_of(program_from_json, float("nan")).code == "literal_not_allowed"
    assert error_of(program_from_json, 10**10_000).code == "literal_not_allowed"


@pytest.mark.parametrize(
    "obj",
    [
        ("op", "add"),
        {("ref",): "a"},
        {1: "a"},
        {"op": "add", "args": ({"ref": "a"}, {"ref": "b"})},
        object(),
        {"ref": b"a"},
    ],
)
def test_python_only_values_to_program_from_json(obj: object) -> None:
    assert error_of(program_from_json, obj).code in {"wrong_shape", "invalid_register_name"}


# --- the nesting pre-scan against an independent oracle -------------------------------------


def deepest_nesting(text: str) -> int:
    """Bracket nesting outside strings, up to a string that never closes (written here
    character by character, independently of the interpreter's scans)."""
    depth = deepest = 0
    i = 0
    while i < len(text):
        char = text[i]
        if char == '"':
            j = i + 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if j >= len(text):
                break
            i = j + 1
            continue
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
        i += 1
    return deepest


NESTING_FRAGMENTS = st.sampled_from(["[", "]", "{", "}", '"', "\\", ":", ",", "a", '"a"', "[]"])


@settings(max_examples=400, deadline=None)
@given(st.lists(NESTING_FRAGMENTS, max_size=40).map("".join), st.integers(1, 4))
def test_nesting_refused_exactly_when_too_deep(text: str, max_depth: int) -> None:
    limits = Limits(max_depth=max_depth)
    try:
        parse_program(text, limits)
        refused_for_depth = False
    except ProgramError as error:
        refused_for_depth = (error.code, error.limit) == ("limit_exceeded", "depth")
    assert refused_for_depth == (deepest_nesting(text) > 2 * max_depth - 1)


@pytest.mark.parametrize("max_depth", [1, 2, 3, 16])
@pytest.mark.parametrize(
    ("opener", "inner", "closer"),
    [("[", '""', "]"), ('{"k":', '"x"', "}"), ("[", '"[{]}"', "]"), ("[", '"\\"["', "]")],
    ids=["lists", "objects", "brackets-in-string", "escaped-quote"],
)
def test_nesting_at_and_over_the_bound(
    max_depth: int, opener: str, inner: str, closer: str
) -> None:
    limits = Limits(max_depth=max_depth)
    bound = 2 * max_depth - 1  # the deepest nesting a tree of max_depth needs
    for nesting in (bound, bound + 1):
        text = opener * nesting + inner + closer * nesting
        assert deepest_nesting(text) == nesting
        error = error_of(parse_program, text, limits)
        too_deep = (error.code, error.limit) == ("limit_exceeded", "depth")
        assert too_deep is (nesting > bound), text
