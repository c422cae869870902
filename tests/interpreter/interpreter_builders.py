"""Tree builders shared by the interpreter tests (imported, not collected)."""

from __future__ import annotations

import json
from collections.abc import Callable

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


def text_of(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"))


def error_of(function: Callable[..., object], *args: object, **kwargs: object) -> ProgramError:
    """The ``ProgramError`` that ``function(*args, **kwargs)`` raises (fails if none)."""
    with pytest.raises(ProgramError) as caught:
        function(*args, **kwargs)
    return caught.value
