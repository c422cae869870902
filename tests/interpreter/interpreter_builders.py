"""Tree builders and independent measures shared by the interpreter tests (imported, not
collected). The measures and the exact oracle are written here, recursively and
without limits, so that the interpreter is checked against code it does not share."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

import pytest

from interpreter import Node, Op, ProgramError, Ref


def chain(operations: int, op: str = "add", name: str = "a") -> Node:
    """A left-leaning chain: ``operations`` ops, depth ``operations + 1``."""
    node: Node = Ref(name)
    for _ in range(operations):
        node = Op(op, (node, Ref(name)))
    return node


def full(depth: int, op: str = "add", name: str = "a") -> Node:
    """A full binary tree of ``depth`` levels: ``2**(depth-1) - 1`` ops."""
    if depth == 1:
        return Ref(name)
    child = full(depth - 1, op, name)
    return Op(op, (child, child))


def count_nodes(node: Node) -> int:
    """Nodes in the tree, leaves included."""
    return 1 if isinstance(node, Ref) else 1 + sum(count_nodes(arg) for arg in node.args)


def count_operations(node: Node) -> int:
    """Operation nodes in the tree."""
    return 0 if isinstance(node, Ref) else 1 + sum(count_operations(arg) for arg in node.args)


def tree_depth(node: Node) -> int:
    """Nodes on the longest root-to-leaf path; a lone leaf has depth 1."""
    return 1 if isinstance(node, Ref) else 1 + max(tree_depth(arg) for arg in node.args)


def registers_used(node: Node) -> frozenset[str]:
    """The names of all registers the tree reads."""
    if isinstance(node, Ref):
        return frozenset({node.name})
    return registers_used(node.args[0]) | registers_used(node.args[1])


def exact_value(node: Node, registers: Mapping[str, int]) -> int:
    """The tree's value in Python ints, with no bounds: the oracle."""
    if isinstance(node, Ref):
        return registers[node.name]
    left, right = (exact_value(arg, registers) for arg in node.args)
    return {"add": left + right, "sub": left - right, "mul": left * right}[node.op]


def text_of(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"))


def error_of(function: Callable[..., object], *args: object, **kwargs: object) -> ProgramError:
    """The ``ProgramError`` that ``function(*args, **kwargs)`` raises (fails if none)."""
    with pytest.raises(ProgramError) as caught:
        function(*args, **kwargs)
    return caught.value
