"""The conditions are one table (`pyapp.records.trial.CONDITIONS`, issue 40): the condition
type, the runners' lists, the page's checkboxes, the plots' colours, the matrix's folder
names and what each condition's model writes are read from it, and no other table of the
conditions is written anywhere in `pyapp`."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

from pyapp.browser import ANSWER_KINDS
from pyapp.conditions import ALL_CONDITIONS, MODEL_CONDITIONS
from pyapp.matrix import CONDITION_ABBREVIATIONS
from pyapp.protocol import CONDITION_LABELS
from pyapp.records import CONDITIONS, Condition
from pyapp.report import COLOURS

ROOT = Path(__file__).resolve().parents[1]
NAMES = set(get_args(Condition))
INDEPENDENT = {"pyapp/synthetic/targets.py"}
"""The validation's expectations, which read nothing of the code under test on purpose."""


def test_everything_said_of_a_condition_comes_from_the_one_table() -> None:
    assert [c.name for c in CONDITIONS] == list(CONDITION_LABELS)  # the page's order
    assert {c.name for c in CONDITIONS} == NAMES == set(ALL_CONDITIONS)
    assert ALL_CONDITIONS[0] == "supplied-program" and "supplied-program" not in MODEL_CONDITIONS
    for c in CONDITIONS:
        assert CONDITION_LABELS[c.name] == c.label
        assert CONDITION_ABBREVIATIONS[c.name] == c.short
        assert ANSWER_KINDS[c.name] == c.answer
        assert (c.name in MODEL_CONDITIONS) == c.model
        if c.model:
            assert COLOURS[c.name] == c.colour


def tables_of_conditions(path: Path) -> list[int]:
    """Lines of dict, tuple, list or set literals in `path` naming three or more conditions."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Dict):
            items = node.keys
        elif isinstance(node, ast.Tuple | ast.List | ast.Set):
            items = node.elts
        else:
            continue
        named = {i.value for i in items if isinstance(i, ast.Constant) and i.value in NAMES}
        if len(named) >= 3:
            found.append(node.lineno)
    return found


def test_no_other_table_of_the_conditions_is_written() -> None:
    written = {}
    for path in sorted((ROOT / "pyapp").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name not in INDEPENDENT and tables_of_conditions(path):
            written[name] = tables_of_conditions(path)
    # the Literal of the type, checked against the table when the module is imported
    assert list(written) == ["pyapp/records/trial.py"]
    assert len(written["pyapp/records/trial.py"]) == 1


def test_the_scan_finds_a_second_table(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        'COLOURS = {"model-only": "#1", "model-program": "#2", "controlled-chain": "#3"}\n',
        encoding="utf-8",
    )
    assert tables_of_conditions(probe) == [1]
