"""What the page shows for documents a reader opens: nothing is uploaded, nothing is fetched.

`open_run` is "Open a trace": the page hands in a trace (and optionally its predictions
document) read from the reader's disk, and gets back what `python -m pyapp reproduce` and
`score` say — the one re-derivation both run (`pyapp.audit.verdict.audit`, through
`pyapp.report.run_folder.verify_documents`): the same mismatches, named by trial, the same
verdict lines, whether the run is complete — with the profiles, predictions and scores
derived from the trace as re-derived, ready to draw as the live run is drawn.

`compare_runs` is "Compare in the page": the same table as `python -m pyapp compare`
(`pyapp.predict.compare`), with the same disclaimer and the same incompatibility warnings.

`run_plots` is every plot the page shows (the live run's, an opened trace's, each compared
run's): `pyapp.report.plots`'s SVG text, the report's own drawing, carried by the replies.

Both take plain JSON and return their reply's result record (`pyapp.protocol.results`); an
unreadable document raises `RunInputError` (one line).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyapp.browser.verdict import run_verdict
from pyapp.errors import RecordError
from pyapp.predict import PredictionsDocument, answer_lines, compare, flag_lines, run_figures
from pyapp.protocol import (
    ComparedRuns,
    CorrectedField,
    OpenedTrace,
    RemadeReceipt,
    ReportHtml,
    RunPlots,
)
from pyapp.records import Evidence, document_text, from_json, line_text
from pyapp.report import (
    NOT_EVIDENCE_LABELS,
    RunFolder,
    RunInputError,
    plots,
    read_trace,
    render_report,
    run_evidence,
    verify,
    verify_documents,
)
from pyapp.verify import make_receipt


def open_run(trace_json: Any, predictions_json: Any | None = None) -> OpenedTrace:
    """The verification of an opened trace and the numbers derived from it.

    Result: `pyapp.protocol.results.OpenedTrace` — the run's label (`control`, `fixture`,
    `synthetic` or `model`: `pyapp.records.evidence.run_evidence`; the page words it from
    `EVIDENCE_LABELS`), every mismatch (named by trial and field), each recorded field that
    re-derivation contradicts, the predictions document derived from the trace *as
    re-derived*, and the header and trials as re-derived (what the page draws)."""
    trace = read_trace(trace_json)
    v = verify_documents(trace, trace_json, predictions_json)
    document = v.rederived_json  # a trace/1 document as trace/2, every verdict re-derived
    other = v.predictions_other_run
    return OpenedTrace(
        evidence=run_evidence(trace),
        ok=v.ok and v.complete,
        trace_mismatches=tuple(v.trace_mismatches),
        predictions_mismatches=() if other is not None else v.predictions_mismatches,
        derive_error=v.derive_error,
        predictions_json=None if v.derived is None else document_text(v.derived, "predictions"),
        summary="; ".join(v.verdict),
        header_json=line_text({k: v for k, v in document.items() if k != "trials"}),
        trials_json=tuple(line_text(trial) for trial in document["trials"]),
        corrections=tuple(
            CorrectedField(c.trial_id, c.field, json.dumps(c.recorded), json.dumps(c.rederived))
            for c in v.corrections
        ),
        predictions_other_run=other,
        plots=run_plots(v.derived, run_evidence(trace)),
        incomplete=v.incomplete,
    )


def run_plots(doc: PredictionsDocument | None, evidence: Evidence) -> RunPlots | None:
    """A run's two plots as the report draws them (`pyapp.report.plots`, under the run's
    label when it is not model evidence); None while no condition has held-out
    observations (the page then shows none, as the report does)."""
    if doc is None or not plots.scored(doc):
        return None
    label = NOT_EVIDENCE_LABELS.get(evidence)
    [(calibration, cost)] = plots.plots([(doc, label)])
    figures = run_figures(doc)
    return RunPlots(
        calibration_svg=calibration,
        cost_svg=cost,
        flags=tuple(flag_lines(figures)),
        answers=tuple(answer_lines(figures)),
        verdict=run_verdict(figures, label),
    )


def predictions_plots(predictions_json: str) -> RunPlots | None:
    """`run_plots` of a predictions document's text (Python's own: `sweep_predictions`)."""
    doc = from_json(PredictionsDocument, json.loads(predictions_json))
    return run_plots(doc, doc.evidence)


def report_of(trace_json: Any) -> ReportHtml:
    """The report of a run the page holds, as `python -m pyapp report` writes it (the folder
    is named after the run; the numbers are derived from the trace, never taken from it)."""
    trace = read_trace(trace_json)
    folder = RunFolder(Path(f"run-{trace.run.run_id[:8]}"), trace, trace_json, None, None)
    evidence = run_evidence(trace)
    return ReportHtml(
        html=render_report(folder, verify(folder)),
        name=f"report-{evidence}-{trace.run.run_id}.html",
    )


def receipt_of(trace_json: Any) -> RemadeReceipt:
    """The freeze receipt of a run the page holds, made again from its trace. Made after any
    held-out trial, it says so in its file name and `after_heldout`: its chain head is then
    the last record's, and it proves nothing about timing."""
    trace = read_trace(trace_json)
    try:
        receipt = make_receipt(trace)
    except ValueError:
        raise RunInputError("this run has no freeze yet: there is no receipt to make") from None
    heldout = {t.id for t in trace.tasks if t.split == "heldout"}
    after = any(trial.task_id in heldout for trial in trace.trials)
    evidence = trace.model.evidence if trace.model else "control"
    prefix = "receipt-remade-after-heldout" if after else "receipt"
    return RemadeReceipt(
        receipt_json=document_text(receipt, "receipt"),
        after_heldout=after,
        name=f"{prefix}-{evidence}-{trace.run.run_id}.json",
    )


def compare_runs(runs: Any) -> ComparedRuns:
    """`runs`: a list of `{name, predictions, trace}` (`trace` optional: the run's trace, which
    its predictions' task set must be — `pyapp.predict.compare.trace_problem`, refused
    otherwise; without it the task set is said to be unverified). Result:
    `pyapp.protocol.results.ComparedRuns` (disclaimer, problems, names, header, rows,
    markdown, csv) — the CLI's compare, for the page."""
    if not isinstance(runs, list) or not runs:
        raise RunInputError("runs must be a non-empty list of {name, predictions}")
    names: list[str] = []
    docs: list[PredictionsDocument] = []
    unverified: list[int] = []  # the runs given without their trace
    for i, run in enumerate(runs):
        if not isinstance(run, dict) or not isinstance(run.get("name"), str):
            raise RunInputError(f"runs[{i}] must be an object with a name and predictions")
        try:
            doc = from_json(PredictionsDocument, run.get("predictions"))
        except RecordError as error:
            raise RunInputError(f"{run['name']} is not a predictions document: {error}") from None
        if run.get("trace") is None:
            unverified.append(len(docs))  # said once the runs are named
        else:
            problem = compare.trace_problem(run["name"], doc, read_trace(run["trace"]))
            if problem is not None:
                raise RunInputError(f"refused: {problem}")
        docs.append(doc)
        names.append(run["name"])
    names = compare.run_names([(n, None) for n in names], docs)
    notes = [compare.UNVERIFIED.format(name=names[i]) for i in unverified]
    # the page always lays them side by side; task sets that differ are said first
    problems = notes + compare.described_anyway(names, docs)
    all_rows = compare.rows(names, docs)
    header, body = compare.table(all_rows)
    summary = compare.summary(names, docs)
    return ComparedRuns(
        flags=tuple(compare.flags(names, docs)),
        refusal=compare.refusal(names, docs),
        lines=tuple([f"WARNING: {note}" for note in notes] + compare.lead_lines(names, docs)),
        disclaimer=compare.DISCLAIMER,
        problems=tuple(problems),
        names=tuple(names),
        header=tuple(header),
        rows=tuple(tuple(row) for row in body),
        markdown=compare.to_markdown(all_rows, problems, summary, compare.flags(names, docs)),
        csv=compare.to_csv(all_rows),
        summary_header=tuple(compare.SUMMARY_HEADER),
        summary_rows=tuple(tuple(row) for row in summary),
        summary_note=compare.summary_note(summary),
        plots=tuple(
            RunPlots(calibration_svg=calibration, cost_svg=cost)
            for calibration, cost in plots.plots(
                [(d, NOT_EVIDENCE_LABELS.get(d.evidence)) for d in docs]
            )
        ),
    )
