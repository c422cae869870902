"""The page's folders are laid out by where the code runs, and the build copies them as they
are (issue 40): every path the page's code names — an import, a worker, a runtime file —
resolves in the source tree exactly as it does in build/site, so the source tree shows how
the page, its Python worker and its model worker connect. Only the runtimes the build puts
beside the page (pyscript/, pyodide/, transformers/, models/) are not in the source tree."""

from __future__ import annotations

import re
from pathlib import Path

SITE = Path(__file__).resolve().parents[2] / "site"
BUILD_PLACED = ("pyscript", "pyodide", "transformers", "models")
"""The folders scripts/build_site.py adds beside the page (npm packages, model files)."""
ROOMS = {
    "": "the page's main thread",
    "common": "modules both the page and the model worker load",
    "model_worker": "the model worker",
    "python_worker": "the PyScript worker's glue",
    "bench": "the bench's bare Pyodide page",
}
QUOTED_PATH = re.compile(r"""["'](\.\.?/[^"'\s]+)["']""")


def named_paths(path: Path) -> list[str]:
    """Every relative path written in a file of the page, JSDoc type imports included."""
    return QUOTED_PATH.findall(path.read_text(encoding="utf-8"))


def resolves(source: Path, named: str) -> bool:
    target = (source.parent / named.split("?")[0]).resolve()
    if target.is_relative_to(SITE):
        first = target.relative_to(SITE).parts[0] if target != SITE else ""
        return target.exists() or first in BUILD_PLACED
    return False


def test_every_path_the_page_names_resolves_in_the_source_tree() -> None:
    sources = [p for p in SITE.rglob("*") if p.suffix in {".js", ".mjs", ".html", ".json"}]
    unresolved = [
        f"{p.relative_to(SITE)}: {named}"
        for p in sources
        for named in named_paths(p)
        if not resolves(p, named)
    ]
    assert unresolved == []


def test_the_folders_are_the_rooms_where_code_runs() -> None:
    folders = {p.relative_to(SITE).as_posix() for p in SITE.iterdir() if p.is_dir()}
    assert folders == set(ROOMS) - {""}
    assert (SITE / "python_worker" / "lab_worker.py").is_file()
    assert (SITE / "model_worker" / "model_worker.js").is_file()
    # code of one room never reaches into another's, save through common/
    for room in ("common", "model_worker"):
        for path in (SITE / room).glob("*.js"):
            for named in named_paths(path):
                target = (path.parent / named).resolve().relative_to(SITE)
                assert target.parts[0] in (room, "common", *BUILD_PLACED) or named.endswith(
                    "page_types.js"
                ), f"{path.relative_to(SITE)} reaches {named}"


def test_the_build_copies_the_folder_and_merges_nothing() -> None:
    build = (SITE.parent / "scripts" / "build_site.py").read_text(encoding="utf-8")
    assert "copy_tree(SITE_SRC, out)" in build
    assert "workers" not in re.findall(r'ROOT / "(\w+)"', build)
    assert not list((SITE.parent / "workers").glob("*"))  # the old merged folder is gone
