"""Command line: `python -m pyapp COMMAND`.

    tasks      [--seed N] [--json] [--param KEY=VALUE ...]    the task set of a seed
    exec       PROGRAM.json --registers REGS.json              run one program safely
    run        --seed N --condition supplied-program --out F   run a condition, write a trace
    reproduce  TRACE.json [--predictions P.json] [--receipt R.json] [--rerun [--sample N]]
                                                               re-derive (and re-execute) a trace
    score      TRACE.json [--out predictions.json]             profile, predictions, scores
    compare    RUN_DIR|P.json ... [--csv F] [--markdown F]     finished runs side by side
    report     RUN_DIR --out report.html                       a finished run as one HTML file
    sweep      --model M --backend B --consent --out DIR       the protocol, headless, in the page
    simulate   --model SPEC --seeds A..B --out DIR             the protocol, natively, synthetic
    matrix     PLAN --out DIR [--engine local|ray]             a study: many sweeps/simulations
    study      DIR [--markdown F] [--plan PLAN]                a matrix folder's answer
    study-receipt PLAN --out DIR | --check R.json              freeze a plan's hypotheses first
    schema     [--check]                (re)generate exports/*.schema.json, site/*.js, ...
    serve      [--port N] [--dir build/site]                   serve the built static site

Exit status: 0 success; 1 a reported failure (a program error, mismatches in a trace, a
drifted schema) or a bad input file (unreadable, not JSON, over a limit of
`pyapp.records.documents`, not a valid trace); 2 bad usage (arguments, task parameters, an
output path that cannot be written, a port out of range). Every error is one line on
stderr naming the file and the problem, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import interpreter
from interpreter import LabError
from pyapp.audit import Rerunner, audit, native_loader, rerunner, verdict_lines
from pyapp.cli.arguments import check_output, port, positive, seeded
from pyapp.cli.schema import add_parser as add_schema
from pyapp.cli.schema import model_channel_files as model_channel_files
from pyapp.cli.schema import schemas as schemas
from pyapp.cli.simulate import add_parser as add_simulate
from pyapp.cli.study import add_parser as add_study
from pyapp.cli.sweep import add_parser as add_sweep
from pyapp.conditions import run_supplied
from pyapp.errors import InputError, RecordError, UsageError
from pyapp.host import EXPORTS as EXPORTS
from pyapp.host import (
    REPO_ROOT,
    input_file,
    input_folder,
    output_file,
    task_params_of,
    write_atomically,
)
from pyapp.host.serve import serve
from pyapp.matrix import add_parser as add_matrix
from pyapp.predict import (
    PredictionsDocument,
    climatology_line,
    compare,
    lines_of,
    read_predictions,
    run_figures,
    score_trace,
    skill_lines,
)
from pyapp.records import (
    MAX_TRIALS,
    check_count,
    document_text,
    read_document,
    read_kind,
    read_text,
    read_trace,
    to_json,
)
from pyapp.report import RunInputError, build_report, read_run_folder
from pyapp.sweep import bundled_folder
from pyapp.synthetic import synthetic_rerun
from pyapp.tasks import MAX_TASKS, generate
from pyapp.verify import Receipt, incomplete, read_receipt, receipt_lines

if TYPE_CHECKING:
    from pyapp.records import Trace

MAX_COMPARED_RUNS = 64
"""Most predictions files `compare` lays side by side."""


def write_output(path: Path, text: str) -> None:
    """`write_atomically`, with a failure (disk full, permissions) as a one-line InputError."""
    try:
        write_atomically(path, text)
    except OSError as error:
        raise InputError(
            "unwritable_file", f"cannot write: {error.strerror or error}", path=str(path)
        ) from None
    except UnicodeEncodeError as error:  # a guard: the reader refuses lone surrogates
        raise InputError(
            "unwritable_file", f"cannot write: {error.reason}", path=str(path)
        ) from None


def cmd_tasks(args: argparse.Namespace) -> int:
    tasks = generate(task_params_of(args))
    if args.json:
        print(json.dumps([t.to_json() for t in tasks], indent=2))
        return 0
    for t in tasks:
        registers = " ".join(f"{k}={v}" for k, v in t.registers.items())
        print(f"{t.id:<16} {t.family:<21} {t.split:<8} {t.answer:>14}  {registers}")
    return 0


def _error(code: str, message: str) -> dict[str, object]:
    return {"ok": False, "error": {"code": code, "message": message}}


def cmd_exec(args: argparse.Namespace) -> int:
    try:
        text = read_text(args.program)
    except InputError as error:
        print(json.dumps(_error("unreadable_program_file", str(error))))
        return 1
    try:
        registers = read_document(args.registers)
    except InputError as error:
        print(json.dumps(_error("unreadable_registers_file", str(error))))
        return 1
    if not isinstance(registers, dict):
        message = f"{args.registers}: registers must be a JSON object"
        print(json.dumps(_error("unreadable_registers_file", message)))
        return 1
    outcome = interpreter.run(text, registers)
    print(json.dumps(outcome))
    return 0 if outcome["ok"] else 1


def cmd_run(args: argparse.Namespace) -> int:
    out = check_output(args.out, "--out")
    trace = run_supplied(task_params_of(args))
    write_output(out, document_text(trace, "trace"))
    s = trace.summary
    print(
        f"{s.trials} trials: {s.correct} correct, {s.incorrect} incorrect, {s.failed} failed "
        f"-> {args.out}\n(supplied-program control: tests the interpreter, not model evidence)"
    )
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    for given, option in ((args.sample, "--sample"), (args.model_folder, "--model-folder")):
        if given is not None and not args.rerun:
            raise UsageError(f"{option} goes with --rerun (re-executing the trace's model)")
    if args.model_folder is not None and not Path(args.model_folder).is_dir():
        raise UsageError(f"--model-folder {args.model_folder}: not a folder")
    document = read_trace_document(args.trace)
    trace = valid_trace(document, args.trace)  # a bad trace is one line naming the file, exit 1
    # every document is of its kind and fits its records before anything is compared
    predictions = read_predictions_file(args.predictions)[0] if args.predictions else None
    receipt = read_receipt_file(args.receipt) if args.receipt else None
    result = audit(
        document,
        read=trace,
        predictions_json=predictions,
        receipt=receipt,
        rerunner=local_rerunner(args) if args.rerun else synthetic_rerun,
    )
    for line in result.notes:
        print(f"note: {line}")
    for mismatch in result.mismatches:  # the same mismatches as the page's Open a trace
        print(f"MISMATCH {mismatch}")
    for line in verdict_lines(result, trace):  # ... and the same verdict lines
        print(line)
    if receipt is not None:  # the receipt's own verdict, in every case
        against = len(result.receipt_mismatches or ())
        print(receipt_verdict(args.receipt, against, len(result.mismatches) - against))
        if not against:
            for line in receipt_lines(receipt):
                print(line)
    return 0 if result.ok else 1


def receipt_verdict(path: str, against: int, others: int) -> str:
    """The receipt check's one verdict line (`reproduce --receipt`)."""
    if against:
        return f"receipt: FAILED: {against} mismatch(es) with {path} (above, `MISMATCH receipt …`)"
    ok = (
        f"receipt: ok: the freezes and every record before them are those of {path}, and "
        "every held-out trial came after it"
    )
    return ok if not others else ok + f" (the trace's {others} other mismatch(es) are above)"


def local_rerunner(args: argparse.Namespace) -> Rerunner:
    """`--rerun`: a synthetic trace from its specification, a local ONNX model natively (the
    bundled fixture and subject from this checkout, any other from `--model-folder`)."""
    folder = Path(args.model_folder) if args.model_folder else None
    return rerunner(args.sample, native_loader(bundled_folder, folder))


def read_predictions_file(path: str) -> tuple[Any, PredictionsDocument]:
    """A predictions document, as JSON and as its records: of its kind and fitting its
    records (else one line, exit 1)."""
    document = read_kind(path, "predictions")
    try:
        return document, read_predictions(document)
    except RecordError as error:
        raise InputError(
            "bad_predictions", f"not a valid predictions document: {error}", path=path
        ) from None


def read_receipt_file(path: str) -> Receipt:
    """A freeze receipt: of its kind and fitting its records (else one line, exit 1)."""
    document = read_kind(path, "receipt")
    try:
        return read_receipt(document)
    except RecordError as error:
        raise InputError("bad_receipt", f"not a receipt: {error}", path=path) from None


def _fmt(value: object, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def cmd_score(args: argparse.Namespace) -> int:
    out = check_output(args.out, "--out") if args.out else None
    trace = valid_trace(read_trace_document(args.trace), args.trace)
    if trace.model is None or not trace.freezes:
        print(
            "error: the trace has no frozen profile (run measure -> freeze -> held-out)",
            file=sys.stderr,
        )
        return 1
    try:
        document = score_trace(trace)
        written = document_text(document, "predictions")
    except ValueError as error:  # includes a NaN or infinity the trace's numbers would give
        raise InputError("bad_trace", f"cannot score: {error}", path=args.trace) from None
    for line in incomplete(trace):  # scores of fewer tasks than the freezes listed: said first
        print(f"INCOMPLETE: {line}")
    figures = run_figures(document)
    for line in lines_of(figures):  # then the flags, before any number
        print(line)
    print(
        f"evidence: {document.evidence}"
        + (
            f"  ({document.evidence}: NOT model evidence)"
            if document.evidence in ("fixture", "synthetic")
            else ""
        )
    )
    if document.sealed:
        print(f"sealed: held-out tasks drawn after every freeze, from seed {document.draw_seed}")
    for result in document.conditions:
        frozen = result.frozen
        mark = "EXPLORATORY" if frozen.exploratory else "frozen before observation"
        print(f"\n{frozen.profile.condition}: profile {frozen.sha256[:16]}… ({mark})")
        print(f"  model revision: {result.revision_note}")
        if result.interrupted is not None and result.interrupted.total:
            cut = result.interrupted
            print(
                f"  held-out attempts interrupted and attempted again: {cut.total} "
                f"(cancelled {cut.cancelled}, infrastructure {cut.infrastructure}, "
                f"page closed {cut.page_closed}; attempted again {cut.attempted_again})"
            )
        for op in frozen.profile.ops:
            states = "" if op.distinct_states is None else f" ({op.distinct_states} states)"
            print(
                f"  {op.op}: {op.successes}/{op.trials}{states} rate {_fmt(op.rate)} "
                f"[{op.wilson_low:.3f}, {op.wilson_high:.3f}] cost {_fmt(op.mean_cost_ms, 1)} ms"
            )
        observed = {o.task_id: o for o in result.observations}
        for p in result.predictions:
            o = observed.get(p.task_id)
            seen = "not observed" if o is None else ("correct" if o.final_correct else o.outcome)
            print(
                f"  {p.task_id:<16} predicted {_fmt(p.probability)} "
                f"cost {_fmt(p.cost_ms, 1)} ms -> {seen}"
            )
        s = result.scores
        print(
            f"  Brier (final, naive proxy) {_fmt(s.brier_final_proxy)}; "
            f"Brier (all steps) {_fmt(s.brier_all_steps)}; n = {s.n}; "
            f"cost MAE {_fmt(s.cost.mean_absolute_error_ms, 1)} ms"
        )
        for line in skill_lines(result):  # what the Brier score means (pyapp.predict.skill)
            print(f"  {line}")
        for fig in figures:
            if fig.condition == frozen.profile.condition:
                print(f"  {climatology_line(fig)}")
    if out is not None:
        write_output(out, written)
        print(f"\nwrote {args.out}")
    return 0


def compared_run(path: str) -> tuple[PredictionsDocument, str | None]:
    """One run for `compare`: a run folder (trace.json and predictions.json, or predictions
    derived from the trace), or a predictions file — checked against the trace.json beside
    it when there is one. A predictions document that is not its trace's (another run,
    another task set) is refused (exit 1); one without a trace comes with the note that its
    task set is unverified."""
    given = Path(path)
    folder = given if given.is_dir() else given.parent
    trace = None
    if given.is_dir() or (given.name == "predictions.json" and (folder / "trace.json").exists()):
        try:
            run = read_run_folder(folder)
        except RunInputError as error:
            raise InputError("bad_run_folder", str(error)) from None
        trace, document = run.trace, run.predictions_json
        if given.is_dir() and document is None:
            try:  # a run folder without predictions.json: derived from its trace
                document = to_json(score_trace(trace))
            except ValueError as error:
                raise InputError("bad_trace", f"cannot score: {error}", path=path) from None
    else:
        document = read_kind(path, "predictions")  # of its kind, before anything is read
    try:
        doc = read_predictions(document)
    except RecordError as error:
        raise InputError(
            "bad_predictions", f"not a valid predictions document: {error}", path=path
        ) from None
    if trace is None:
        return doc, compare.UNVERIFIED.format(name=path)
    problem = compare.trace_problem(path, doc, trace)
    if problem is not None:
        raise InputError("bad_predictions", f"refused: {problem}")
    return doc, None


def cmd_compare(args: argparse.Namespace) -> int:
    outputs = [
        check_output(p, o) for p, o in ((args.csv, "--csv"), (args.markdown, "--markdown")) if p
    ]
    if len(args.predictions) > MAX_COMPARED_RUNS:
        raise UsageError(f"compare takes at most {MAX_COMPARED_RUNS} runs")
    docs, alone = [], []
    for i, path in enumerate(args.predictions):
        doc, note = compared_run(path)
        docs.append(doc)
        alone += [i] if note is not None else []
    # named as the page names them (pyapp.predict.compare.run_names), and so in every line
    files = [(Path(p).name, Path(p).parent.name) for p in args.predictions]
    names = compare.run_names(files, docs, [str(p) for p in args.predictions])
    unverified = [compare.UNVERIFIED.format(name=names[i]) for i in alone]
    refused = compare.refusal(names, docs)
    if refused is not None and not args.describe_anyway:
        print(f"error: {refused}", file=sys.stderr)
        return 1
    # the page's Compare shows the same lines (pyapp.browser.viewer.compare_runs)
    warned = [f"WARNING: {note}" for note in unverified]
    lead = warned + compare.lead_lines(names, docs)  # degenerate scores before any number
    all_rows = compare.rows(names, docs)
    summary = compare.summary(names, docs)  # the compact summary leads, as on the page
    print(compare.to_text(all_rows, lead, summary), end="")
    flagged = compare.flags(names, docs)
    problems = unverified + compare.described_anyway(names, docs)
    texts = [compare.to_csv(all_rows)] if args.csv else []
    if args.markdown:
        texts.append(compare.to_markdown(all_rows, problems, summary, flagged))
    for target, text in zip(outputs, texts, strict=True):
        write_output(target, text)
        print(f"wrote {target}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    out = check_output(args.out, "--out")  # before any reading: a bad --out is exit 2
    try:
        text, verification = build_report(Path(args.run_dir))
    except RunInputError as error:  # bad data, like `reproduce` and `score`: exit 1
        raise InputError("bad_run_folder", str(error)) from None
    write_output(out, text)
    if not verification.ok:
        print(f"wrote {args.out}; the run does NOT re-derive (see its Reproduction section)")
        return 1
    if verification.incomplete:
        print(
            f"wrote {args.out}; the run re-derives exactly but is INCOMPLETE: "
            + "; ".join(verification.incomplete)
        )
        return 1
    print(f"wrote {args.out}; the run re-derives exactly")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    try:
        serve(Path(args.dir), args.host, args.port)
    except OSError as error:  # the port is in use, the address is not this machine's, ...
        raise InputError(
            "cannot_bind", f"cannot serve on {args.host}:{args.port}: {error.strerror or error}"
        ) from None
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m pyapp", description=__doc__.split("\n")[0])
    sub = top.add_subparsers(dest="command", required=True)

    p = sub.add_parser("tasks", help="print the task set of a seed")
    seeded(p)
    p.add_argument("--json", action="store_true", help="JSON instead of a table")
    p.set_defaults(func=cmd_tasks)

    p = sub.add_parser("exec", help="run one register-tree program")
    p.add_argument("program", type=input_file, help="file holding the program text (JSON tree)")
    p.add_argument(
        "--registers", type=input_file, required=True, help="JSON file: register name -> integer"
    )
    p.set_defaults(func=cmd_exec)

    p = sub.add_parser(
        "run",
        help="run the supplied-program control over a task set and write a trace (model "
        "conditions run in the page, or headless with `sweep`)",
    )
    seeded(p)
    p.add_argument(
        "--condition",
        default="supplied-program",
        choices=["supplied-program"],  # the only one the command line runs without a browser
        help="supplied-program (the default): model conditions run with `python -m pyapp sweep`",
    )
    p.add_argument("--out", type=output_file, required=True, help="trace file to write")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("reproduce", help="re-derive every number in a trace")
    p.add_argument("trace", type=input_file)
    p.add_argument(
        "--predictions", type=input_file, help="also re-derive this predictions document"
    )
    p.add_argument(
        "--receipt",
        type=input_file,
        help="also check the trace against this freeze receipt (receipt.json)",
    )
    p.add_argument(
        "--rerun",
        action="store_true",
        help="also re-execute the trace with its model (a local ONNX model, through the native "
        "backend: the bundled fixture and subject, or --model-folder) and compare every "
        "completion; a synthetic trace is always re-executed",
    )
    p.add_argument(
        "--sample",
        type=positive,
        metavar="N",
        help="with --rerun: re-execute N of the model trials (drawn with the run id as seed)",
    )
    p.add_argument(
        "--model-folder",
        type=input_folder,
        help="with --rerun: the model's files (onnx-community layout) when it is not bundled",
    )
    p.set_defaults(func=cmd_reproduce)

    p = sub.add_parser("score", help="profile, predictions and scores from a trace alone")
    p.add_argument("trace", type=input_file)
    p.add_argument("--out", type=output_file, help="write the predictions document here")
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("compare", help="describe finished runs side by side (descriptive)")
    p.add_argument(
        "predictions",
        type=input_file,
        nargs="+",
        help="finished runs: run folders (trace.json and predictions.json: the task set is "
        "checked against the trace) or predictions.json files (unverified without a trace "
        "beside them)",
    )
    p.add_argument("--csv", type=output_file, help="also write the table as CSV")
    p.add_argument("--markdown", type=output_file, help="also write the table as Markdown")
    p.add_argument(
        "--describe-anyway",
        action="store_true",
        help="lay runs whose task parameters differ side by side (never pooled; said first)",
    )
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("report", help="a finished run as one self-contained HTML file")
    p.add_argument(
        "run_dir", type=input_folder, help="run folder: trace.json [+ predictions.json, run.json]"
    )
    p.add_argument("--out", type=output_file, required=True, help="HTML file to write")
    p.set_defaults(func=cmd_report)

    add_sweep(sub)

    add_simulate(sub)

    add_matrix(sub)

    add_study(sub)

    add_schema(sub)

    p = sub.add_parser("serve", help="serve the built static site on 127.0.0.1")
    p.add_argument("--port", type=port, default=8000)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--dir", type=input_folder, default=str(REPO_ROOT / "build" / "site"))
    p.set_defaults(func=cmd_serve)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        code: int = args.func(args)
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except LabError as error:  # a bad input file or document: named, one line
        print(f"error: {error}", file=sys.stderr)
        return 1
    except RecursionError:  # a guard: every reader bounds nesting first
        print(f"error: {args.command}: input nested too deeply", file=sys.stderr)
        return 1
    except MemoryError:
        print(f"error: {args.command}: out of memory", file=sys.stderr)
        return 1
    return code


def valid_trace(document: Any, path: str) -> Trace:
    """The `Trace` record of a trace document, or an InputError naming the file."""

    try:
        return read_trace(document)
    except RecordError as error:
        raise InputError("bad_trace", f"not a valid trace: {error}", path=path) from None


def read_trace_document(path: str) -> Any:
    """A trace file as JSON, of its kind, within the size, nesting and trial-count limits."""
    document = read_kind(path, "trace")
    if isinstance(document, dict):
        check_count(document.get("trials"), "trials", MAX_TRIALS, path)
        check_count(document.get("interruptions"), "interruptions", MAX_TRIALS, path)
        check_count(document.get("tasks"), "tasks", MAX_TASKS, path)
    return document
