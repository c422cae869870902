"""Open a trace, compare runs, and the address that reproduces a setup (issue 17); an opened
run labelled what it is — synthetic, fixture — in every place it is shown (issue 16).

No model is loaded: the opened runs are made natively with a scripted adapter (a TEST
FIXTURE, never model evidence), written to disk, and picked with the page's file input. The
page's Python re-derives them; nothing leaves 127.0.0.1 (the conftest guard).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from browser_helpers import Booted, open_app
from playwright.sync_api import Browser, Locator, Page
from test_accessibility import audit
from test_integrity import as_trace_1

from pyapp.browser import run_plots
from pyapp.experiment import Sweep, freeze, run_phase
from pyapp.predict import read_predictions, score_trace
from pyapp.records import (
    EVIDENCE_LABELS,
    EVIDENCE_NOTES,
    TEST_FIXTURE_CONFIGS,
    Caps,
    ScriptedAdapter,
    ScriptedReply,
    to_json,
)
from pyapp.tasks import TaskParams, generate, preset_params

pytestmark = pytest.mark.browser

SMALL = TaskParams(primitives_per_op=1, probe_pairs=1, recurrence_steps=(2,), determinants=1)


def sevens(prompt: str, caps: Caps) -> ScriptedReply:
    return ScriptedReply("7", input_tokens=20, output_tokens=1, generation_ms=5.0)


def finished_run(folder: Path, seed: int, **changed: object) -> Path:
    """A small finished run (model-only), written as a sweep writes it."""
    model = ScriptedAdapter(sevens)
    params = dataclasses.replace(SMALL, seed=seed, **changed)  # type: ignore[arg-type]
    sweep = Sweep(params=params, conditions=("model-only",), model=model.provenance)

    async def protocol() -> None:
        await run_phase(sweep, "measure", model)
        freeze(sweep)
        await run_phase(sweep, "heldout", model)

    with ThreadPoolExecutor(max_workers=1) as pool:  # playwright's loop owns this thread
        pool.submit(asyncio.run, protocol()).result()
    folder.mkdir(parents=True)
    trace = sweep.trace()
    (folder / "trace.json").write_text(json.dumps(to_json(trace)), "utf-8")
    (folder / "predictions.json").write_text(json.dumps(to_json(score_trace(trace))), "utf-8")
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("opened")
    return finished_run(base / "A", 1729), finished_run(base / "B", 7)


@pytest.fixture(scope="module")
def viewer(browser: Browser, site_url: str) -> Iterator[Booted]:
    booted = open_app(browser, site_url)
    yield booted
    booted.context.close()
    assert not booted.log.offenders, booted.log.offenders


def rows(page: Page, selector: str) -> int:
    count: int = page.eval_on_selector_all(f"{selector} tbody tr", "rows => rows.length")
    return count


def opened(page: Page, files: list[Path]) -> str:
    page.eval_on_selector("#open-status", "status => (status.textContent = '')")
    page.set_input_files("#open-files", [str(f) for f in files])
    page.wait_for_function(
        "() => /re-derived|mismatch|Cannot|Open one/.test("
        "document.querySelector('#open-status').textContent)",
        timeout=60_000,
    )
    return page.inner_text("#open-status")


def test_open_a_trace_shows_it_as_a_live_run(viewer: Booted, runs: tuple[Path, Path]) -> None:
    page = viewer.page
    a, _ = runs
    trace = json.loads((a / "trace.json").read_text("utf-8"))
    status = opened(page, [a / "trace.json", a / "predictions.json"])
    assert status.startswith("trace.json: ok: ") and "trials re-derived exactly" in status, status
    assert "every number in the predictions document re-derived exactly" in status
    assert page.get_attribute("#experiment", "data-state") == "viewing"
    assert "test fixture — not model evidence" in page.inner_text("#viewing-text")
    details = page.inner_text("#viewing-details")  # in step 4, beside the run's results
    assert trace["run"]["run_id"] in details and "Interruptions: none." in details
    assert "Journal: no entries." in details
    assert "test fixture — not model evidence" in page.inner_text("#open-view")
    assert rows(page, "#sweep-results") == len(trace["trials"])
    heldout = [t for t in trace["tasks"] if t["split"] == "heldout"]
    assert rows(page, "#predictions-table") == len(heldout)
    assert page.locator("#plot-calibration svg").count() == 1
    assert page.locator("#freeze-view article.frozen").count() == 1
    assert page.is_disabled("#sweep-freeze") and page.is_disabled("#download-receipt-results")
    # the downloads are the shown run's own: its trace as opened, the predictions derived
    with page.expect_download() as caught:
        page.click("#download-predictions")
    saved = json.loads(Path(caught.value.path()).read_text("utf-8"))
    assert saved == json.loads((a / "predictions.json").read_text("utf-8"))
    assert caught.value.suggested_filename == f"predictions-fixture-{trace['run']['run_id']}.json"
    page.click("#sweep-results tbody button")
    assert page.is_visible("#record-dialog")
    page.keyboard.press("Escape")
    audit(page, "an opened trace")

    # A tampered observation: every mismatch is listed, nothing is "re-derived exactly".
    trace["trials"][0]["result"] = 123456789
    bad = a.parent / "tampered.json"
    bad.write_text(json.dumps(trace), "utf-8")
    status = opened(page, [bad])
    assert "mismatch(es): the trace does not re-derive" in status, status
    assert page.locator("#open-view ul.mismatches li").count() >= 1
    # named as a person looks for it: the trial and the field, never `$.trials[0]`
    listed = page.inner_text("#open-view ul.mismatches")
    assert f"{trace['trials'][0]['trial_id']} · result" in listed and "$.trials[" not in listed

    page.click("#viewing-close")
    assert page.get_attribute("#experiment", "data-state") != "viewing"
    assert rows(page, "#sweep-results") == 0
    assert "Open one trace.json" in opened(page, [a / "predictions.json"])


def brier(page: Page) -> str:
    """The final-answer Brier score of the scores table's first row."""
    cell: str = page.eval_on_selector(
        "#scores table.scores-table tbody tr", "r => r.cells[2].textContent"
    )
    return cell


def test_a_tampered_verdict_is_never_drawn_or_scored(
    viewer: Booted, runs: tuple[Path, Path]
) -> None:
    """Issue 25 items 1-3: a held-out trial's `correct` flipped to true is shown and scored as
    re-derived (wrong), with the recorded value beside it and the verdict at the top of step
    4; a predictions document of another run is one plain line; a failed open clears the old
    result and says "not valid JSON"."""
    page = viewer.page
    a, b = runs
    trace = json.loads((a / "trace.json").read_text("utf-8"))
    index, tampered = next(
        (i, t) for i, t in enumerate(trace["trials"]) if t["trial_id"] == "model-only/recurrence-1"
    )
    assert tampered["correct"] is False
    opened(page, [a / "trace.json"])
    honest = brier(page)
    tampered["correct"] = True
    bad = a.parent / "flipped.json"
    bad.write_text(json.dumps(trace), "utf-8")
    status = opened(page, [bad])
    assert "mismatch(es)" in status, status
    listed = page.inner_text("#open-view ul.mismatches")
    assert "model-only/recurrence-1 · correct: recorded true, re-derived false" in listed, listed
    assert f"$.trials[{index}]" not in listed
    verdict = page.inner_text("#viewing-verdict")
    assert verdict.startswith("✗ flipped.json failed re-derivation"), verdict
    row = page.locator('#sweep-results tr[data-trial-id="model-only/recurrence-1"]')
    assert (
        row.locator("td").nth(2).inner_text().startswith("wrong (re-derived; recorded correct true")
    )
    predicted = page.locator('#predictions-table tr[data-trial-id="model-only/recurrence-1"]')
    assert predicted.locator("td").nth(6).inner_text() == "no"  # final correct, as re-derived
    assert brier(page) == honest  # scored from the re-derived verdict, never the recorded one
    audit(page, "an opened trace that fails re-derivation")

    # A predictions document of another run: one plain line, not a list of mismatches.
    status = opened(page, [a / "trace.json", b / "predictions.json"])
    assert "of another run: run ids differ" in status, status
    assert page.locator("#open-view ul.mismatches").count() == 0
    assert "✓ The trace re-derived exactly" in page.inner_text("#open-view")
    assert "✗ The opened predictions.json is not this run's" in page.inner_text("#open-view")

    # A failed open clears the previous result.
    broken = a.parent / "broken.json"
    broken.write_text("{not json", "utf-8")
    status = opened(page, [broken])
    assert status == "Cannot open broken.json: not valid JSON.", status
    assert page.is_hidden("#open-view")
    assert page.get_attribute("#experiment", "data-state") != "viewing"
    assert rows(page, "#sweep-results") == 0


# Every place of the page that labels an opened run: (what, selector). Each must carry the run's
# evidence label; a place drawn per item (rows, profiles) is checked item by item below.
LABELLED = [
    ("the Open-a-trace panel's evidence line", "#open-view > p.fixture-label"),
    ("the opened run's provenance in step 4", "#viewing-details dl.facts"),
    ("the viewing banner", "#viewing-text"),
    ("the experiment's evidence notice", "#experiment-evidence"),
    ("the results caption", "#sweep-results-caption"),
]
SCORED = [
    ("the predictions caption", "#predictions-caption"),
    ("the scores", "#scores > p.fixture-label"),
]


def mislabelled(page: Page, label: str, scored: bool) -> list[str]:
    """Every place of the opened run that lacks `label`, or calls it model evidence
    (`scored`: the run has predictions and scores to show)."""
    places = LABELLED + SCORED if scored else LABELLED
    wrong = [what for what, selector in places if label not in page.inner_text(selector)]
    if not page.is_visible("#experiment-evidence"):
        wrong.append("the experiment's evidence notice is hidden")
    model_rows = page.eval_on_selector_all(
        "#sweep-results tbody tr:not([data-condition='supplied-program'])",
        "rows => rows.map(r => [r.cells[1].textContent, r.cells[1].className])",
    )
    wrong += [f"results row {text!r}" for text, cls in model_rows if label not in text]
    wrong += [f"results row class {cls!r}" for _, cls in model_rows if cls != "fixture-label"]
    heads = page.eval_on_selector_all("#freeze-view article h4", "hs => hs.map(h => h.textContent)")
    wrong += [f"frozen profile {head!r}" for head in heads if label not in head]
    sentence = label[0].upper() + label[1:] + "."
    for plot in ("#plot-calibration", "#plot-cost") if scored else ():
        if page.inner_html(plot).count(sentence) != 1:
            wrong.append(f"{plot} lacks {sentence!r}")
    page.click("#sweep-results tbody tr:not([data-condition='supplied-program']) button")
    for what in ("#record-heading", "#record-body dl.facts"):
        if label not in page.inner_text(what):
            wrong.append(f"the raw record ({what})")
    page.keyboard.press("Escape")
    # "model evidence" appears only as "not model evidence" in everything the run is shown in
    for selector in ("#open-view", "#experiment"):
        for match in re.finditer("model evidence", page.inner_text(selector)):
            if not page.inner_text(selector)[: match.start()].endswith("not "):
                wrong.append(f"{selector} says model evidence")
    return wrong


@pytest.fixture(scope="module")
def synthetic_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of a synthetic validation model made by `python -m pyapp simulate`."""
    out = tmp_path_factory.mktemp("simulated")
    command = [sys.executable, "-m", "pyapp", "simulate", "--model", "size-dependent"]
    subprocess.run([*command, "--seeds", "3..3", "--out", str(out)], check=True)
    return out / "seed-3"


def relabelled_standin(run: Path) -> Path:
    """A fixture run whose trace claims to be model evidence from a hub, served a stand-in
    (its config.json hash is a test fixture's): the page must still show a test fixture."""
    trace = json.loads((run / "trace.json").read_text("utf-8"))
    model = trace["model"]
    model.update(source="hub", evidence="model", config_sha256=sorted(TEST_FIXTURE_CONFIGS)[0])
    for trial in trace["trials"]:
        if trial["evidence"] == "fixture":
            trial["evidence"] = "model"
            trial["evidence_note"] = EVIDENCE_NOTES["model"]
    out = run.parent / "standin-relabelled.json"
    out.write_text(json.dumps(trace), "utf-8")
    return out


def test_a_trace_1_document_opens_and_a_contradicted_header_is_one_line(
    viewer: Booted, runs: tuple[Path, Path]
) -> None:
    """An older trace opens as `reproduce` reads it (upgraded); a trace/2 body whose header
    says trace/1 is refused in one line naming `$.schema_version`."""
    page = viewer.page
    a, _ = runs
    trace = json.loads((a / "trace.json").read_text("utf-8"))
    old = a.parent / "trace-1.json"
    old.write_text(json.dumps(as_trace_1(trace)), "utf-8")
    status = opened(page, [old])
    assert status.startswith("trace-1.json: ok: ") and "trials re-derived exactly" in status, status
    assert rows(page, "#sweep-results") == len(trace["trials"])
    relabelled = a.parent / "relabelled.json"
    relabelled.write_text(json.dumps({**trace, "schema_version": "trace/1"}), "utf-8")
    status = opened(page, [relabelled])
    assert "$.schema_version: says 'trace/1'" in status and "re-derived" not in status, status
    # a refused open leaves nothing of the previous run on the page (issue 25 item 3)
    assert page.get_attribute("#experiment", "data-state") != "viewing"
    assert page.is_hidden("#open-view")


@pytest.mark.parametrize("kind", ["synthetic", "fixture", "stand-in relabelled model"])
def test_an_opened_run_is_labelled_what_it_is_everywhere(
    viewer: Booted, runs: tuple[Path, Path], synthetic_run: Path, kind: str
) -> None:
    """Issue 16: a synthetic or fixture trace never looks like model evidence on the page."""
    page = viewer.page
    if kind == "synthetic":
        files = [synthetic_run / "trace.json", synthetic_run / "predictions.json"]
        label, expected = EVIDENCE_LABELS["synthetic"], "re-derived exactly"
    elif kind == "fixture":
        files = [runs[0] / "trace.json", runs[0] / "predictions.json"]
        label, expected = EVIDENCE_LABELS["fixture"], "re-derived exactly"
    else:
        files = [relabelled_standin(runs[0])]
        label, expected = EVIDENCE_LABELS["fixture"], "mismatch(es)"
    status = opened(page, files)
    assert expected in status, status
    assert page.get_attribute("#experiment", "data-state") == "viewing"
    assert rows(page, "#sweep-results") == len(json.loads(files[0].read_text("utf-8"))["trials"])
    scored = kind != "stand-in relabelled model"
    if not scored:
        assert "is a test fixture's" in page.inner_text("#open-view ul.mismatches")
        # its freeze no longer re-derives: no prediction or score is drawn at all
        assert "cannot be derived" in page.inner_text("#open-view")
        assert page.inner_text("#predictions-caption") == "No predictions yet."
        assert page.locator("#scores table, #plot-calibration svg").count() == 0
    else:
        assert page.locator("#freeze-view article h4").count() >= 1
        # Python's lines lead the scores: the degenerate flags, then the descriptive answer
        doc = read_predictions(json.loads(files[1].read_text("utf-8")))
        drawn = run_plots(doc, doc.evidence)
        assert drawn is not None
        lines = page.eval_on_selector_all("#scores > p", "ps => ps.map(p => p.textContent)")
        expected_lines = [*drawn.flags, *drawn.answers]
        assert lines[: len(expected_lines)] == expected_lines and expected_lines
    assert mislabelled(page, label, scored) == []
    page.click("#viewing-close")


def test_compare_runs_side_by_side(viewer: Booted, runs: tuple[Path, Path]) -> None:
    page = viewer.page
    a, b = runs
    named = []
    for run in (a, b):  # one file dialog picks from one folder: distinct names
        named.append(run.parent / f"{run.name}-predictions.json")
        named[-1].write_text((run / "predictions.json").read_text("utf-8"), "utf-8")
    page.set_input_files("#compare-files", [str(path) for path in named])
    page.wait_for_function(
        "() => document.querySelector('#compare-status').textContent.includes('side by side')",
        timeout=60_000,
    )
    text = page.inner_text("#compare-view")
    assert "not a confirmatory model comparison" in text
    # 1729 vs 7 under the same parameters: pooled, the seeds named (issue 23 §5)
    assert "pooled under the same task parameters (seeds" in text
    body = page.eval_on_selector_all(
        "#compare-view table.compare-table tbody tr",
        "rows => rows.map(r => r.cells[0].textContent)",
    )
    assert set(body) == {"A-predictions", "B-predictions"}  # named as the CLI names them
    assert page.locator("#compare-view figure svg").count() == 4

    # Issue 25 item 7: a compact summary leads (one row per run and condition, both
    # predictors' Brier with intervals), the full table folded below it, plots on shared axes.
    first = page.eval_on_selector("#compare-view .table-wrap table", "t => t.className")
    assert "compare-summary" in first
    header = page.eval_on_selector_all(
        "#compare-view table.compare-summary thead th", "hs => hs.map(h => h.textContent)"
    )
    assert header[:4] == ["run", "evidence", "condition", "n"]
    assert "Brier, product [95%]" in header and "product − state-aware [95%]" in header
    summary = page.eval_on_selector_all(
        "#compare-view table.compare-summary tbody tr",
        "rows => rows.map(r => r.cells[0].textContent)",
    )
    assert summary[:2] == ["A-predictions", "B-predictions"]
    assert "across runs (seeds)" in summary  # with its definition, as the matrix says it
    assert "each run's Brier(product) − Brier(state-aware) paired over" in text
    assert page.is_hidden("#compare-view table.compare-table")  # folded under "All rows"
    ticks = page.eval_on_selector_all(
        "#compare-view figure",
        "fs => fs.map(f => [...f.querySelectorAll('svg text.tick')].map(t => t.textContent))",
    )
    assert ticks[0] == ticks[1]  # the same axes in every run's figure
    sticky = page.eval_on_selector(
        "#compare-view table.compare-summary tbody tr > :first-child",
        "c => getComputedStyle(c).position",
    )
    assert sticky == "sticky"
    audit(page, "two runs compared")

    # the same run twice: warned
    page.eval_on_selector("#compare-status", "status => (status.textContent = '')")
    twice = a.parent / "A-again-predictions.json"
    twice.write_text((a / "predictions.json").read_text("utf-8"), "utf-8")
    page.set_input_files("#compare-files", [str(named[0]), str(twice)])
    page.wait_for_function(
        "() => document.querySelector('#compare-status').textContent.includes('side by side')",
        timeout=60_000,
    )
    assert "it is compared with itself" in page.inner_text("#compare-view")


def shown_inner(locator: Locator) -> str:
    """The plot shown on screen, serialised: its children, without its own tag."""
    text = locator.evaluate("svg => new XMLSerializer().serializeToString(svg)")
    return str(text).split(">", 1)[1]


def test_every_compared_plot_exports_itself(viewer: Booted, runs: tuple[Path, Path]) -> None:
    """Issue 41: "export SVG / PNG" beside every plot, Compare's too: each button downloads
    that plot (the SVG as shown, the PNG at 2× from it), named after the plot and the run."""
    page = viewer.page
    named = []
    for run in runs:
        named.append(run.parent / f"{run.name}-export-predictions.json")
        named[-1].write_text((run / "predictions.json").read_text("utf-8"), "utf-8")
    page.eval_on_selector("#compare-status", "status => (status.textContent = '')")
    page.set_input_files("#compare-files", [str(path) for path in named])
    page.wait_for_function(
        "() => document.querySelector('#compare-status').textContent.includes('side by side')",
        timeout=60_000,
    )
    plots = page.locator("#compare-view figure svg")
    assert plots.count() == 4
    assert page.locator("#compare-view figure .plot-export").count() == 4  # one per plot
    exported = []
    for i in range(plots.count()):
        svg = plots.nth(i)
        holder = svg.locator("xpath=..")
        kind = holder.get_attribute("data-plot")
        run = holder.locator("xpath=..").locator("figcaption").inner_text()
        with page.expect_download() as caught:
            holder.locator(".plot-export button:has-text('Export SVG')").click()
        name = caught.value.suggested_filename
        text = Path(caught.value.path()).read_text("utf-8")
        assert name == f"{kind}-{run}.svg", name
        assert text.startswith("<svg") and 'xmlns="http://www.w3.org/2000/svg"' in text
        assert text.split(">", 1)[1] == shown_inner(svg), name  # the plot as shown
        width, height = svg.evaluate("s => [s.viewBox.baseVal.width, s.viewBox.baseVal.height]")
        with page.expect_download() as caught:
            holder.locator(".plot-export button:has-text('Export PNG')").click()
        assert caught.value.suggested_filename == f"{kind}-{run}.png"
        png = Path(caught.value.path()).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        size = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
        assert size == (2 * width, 2 * height), name
        exported.append(name)
    assert sorted(exported) == sorted(
        f"{kind}-{run.name}-export-predictions.svg"
        for run in runs
        for kind in ("calibration", "cost")
    )
    audit(page, "compared runs with their export buttons")


def test_compared_runs_are_labelled_what_they_are(
    viewer: Booted, runs: tuple[Path, Path], synthetic_run: Path
) -> None:
    page = viewer.page
    sources = {"fixture": runs[0], "synthetic": synthetic_run}
    named = []
    for kind, run in sources.items():
        named.append(runs[0].parent / f"{kind}-predictions.json")
        named[-1].write_text((run / "predictions.json").read_text("utf-8"), "utf-8")
    page.eval_on_selector("#compare-status", "status => (status.textContent = '')")
    page.set_input_files("#compare-files", [str(path) for path in named])
    page.wait_for_function(
        "() => document.querySelector('#compare-status').textContent.includes('side by side')",
        timeout=60_000,
    )
    figures = page.eval_on_selector_all(
        "#compare-view figure",
        """fs => fs.map(f => [f.querySelector('figcaption').textContent,
             [...f.querySelectorAll('svg text.fixture')].map(t => t.textContent)])""",
    )
    fixture = EVIDENCE_LABELS["fixture"].capitalize() + "."
    synthetic = EVIDENCE_LABELS["synthetic"].capitalize() + "."
    assert dict(figures) == {
        "fixture-predictions": [fixture, fixture],
        "synthetic-predictions": [synthetic, synthetic],
    }


def test_the_address_reproduces_a_setup(browser: Browser, site_url: str) -> None:
    setup = "seed=7&conditions=model-only,controlled-chain&preset=calibration-60&model=fixture"
    url = f"{site_url}?{setup}"
    booted = open_app(browser, url)
    try:
        page = booted.page
        checked = page.eval_on_selector_all(
            'input[name="condition"]:checked', "boxes => boxes.map(b => b.value)"
        )
        assert checked == ["model-only", "controlled-chain"]
        assert page.input_value("#preset") == "calibration-60"
        page.wait_for_function(
            "() => document.querySelector('#model-choice').value === 'fixture'", timeout=30_000
        )
        sixty = len(generate(preset_params("calibration-60", 7)))
        assert page.inner_text("#tasks-caption") == f"Seed 7: {sixty} tasks"
        assert not booted.log.requested("/models/fixture/")  # chosen, never loaded
        page.select_option("#preset", "design")
        page.wait_for_function(
            "() => document.querySelector('#tasks-caption').textContent === 'Seed 7: 24 tasks'"
        )
        query = {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}
        assert query["conditions"] == "model-only,controlled-chain" and query["preset"] == "design"
        assert query["seed"] == "7" and query["model"] == "fixture"
    finally:
        booted.context.close()


def test_compare_in_the_page_says_what_the_command_line_says(
    viewer: Booted, runs: tuple[Path, Path], tmp_path: Path
) -> None:
    """Issue 41: the page shows `compare`'s refusal line first, then the lines
    `compare --describe-anyway` prints before its tables, the same words."""
    page = viewer.page
    a, _ = runs
    other = finished_run(tmp_path / "other", 1729, recurrence_steps=(3,))
    files = [a / "predictions.json", other / "predictions.json"]
    named = [tmp_path / "A.json", tmp_path / "other.json"]  # the CLI names runs by file stem
    for source, target in zip(files, named, strict=True):
        target.write_text(source.read_text("utf-8"), "utf-8")
    cli = [sys.executable, "-m", "pyapp", "compare", *map(str, named)]
    refused = subprocess.run(cli, capture_output=True, text=True, timeout=120)
    described = subprocess.run(
        [*cli, "--describe-anyway"], capture_output=True, text=True, timeout=120
    )
    assert refused.returncode == 1 and described.returncode == 0
    page.eval_on_selector("#compare-status", "status => (status.textContent = '')")
    page.set_input_files("#compare-files", [str(path) for path in named])
    page.wait_for_function(
        "() => document.querySelector('#compare-status').textContent.includes('side by side')",
        timeout=60_000,
    )
    shown = page.eval_on_selector_all(
        "#compare-view > p.compare-refusal, #compare-view > p.compare-line",
        "ps => ps.map(p => p.textContent)",
    )
    assert refused.stderr.strip() == f"error: {shown[0]}"
    lead = described.stdout.split("\n\nSummary:")[0].split("\n\nAll rows:")[0]
    assert shown[1:] == lead.splitlines()
    assert shown[1].startswith("WARNING: task set unverified: A ")  # no trace given
    assert shown[3].startswith("DESCRIBED ANYWAY (--describe-anyway): task sets differ")
    assert any(line.startswith("NOT POOLED") for line in shown)
    summary = page.eval_on_selector_all(
        "#compare-view table.compare-summary tbody tr",
        "rows => rows.map(r => r.cells[0].textContent)",
    )
    assert "across runs (seeds)" not in summary  # different task sets are never pooled
