"""The committed test fixtures are what their build scripts make today, byte for byte.

`scripts/build_fixture.py` (tests/fixtures/tiny-chat) and `scripts/build_standins.py`
(tests/fixtures/standins) each rebuild into a temporary folder, in their own virtualenv, and
every file's sha256 is compared with the committed one. The two rebuilds are marked `long`
(minutes of training, export and quantization on one thread; deselected by default and in
CI): run them with

    .venv/bin/python -m pytest tests/test_fixture_rebuild.py -m long -v

after making the venvs once (`python3 scripts/build_fixture.py --out /tmp/x` and
`python3 scripts/build_standins.py --out /tmp/y` create them). Skipped, with the reason,
where a venv is absent: a test never installs torch.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
BUILD_TIMEOUT_S = 3600


def file_hashes(folder: Path) -> dict[str, str]:
    """Every file under `folder` (relative POSIX path) -> its sha256."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def differences(committed: dict[str, str], rebuilt: dict[str, str]) -> list[str]:
    """One line per file missing, extra or different in the rebuild (empty: identical)."""
    lines = [f"missing from the rebuild: {n}" for n in sorted(committed.keys() - rebuilt.keys())]
    lines += [f"only in the rebuild: {n}" for n in sorted(rebuilt.keys() - committed.keys())]
    lines += [
        f"differs: {n} (committed {committed[n][:12]}…, rebuilt {rebuilt[n][:12]}…)"
        for n in sorted(committed.keys() & rebuilt.keys())
        if committed[n] != rebuilt[n]
    ]
    return lines


def rebuild(script: str, venv: str, out: Path) -> None:
    if not (ROOT / "build" / venv / "bin" / "python").is_file():
        pytest.skip(
            f"build/{venv} is absent: run `python3 scripts/{script} --out /tmp/x` once to make "
            "it (it installs torch and the pinned export tools)"
        )
    command = [sys.executable, str(ROOT / "scripts" / script), "--out", str(out)]
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False
    )
    assert done.returncode == 0, f"{script} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def test_the_comparison_reports_every_kind_of_difference() -> None:
    committed = {"a": "1" * 64, "b": "2" * 64, "c": "3" * 64}
    rebuilt = {"a": "1" * 64, "b": "9" * 64, "d": "4" * 64}
    assert differences(committed, rebuilt) == [
        "missing from the rebuild: c",
        "only in the rebuild: d",
        f"differs: b (committed {'2' * 12}…, rebuilt {'9' * 12}…)",
    ]
    assert differences(committed, dict(committed)) == []


BUILDERS = [
    pytest.param("build_fixture.py", "fixture-venv", "tiny-chat", id="tiny-chat"),
    pytest.param("build_standins.py", "standin-venv", "standins", id="standins"),
]
"""(script, its venv under build/, the committed folder under tests/fixtures)."""


@pytest.mark.long
@pytest.mark.parametrize(("script", "venv", "folder"), BUILDERS)
def test_the_builder_rebuilds_the_committed_files_byte_identically(
    tmp_path: Path, script: str, venv: str, folder: str
) -> None:
    out = tmp_path / folder
    rebuild(script, venv, out)
    committed = file_hashes(FIXTURES / folder)
    assert committed, f"nothing committed in tests/fixtures/{folder}"
    assert differences(committed, file_hashes(out)) == []
