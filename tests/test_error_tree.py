"""Every exception class of `interpreter` and `pyapp` is a `LabError` drawn in pyapp/errors.py.

The drawing in `pyapp.errors`' docstring is the tree a reader sees; this test walks every
module of both packages, finds each exception class defined there, and checks that it
derives from `LabError`, that the drawing names it under its real parent, and that an
instance built as the code builds it carries a non-empty `code`.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest

import interpreter
import pyapp
import pyapp.errors
from interpreter import LabError

# Modules that need an optional heavy dependency the CI venv may lack are still walked
# (playwright and jsonschema are in requirements-dev); nothing is skipped by name.


def _modules() -> list[str]:
    names: list[str] = []
    for package in (interpreter, pyapp):
        names.append(package.__name__)
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name.endswith("__main__"):
                continue
            names.append(info.name)
    return names


def exception_classes() -> list[type[BaseException]]:
    """Every exception class defined (not merely imported) in the two packages."""
    found: dict[str, type[BaseException]] = {}
    for name in _modules():
        module = importlib.import_module(name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == name:
                found[f"{name}.{value.__qualname__}"] = value
    return [found[key] for key in sorted(found)]


def drawn_tree() -> dict[str, str]:
    """Class name -> parent name, read from the drawing in pyapp.errors' docstring."""
    doc = pyapp.errors.__doc__ or ""
    parents: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in doc.splitlines():
        match = re.match(r"^(\s*)(?:[│ ]*[├└]── )?([A-Z][A-Za-z]+)(?:\(|\s|$)", line)
        if not match or not re.search(r"(── |^\s*Exception$|^\s*└── LabError)", line):
            continue
        name = match.group(2)
        depth = line.find(name)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            parents[name] = stack[-1][1]
        stack.append((depth, name))
    return parents


def test_the_walk_finds_the_known_errors() -> None:
    names = {cls.__name__ for cls in exception_classes()}
    assert {"LabError", "ProgramError", "SweepError", "Paused", "SpecError"} <= names


def test_the_drawing_is_read_as_a_tree() -> None:
    tree = drawn_tree()
    assert tree["LabError"] == "Exception"
    assert tree["SetupError"] == "SweepError"
    assert tree["ProgramError"] == "LabError"


@pytest.mark.parametrize("cls", exception_classes(), ids=lambda cls: cls.__name__)
def test_every_exception_is_a_drawn_lab_error(cls: type[BaseException]) -> None:
    if cls is LabError:
        return
    assert issubclass(cls, LabError), f"{cls.__module__}.{cls.__name__} is not a LabError"
    tree = drawn_tree()
    assert cls.__name__ in tree, f"{cls.__name__} is missing from pyapp/errors.py's drawing"
    lab_parents = [base.__name__ for base in cls.__bases__ if issubclass(base, LabError)]
    assert tree[cls.__name__] in lab_parents, (
        f"{cls.__name__} is drawn under {tree[cls.__name__]} but derives from {lab_parents}"
    )


def _instance(cls: type[LabError]) -> LabError:
    """An instance built with the narrowest signature the class accepts."""
    params = [
        p
        for p in inspect.signature(cls.__init__).parameters.values()
        if p.name != "self" and p.default is inspect.Parameter.empty and p.kind != p.VAR_KEYWORD
    ]
    args: list[object] = []
    for p in params:
        args.append(1 if p.name == "status" else f"x-{p.name}")
    return cls(*args)


@pytest.mark.parametrize(
    "cls",
    [cls for cls in exception_classes() if issubclass(cls, LabError)],
    ids=lambda cls: cls.__name__,
)
def test_every_lab_error_has_a_code(cls: type[LabError]) -> None:
    error = _instance(cls)
    assert isinstance(error.code, str) and error.code
