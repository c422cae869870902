"""Properties: binary64 execution agrees with exact ints inside the safe domain and refuses
exactly outside it; canonical text round-trips; ``run`` never raises on any text."""

from __future__ import annotations

import json

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from interpreter_builders import count_nodes, count_operations, tree_depth

from interpreter import (
    ERROR_CODES,
    OPS,
    SAFE_INTEGER_MAX,
    Node,
    Op,
    ProgramError,
    Ref,
    canonical_program_text,
    execute,
    parse_program,
    program_from_json,
    program_to_json,
    run,
)

NAMES = ("a", "b", "c", "d", "x_1")
SQRT_SAFE = 94906265  # floor(sqrt(2**53 - 1)); 94906266**2 > 2**53
BOUNDARY = (
    0,
    1,
    -1,
    2,
    SAFE_INTEGER_MAX,
    -SAFE_INTEGER_MAX,
    SAFE_INTEGER_MAX - 1,
    2**52,
    -(2**52),
    2**26,
    2**27,
    SQRT_SAFE,
    SQRT_SAFE + 1,
    -(SQRT_SAFE + 1),
    3,
    2**17,
)

register_values = st.one_of(
    st.integers(-10, 10),
    st.integers(-(2**20), 2**20),
    st.integers(-SAFE_INTEGER_MAX, SAFE_INTEGER_MAX),
    st.sampled_from(BOUNDARY),
)
registers = st.fixed_dictionaries({name: register_values for name in NAMES})


@st.composite
def trees(draw: st.DrawFn, max_depth: int = 16, max_operations: int = 63) -> Node:
    """Random trees within the default limits (depth <= 16, <= 63 ops, so <= 127 nodes)."""
    budget = [draw(st.integers(0, max_operations))]

    def build(depth_left: int) -> Node:
        if depth_left == 1 or budget[0] == 0 or draw(st.integers(0, 2)) == 0:
            return Ref(draw(st.sampled_from(NAMES)))
        budget[0] -= 1
        op = draw(st.sampled_from(OPS))
        left = build(depth_left - 1)
        right = build(depth_left - 1)
        return Op(op, (left, right))

    return build(max_depth)


def exact_intermediates(node: Node, values: dict[str, int]) -> tuple[int, list[int]]:
    """An independent oracle: the value and every operation's exact result, post-order."""
    if isinstance(node, Ref):
        return values[node.name], []
    left, left_steps = exact_intermediates(node.args[0], values)
    right, right_steps = exact_intermediates(node.args[1], values)
    result = {"add": left + right, "sub": left - right, "mul": left * right}[node.op]
    return result, [*left_steps, *right_steps, result]


def check_agreement(tree: Node, values: dict[str, int]) -> bool:
    """Execution matches the oracle inside the domain, refuses outside; True if safe."""
    value, intermediates = exact_intermediates(tree, values)
    unsafe = [v for v in intermediates if abs(v) > SAFE_INTEGER_MAX]
    if not unsafe:
        execution = execute(tree, values)
        assert execution.value == value
        assert [step.result for step in execution.steps] == intermediates
    else:
        with pytest.raises(ProgramError) as caught:
            execute(tree, values)
        assert caught.value.code == "unsafe_integer"
        assert caught.value.value == str(unsafe[0])  # the first one met, post-order
    return not unsafe


@settings(max_examples=150, deadline=None)
@given(trees(), registers)
def test_execute_agrees_with_exact_or_refuses_exactly_outside(
    tree: Node, values: dict[str, int]
) -> None:
    assert tree_depth(tree) <= 16
    assert count_operations(tree) <= 63
    assert count_nodes(tree) <= 127
    event("safe" if check_agreement(tree, values) else "unsafe")


@settings(deadline=None)
@given(
    st.integers(SQRT_SAFE - 2000, SQRT_SAFE + 2000), st.integers(SQRT_SAFE - 2000, SQRT_SAFE + 2000)
)
def test_products_near_the_boundary(a: int, b: int) -> None:
    for x, y in [(a, b), (-a, b), (a, -b)]:
        safe = check_agreement(Op("mul", (Ref("a"), Ref("b"))), {"a": x, "b": y})
    event("safe" if safe else "unsafe")


@settings(deadline=None)
@given(st.integers(2**52 - 4000, 2**52 + 4000), st.integers(-4, 4))
def test_sums_near_the_boundary(a: int, offset: int) -> None:
    b = min(2**53 - 1 + offset - a, SAFE_INTEGER_MAX)
    for x, y in [(a, b), (-a, -b)]:
        safe = check_agreement(Op("add", (Ref("a"), Ref("b"))), {"a": x, "b": y})
        check_agreement(Op("sub", (Ref("a"), Ref("b"))), {"a": x, "b": -y})
    event("safe" if safe else "unsafe")


@pytest.mark.parametrize(
    ("op", "a", "b", "safe"),
    [
        ("add", 2**52, 2**52 - 1, True),
        ("add", 2**52, 2**52, False),
        ("add", SAFE_INTEGER_MAX, 1, False),
        ("sub", -SAFE_INTEGER_MAX, 1, False),
        ("sub", -(2**52), 2**52 - 1, True),
        ("mul", SQRT_SAFE, SQRT_SAFE, True),
        ("mul", SQRT_SAFE + 1, SQRT_SAFE + 1, False),
        ("mul", 2**26, 2**27 - 1, True),
        ("mul", 2**26, 2**27, False),
        ("mul", 3, 3002399751580330, True),
        ("mul", 3, 3002399751580331, False),
    ],
)
def test_explicit_boundary(op: str, a: int, b: int, safe: bool) -> None:
    tree = Op(op, (Ref("a"), Ref("b")))
    exact, _ = exact_intermediates(tree, {"a": a, "b": b})
    assert (abs(exact) <= SAFE_INTEGER_MAX) is safe
    assert check_agreement(tree, {"a": a, "b": b}) is safe


@settings(max_examples=100, deadline=None)
@given(trees())
def test_canonical_text_round_trips(tree: Node) -> None:
    text = canonical_program_text(tree)
    assert parse_program(text).tree == tree
    assert program_from_json(program_to_json(tree)).tree == tree
    assert program_from_json(json.loads(text)) == program_from_json(tree) == parse_program(text)
    assert canonical_program_text(parse_program(" \n" + text + "\n")) == text


def assert_run_result(result: dict[str, object]) -> None:
    assert result["ok"] in (True, False)
    if result["ok"] is False:
        error = result["error"]
        assert isinstance(error, dict)
        assert set(error) == {"code", "message", "path", "limit", "maximum", "value"}
        assert error["code"] in ERROR_CODES
        assert error["code"] != "internal_error"
    json.dumps(result)


@settings(max_examples=150, deadline=None)
@given(st.text())
def test_run_never_raises_on_text(text: str) -> None:
    assert_run_result(run(text, {"a": 1, "b": 2}))


FRAGMENTS = st.sampled_from(
    [
        "{", "}", "[", "]", ":", ",", " ", "\n", '"', "\\", '"op"', '"args"', '"ref"',
        '"add"', '"sub"', '"mul"', '"div"', '"a"', '"b"', '"zz"', "1", "-0", "1e999",
        "NaN", "Infinity", "true", "null", '"__proto__"', "```", "\ud800",
    ]
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.lists(FRAGMENTS, max_size=80).map("".join))
def test_run_never_raises_on_json_fragments(text: str) -> None:
    assert_run_result(run(text, {"a": 1, "b": 2}))


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.sampled_from(["add", "sub", "mul", "div", "a", "b", "", "1a"])
    | st.text(max_size=4),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(["op", "args", "ref", "x", "__proto__"]) | st.text(max_size=3),
            children,
            max_size=3,
        )
    ),
    max_leaves=30,
)


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_run_and_program_from_json_never_crash_on_json_values(value: object) -> None:
    assert_run_result(run(json.dumps(value), {"a": 1, "b": 2}))
    try:
        program_from_json(value)
    except ProgramError as error:
        assert error.code in ERROR_CODES


@settings(max_examples=100, deadline=None)
@given(trees(), st.dictionaries(st.sampled_from(NAMES), register_values))
def test_run_on_valid_trees_with_partial_registers(tree: Node, values: dict[str, int]) -> None:
    result = run(canonical_program_text(tree), values)
    assert_run_result(result)
    if result["ok"]:
        assert result["value"] == exact_intermediates(tree, values)[0]
