"""The built site's generated Pyodide lock points only at local wheels with their real sha256."""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path
from typing import Any

import pytest

SITE = Path(__file__).resolve().parents[2] / "build" / "site"
PYODIDE = SITE / "pyodide"
LOCAL = {"micropip": "0.11.1", "mpmath": "1.3.0", "sympy": "1.14.0", "composition-lab": None}


@pytest.fixture(scope="module")
def lock() -> dict[str, Any]:
    path = PYODIDE / "pyodide-lock.json"
    if not path.is_file():
        message = f"{path} missing: run scripts/build_site.py"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_local_entries_match_the_wheels_beside_the_lock(lock: dict[str, Any]) -> None:
    for name, version in LOCAL.items():
        entry = lock["packages"][name]
        if version is not None:
            assert entry["version"] == version
        wheel = PYODIDE / entry["file_name"]
        assert "/" not in entry["file_name"], "must resolve next to the lock, not to a URL"
        assert wheel.is_file(), f"{name}: {wheel} missing"
        assert hashlib.sha256(wheel.read_bytes()).hexdigest() == entry["sha256"]
    assert lock["packages"]["sympy"]["depends"] == ["mpmath"]


def test_our_wheel_carries_the_packages_and_prompts(lock: dict[str, Any]) -> None:
    entry = lock["packages"]["composition-lab"]
    with zipfile.ZipFile(PYODIDE / entry["file_name"]) as wheel:
        names = set(wheel.namelist())
    assert {"pyapp/browser/bridge.py", "interpreter/__init__.py", "pyapp/__init__.py"} <= names
    assert any(name.startswith("prompts/") and name.endswith(".txt") for name in names)
    assert not any("__pycache__" in name and not name.endswith(".pyc") for name in names)
    assert set(entry["imports"]) >= {"pyapp", "interpreter"}


def test_boot_config_is_local() -> None:
    config = json.loads((SITE / "pyscript.json").read_text(encoding="utf-8"))
    assert config["interpreter"] == "./pyodide/pyodide.mjs"
    assert config["packages"] == ["composition-lab"]
    assert "sympy" not in json.dumps(config)


def test_the_python_workers_sync_waits_sleep_instead_of_spinning() -> None:
    """scripts/build_site.py patches @pyscript/core so the worker's synchronous calls wait on
    `Atomics.wait` (issue 22 §3: the spin on `Atomics.pause` held a core through every call,
    a model generation included)."""
    import sys

    sys.path.insert(0, str(SITE.parents[1] / "scripts"))
    import build_site

    chunks = sorted((SITE / "pyscript").glob("*.js"))
    if not chunks:
        pytest.skip(f"{SITE} is not built: run scripts/build_site.py")
    texts = [chunk.read_text(encoding="utf-8") for chunk in chunks]
    assert sum(text.count("!1&&" + build_site.SPIN_WAIT) for text in texts) == 1
    assert sum(text.count(build_site.SPIN_WAIT) for text in texts) == 1  # only the disabled one


def test_the_build_refuses_a_pyscript_whose_sync_wait_it_does_not_know(tmp_path: Path) -> None:
    import sys

    sys.path.insert(0, str(SITE.parents[1] / "scripts"))
    import build_site

    (tmp_path / "core.js").write_text("const x = 1;", encoding="utf-8")
    with pytest.raises(build_site.BuildError, match="sync wait"):
        build_site.sleep_in_sync_waits(tmp_path)
    (tmp_path / "core.js").write_text(f"a;{build_site.SPIN_WAIT};b", encoding="utf-8")
    build_site.sleep_in_sync_waits(tmp_path)
    assert (tmp_path / "core.js").read_text(encoding="utf-8") == f"a;!1&&{build_site.SPIN_WAIT};b"
