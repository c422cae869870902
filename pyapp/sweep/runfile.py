"""run.json: what ran, how, and how it ended (docs/sweep.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyapp.cli.common import write_atomically
from pyapp.sweep.errors import SetupError

RUN_SCHEMA = "sweep-run/1"


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def dump(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


@dataclass
class RunFile:
    """run.json: what ran, how, and how it ended. Rewritten atomically on every change."""

    path: Path
    data: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> RunFile:
        try:
            data = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError) as error:
            raise SetupError("nothing_to_resume", f"cannot read {path}: {error}") from None
        if not isinstance(data, dict) or data.get("schema_version") != RUN_SCHEMA:
            raise SetupError("nothing_to_resume", f"{path} is not a sweep's run.json")
        return cls(path, data)

    def save(self) -> None:
        write_atomically(self.path, dump(self.data))

    @property
    def session(self) -> dict[str, Any]:
        sessions: list[dict[str, Any]] = self.data["sessions"]
        return sessions[-1]
