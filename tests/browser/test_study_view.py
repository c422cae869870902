"""The page's Study view (issues 34 and 41): a study folder the test makes — a synthetic
model on the two easiest rungs of `subject-ladder`, one seed (`python -m pyapp matrix`, then
`python -m pyapp study`: synthetic cells run natively in seconds, never model evidence) —
opened from its study.json: the answer first, each condition's verdicts as the study's
answers say them, and both predictors' reliability diagram drawn by Python."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_helpers import Booted, open_app
from playwright.sync_api import Browser, Page
from test_accessibility import audit

from pyapp.cli.main import main

pytestmark = pytest.mark.browser

PLAN = """name = "page study: size-dependent on subject-ladder rungs 1-2, one seed"
[axes]
models = ["size-dependent"]
seeds = [5]
presets = ["subject-ladder"]
conditions = [["model-only", "controlled-chain"]]
[[exclude]]
preset = "subject-ladder/3"
[[exclude]]
preset = "subject-ladder/4"
"""


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A study folder: the matrix's cells and the study's study.json."""
    base = tmp_path_factory.mktemp("study")
    plan = base / "plan.toml"
    plan.write_text(PLAN, "utf-8")
    out = base / "runs"
    assert main(["matrix", str(plan), "--out", str(out)]) == 0
    assert main(["study", str(out)]) == 0
    return out / "study.json"


@pytest.fixture(scope="module")
def page(browser: Browser, site_url: str) -> Iterator[Page]:
    booted: Booted = open_app(browser, site_url)
    yield booted.page
    booted.context.close()
    assert not booted.log.offenders, booted.log.offenders


def opened(page: Page, path: Path) -> str:
    page.eval_on_selector("#study-status", "status => (status.textContent = '')")
    page.set_input_files("#study-file", str(path))
    page.wait_for_function(
        "() => /shown below|Cannot|not a study/"
        ".test(document.querySelector('#study-status').textContent)",
        timeout=120_000,
    )
    return page.inner_text("#study-status")


def test_the_study_view_shows_the_answer_first_and_both_reliabilities(
    page: Page, study: Path, tmp_path: Path
) -> None:
    document = json.loads(study.read_text("utf-8"))
    status = opened(page, study)
    assert "the study's answer is shown below" in status, status
    assert page.inner_text("#study-answer") == document["answer"][0]
    # the answer comes before any group's figures
    order = page.eval_on_selector_all(
        "#study-view-body > *", "nodes => nodes.map(n => n.id || n.className || n.tagName)"
    )
    assert order.index("study-answer") < order.index("study-group")
    [group] = document["groups"]
    said = {(a["condition"], a["predictor"]): a["verdict"] for a in group["answers"]}
    rows = page.eval_on_selector_all(
        "#study-view-body table.verdict-table tbody tr",
        "rows => rows.map(r => [r.dataset.condition, r.cells[1].firstChild.textContent,"
        " r.cells[2].firstChild.textContent])",
    )
    assert rows == [
        [c, said[(c, "product")], said[(c, "state-aware")]]
        for c in ("model-only", "controlled-chain")
    ]
    for condition in ("model-only", "controlled-chain"):
        figure = f'#study-view-body figure[data-condition="{condition}"]'
        for predictor in ("product", "state-aware"):
            cells = page.locator(f'{figure} svg g[data-predictor="{predictor}"] .cell')
            assert cells.count() >= 1, (condition, predictor)
        assert "Reliability of both predictors" in page.text_content(f"{figure} svg")
        assert page.locator(f"{figure} .plot-export button").count() == 2
    page.locator("#study").screenshot(path=str(tmp_path / "study.png"))
    audit(page, "a study opened in the Study view")


def test_a_file_that_is_not_a_study_is_refused_in_one_line(page: Page, tmp_path: Path) -> None:
    other = tmp_path / "trace.json"
    other.write_text(json.dumps({"kind": "composition-lab-trace"}), "utf-8")
    assert "is not a study.json" in opened(page, other)
    assert page.is_hidden("#study-view-body")
    bad = tmp_path / "study.json"
    bad.write_text(json.dumps({"kind": "composition-lab-study", "schema_version": "study/9"}))
    assert "this page reads study/1, study/2" in opened(page, bad)
