"""The house rules that keep the code base in rooms (issue 14), checked so they cannot
silently regress: no Python or JavaScript function over 120 lines anywhere in the code base
(the app, the interpreter, workers, scripts, benches and the tests themselves), and no
import cycle between the modules of `pyapp`."""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_FUNCTION_LINES = 120
NOT_SOURCE = {".git", ".venv", "node_modules", "build", "vendor", "runs", "dist", "__pycache__"}
"""Folders the scans skip: tools' and builds' output, installed and vendored packages."""
# A line that opens a function body: `function f(...) {`, `=> {`, or a method `name(...) {`.
JS_FUNCTION = re.compile(
    r"function\s*\*?\s*\w*\s*\([^)]*\)\s*\{|=>\s*\{|^\s*(async\s+)?(static\s+)?\w+\s*\([^)]*\)\s*\{"
)
JS_NOT_FUNCTION = re.compile(r"\s*(if|for|while|switch|catch)\b")
JS_LITERALS = re.compile(r'"(\\.|[^"\\])*"|\'(\\.|[^\'\\])*\'|`[^`]*`|//.*')


def python_files(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def source_files(*suffixes: str) -> list[Path]:
    """Every file of the code base ending in one of `suffixes`, wherever it lives (hidden
    folders and NOT_SOURCE skipped)."""
    found = []
    for folder, subfolders, names in os.walk(ROOT):
        subfolders[:] = [d for d in subfolders if d not in NOT_SOURCE and not d.startswith(".")]
        found += [Path(folder) / name for name in names if name.endswith(suffixes)]
    return sorted(found)


def long_functions(path: Path, maximum: int) -> list[str]:
    """`path:line name (N lines)` for every function or method in `path` over `maximum` lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            lines = node.end_lineno - node.lineno + 1
            if lines > maximum:
                where = path.relative_to(ROOT)
                found.append(f"{where}:{node.lineno} {node.name} ({lines} lines)")
    return found


def long_js_functions(path: Path, maximum: int) -> list[str]:
    """A rough scan (brace matching, strings and line comments left out) for functions in a
    JavaScript file over `maximum` lines, as `path:line (N lines)`."""
    lines = path.read_text(encoding="utf-8").split("\n")
    found = []
    for start, line in enumerate(lines):
        if not JS_FUNCTION.search(line) or JS_NOT_FUNCTION.match(line):
            continue
        depth, opened, end = 0, False, start
        for end in range(start, len(lines)):
            for char in JS_LITERALS.sub("", lines[end]):
                if char == "{":
                    depth, opened = depth + 1, True
                elif char == "}":
                    depth -= 1
            if opened and depth <= 0:
                break
        if end - start + 1 > maximum:
            found.append(f"{path.relative_to(ROOT)}:{start + 1} ({end - start + 1} lines)")
    return found


def js_files() -> list[Path]:
    return source_files(".js", ".mjs")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The modules among `modules` that `path` imports (at any depth, including function-local
    and TYPE_CHECKING imports: each is a dependency a reader has to follow)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = (
        module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    )
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            submodules = [f"{base}.{alias.name}" for alias in node.names]
            # `from package import submodule` depends on the submodule (as
            # `from package.module import name` does), not on the package's other re-exports.
            names = submodules if all(m in modules for m in submodules) else [base, *submodules]
        for name in names:
            if name in modules:
                found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    paths = python_files("pyapp")
    modules = {module_name(p) for p in paths}
    return {module_name(p): imported_modules(p, modules) - {module_name(p)} for p in paths}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle in `graph` as a path that ends where it starts, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_scans_cover_the_whole_code_base() -> None:
    """Not only pyapp and the page: the interpreter, workers, scripts, benches and tests."""
    python = {p.relative_to(ROOT).as_posix() for p in source_files(".py")}
    js = {p.relative_to(ROOT).as_posix() for p in js_files()}
    for name in (
        "interpreter/__init__.py",
        "pyapp/sweep/panel.py",
        "site/python_worker/lab_worker.py",
        "scripts/build_fixture.py",
        "scripts/build_standins.py",
        "bench/harness.py",
        "tests/test_house.py",
        "tests/browser/test_experiment.py",
    ):
        assert name in python, name
    for name in (
        "site/experiment.js",
        "site/model_worker/model_worker.js",
        "pyapp/sweep/driver.js",
        "bench/in_pyodide.mjs",
        "tests/browser/model_gate.js",
    ):
        assert name in js, name
    assert not [n for n in python | js if n.startswith(("node_modules/", ".venv/", "build/"))]
    assert not [n for n in js if "/vendor/" in n]


def test_no_python_function_over_120_lines() -> None:
    found = [f for p in source_files(".py") for f in long_functions(p, MAX_FUNCTION_LINES)]
    assert found == [], "split these into named steps:\n" + "\n".join(found)


# JavaScript functions allowed over the limit while a branch splits them, each named by its
# file and the text its first line starts with. Empty: every function is under the limit (the
# two that re-grew when i14rest and i15 landed together were split); an entry added here must
# name a function that is still long (test_every_known_long_function_is_still_long).
KNOWN_LONG_JS: dict[str, str] = {}


def known_long(found: str) -> bool:
    where = found.partition(" ")[0]
    name, _, line = where.rpartition(":")
    opener = KNOWN_LONG_JS.get(name)
    text = (ROOT / name).read_text(encoding="utf-8").split("\n")[int(line) - 1]
    return opener is not None and text.startswith(opener)


def test_every_known_long_function_is_still_long() -> None:
    """An entry of KNOWN_LONG_JS whose function was split is stale: remove it (the dict may
    end up empty; the scan then admits no exception at all)."""
    long = {f for p in js_files() for f in long_js_functions(p, MAX_FUNCTION_LINES)}
    for name, opener in KNOWN_LONG_JS.items():
        assert any(f.startswith(f"{name}:") and known_long(f) for f in long), (name, opener)


def test_no_javascript_function_over_120_lines() -> None:
    files = js_files()
    assert (
        ROOT / "site" / "experiment.js" in files
        and ROOT / "site" / "model_worker" / "model_worker.js" in files
    )
    found = [
        f for p in files for f in long_js_functions(p, MAX_FUNCTION_LINES) if not known_long(f)
    ]
    assert found == [], "split these into named steps:\n" + "\n".join(found)


@contextmanager
def sample_file(name: str, text: str) -> Iterator[Path]:
    """`text` written to build/`name` in the repository (the scans name files relative to
    it), removed afterwards."""
    path = ROOT / "build" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    try:
        yield path
    finally:
        path.unlink()


JS_BODY = "\n".join(f'  const x{i} = "{{";' for i in range(MAX_FUNCTION_LINES))
PY_BODY = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
LONG_SAMPLES = [
    (
        "house_sample.js",
        f"function long() {{\n{JS_BODY}\n}}\nconst f = () => {{\n}};\n",
        long_js_functions,
        f"build/house_sample.js:1 ({MAX_FUNCTION_LINES + 2} lines)",
    ),
    (
        "house_sample.py",
        f"def long():\n{PY_BODY}\n\ndef short():\n    return 1\n",
        long_functions,
        f"build/house_sample.py:1 long ({MAX_FUNCTION_LINES + 1} lines)",
    ),
]


@pytest.mark.parametrize(("name", "text", "scan", "expected"), LONG_SAMPLES)
def test_the_scans_find_a_long_function(
    name: str, text: str, scan: Callable[[Path, int], list[str]], expected: str
) -> None:
    """Only the long function is listed, with its line and length."""
    with sample_file(name, text) as path:
        assert scan(path, MAX_FUNCTION_LINES) == [expected]


def test_pyapp_modules_import_no_cycle() -> None:
    graph = import_graph()
    assert "pyapp.records.trace" in graph and "pyapp.conditions.run" in graph
    assert "pyapp.records" in graph["pyapp.conditions.run"]  # through its face
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_the_cycle_check_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def undocumented_modules(package: Path) -> list[str]:
    """Modules and sub-packages of `package` that its `__init__` docstring does not name."""
    tree = ast.parse((package / "__init__.py").read_text(encoding="utf-8"))
    doc = ast.get_docstring(tree) or ""
    members = [p.stem for p in package.glob("*.py") if p.stem not in {"__init__", "__main__"}]
    members += [p.name for p in package.iterdir() if (p / "__init__.py").is_file()]
    return sorted(m for m in members if not re.search(rf"\b{re.escape(m)}\b", doc))


PACKAGES = sorted(
    [ROOT / "interpreter", ROOT / "pyapp"]
    + [p.parent for p in (ROOT / "pyapp").glob("*/__init__.py")]
)


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_package_docstrings_name_their_modules(package: Path) -> None:
    """A newcomer reading a package's docstring sees every room in it."""
    assert undocumented_modules(package) == []


def test_the_docstring_check_finds_an_unnamed_module(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text('"""Holds ``alpha``."""\n')
    for name in ("alpha.py", "beta.py", "__main__.py"):
        (tmp_path / name).write_text("")
    assert undocumented_modules(tmp_path) == ["beta"]


# --------------------------------------------------------------------------- the layers

LAYERS = (
    "errors",
    "tasks",
    "records",
    "conditions",
    "predict",
    "verify",
    "experiment",
    "synthetic",
    "native",
    "audit",
    "report",
    "protocol",
    "browser",
    "host",
    "sweep",
    "matrix",
    "study",
    "cli",
    "__main__",
)
"""`pyapp`'s packages from the bottom up, the allowed direction written once (and drawn in
docs/architecture.md): a package imports only from packages below it (and from itself, the
interpreter and `pyapp`'s own `__version__`). Imports made inside functions count."""

IMPORTS_ALLOWED_IN_FUNCTIONS: dict[str, str] = {
    "playwright": "only the headless sweep drives a browser",
    "sympy": "the third oracle: about 6 MB in the page, loaded on request",
    "ray": "the matrix's cluster engine",
    "onnxruntime": "the native backend (the `native` extra)",
    "numpy": "the native backend (the `native` extra)",
    "tokenizers": "the native backend (the `native` extra)",
    "jinja2": "the native backend's chat templates (the `native` extra)",
    "jsonschema": "the sweep's end-of-run schema check (the `test` extra; skipped without it)",
}
"""Optional heavy dependencies, imported only where used, each with why. Nothing else, of the
project or not, is imported inside a function. docs/architecture.md lists them, generated
from this table (`python tests/test_house.py` rewrites its block; a test fails on drift)."""

IMPORT_TRICKS = ("import_module", "__import__", "spec_from_file_location", "module_from_spec")
"""What loads a module past the import statement (`importlib.import_module`, `__import__`,
a module made from a file): an import the scans above cannot see. `pyapp` and `interpreter`
use none (`test_no_import_is_hidden_behind_importlib`)."""


def package_of(module: str) -> str:
    """`pyapp.records.trace` -> `records`; `pyapp.errors` -> `errors`; `pyapp` -> ``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """`importer -> imported` for every module edge that goes up or sideways the layers."""
    found = []
    for source, targets in sorted(graph.items()):
        for target in sorted(targets):
            low, high = package_of(target), package_of(source)
            if low == high or low == "" or low not in LAYERS:
                continue
            if high not in LAYERS or LAYERS.index(low) > LAYERS.index(high):
                found.append(f"{source} -> {target}")
    return found


def test_every_pyapp_package_is_in_a_layer() -> None:
    packages = {package_of(module) for module in import_graph()} - {""}
    assert packages <= set(LAYERS), f"packages without a layer: {packages - set(LAYERS)}"


def test_imports_point_down_the_layers() -> None:
    graph = import_graph()
    assert "pyapp.audit" in graph["pyapp.cli.main"]  # in-function imports counted
    assert layer_violations(graph) == []


def test_the_layer_check_finds_an_import_upwards() -> None:
    graph = {"pyapp.records.trace": {"pyapp.conditions.model", "pyapp.errors", "pyapp"}}
    assert layer_violations(graph) == ["pyapp.records.trace -> pyapp.conditions.model"]


def imports_in_functions(path: Path) -> list[str]:
    """`path:line module` for each import made inside a function and not on the allowed list."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or "."]
            else:
                continue
            for name in names:
                if name.split(".")[0] not in IMPORTS_ALLOWED_IN_FUNCTIONS:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}")
    return found


def test_imports_inside_functions_only_for_optional_heavy_dependencies() -> None:
    found = [line for p in python_files("pyapp", "interpreter") for line in imports_in_functions(p)]
    assert found == []


def import_tricks(path: Path) -> list[str]:
    """`path:line name` for each call of one of `IMPORT_TRICKS` in `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in IMPORT_TRICKS:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}")
    return found


def test_no_import_is_hidden_behind_importlib() -> None:
    """An import made through `importlib` escapes the layer and function-import scans: none."""
    found = [line for p in python_files("pyapp", "interpreter") for line in import_tricks(p)]
    assert found == []
    assert f"`importlib` tricks: {len(found)}" in architecture_block()


def test_the_import_trick_scan_finds_one() -> None:
    text = "import importlib\ndef f():\n    return importlib.import_module('x'), __import__('y')\n"
    with sample_file("tricky.py", text) as path:
        assert [line.split(" ")[1] for line in import_tricks(path)] == [
            "import_module",
            "__import__",
        ]


ARCHITECTURE = ROOT / "docs" / "architecture.md"
BLOCK_BEGIN = "<!-- generated by tests/test_house.py: imports in functions -->"
BLOCK_END = "<!-- end of generated block -->"


def imports_block() -> str:
    """docs/architecture.md's block: the allowed imports in functions and the tricks counted."""
    rows = [f"- `{name}`: {why}" for name, why in IMPORTS_ALLOWED_IN_FUNCTIONS.items()]
    tricks = [line for p in python_files("pyapp", "interpreter") for line in import_tricks(p)]
    return "\n".join(
        [
            BLOCK_BEGIN,
            "Imports made inside a function, allowed only for these optional dependencies:",
            "",
            *rows,
            "",
            "Imports hidden from the scans behind `importlib.import_module` or `__import__`",
            f"in `pyapp` and `interpreter`: `importlib` tricks: {len(tricks)}.",
            BLOCK_END,
        ]
    )


def architecture_block() -> str:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    start, end = text.find(BLOCK_BEGIN), text.find(BLOCK_END)
    return text[start : end + len(BLOCK_END)] if 0 <= start < end else ""


def test_the_map_lists_the_imports_this_test_allows() -> None:
    """The list in docs/architecture.md is this test's table, generated: it cannot go stale."""
    assert architecture_block() == imports_block(), "run: .venv/bin/python tests/test_house.py"


def test_the_function_import_scan_finds_one() -> None:
    with sample_file(
        "late.py", "def f():\n    import sympy\n    from pyapp.records import trace\n"
    ) as path:
        assert [line.split(" ")[1] for line in imports_in_functions(path)] == ["pyapp.records"]


def test_no_two_test_modules_share_a_name() -> None:
    """pytest imports test modules by their base name (rootdir imports): two files named alike
    in different test folders stop the whole collection ("import file mismatch")."""
    seen: dict[str, list[str]] = {}
    for path in (ROOT / "tests").rglob("test_*.py"):
        seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}


def module_names() -> dict[str, Path]:
    """Every module of `interpreter` and `pyapp` by dotted name (a package by its face)."""
    found = {}
    for path in [*(ROOT / "pyapp").rglob("*.py"), *(ROOT / "interpreter").rglob("*.py")]:
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def passed_on(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Per plain module (not a face), the names it imports from another of our modules at its
    top level and does not define: what an import from it would take second hand."""
    found: dict[str, set[str]] = {}
    for name, path in modules.items():
        if path.name == "__init__.py":
            continue
        imported: set[str] = set()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ImportFrom) and node.module in modules:
                imported |= {alias.asname or alias.name for alias in node.names}
        found[name] = imported
    return found


def second_hand_imports(files: Iterator[Path] | list[Path]) -> list[str]:
    """`from M import n` where M is a plain module that only passes `n` on."""
    modules = module_names()
    passing = passed_on(modules)
    found = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in passing:
                for alias in node.names:
                    if alias.name in passing[node.module]:
                        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
                        where = f"{shown}:{node.lineno}"
                        found.append(f"{where} {alias.name} from {node.module}")
    return found


def import_scan_files() -> list[Path]:
    """Every Python file the import scans read: the packages, the worker, tests, scripts,
    benches."""
    folders = ("pyapp", "interpreter", "tests", "scripts", "bench", "site/python_worker")
    return [p for folder in folders for p in sorted((ROOT / folder).rglob("*.py"))]


def test_names_are_imported_from_where_they_are_defined() -> None:
    """Issue 40: about 240 imports took a name from a module that only passes it on (64
    through `records.trace`). Only a package's face (`__init__.py`) re-exports."""
    assert second_hand_imports(import_scan_files()) == []


def test_the_second_hand_import_scan_finds_one(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from pyapp.records.trace import Trial\n", encoding="utf-8")
    assert second_hand_imports([probe]) == ["probe.py:1 Trial from pyapp.records.trace"]


def package_of_path(path: Path, root: Path = ROOT) -> str | None:
    """The package a file under `root` belongs to: `pyapp.records` for pyapp/records/trace.py,
    `interpreter` for interpreter/executor.py; None outside both (tests, scripts, bench)."""
    parts = path.relative_to(root).parts if path.is_relative_to(root) else path.parts
    if parts[0] == "pyapp" and len(parts) >= 3:
        return f"pyapp.{parts[1]}"
    return "interpreter" if parts[0] == "interpreter" else None


def face_of(module: str) -> str | None:
    """The face (package) a dotted module lies under: `pyapp.records.trace` -> `pyapp.records`."""
    parts = module.split(".")
    if parts[0] == "pyapp" and len(parts) >= 3:
        return ".".join(parts[:2])
    return "interpreter" if parts[0] == "interpreter" and len(parts) >= 2 else None


def face_bypasses(files: list[Path], root: Path = ROOT) -> list[str]:
    """Imports that go around a face: code outside a package taking a public name from one of
    its modules (it imports the package's face, `__init__.py`), and code inside a package
    taking a name from its own face (it imports the defining module). Private names (`_x`)
    are not on any face: a test of a module's internals takes them from the module. Nor is a
    name that is also one of the package's modules (`pyapp.verify.reproduce.reproduce`): on
    the face it would hide the module, so it is taken from its module."""
    modules = module_names()
    found = []
    for path in files:
        mine = package_of_path(path, root)
        shown = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not node.module or node.level:
                continue
            face = face_of(node.module)
            public = [a.name for a in node.names if not a.name.startswith("_")]
            faced = [n for n in public if face and f"{face}.{n}" not in modules]
            if face and face != mine and node.module != face and faced:
                found.append(f"{shown}:{node.lineno} {', '.join(faced)} from {node.module}")
            if node.module == mine and path.name != "__init__.py":
                own = [n for n in public if f"{mine}.{n}" not in modules]  # not a submodule
                if own:
                    found.append(f"{shown}:{node.lineno} {', '.join(own)} from its own face")
    return found


def test_code_outside_a_package_imports_its_face() -> None:
    """Issue 40: each package of `pyapp` (and `interpreter`) has a face, its `__init__.py`,
    which re-exports the names the rest of the code uses; code outside a package imports the
    face, code inside imports the defining module (docs/architecture.md, "Faces")."""
    assert face_bypasses(import_scan_files()) == []


def test_the_face_scan_finds_a_bypass_and_an_inside_use(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from pyapp.records.trace import Trace\n", encoding="utf-8")
    assert face_bypasses([probe]) == ["probe.py:1 Trace from pyapp.records.trace"]
    inside = tmp_path / "pyapp" / "records" / "probe_face.py"  # laid out as in the tree
    inside.parent.mkdir(parents=True)
    inside.write_text("from pyapp.records import Trace\n", encoding="utf-8")
    assert face_bypasses([inside], tmp_path) == [
        "pyapp/records/probe_face.py:1 Trace from its own face"
    ]


def test_every_face_exports_what_it_imports_and_nothing_else() -> None:
    """A face holds its docstring, imports from its own modules and `__all__` naming exactly
    what it imports (and defines)."""
    faces = [*sorted((ROOT / "pyapp").glob("*/__init__.py")), ROOT / "interpreter" / "__init__.py"]
    for face in faces:
        tree = ast.parse(face.read_text(encoding="utf-8"))
        package = ".".join(face.relative_to(ROOT).parent.parts)
        imported: set[str] = set()
        exported: set[str] | None = None
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(package):
                imported |= {a.asname or a.name for a in node.names}
            elif isinstance(node, ast.FunctionDef):
                imported.add(node.name)
            elif isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__":
                exported = {ast.literal_eval(e) for e in node.value.elts}  # type: ignore[attr-defined]
        if exported is None:
            assert not imported, f"{face}: imports without __all__"
            continue
        assert exported == imported, f"{face}: __all__ differs from its imports"


def test_one_task_params_reader_and_no_command_imports_the_page_session() -> None:
    """Issue 40: two functions named `task_params` (the record reader and the page's request
    wrapper), and the matrix and the sweep imported the page's. One reader
    (`pyapp.records.params`); the page's wrapper has its own name; only the page's own
    package imports its session."""
    defined, importers = [], []
    for path in sorted((ROOT / "pyapp").rglob("*.py")):
        name = str(path.relative_to(ROOT))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name == "task_params":
                defined.append(name)
            session = isinstance(node, ast.ImportFrom) and node.module == "pyapp.browser.session"
            if session and not name.startswith("pyapp/browser/"):
                importers.append(name)
    assert defined == ["pyapp/records/params.py"]
    assert importers == []


def script_graph(folder: Path) -> dict[str, set[str]]:
    """What each module of a flat folder of scripts (`scripts/`, `bench/`) imports of its
    siblings (by the bare names they import each other by), imports in functions included."""
    names = {p.stem for p in folder.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in sorted(folder.glob("*.py")):
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module.split(".")[0])
        graph[path.stem] = (found & names) - {path.stem}
    return graph


@pytest.mark.parametrize("folder", ["scripts", "bench"])
def test_scripts_import_no_cycle(folder: str) -> None:
    """Two scripts that import each other (inside a function or not) are one script in two
    files: what both need lives in a third that both import (`scripts/subject_eval.py`)."""
    graph = script_graph(ROOT / folder)
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])
    if folder == "scripts":
        assert (
            "subject_eval" in graph["subject_export"] and "subject_eval" in graph["train_subject"]
        )


if __name__ == "__main__":  # rewrite docs/architecture.md's generated block
    text = ARCHITECTURE.read_text(encoding="utf-8")
    old = architecture_block()
    ARCHITECTURE.write_text(text.replace(old, imports_block()) if old else text, encoding="utf-8")
    print("docs/architecture.md:", "block rewritten" if old else "no block markers found")
