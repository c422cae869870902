"""The register-tree language of Composition Lab: parse, validate limits, execute.

A program is one JSON tree, ``{"op": "mul", "args": [{"ref": "a"}, {"ref": "b"}]}``,
validated once into a typed ``Program`` (``parse``, ``program``, ``limits``), executed in
IEEE binary64 within the safe-integer domain and cross-checked in exact integers
(``executor``). Every failure is a
``ProgramError`` with a stable ``code`` (the table is in ``interpreter.errors``; its base,
``LabError``, is in ``lab_error`` so that ``pyapp`` shares it);
``run`` never raises.

    parse_program(text, limits) -> Program        text -> validated program
    program_from_json(obj, limits) -> Program     decoded JSON or a Ref/Op tree -> program
    execute(program, registers, limits) -> Execution
    run(text, registers, limits) -> {"ok": ...}   all of the above, as JSON, never raises
"""

from interpreter.errors import ERROR_CODES, ProgramError
from interpreter.executor import Execution, Step, execute, run
from interpreter.lab_error import LabError
from interpreter.limits import DEFAULT_LIMITS, SAFE_INTEGER_MAX, Limits
from interpreter.parse import parse_program
from interpreter.program import (
    OPS,
    Node,
    Op,
    Operation,
    Program,
    Ref,
    canonical_program_text,
    program_from_json,
    program_to_json,
)

__all__ = [
    "DEFAULT_LIMITS",
    "ERROR_CODES",
    "OPS",
    "SAFE_INTEGER_MAX",
    "Execution",
    "LabError",
    "Limits",
    "Node",
    "Op",
    "Operation",
    "Program",
    "ProgramError",
    "Ref",
    "Step",
    "canonical_program_text",
    "execute",
    "parse_program",
    "program_from_json",
    "program_to_json",
    "run",
]
