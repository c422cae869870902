"""The map is true and short (issue 40): docs/architecture.md names every room of the tree —
each `pyapp` package and module, each file of `site/`, `scripts/` and `bench/` — in one
short section per room; no hand-written line of README.md or docs/architecture.md is over
200 characters; and the ten concerns a newcomer looks for first each have a home there
that exists and whose name says the concern."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
MAX_LINE = 200


def sections(text: str) -> dict[str, str]:
    """Each `### ` section of the map by its heading (the room's backticked names)."""
    found: dict[str, str] = {}
    for part in re.split(r"^### ", text, flags=re.M)[1:]:
        heading, _, body = part.partition("\n")
        found[heading.strip()] = body.split("\n## ", 1)[0]
    return found


def named(body: str) -> set[str]:
    """The names a section puts in backticks (`x`, `x.py`, `dir/`)."""
    return set(re.findall(r"`([^`\s]+)`", body))


def room_files(folder: Path) -> list[str]:
    """A room's files (and sub-folders that are not rooms themselves), by name."""
    return sorted(
        p.name + ("/" if p.is_dir() else "")
        for p in folder.iterdir()
        if p.name not in {"__pycache__", "__init__.py", "py.typed"}
        and not (p.is_dir() and any(p.glob("__init__.py")))
        and not (folder.name == "site" and p.is_dir())
    )


def unnamed(heading: str, folder: Path, text: str) -> list[str]:
    """The files of `folder` its section of the map does not name (a module by its stem)."""
    body = sections(text).get(heading)
    if body is None:
        return [f"no section {heading}"]
    names = named(body)
    return [
        f
        for f in room_files(folder)
        if f not in names and f.removesuffix(".py") not in names and f.rstrip("/") not in names
    ]


def rooms() -> list[tuple[str, Path]]:
    packages = sorted(p.parent for p in (ROOT / "pyapp").glob("*/__init__.py"))
    sites = sorted(p for p in (ROOT / "site").iterdir() if p.is_dir())
    return [
        ("`interpreter/`", ROOT / "interpreter"),
        *[(f"`pyapp/{p.name}/`", p) for p in packages],
        ("`site/`", ROOT / "site"),
        *[(f"`site/{p.name}/`", p) for p in sites],
        ("`scripts/`", ROOT / "scripts"),
        ("`bench/`", ROOT / "bench"),
    ]


@pytest.mark.parametrize(("heading", "folder"), rooms(), ids=lambda r: str(r))
def test_every_room_and_its_files_are_named(heading: str, folder: Path) -> None:
    assert unnamed(heading, folder, ARCHITECTURE.read_text(encoding="utf-8")) == []


def test_the_room_check_finds_a_missing_file(tmp_path: Path) -> None:
    (tmp_path / "alpha.py").write_text("")
    (tmp_path / "beta.js").write_text("")
    text = "## The rooms\n\n### `x/`\n\nIt holds `alpha`.\n\n### `y/`\n\n`beta.js`\n"
    assert unnamed("`x/`", tmp_path, text) == ["beta.js"]
    assert unnamed("`z/`", tmp_path, text) == ["no section `z/`"]


def test_the_top_level_modules_are_named() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    for name in ("pyapp/errors.py", "pyapp/__main__.py"):
        assert f"`{name}`" in text, name


@pytest.mark.parametrize("name", ["README.md", "docs/architecture.md"])
def test_no_line_over_200_characters(name: str) -> None:
    lines = (ROOT / name).read_text(encoding="utf-8").split("\n")
    long = [f"{name}:{i} ({len(line)})" for i, line in enumerate(lines, 1) if len(line) > MAX_LINE]
    assert long == []


# --------------------------------------------------------------------------- the newcomer

NEWCOMER: dict[str, tuple[str, ...]] = {
    "the product predictor's formula": ("product",),
    "a trial's hash chain": ("chain",),
    "the page's stall decision": ("stall",),
    "the matrix plan parser": ("plan",),
    "task operand drawing": ("draw", "operand"),
    "parsing a reply into an integer": ("integer",),
    "rendering the receipt": ("receipt",),
    "drawing the HTML report": ("report",),
    "the bounded JSON reader": ("read_document", "documents"),
    "training a subject": ("train",),
}
"""The ten concerns, each with the words one of which its file or function name must hold."""

HOME = re.compile(r"^- (?P<concern>[^:`]+): `(?P<file>[^`]+)` `(?P<function>[^`]+)`$", re.M)


def homes(text: str) -> dict[str, tuple[str, str]]:
    """The map's list of concerns: concern -> (file, function)."""
    return {m["concern"]: (m["file"], m["function"]) for m in HOME.finditer(text)}


def defines(path: Path, function: str) -> bool:
    """Whether `path` defines `function`: a Python function or method, or a JavaScript
    function or method."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        return any(
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == function
            for node in ast.walk(ast.parse(text))
        )
    name = re.escape(function)
    return bool(re.search(rf"^\s*(export\s+)?(async\s+)?(function\s+)?{name}\s*\(", text, re.M))


@pytest.mark.parametrize("concern", list(NEWCOMER))
def test_each_concern_has_a_home_whose_name_says_it(concern: str) -> None:
    found = homes(ARCHITECTURE.read_text(encoding="utf-8"))
    assert concern in found, f"docs/architecture.md names no home for {concern!r}"
    file, function = found[concern]
    assert (ROOT / file).is_file(), file
    assert defines(ROOT / file, function), f"{file} defines no {function}"
    said = f"{file} {function}".lower()
    assert any(word in said for word in NEWCOMER[concern]), (concern, file, function)


def test_the_map_lists_exactly_the_ten() -> None:
    assert list(homes(ARCHITECTURE.read_text(encoding="utf-8"))) == list(NEWCOMER)


def test_the_home_check_finds_a_missing_function(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("class A:\n    def go(self):\n        pass\n")
    (tmp_path / "b.js").write_text("export function draw(x) {}\nclass C {\n  judge(y) {}\n}\n")
    assert defines(tmp_path / "a.py", "go") and not defines(tmp_path / "a.py", "stop")
    assert defines(tmp_path / "b.js", "draw") and defines(tmp_path / "b.js", "judge")
    assert not defines(tmp_path / "b.js", "x")
