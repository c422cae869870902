"""scripts/hooks/commit-msg: subjects of at most 72 characters, a blank second line."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

HOOK = Path(__file__).resolve().parent.parent / "scripts" / "hooks" / "commit-msg"


def _run(tmp_path: Path, message: str) -> int:
    path = tmp_path / "MSG"
    path.write_text(message, encoding="utf-8")
    return subprocess.run(["bash", str(HOOK), str(path)], capture_output=True).returncode


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("Short subject\n", 0),
        ("Short subject\n\nA body line as long as it likes: " + "z" * 90 + "\n", 0),
        ("x" * 72 + "\n", 0),
        ("x" * 73 + "\n", 1),
        ("Subject\nbody without a blank line\n", 1),
        ("Merge branch '" + "y" * 80 + "'\n", 0),
    ],
)
def test_the_hook_judges_the_subject(tmp_path: Path, message: str, code: int) -> None:
    assert _run(tmp_path, message) == code
