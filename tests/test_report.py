"""`python -m pyapp report RUN_DIR --out report.html` (issue 17): one self-contained file.

Run folders are made the way the page makes them — the session's requests through
`pyapp.browser.bridge`, with a scripted adapter (a TEST FIXTURE, never model evidence) — plus a
control folder made by `python -m pyapp run`. The report is read back with an HTML parser:
no tag or attribute that could load or run anything, and a hostile trace stays text.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from test_predict import known_model
from test_session import Page, call, document

from pyapp.browser import Session, bridge
from pyapp.records import ScriptedAdapter, ScriptedReply, to_json
from pyapp.report import el, escape, nice_ticks, span, tick_format

ROOT = Path(__file__).resolve().parent.parent
ALL_CONDITIONS = ["supplied-program", "model-only", "model-program", "controlled-chain"]
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>"\'</style><!--'

ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "nav", "main", "section",
    "article", "footer", "h1", "h2", "h3", "p", "strong", "code", "pre", "ul", "ol", "li", "a",
    "dl", "dt", "dd", "table", "caption", "thead", "tbody", "tr", "th", "td", "details",
    "summary", "figure", "svg", "g", "text", "line", "rect", "circle", "polygon",
}  # fmt: skip
"""Everything the report may contain: nothing here loads a resource or runs a script."""


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text of every <style>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(text: str) -> Tags:
    parser = Tags()
    parser.feed(text)
    parser.close()
    return parser


def assert_inert(text: str) -> Tags:
    """Nothing in the document can make a request or run a script."""
    parsed = parse(text)
    names = {tag for tag, _ in parsed.tags}
    assert names <= ALLOWED_TAGS, f"unexpected tags {names - ALLOWED_TAGS}"
    assert [t for t, _ in parsed.tags].count("style") == 1
    for tag, attrs in parsed.tags:
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name, value)
            assert name not in {"src", "srcset", "action", "formaction", "xlink:href", "style"}
            if name == "href":
                assert value is not None and value.startswith("#"), value
    csp = [a["content"] for t, a in parsed.tags if t == "meta" and "http-equiv" in a]
    assert csp and csp[0] is not None and csp[0].startswith("default-src 'none'")
    style = text.split("<style>", 1)[1].split("</style>", 1)[0]
    assert "url(" not in style and "@import" not in style
    return parsed


def report(folder: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pyapp", "report", str(folder), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def sweep_folder(folder: Path, page: Page, journal: str, extra: dict[str, Any]) -> Path:
    """Run every condition through the session's requests and write the folder as the
    sweep does: trace.json, predictions.json, run.json."""
    assert call(page, "journal_generate", prompt=journal)["ok"]
    assert call(page, "sweep_start", seed=1729, conditions=ALL_CONDITIONS)["ok"]
    assert not call(page, "sweep_run", phase="all")["result"]["cancelled"]
    trace = document(page, "sweep_trace", "trace")
    predictions = document(page, "sweep_predictions", "predictions")
    folder.mkdir(parents=True)
    (folder / "trace.json").write_text(json.dumps(trace), encoding="utf-8")
    (folder / "predictions.json").write_text(json.dumps(predictions), encoding="utf-8")
    record = {"schema_version": "sweep-run/1", "status": "finished", **extra}
    (folder / "run.json").write_text(json.dumps(record), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def fixture_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bridge, "SESSION", Session())
        page = Page(ScriptedAdapter(known_model))
        folder = tmp_path_factory.mktemp("runs") / "fixture-run"
        return sweep_folder(folder, page, "What is 2 + 2?", {"model": "fixture"})


@pytest.fixture(scope="module")
def fixture_report(fixture_run: Path) -> tuple[subprocess.CompletedProcess[str], str]:
    out = fixture_run / "report.html"
    done = report(fixture_run, out)
    return done, out.read_text(encoding="utf-8")


def test_the_report_of_a_fixture_run_holds_the_run(fixture_run: Path, fixture_report: Any) -> None:
    done, text = fixture_report
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"wrote {fixture_run / 'report.html'}; the run re-derives exactly"
    parsed = assert_inert(text)
    trace = json.loads((fixture_run / "trace.json").read_text(encoding="utf-8"))
    predictions = json.loads((fixture_run / "predictions.json").read_text(encoding="utf-8"))

    # The evidence label: in the title, and the first thing in the body after the heading.
    assert "TEST FIXTURE — NOT MODEL EVIDENCE" in text.split("</title>", 1)[0]
    body = text.split("<body>", 1)[1]
    assert body.index('id="evidence"') < body.index("<table")
    assert body.index('id="evidence"') < body.index('id="reproduce"')
    assert "Every number in this report is a pipeline check" in body

    assert 'id="reproduce" class="check-ok" data-ok="true"' in text
    assert f"✓ Re-derived exactly: 24 tasks and {len(trace['trials'])} trials" in text
    assert "✓ Every number in predictions.json re-derived exactly." in text

    # provenance, run.json, journal, tasks
    assert trace["run"]["run_id"] in text and "fixture/scripted" in text
    assert "Sweep record (run.json)" in text and "sweep-run/1" in text
    assert "What is 2 + 2?" in text
    rows = [a["data-trial-id"] for t, a in parsed.tags if t == "tr" and "data-trial-id" in a]
    assert rows == [t["trial_id"] for t in trace["trials"]]
    for task in trace["tasks"]:
        assert f'<th scope="row">{task["id"]}</th>' in text

    # profiles, predictions and scores: the predictions document's numbers
    for result in predictions["conditions"]:
        frozen = result["frozen"]
        assert f'data-sha256="{frozen["sha256"]}"' in text
        for op in frozen["profile"]["ops"]:
            cells = (
                f'<th scope="row">{op["op"]}</th><td>{op["trials"]}</td><td>{op["successes"]}</td>'
            )
            assert cells in text
            assert f"[{op['wilson_low']:.3f}, {op['wilson_high']:.3f}]" in text
        for p in result["predictions"]:
            if p["probability"] is not None:
                assert f"{p['probability']:.4f}" in text
        brier = result["scores"]["brier_final_proxy"]
        assert brier is None or f"{brier:.4f}" in text

    # both plots, inline, one marker per non-empty calibration cell plus the legend's
    svgs = text.count("<svg ")
    assert svgs == 2
    calibration = text.split("<svg ", 2)[1]
    # both predictors: the product's cells and the state-aware predictor's
    cells = sum(
        1
        for result in predictions["conditions"]
        for scores in (result["scores"], (result["state_aware"] or {}).get("scores"))
        if scores
        for key in ("calibration_final", "calibration_all_steps")
        if key == "calibration_final"
        or result["frozen"]["profile"]["condition"] == "controlled-chain"
        for cell in scores[key]
        if cell["n"]
    )
    assert calibration.count("n=") == cells > 0
    assert calibration.count('data-predictor="state-aware"') >= 1
    assert "Test fixture — not model evidence." in calibration
    # Points of several series fall on the same spot here: their "n=" labels must not print
    # over each other (10 px digits are at most 5.6 px wide, a line 11 px high).
    labels = [
        (float(x), float(y), 5.6 * len(text))
        for x, y, text in re.findall(
            r'<text x="([-\d.]+)" y="([-\d.]+)"[^>]*>(n=\d+)<', calibration
        )
    ]
    assert len(labels) == cells
    assert not [
        (a, b)
        for i, a in enumerate(labels)
        for b in labels[i + 1 :]
        if a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and abs(a[1] - b[1]) < 11
    ]


def test_the_report_makes_no_request(fixture_report: Any) -> None:
    _, text = fixture_report
    assert not re.search(r"(?i)(https?:|ftp:|data:|//[a-z0-9.-]+\.[a-z]{2,}/)", text)
    assert "<script" not in text.lower()


def test_a_control_run_from_the_command_line_is_labelled_a_control(tmp_path: Path) -> None:
    folder = tmp_path / "control"
    done = subprocess.run(
        [sys.executable, "-m", "pyapp", "run", "--condition", "supplied-program",
         "--out", str(folder / "trace.json")],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    made = report(folder, tmp_path / "r.html")
    assert made.returncode == 0, made.stderr
    text = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert_inert(text)
    assert "SUPPLIED-PROGRAM CONTROL — NOT MODEL EVIDENCE" in text.split("</title>", 1)[0]
    assert "No frozen profile in this trace" in text and "<svg" not in text
    assert "✓ Re-derived exactly: 24 tasks and 24 trials" in text


def hostile_model(prompt: str, caps: Any) -> ScriptedReply:
    return ScriptedReply(HOSTILE, input_tokens=10, output_tokens=3)


def test_a_hostile_trace_stays_text(tmp_path: Path) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bridge, "SESSION", Session())
        page = Page(ScriptedAdapter(hostile_model, name=HOSTILE))
        folder = sweep_folder(tmp_path / "hostile", page, HOSTILE, {HOSTILE: HOSTILE})
    trace = json.loads((folder / "trace.json").read_text(encoding="utf-8"))
    trace["run"]["run_id"] = HOSTILE  # and a mismatch whose message quotes it
    trace["trials"][0]["task_id"] = HOSTILE
    (folder / "trace.json").write_text(json.dumps(trace), encoding="utf-8")
    done = report(folder, tmp_path / "r.html")
    assert done.returncode == 1, done.stderr
    assert "does NOT re-derive" in done.stdout
    text = (tmp_path / "r.html").read_text(encoding="utf-8")
    parsed = assert_inert(text)
    assert "<script" not in text.lower() and "<img" not in text.lower()
    escaped = str(escape(HOSTILE))
    assert text.count(escaped) >= 5  # model id, completions, journal, run.json, run id
    assert HOSTILE in "".join(parsed.text)  # shown to the reader exactly as written
    assert 'data-ok="false"' in text and "mismatch" in text


def test_bad_input_is_one_line_and_status_1(tmp_path: Path) -> None:
    cases = {
        "missing": tmp_path / "nowhere",
        "empty": tmp_path / "empty",
        "not-json": tmp_path / "not-json",
        "not-a-trace": tmp_path / "not-a-trace",
        "too-deep": tmp_path / "too-deep",
    }
    cases["too-deep"].mkdir()
    (cases["too-deep"] / "trace.json").write_text("[" * 100_000, "utf-8")
    cases["empty"].mkdir()
    cases["not-json"].mkdir()
    (cases["not-json"] / "trace.json").write_text("{nope", encoding="utf-8")
    cases["not-a-trace"].mkdir()
    (cases["not-a-trace"] / "trace.json").write_text('{"schema_version": "trace/1"}', "utf-8")
    expected = {
        "missing": "is not a folder",
        "empty": "has no trace.json",
        "not-json": "cannot read",
        "not-a-trace": "is not a trace",
        "too-deep": "nested deeper than",
    }
    for name, folder in cases.items():
        done = report(folder, tmp_path / f"{name}.html")
        assert done.returncode == 1, (name, done.stdout, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and expected[name] in lines[0]
        assert not (tmp_path / f"{name}.html").exists()


def test_unwritable_output_and_a_tampered_predictions_file(
    fixture_run: Path, tmp_path: Path
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("", encoding="utf-8")
    done = report(fixture_run, blocked / "r.html")
    assert done.returncode == 2 and done.stderr.startswith("error: --out")
    assert len(done.stderr.strip().splitlines()) == 1

    folder = tmp_path / "tampered"
    folder.mkdir()
    for name in ("trace.json", "predictions.json"):
        (folder / name).write_text((fixture_run / name).read_text("utf-8"), "utf-8")
    predictions = json.loads((folder / "predictions.json").read_text("utf-8"))
    predictions["conditions"][0]["scores"]["brier_final_proxy"] = 0.123456
    (folder / "predictions.json").write_text(json.dumps(predictions), "utf-8")
    done = report(folder, tmp_path / "t.html")
    assert done.returncode == 1
    text = (tmp_path / "t.html").read_text("utf-8")
    assert "predictions.json: 1 mismatch(es)" in text and "0.123456" in text
    assert "0.1235" not in text.split('id="scores"', 1)[1]  # the derived numbers are shown


def test_markup_helpers_refuse_names_that_are_data() -> None:
    with pytest.raises(ValueError):
        el("p onclick=x")
    with pytest.raises(ValueError):
        el("p", {'title="x" onclick': "y"})
    assert el("p", {"title": '"><b>'}, "<b>") == '<p title="&quot;&gt;&lt;b&gt;">&lt;b&gt;</p>'
    assert [round(t, 9) for t in nice_ticks(0, 1)] == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert [round(t, 9) for t in nice_ticks(-0.04, 0.3)] == [0.0, 0.1, 0.2, 0.3]
    assert [tick_format(v, [0.0, 0.05]) for v in (0.0, 0.05, 0.1)] == ["0.00", "0.05", "0.10"]
    assert [tick_format(v, [0.0, 20.0]) for v in (0.0, 20.0)] == ["0", "20"]
    # every point at 0: the axis is zoomed to at least 0.1 around it, padded, never past 0
    low, high = span([0.0, 0.0], floor=0.0, ceil=1.0, min_width=0.1)
    assert abs(low + 0.008) < 1e-12 and abs(high - 0.108) < 1e-12


# ---- the page's viewer: open a trace, compare runs (same code as the CLI) ------------------


def test_open_run_re_derives_an_opened_trace(fixture_run: Path) -> None:
    from pyapp.browser import open_run
    from pyapp.report import RunInputError

    trace = json.loads((fixture_run / "trace.json").read_text("utf-8"))
    predictions = json.loads((fixture_run / "predictions.json").read_text("utf-8"))
    opened = to_json(open_run(trace, predictions))  # the reply's result, as sent
    assert opened["ok"] and opened["evidence"] == "fixture"
    assert opened["trace_mismatches"] == [] and opened["predictions_mismatches"] == []
    # derived from the trace alone, number for number
    assert json.loads(opened["predictions_json"]) == predictions
    assert opened["summary"] == (  # the lines `reproduce` prints (pyapp.audit.verdict)
        f"ok: 24 tasks and {len(trace['trials'])} trials re-derived exactly; "
        "ok: every number in the predictions document re-derived exactly from the trace"
    )
    assert open_run(trace).predictions_mismatches is None

    trace["trials"][3]["result"] = 12345  # a tampered observation
    tampered = to_json(open_run(trace, predictions))
    assert not tampered["ok"] and tampered["trace_mismatches"]
    # named by trial and field (issue 25), shown and scored as re-derived, recorded beside;
    # the hash chain breaks at the record after it (trace/3)
    named = trace["trials"][3]["trial_id"]
    found = tampered["trace_mismatches"]
    assert all(m.startswith(named) or "first broken link" in m for m in found if "summary" not in m)
    assert any("first broken link" in m for m in found)
    assert any(m.startswith(f"{named} · result: recorded 12345") for m in found)
    assert json.loads(tampered["trials_json"][3])["result"] != 12345
    assert {c["field"] for c in tampered["corrections"]} >= {"result"}
    with pytest.raises(RunInputError, match="is not a trace"):
        open_run({"schema_version": "trace/1"})


def test_compare_runs_is_the_command_lines_compare(fixture_run: Path, tmp_path: Path) -> None:
    from pyapp.browser import compare_runs
    from pyapp.report import RunInputError

    for name in ("A", "B"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "predictions.json").write_text(
            (fixture_run / "predictions.json").read_text("utf-8"), "utf-8"
        )
    done = subprocess.run(
        [sys.executable, "-m", "pyapp", "compare", str(tmp_path / "A" / "predictions.json"),
         str(tmp_path / "B" / "predictions.json"), "--csv", str(tmp_path / "cli.csv")],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    document = json.loads((fixture_run / "predictions.json").read_text("utf-8"))
    trace = json.loads((fixture_run / "trace.json").read_text("utf-8"))
    page = to_json(
        compare_runs(
            [
                {"name": "A", "predictions": document, "trace": trace},
                {"name": "B", "predictions": document, "trace": trace},
            ]
        )
    )
    assert page["csv"] == (tmp_path / "cli.csv").read_text("utf-8")
    # one document twice is one run compared with itself: said (issue 25 item 7)
    assert [p.split(" (")[0] for p in page["problems"]] == ["A and B are the same run"]
    # without its trace, a run's task set is unverified, as on the command line (issue 37)
    alone = to_json(compare_runs([{"name": "A", "predictions": document}]))
    assert alone["problems"][0].startswith("task set unverified: A is a predictions document")
    edited = {**document, "task_set": {**document["task_set"], "seed": 7}}
    with pytest.raises(RunInputError, match="refused: A: the predictions' task_set"):
        compare_runs([{"name": "A", "predictions": edited, "trace": trace}])
    assert "not a confirmatory" in page["disclaimer"]
    assert page["header"][:5] == ["run", "model", "evidence", "condition", "item"]

    # the page only knows file names, and every run's file is predictions.json
    same = to_json(compare_runs([{"name": "predictions.json", "predictions": document}] * 2))
    assert len(set(same["names"])) == 2 and {r[0] for r in same["rows"]} == set(same["names"])
    with pytest.raises(RunInputError, match="is not a predictions document"):
        compare_runs([{"name": "x.json", "predictions": {"kind": "nope"}}])
    with pytest.raises(RunInputError):
        compare_runs([])


def test_the_page_reaches_both_through_the_bridge(fixture_run: Path) -> None:
    trace_text = (fixture_run / "trace.json").read_text("utf-8")
    predictions_text = (fixture_run / "predictions.json").read_text("utf-8")

    def ask(**request: Any) -> Any:
        return json.loads(bridge.handle(json.dumps({"id": 1, **request})))

    opened = ask(type="trace_open", trace_json=trace_text, predictions_json=predictions_text)
    assert opened["ok"] and opened["result"]["ok"], opened
    assert json.loads(opened["result"]["predictions_json"]) == json.loads(predictions_text)
    refused = ask(type="trace_open", trace_json="{not json")
    assert refused["error"]["code"] == "bad_request" and "not JSON" in refused["error"]["message"]
    refused = ask(type="trace_open", trace_json='{"kind": "x"}')
    assert (
        refused["error"]["code"] == "bad_request"
        and "is not a trace" in refused["error"]["message"]
    )
    runs = [{"name": n, "predictions_json": predictions_text} for n in ("a.json", "b.json")]
    compared = ask(type="compare_runs", runs=runs)
    names = compared["result"]["names"]  # named as the CLI names them: no ".json"
    assert compared["ok"] and names == ["a", "b"]
    bad = ask(type="compare_runs", runs=[{"name": "t.json", "predictions_json": trace_text}])
    assert bad["error"]["code"] == "bad_request" and "not a predictions document" in str(bad)


def test_the_page_shows_the_plots_the_report_draws(fixture_run: Path, fixture_report: Any) -> None:
    """One implementation (issue 22 §3): the SVG text the page's worker sends for an opened
    trace is the report's, character for character; compared runs share their axes."""
    trace_text = (fixture_run / "trace.json").read_text("utf-8")
    predictions_text = (fixture_run / "predictions.json").read_text("utf-8")

    def ask(**request: Any) -> Any:
        reply = json.loads(bridge.handle(json.dumps({"id": 1, **request})))
        assert reply["ok"], reply
        return reply["result"]

    plots = ask(type="trace_open", trace_json=trace_text)["plots"]
    _, text = fixture_report
    svgs = ["<svg " + part.split("</svg>", 1)[0] + "</svg>" for part in text.split("<svg ")[1:]]
    assert svgs == [plots["calibration_svg"], plots["cost_svg"]]
    assert plots["calibration_svg"].count('class="cell ') >= 1
    assert 'class="tick"' in plots["cost_svg"] and 'class="fixture"' in plots["cost_svg"]

    # two runs, one of them with every observed cost 100 ms longer: one axis for both
    slower = json.loads(predictions_text)
    for result in slower["conditions"]:
        for o in result["observations"]:
            o["cost_ms"] = None if o["cost_ms"] is None else o["cost_ms"] + 100
    runs = [
        {"name": "a.json", "predictions_json": predictions_text},
        {"name": "b.json", "predictions_json": json.dumps(slower)},
    ]
    compared = ask(type="compare_runs", runs=runs)["plots"]

    def ticks(svg: str) -> list[str]:
        return re.findall(r'class="tick">([^<]*)<', svg)

    assert len(compared) == 2
    assert ticks(compared[0]["cost_svg"]) == ticks(compared[1]["cost_svg"])
    assert ticks(compared[0]["cost_svg"]) != ticks(plots["cost_svg"])  # zoomed out for b
    assert ticks(compared[0]["calibration_svg"]) == ticks(compared[1]["calibration_svg"])


SIMULATE = (sys.executable, "-m", "pyapp", "simulate", "--model", "independent")


def test_a_synthetic_run_is_labelled_never_model_evidence(tmp_path: Path) -> None:
    """`simulate`'s folders are run folders too: the banner, plots and scores say synthetic."""
    runs = tmp_path / "sim"
    made = subprocess.run(
        [*SIMULATE, "--seeds", "3..3", "--out", str(runs)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    out = tmp_path / "report.html"
    done = report(runs / "seed-3", out)
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    assert_inert(text)
    assert "SYNTHETIC VALIDATION MODEL — NOT MODEL EVIDENCE" in text
    assert text.count("synthetic validation model — not model evidence") >= 3  # banner, plots
    assert "MODEL EVIDENCE</strong>" not in text.replace("NOT MODEL EVIDENCE</strong>", "")


def test_the_report_says_what_each_brier_score_means(fixture_report) -> None:
    """Issue 25 item 8: beside each Brier score, its skill against the pooled profile rate,
    its decomposition, and the two predictors' paired difference."""
    done, text = fixture_report
    assert done.returncode == 0, done.stderr
    assert 'class="skill"' in text and "Reference Brier (pooled profile rate)" in text
    assert "product − state-aware" in text and "Reliability" in text
