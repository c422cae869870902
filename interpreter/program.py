"""The register-tree language: nodes, validation of decoded JSON, canonical text.

A program is one tree. Internal nodes are ``{"op": OP, "args": [NODE, NODE]}`` with
``OP`` in ``OPS``; leaves are ``{"ref": NAME}``. Nothing else exists.

Every walk here is iterative (an explicit stack), so no input -- however deep -- can
exhaust Python's recursion limit; walks over unvalidated input stop at the first
limit crossed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final, TypeAlias

from interpreter.errors import ProgramError, quote
from interpreter.limits import DEFAULT_LIMITS, Limits, enforce

#: The only operations of the language.
OPS: Final = ("add", "sub", "mul")

#: What a register name looks like (ASCII only; ``fullmatch`` is used, so no
#: trailing newline slips through).
REGISTER_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,31}")


@dataclass(frozen=True)
class Ref:
    """A leaf: the value of the register called ``name``."""

    name: str


@dataclass(frozen=True)
class Op:
    """An operation node: ``op`` (add, sub or mul) applied to its two ``args``."""

    op: str
    args: tuple[Node, Node]


Node: TypeAlias = Ref | Op


def child_path(path: str, index: int) -> str:
    """The path of argument ``index`` of the node at ``path``."""
    return f"{path}.args[{index}]"


def check_register_name(name: object, path: str | None) -> str:
    """``name`` if it is a valid register name, else ``invalid_register_name``."""
    if not isinstance(name, str) or REGISTER_NAME.fullmatch(name) is None:
        shown = quote(name) if isinstance(name, str) else type(name).__name__
        raise ProgramError(
            "invalid_register_name",
            f"invalid register name {shown!r}: must match ^[A-Za-z_][A-Za-z0-9_]{{0,31}}$",
            path=path,
            value=shown,
        )
    return name


# --- decoded JSON -> tree -----------------------------------------------------------


def _literal_kind(obj: object) -> str | None:
    """The JSON name of a literal (what the language lacks), or ``None``."""
    if obj is None:
        return "null"
    if isinstance(obj, bool):
        return "boolean"
    if isinstance(obj, int | float):
        return "number"
    if isinstance(obj, str):
        return "string"
    return None


def _check_node_shape(obj: object, path: str) -> None:
    """Refuse anything that is not ``{"op": str, "args": [_, _]}`` or ``{"ref": str}``."""
    kind = _literal_kind(obj)
    if kind is not None:
        raise ProgramError(
            "literal_not_allowed",
            f"a {kind} literal where a node belongs; the language has no literals",
            path=path,
            value=kind,
        )
    if not isinstance(obj, Mapping):
        raise ProgramError(
            "wrong_shape",
            f"a node must be an object, not {type(obj).__name__}",
            path=path,
            value=type(obj).__name__,
        )
    keys = list(obj.keys())
    if not all(isinstance(key, str) for key in keys):
        raise ProgramError("wrong_shape", "object keys must be strings", path=path)
    if set(keys) == {"ref"}:
        if not isinstance(obj["ref"], str):
            raise ProgramError(
                "wrong_shape",
                f'"ref" must be a string, not {type(obj["ref"]).__name__}',
                path=path,
                value=type(obj["ref"]).__name__,
            )
        check_register_name(obj["ref"], path)
        return
    if set(keys) == {"op", "args"}:
        op = obj["op"]
        if not isinstance(op, str):
            raise ProgramError(
                "wrong_shape",
                f'"op" must be a string, not {type(op).__name__}',
                path=path,
                value=type(op).__name__,
            )
        if op not in OPS:
            raise ProgramError(
                "unknown_op",
                f"unknown op {quote(op)!r}: the language has only {', '.join(OPS)}",
                path=path,
                value=quote(op),
            )
        args = obj["args"]
        if not isinstance(args, list) or len(args) != 2:
            got = f"{len(args)} items" if isinstance(args, list) else type(args).__name__
            raise ProgramError(
                "wrong_shape", f'"args" must be a list of exactly two nodes, got {got}', path=path
            )
        return
    shown = quote(", ".join(sorted(quote(key) for key in keys)))
    raise ProgramError(
        "wrong_shape",
        f'a node has exactly the keys "op" and "args", or exactly "ref"; got {{{shown}}}',
        path=path,
        value=shown,
    )


def program_from_json(obj: object, limits: Limits = DEFAULT_LIMITS) -> Node:
    """Validate an already-decoded JSON value and build its tree.

    Walks pre-order, left argument first, checking each node's shape, then its depth
    and the running node and operation counts; the first problem met is raised. The
    walk never visits more than ``max_nodes + 1`` nodes or goes deeper than
    ``max_depth + 1``, so a deeply nested or self-sharing structure is refused fast.
    """
    preorder: list[object] = []
    operations = 0
    stack: list[tuple[object, str, int]] = [(obj, "$", 1)]
    while stack:
        current, path, depth = stack.pop()
        _check_node_shape(current, path)
        enforce("depth", depth, limits, path)
        preorder.append(current)
        enforce("nodes", len(preorder), limits, path)
        assert isinstance(current, Mapping)
        if "op" in current:
            operations += 1
            enforce("operations", operations, limits, path)
            left, right = current["args"]
            stack.append((right, child_path(path, 1), depth + 1))
            stack.append((left, child_path(path, 0), depth + 1))
    # Build bottom-up from the reversed pre-order (reverse Polish): each operation
    # finds its left then its right argument on top of the stack.
    built: list[Node] = []
    for current in reversed(preorder):
        assert isinstance(current, Mapping)
        if "ref" in current:
            built.append(Ref(current["ref"]))
        else:
            left_node = built.pop()
            right_node = built.pop()
            built.append(Op(current["op"], (left_node, right_node)))
    return built[0]


# --- tree -> JSON ---------------------------------------------------------------------


def walk(node: Node) -> Iterator[tuple[str, int, Node]]:
    """Every node as ``(path, depth, node)``, pre-order, left argument first."""
    stack: list[tuple[str, int, Node]] = [("$", 1, node)]
    while stack:
        path, depth, current = stack.pop()
        yield path, depth, current
        if isinstance(current, Op):
            stack.append((child_path(path, 1), depth + 1, current.args[1]))
            stack.append((child_path(path, 0), depth + 1, current.args[0]))


def postorder(node: Node) -> Iterator[tuple[str, Node]]:
    """Every node as ``(path, node)``, post-order, left argument first."""
    stack: list[tuple[str, Node, bool]] = [("$", node, False)]
    while stack:
        path, current, expanded = stack.pop()
        if isinstance(current, Op) and not expanded:
            stack.append((path, current, True))
            stack.append((child_path(path, 1), current.args[1], False))
            stack.append((child_path(path, 0), current.args[0], False))
        else:
            yield path, current


def program_to_json(node: Node) -> dict[str, object]:
    """The tree as JSON-ready dicts: ``{"op": .., "args": [..]}`` / ``{"ref": ..}``."""
    built: list[dict[str, object]] = []
    for _, current in postorder(node):
        if isinstance(current, Ref):
            built.append({"ref": current.name})
        else:
            right = built.pop()
            left = built.pop()
            built.append({"op": current.op, "args": [left, right]})
    return built[0]


def canonical_program_text(node: Node) -> str:
    """Compact JSON with keys in the order op, args / ref: one text per tree."""
    return json.dumps(program_to_json(node), separators=(",", ":"))


# --- measures ----------------------------------------------------------------------------


def registers_used(node: Node) -> frozenset[str]:
    """The names of all registers the tree reads."""
    return frozenset(current.name for _, _, current in walk(node) if isinstance(current, Ref))


def count_nodes(node: Node) -> int:
    """Nodes in the tree, leaves included."""
    return sum(1 for _ in walk(node))


def count_operations(node: Node) -> int:
    """Operation nodes in the tree."""
    return sum(1 for _, _, current in walk(node) if isinstance(current, Op))


def tree_depth(node: Node) -> int:
    """Nodes on the longest root-to-leaf path; a lone leaf has depth 1."""
    return max(depth for _, depth, _ in walk(node))


def check_program(node: Node, limits: Limits, registers: Mapping[str, int]) -> None:
    """Check an already-built tree before it runs: node types, ops, limits, registers.

    Trees built by hand bypass ``program_from_json``, so ``execute`` checks them
    again here, stopping at the first breach (a huge shared structure is refused
    after ``max_nodes + 1`` visits).
    """
    operations = 0
    for nodes, (path, depth, current) in enumerate(walk(node), start=1):
        enforce("depth", depth, limits, path)
        enforce("nodes", nodes, limits, path)
        if isinstance(current, Ref):
            if not isinstance(current.name, str) or current.name not in registers:
                shown = quote(str(current.name))
                raise ProgramError(
                    "unknown_register",
                    f"register {shown!r} is not supplied",
                    path=path,
                    value=shown,
                )
        elif isinstance(current, Op):
            if current.op not in OPS:
                shown = quote(str(current.op))
                raise ProgramError("unknown_op", f"unknown op {shown!r}", path=path, value=shown)
            if not isinstance(current.args, tuple) or len(current.args) != 2:
                raise ProgramError("wrong_shape", "an op takes exactly two args", path=path)
            operations += 1
            enforce("operations", operations, limits, path)
        else:
            raise ProgramError(
                "wrong_shape",
                f"not a node: {type(current).__name__}",
                path=path,
                value=type(current).__name__,
            )
