"""The register-tree language: trees, the op table, and validation into a typed ``Program``.

A program is one tree. Internal nodes are ``{"op": OP, "args": [NODE, NODE]}`` with
``OP`` in ``OPERATIONS``; leaves are ``{"ref": NAME}``. Nothing else exists.

Two spellings of a tree come in: decoded JSON (dicts and lists) and trees built in
Python from ``Ref`` and ``Op``. ``program_from_json`` validates either, once, into a
``Program``: the nodes in evaluation order with their paths, which is all that
``execute`` needs. Every walk here is iterative (an explicit stack), so no input --
however deep -- can exhaust Python's recursion limit; the validating walk stops at the
first limit crossed, so a deep, huge or self-sharing structure is refused fast.
"""

from __future__ import annotations

import json
import operator
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Final, NamedTuple, NoReturn, TypeAlias, TypeVar

from interpreter.errors import ProgramError, mistyped, quote
from interpreter.limits import DEFAULT_LIMITS, Limits


class Operation(NamedTuple):
    """One operation of the language (a tuple: a ``Program`` holds 63 of them)."""

    name: str
    """``add``, ``sub`` or ``mul``: what a program writes in ``"op"``."""
    apply: Callable[[int, int], int]
    """The arithmetic. It runs twice per node: on two Python ``float``s it is one
    IEEE-754 binary64 operation (what a browser computes); on two ``int``s it is exact
    (the cross-check)."""


#: The op table: the only operations of the language, and the one place they are defined.
OPERATIONS: Final[Mapping[str, Operation]] = {
    "add": Operation("add", operator.add),
    "sub": Operation("sub", operator.sub),
    "mul": Operation("mul", operator.mul),
}

#: The operation names, in table order.
OPS: Final = tuple(OPERATIONS)

#: What a register name looks like (ASCII only; ``fullmatch``, so no trailing newline).
REGISTER_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,31}")
_is_register_name: Final = REGISTER_NAME.fullmatch


@dataclass(frozen=True)
class Ref:
    """A leaf: the value of the register called ``name``."""

    name: str
    """The register's name (``^[A-Za-z_][A-Za-z0-9_]{0,31}$``)."""


@dataclass(frozen=True)
class Op:
    """An operation node: ``op`` (add, sub or mul) applied to its two ``args``."""

    op: str
    """The operation's name, a key of the op table."""
    args: tuple[Node, Node]
    """The left and right arguments."""


Node: TypeAlias = Ref | Op
T = TypeVar("T")

#: One entry of a program's code: a register name (a leaf) or an operation.
Instruction: TypeAlias = str | Operation


@dataclass(frozen=True)
class Program:
    """A tree that passed validation once: its nodes in evaluation order.

    Built only by ``program_from_json`` (and ``parse_program``, which calls it), so a
    ``Program`` always satisfies the limits it was validated against; ``execute`` runs
    it without walking it again.
    """

    code: tuple[Instruction, ...]
    """Post-order, left argument first: a register name for each ``{"ref"}`` node and
    the ``Operation`` for each ``{"op"}`` node. The last entry is the root."""
    paths: tuple[str, ...]
    """Where ``code[i]`` sits in the tree: ``$``, ``$.args[0]``, ``$.args[1].args[0]``."""

    @cached_property
    def registers(self) -> frozenset[str]:
        """The names of the registers the program reads."""
        return frozenset(entry for entry in self.code if isinstance(entry, str))

    @cached_property
    def tree(self) -> Node:
        """The program as a ``Ref``/``Op`` tree."""
        leaf: Callable[[str], Node] = Ref
        return _fold(self.code, leaf, lambda op, left, right: Op(op, (left, right)))


# --- validation: one walk, pre-order checks, post-order code -----------------------------


def check_register_name(name: object, path: str | None) -> str:
    """``name`` if it is a valid register name, else ``invalid_register_name``."""
    if not isinstance(name, str) or _is_register_name(name) is None:
        shown = quote(name) if isinstance(name, str) else type(name).__name__
        raise ProgramError(
            "invalid_register_name",
            f"invalid register name {shown!r}: must match ^[A-Za-z_][A-Za-z0-9_]{{0,31}}$",
            path=path,
            value=shown,
        )
    return name


def _operation(op: object, path: str) -> Operation:
    """The table entry for ``op``, else ``wrong_shape`` (not a string) or ``unknown_op``."""
    if not isinstance(op, str):
        raise mistyped("wrong_shape", '"op" must be a string', op, path=path)
    operation = OPERATIONS.get(op)
    if operation is None:
        raise ProgramError(
            "unknown_op",
            f"unknown op {quote(op)!r}: the language has only {', '.join(OPS)}",
            path=path,
            value=quote(op),
        )
    return operation


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


def _parts(obj: object, path: str) -> str | tuple[Operation, object, object]:
    """What a node is -- its register name, or its operation and two arguments -- or
    the error for the first rule it breaks."""
    if type(obj) is dict:  # the common case, decided in a few lookups
        if len(obj) == 1:  # {"ref": NAME}
            name = obj.get("ref")
            if type(name) is str and _is_register_name(name):
                return name
        elif len(obj) == 2:  # {"op": OP, "args": [left, right]}
            op, args = obj.get("op"), obj.get("args")
            operation = OPERATIONS.get(op) if type(op) is str else None
            if operation is not None and type(args) is list and len(args) == 2:
                return operation, args[0], args[1]
    return _checked_parts(obj, path)


def _checked_parts(obj: object, path: str) -> str | tuple[Operation, object, object]:
    """``_parts`` by the full rules, in the order the error table promises."""
    if isinstance(obj, Mapping) and len(obj) == 1 and "ref" in obj:  # {"ref": NAME}
        name = obj["ref"]
        if not isinstance(name, str):
            raise mistyped("wrong_shape", '"ref" must be a string', name, path=path)
        return check_register_name(name, path)
    if isinstance(obj, Mapping) and len(obj) == 2 and "op" in obj and "args" in obj:
        operation = _operation(obj["op"], path)  # {"op": OP, "args": [left, right]}
        args = obj["args"]
        if not isinstance(args, list) or len(args) != 2:
            got = f"{len(args)} items" if isinstance(args, list) else type(args).__name__
            raise ProgramError(
                "wrong_shape", f'"args" must be a list of exactly two nodes, got {got}', path=path
            )
        return operation, args[0], args[1]
    if isinstance(obj, Ref):  # a tree built in Python
        return check_register_name(obj.name, path)
    if isinstance(obj, Op):
        operation = _operation(obj.op, path)
        args = obj.args
        if not isinstance(args, tuple) or len(args) != 2 or not all(_is_node(a) for a in args):
            raise ProgramError("wrong_shape", "an op takes exactly two args", path=path)
        return operation, args[0], args[1]
    _refuse_node(obj, path)


def _is_node(obj: object) -> bool:
    return isinstance(obj, Ref | Op)


def _refuse_node(obj: object, path: str) -> NoReturn:
    """Raise the error for something that is not a node: a literal, a non-object, or an
    object with the wrong keys."""
    kind = _literal_kind(obj)
    if kind is not None:
        raise ProgramError(
            "literal_not_allowed",
            f"a {kind} literal where a node belongs; the language has no literals",
            path=path,
            value=kind,
        )
    if not isinstance(obj, Mapping):
        raise mistyped("wrong_shape", "a node must be an object", obj, path=path)
    keys = list(obj.keys())
    if not all(isinstance(key, str) for key in keys):
        raise ProgramError("wrong_shape", "object keys must be strings", path=path)
    shown = quote(", ".join(sorted(quote(key) for key in keys)))
    raise ProgramError(
        "wrong_shape",
        f'a node has exactly the keys "op" and "args", or exactly "ref"; got {{{shown}}}',
        path=path,
        value=shown,
    )


def program_from_json(obj: object, limits: Limits = DEFAULT_LIMITS) -> Program:
    """Validate a decoded JSON value -- or a tree built from ``Ref`` and ``Op`` -- once,
    into a ``Program``; raise ``ProgramError`` at the first problem.

    One walk: each node is checked when it is first met, pre-order, left argument
    first -- its shape, then its depth, then the running node and operation counts --
    and enters the code when its arguments are done (post-order). The walk never
    visits more than ``max_nodes + 1`` nodes or goes deeper than ``max_depth + 1``.
    """
    code: list[Instruction] = []
    paths: list[str] = []
    nodes = operations = 0
    max_depth, max_nodes, max_operations = limits.max_depth, limits.max_nodes, limits.max_operations
    # (node, path, depth); depth 0 marks an operation whose arguments are done.
    stack: list[tuple[object, str, int]] = [(obj, "$", 1)]
    while stack:
        current, path, depth = stack.pop()
        if depth == 0:
            code.append(current)  # type: ignore[arg-type]  # an Operation, pushed below
            paths.append(path)
            continue
        parts = _parts(current, path)
        if depth > max_depth:
            raise limits.exceeded("depth", depth, path)
        nodes += 1
        if nodes > max_nodes:
            raise limits.exceeded("nodes", nodes, path)
        if isinstance(parts, str):  # a leaf: a register name
            code.append(parts)
            paths.append(path)
            continue
        operations += 1
        if operations > max_operations:
            raise limits.exceeded("operations", operations, path)
        operation, left, right = parts
        stack.append((operation, path, 0))
        stack.append((right, path + ".args[1]", depth + 1))
        stack.append((left, path + ".args[0]", depth + 1))
    return Program(tuple(code), tuple(paths))


# --- program -> tree or JSON -------------------------------------------------------------

#: Bounds that never bind: writing out a tree validates it, whatever its size.
_UNBOUNDED: Final = Limits(*(sys.maxsize for _ in fields(Limits)))


def _fold(
    code: tuple[Instruction, ...], leaf: Callable[[str], T], node: Callable[[str, T, T], T]
) -> T:
    """Rebuild a program from its code: ``leaf(name)`` for each register read,
    ``node(op, left, right)`` for each operation (both arguments are built by then)."""
    built: list[T] = []
    for entry in code:
        if isinstance(entry, str):
            built.append(leaf(entry))
        else:
            right = built.pop()
            built.append(node(entry.name, built.pop(), right))
    return built[0]


def program_to_json(program: Program | Node) -> dict[str, object]:
    """The tree as JSON-ready dicts: ``{"op": .., "args": [..]}`` / ``{"ref": ..}``.

    A ``Ref``/``Op`` tree is validated first, without limits (so an over-limit tree can
    still be written out, e.g. to test that parsing refuses it)."""
    if not isinstance(program, Program):
        program = program_from_json(program, _UNBOUNDED)
    return _fold(
        program.code,
        lambda name: {"ref": name},
        lambda op, left, right: {"op": op, "args": [left, right]},
    )


def canonical_program_text(program: Program | Node) -> str:
    """Compact JSON with keys in the order op, args / ref: one text per tree."""
    return json.dumps(program_to_json(program), separators=(",", ":"))
