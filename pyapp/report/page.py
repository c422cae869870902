"""The report as one HTML document: no script, no external request, readable from disk.

Styles are inline, plots are inline SVG, and a Content-Security-Policy of `default-src
'none'` (styles inline only) means that even a markup mistake could neither run a script nor
load anything. The evidence banner comes first, under the title, as in the page.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyapp import __version__
from pyapp.predict import SliceFigures, answer_lines, flag_lines, run_figures
from pyapp.records import Trace
from pyapp.report import sections
from pyapp.report.markup import Markup, el, join
from pyapp.report.plots import calibration_svg, cost_svg
from pyapp.report.run_folder import RunFolder, Verification
from pyapp.report.skill_table import skill_table

CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
"""Nothing loads, nothing runs: the report is text, tables and inline SVG."""

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 72rem;
  padding: 1rem 1.5rem 4rem; color: #1f1f1f; background: #fff; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; }
h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2rem; margin-top: 2.2rem; }
table { border-collapse: collapse; margin: 0.6rem 0 1rem; font-size: 0.9rem; }
caption { text-align: left; font-weight: 600; padding: 0.3rem 0; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
thead th { background: #f1f3f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
pre { white-space: pre-wrap; word-break: break-word; background: #f8f9fa;
  border: 1px solid #e0e0e0; padding: 0.5rem; max-height: 30rem; overflow: auto; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.2rem 1rem; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.banner { border: 3px solid; border-radius: 6px; padding: 0.4rem 1rem; margin: 1rem 0; }
.banner-label { font-size: 1.3rem; letter-spacing: 0.03em; }
.evidence-fixture, .evidence-synthetic, .evidence-control {
  border-color: #b06000; background: #fff4e5;
}
.evidence-model { border-color: #137333; background: #e6f4ea; }
.fixture-label { color: #b06000; font-weight: 700; }
.correct { color: #137333; font-weight: 600; }
.incorrect { color: #b3261e; font-weight: 600; }
.exploratory { color: #b3261e; font-weight: 700; }
.muted { color: #5f6368; }
.degenerate { border: 3px solid #b3261e; background: #fce8e6; border-radius: 6px;
  padding: 0.2rem 1rem; margin: 0.6rem 0; }
.check-ok { border-left: 6px solid #137333; padding-left: 0.8rem; }
.check-failed { border-left: 6px solid #b3261e; padding-left: 0.8rem; }
svg { max-width: 100%; height: auto; }
details > summary { cursor: pointer; }
:focus-visible { outline: 3px solid #1a73e8; outline-offset: 2px; }
"""


def _check(verification: Verification, trace: Trace, derived_only: bool) -> Markup:
    v = verification
    lines: list[object] = []
    if not v.trace_mismatches:
        lines.append(
            el(
                "p",
                None,
                f"✓ Re-derived exactly: {len(trace.tasks)} tasks and "
                f"{len(trace.trials)} trials from the seed and the raw trials.",
            )
        )
    else:
        lines.append(
            el(
                "p",
                None,
                f"✗ {len(v.trace_mismatches)} mismatch(es): the trace does not re-derive.",
            )
        )
        lines.append(
            el("ul", {"class": "mismatches"}, [el("li", None, m) for m in v.trace_mismatches])
        )
    if v.rerun is not None:
        lines.append(el("p", None, v.rerun))
    if v.derive_error is not None:
        lines.append(el("p", None, f"✗ The predictions cannot be derived: {v.derive_error}"))
    if v.predictions_mismatches is None:
        if derived_only:
            lines.append(
                el(
                    "p",
                    None,
                    "No predictions.json in the folder: the profiles, "
                    "predictions and scores below are derived from the trace.",
                )
            )
    elif not v.predictions_mismatches:
        lines.append(el("p", None, "✓ Every number in predictions.json re-derived exactly."))
    else:
        lines.append(
            el(
                "p",
                None,
                f"✗ predictions.json: {len(v.predictions_mismatches)} "
                "mismatch(es) with the numbers derived from the trace:",
            )
        )
        lines.append(
            el("ul", {"class": "mismatches"}, [el("li", None, m) for m in v.predictions_mismatches])
        )
    lines += [el("p", {"class": "incomplete"}, f"✗ Incomplete: {line}") for line in v.incomplete]
    passed = v.ok and v.complete
    cls = "check-ok" if passed else "check-failed"
    return el(
        "section",
        {"id": "reproduce", "class": cls, "data-ok": str(passed).lower()},
        el("h2", None, "Reproduction"),
        lines,
    )


def _flags(figures: Sequence[SliceFigures]) -> Markup:
    """The degenerate-score flags (`pyapp.predict.flags`), right under the title: a run whose
    held-out outcomes are all 0 says so in the first line a reader sees."""
    lines = flag_lines(figures)
    if not lines:
        return join()
    return el(
        "section",
        {"id": "flags", "class": "degenerate", "role": "alert"},
        [
            el("p", None, el("strong", None, line) if i == 0 else line)
            for i, line in enumerate(lines)
        ],
    )


def _answers(figures: Sequence[SliceFigures]) -> Markup:
    lines = answer_lines(figures)
    if not lines:
        return join()
    return el(
        "section",
        {"class": "answers"},
        el("p", None, el("strong", None, lines[0])),
        el("ul", None, [el("li", None, line) for line in lines[1:]]),
    )


def _results(
    verification: Verification, not_evidence: str | None, figures: Sequence[SliceFigures]
) -> Markup:
    doc = verification.derived
    if doc is None:
        return el(
            "section",
            {"id": "predictions"},
            el("h2", None, "Profiles and predictions"),
            el(
                "p",
                {"class": "muted"},
                "No frozen profile in this trace: nothing was "
                "predicted (a supplied-program control run, or a sweep stopped before freezing).",
            ),
        )
    scored = [c for c in doc.conditions if c.observations]
    plots = (
        (
            el("figure", {"class": "plot"}, calibration_svg(doc, not_evidence)),
            el("figure", {"class": "plot"}, cost_svg(doc, not_evidence)),
        )
        if scored
        else ()
    )
    assumptions = el("ul", None, [el("li", None, a) for a in doc.assumptions])
    return join(
        el(
            "section",
            {"id": "profiles"},
            el("h2", None, "Frozen profiles"),
            [sections.profile(c) for c in doc.conditions],
        ),
        el(
            "section",
            {"id": "predictions"},
            el("h2", None, "Predictions and observations"),
            el("p", None, "Assumptions of the predictor (all unverified):"),
            assumptions,
            sections.predictions(doc.conditions, not_evidence),
        ),
        el(
            "section",
            {"id": "scores"},
            el("h2", None, "Scores"),
            _answers(figures),
            sections.scores(doc.conditions, doc.interpretation, not_evidence),
            skill_table([c for c in doc.conditions if c.observations], figures),
            plots,
        ),
    )


def _contents(has_results: bool) -> Markup:
    links = [("evidence", "Evidence"), ("reproduce", "Reproduction"), ("provenance", "Provenance")]
    if has_results:
        links += [
            ("profiles", "Frozen profiles"),
            ("predictions", "Predictions"),
            ("scores", "Scores"),
        ]
    links += [("trials", "Trials"), ("journal", "Interruptions and journal"), ("tasks", "Tasks")]
    items = [el("li", None, el("a", {"href": f"#{anchor}"}, text)) for anchor, text in links]
    return el("nav", {"aria-label": "Contents"}, el("ol", None, items))


def render_report(folder: RunFolder, verification: Verification) -> str:
    """The whole report as one HTML document."""
    trace = folder.trace
    evidence = sections.run_evidence(trace)
    not_evidence = sections.NOT_EVIDENCE_LABELS.get(evidence)
    title = f"Composition Lab report — {sections.banner_text(trace)} — run {trace.run.run_id[:8]}"
    figures = [] if verification.derived is None else run_figures(verification.derived)
    head = el(
        "head",
        None,
        el("meta", {"charset": "utf-8"}),
        el("meta", {"http-equiv": "Content-Security-Policy", "content": CSP}),
        el("meta", {"name": "viewport", "content": "width=device-width, initial-scale=1"}),
        el("title", None, title),
        el("style", None, Markup(STYLE)),
    )
    body = el(
        "body",
        None,
        el(
            "header",
            None,
            el("h1", None, "Composition Lab — run report"),
            _flags(figures),
            el(
                "p",
                {"class": "muted"},
                f"Run {trace.run.run_id}, seed {trace.run.seed}, created "
                f"{trace.run.created_at}. A static copy of a finished run: no script, "
                "nothing loaded.",
            ),
        ),
        sections.banner(trace),
        _contents(verification.derived is not None),
        el(
            "main",
            None,
            _check(
                verification,
                trace,
                folder.predictions_json is None and verification.derived is not None,
            ),
            sections.provenance(trace, folder.sweep_record),
            _results(verification, not_evidence, figures),
            el("section", {"id": "trials"}, el("h2", None, "Trials"), sections.trials(trace)),
            sections.interruptions_and_journal(trace),
            el("section", {"id": "tasks"}, el("h2", None, "Tasks"), sections.tasks(trace)),
        ),
        el(
            "footer",
            {"class": "muted"},
            el(
                "p",
                None,
                f"Written by python -m pyapp report (pyapp {__version__}) from "
                f"{folder.path.resolve().name}/. Re-derive it yourself: python -m pyapp reproduce "
                "trace.json --predictions predictions.json",
            ),
        ),
    )
    return "<!doctype html>\n" + el("html", {"lang": "en"}, head, body) + "\n"
