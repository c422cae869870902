"""The validation catches bugs: a named subset of the mutants of scripts/mutants.py, one per
area, each killed by the validation itself (not by a unit test) — metric mutants judged on
one shared run, simulator mutants on a reduced run of their structure. A change that blinds
the validation to any of them fails here. (The whole table is a bench: `python
scripts/mutants.py`, docs/validation.md.)"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def mutants_module():
    spec = importlib.util.spec_from_file_location("mutants", ROOT / "scripts" / "mutants.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutants"] = module
    spec.loader.exec_module(module)
    return module


def test_every_mutant_changes_one_line_that_exists_once():
    module = mutants_module()
    names = [m.name for m in module.MUTANTS]
    assert len(names) == len(set(names))
    counted = [m for m in module.MUTANTS if not m.equivalent]
    assert len(counted) >= 20
    for m in module.MUTANTS:
        text = (ROOT / m.file).read_text(encoding="utf-8")
        assert text.count(m.old) == 1, m.name
        assert m.old != m.new and m.old.count("\n") == m.new.count("\n"), m.name
    ci = [m for m in counted if m.ci]
    assert len(ci) >= 8 and len({m.area for m in ci}) >= 8  # one per area


def test_the_ci_subset_of_mutants_is_killed_by_the_validation():
    script = str(ROOT / "scripts" / "mutants.py")
    done = subprocess.run(
        [sys.executable, script, "--ci", "--seeds", "ci", "--no-write", "--jobs", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    module = mutants_module()
    for m in module.MUTANTS:
        if m.ci and not m.equivalent:
            assert any(
                line.startswith("KILLED") and f" {m.name} " in line
                for line in done.stdout.splitlines()
            ), (m.name, done.stdout)


def test_the_extended_routes_have_ci_mutants_judged_on_their_own_list():
    """The determinant and derivative routes exist only under chain-extended/1: their
    mutants run (in the CI subset) on `ci-extended`, whose validation runs that protocol,
    one at least naming each new route's family."""
    from pyapp.synthetic import SEED_LISTS, list_protocol

    module = mutants_module()
    mine = [m for m in module.MUTANTS if m.seeds == "ci-extended"]
    assert "ci-extended" in SEED_LISTS
    assert list_protocol("ci-extended").version == "chain-extended/1"
    assert len(mine) >= 4 and all(m.ci and m.kind == "simulator" for m in mine)
    changed = " ".join(m.old + m.new for m in mine)
    assert "triangle_determinant" in changed and "two" in changed
