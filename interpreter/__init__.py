"""The register-tree language of Composition Lab: parse, validate limits, execute.

A program is one JSON tree, ``{"op": "mul", "args": [{"ref": "a"}, {"ref": "b"}]}``,
executed in IEEE binary64 within the safe-integer domain and cross-checked in exact
integers. Every failure is a ``ProgramError`` with a stable ``code`` (the table is in
``interpreter.errors``); ``run`` never raises.
"""

from interpreter.errors import ERROR_CODES, ProgramError
from interpreter.executor import Execution, Step, evaluate_exact, execute, run, validate_registers
from interpreter.limits import DEFAULT_LIMITS, SAFE_INTEGER_MAX, Limits
from interpreter.parse import parse_program
from interpreter.program import (
    OPS,
    Node,
    Op,
    Ref,
    canonical_program_text,
    count_nodes,
    count_operations,
    program_from_json,
    program_to_json,
    registers_used,
    tree_depth,
)

__all__ = [
    "DEFAULT_LIMITS",
    "ERROR_CODES",
    "OPS",
    "SAFE_INTEGER_MAX",
    "Execution",
    "Limits",
    "Node",
    "Op",
    "ProgramError",
    "Ref",
    "Step",
    "canonical_program_text",
    "count_nodes",
    "count_operations",
    "evaluate_exact",
    "execute",
    "parse_program",
    "program_from_json",
    "program_to_json",
    "registers_used",
    "run",
    "tree_depth",
    "validate_registers",
]
