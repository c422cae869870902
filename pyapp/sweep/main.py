"""`python -m pyapp sweep`: the whole protocol, unattended, in the real page.

The command serves the built site on 127.0.0.1, starts a headless Chromium, loads the model
through the Models panel's consent dialog (``--consent`` is the click on *Download and
load*), and drives the page through protocol messages (pyapp/protocol/messages.py) sent to
its one entry point, ``window.lab.send``: measure →
freeze → held-out → score all happen in the page (Pyodide + the transformers.js worker).
Python here only watches, writes files and checks them; it never runs a trial itself. With
``--backend native`` the page is swapped for this process (``pyapp.sweep.native``: the same
requests answered by the same session, with a local ONNX model); the files, the session's
entry in run.json and the end-of-run checks are the ones below.

Files in ``--out`` (``pyapp.sweep.files``; all but trials.jsonl written atomically, via a
temporary file and a rename):

    trials.jsonl      one trial per line, Python's JSON text as the page relayed it, appended
                      and flushed as each trial arrives: the cost of a trial never grows
    trace.json        header + trials, written from trials.jsonl at checkpoints: start,
                      freeze, end, Ctrl-C / --timeout
    predictions.json  the predictions document: at the freeze and at Ctrl-C
                      (``pyapp.predict.predictor.score_trace`` of that trace, the function the
                      page runs), and at the end the page's own ``predictions()`` text
    run.json          command line, versions, model, options, start/end times, status, the
                      trial in flight, one entry per session (first run and each --resume),
                      requests blocked, and the end-of-run checks

``--resume`` reads trace.json's header, trials.jsonl and run.json's in-flight trial and
hands them to the page (``resumeFrom``): the page records the interruption and continues
with the next unobserved trial, so no held-out task is ever observed twice under the same
frozen profile.

Errors: ``pyapp.sweep.errors`` (SweepError → exit 1, SetupError → 2, Interrupted → 130 or 1).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from contextlib import suppress
from dataclasses import replace
from importlib.metadata import version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pyapp import __version__
from pyapp.errors import InputError, SiteMissingError, UsageError
from pyapp.experiment import LedgerError, read_ledger
from pyapp.host import (
    REPO_ROOT,
    check_output_folder,
    check_site,
    serve_hub_in_thread,
    serve_in_thread,
)
from pyapp.protocol import Hello, page_query
from pyapp.records import read_document, subject_of, to_json
from pyapp.sweep.checks import check_files, report_checks, report_scores
from pyapp.sweep.chromium import (
    CHROMIUM_ARGS,
    OFF_LOCALHOST,
    allowed_hosts,
    find_chromium,
    host_allowed,
    missing_chromium,
)
from pyapp.sweep.driver import Driver
from pyapp.sweep.errors import Interrupted, Paused, SetupError, SweepError
from pyapp.sweep.files import TRACE, TRIALS, FilesError, TrialsFile, stored_texts
from pyapp.sweep.native import NativeDriver, choose_native, load, model_files, refuse_page_options
from pyapp.sweep.options import (
    ModelChoice,
    Options,
    choose_model,
    fault_hooks,
    options_for_resume,
    options_from_args,
    read_catalogue,
)
from pyapp.sweep.panel import install_relay
from pyapp.sweep.progress import say
from pyapp.sweep.runfile import RUN_SCHEMA, RunFile, now
from pyapp.sweep.signals import StopFlag

DEFAULT_SITE = REPO_ROOT / "build" / "site"
FIXTURE_BANNER = "TEST FIXTURE — NOT MODEL EVIDENCE"
FIXTURE_NOTE = (
    "The model is the bundled test fixture (tests/fixtures/tiny-chat, ~100k parameters): "
    "this sweep tests the pipeline, not a model. Nothing in it is model evidence."
)


def subject_note(model_id: str, config_sha256: str | None = None) -> str:
    """run.json's note for a reference subject's sweep, naming that subject."""
    subject = subject_of(model_id, config_sha256)
    return (
        f"The model is the {subject.label} ({subject.folder}): evidence about this "
        "subject, never about a pretrained LLM."
    )


def run_evidence_fields(
    fixture: bool, subject: bool, model_id: str = "", config_sha256: str | None = None
) -> dict[str, str]:
    """run.json's `evidence` and `evidence_note`: the fixture, a reference subject (named
    as what it is, never a pretrained LLM) or a model."""
    if fixture:
        return {"evidence": "fixture", "evidence_note": FIXTURE_NOTE}
    if subject:
        note = subject_note(model_id, config_sha256)
        return {"evidence": "reference-subject", "evidence_note": note}
    return {"evidence": "model", "evidence_note": "model evidence (check the trace)"}


def versions(page_hello: dict[str, Any] | None, browser_version: str | None) -> dict[str, Any]:
    try:
        playwright_version: str | None = version("playwright")
    except Exception:
        playwright_version = None
    return {
        "pyapp": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "playwright": playwright_version,
        "chromium": browser_version,
        "page": page_hello,
    }


def prepare_out(out: Path, resume: bool) -> tuple[RunFile, dict[str, Any] | None, str | None]:
    """(run.json, the stored texts to resume from or None, the trial in flight)."""
    run_path = out / "run.json"
    if os.path.lexists(out) and not out.is_dir():
        raise SetupError("out_in_use", f"--out {out}: not a folder")
    if not resume:
        if run_path.exists() or (out / TRACE).exists() or (out / TRIALS).exists():
            raise SetupError(
                "out_in_use",
                f"{out} already holds a sweep: continue it with --resume, or choose another --out",
            )
        return RunFile(run_path), None, None
    if not os.path.lexists(run_path):
        raise SetupError("nothing_to_resume", f"--resume: {run_path} does not exist")
    run = RunFile.load(run_path)  # bad data in any of the files: exit 1, before any browser
    try:
        stored = stored_texts(out)
    except FilesError as error:
        raise InputError("unreadable_sweep_file", error.message) from None
    in_flight = run.data.get("in_flight")
    return run, stored, in_flight if isinstance(in_flight, str) else None


def main(args: argparse.Namespace, argv: list[str]) -> int:
    try:
        return _main(args, argv)
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except SweepError as error:
        print(f"error [{error.code}]: {error.message}", file=sys.stderr)
        return error.status


def _main(args: argparse.Namespace, argv: list[str]) -> int:
    out = check_output_folder(args.out, "--out")
    run, stored, in_flight = prepare_out(out, args.resume)
    if args.resume:
        if run.data.get("status") == "done":
            print(
                f"{out}: this sweep finished already ({run.data.get('ended_at')});"
                " nothing to resume"
            )
            return 0
        options = options_for_resume(args, run.data.get("options"), str(out / "run.json"))
    else:
        options = options_from_args(args)
    native = options.backend == "native"
    if native:
        refuse_page_options(args)
    # the ledger of held-out tasks observed across sweeps: beside the runs unless --ledger;
    # read and checked now, like every input file, before anything slow starts
    chosen = getattr(args, "ledger", None)
    ledger = Path(chosen) if chosen else out.resolve().parent / "ledger.json"
    try:
        read_ledger(ledger)
    except LedgerError as error:
        raise InputError("bad_ledger", f"{error} (choose another with --ledger)") from None
    if native:
        return _native(args, argv, (out, run, stored, in_flight), options, ledger)
    try:
        site = check_site(Path(args.site or DEFAULT_SITE))
    except SiteMissingError as error:
        raise SetupError("no_site", str(error)) from None
    if options.model_folder and options.model_host:
        raise UsageError("give --model-folder or --model-host, not both")
    choice = choose_model(options, read_catalogue(site))
    if choice.fixture:
        say(f"*** {FIXTURE_BANNER} ***  {FIXTURE_NOTE}")
    if not args.consent:
        raise no_consent(options, choice)
    if options.backend not in ("webgpu", "wasm"):
        raise UsageError("--backend must be webgpu or wasm")
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise SetupError(
            "no_playwright",
            "the Python package `playwright` is missing: `pip install -r requirements-dev.txt`"
            " (Chromium itself comes from Debian: `sudo apt-get install chromium`)",
        ) from None

    stop = StopFlag()
    session = begin_session(
        run, args, argv, options, choice, len(stored["trials_json"]) if stored else 0, in_flight
    )
    out.mkdir(parents=True, exist_ok=True)
    run.save()

    run.data["ledger"] = str(ledger)
    servers: list[Any] = []
    driver: Driver | None = None
    status, message, code = "failed", "", 1
    try:
        with stop.installed(), sync_playwright() as playwright:
            server, site_url = serve_in_thread(site)
            servers.append(server)
            model_host = serve_model_folder(options, choice, servers)
            driver = Driver(
                replace(options, model_host=model_host),
                choice,
                out,
                run,
                consent=bool(args.consent),
                site=site,
                timeout_s=args.timeout,
                stop=stop,
                ledger=ledger,
            )
            status, message, code = _drive(driver, playwright, site_url, stored, in_flight)
    except (KeyboardInterrupt, SweepError) as error:
        status, message, code = ended_by(error)
    except PlaywrightError as error:  # the browser or the page failed under us
        errors = (
            f" (page errors: {'; '.join(driver.page_errors[-3:])})"
            if driver and driver.page_errors
            else ""
        )
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        status, message, code = "failed", f"[browser] {first_line}{errors}", 1
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
        message = end_session(run, session, driver, out, status, message)
    return ended(out, run, choice, (status, message, code))


def ended_by(error: KeyboardInterrupt | SweepError) -> tuple[str, str, int]:
    """(status, message, exit status) of a session that `error` ended."""
    if isinstance(error, KeyboardInterrupt):
        return "interrupted", "stopped by a second Ctrl-C", 130
    if isinstance(error, Interrupted):
        return "interrupted", error.message, error.status
    if isinstance(error, Paused):
        return "paused", error.message, error.status
    return "failed", f"[{error.code}] {error.message}", error.status


def ended(out: Path, run: RunFile, choice: ModelChoice, outcome: tuple[str, str, int]) -> int:
    """The end of the command: the checks of a finished sweep, else how to continue."""
    status, message, code = outcome
    if status != "done":
        resumable = (out / TRACE).exists()
        print(f"sweep {status}: {message}", file=sys.stderr)
        if resumable:
            print(
                f"the files in {out} are consistent; continue with: "
                f"python -m pyapp sweep --resume --consent --out {out}",
                file=sys.stderr,
            )
        return code
    return finish(out, run, choice)


def _native(
    args: argparse.Namespace,
    argv: list[str],
    prepared: tuple[Path, RunFile, dict[str, Any] | None, str | None],
    options: Options,
    ledger: Path,
) -> int:
    """The sweep with the page swapped for this process (`pyapp.sweep.native`): the same
    session, events, files and checks; the model loaded natively after the consent."""
    out, run, stored, in_flight = prepared
    choice = choose_native(options)
    files, identity = model_files(options, choice)  # refused before anything loads
    if choice.fixture:
        say(f"*** {FIXTURE_BANNER} ***  {FIXTURE_NOTE}")
    if not args.consent:
        raise no_consent(options, choice, native_source=str(files.folders[0]))
    t0 = time.monotonic()
    adapter = load(files, identity)
    stop = StopFlag()
    trials_at_start = len(stored["trials_json"]) if stored else 0
    session = begin_session(run, args, argv, options, choice, trials_at_start, in_flight)
    session["timings_s"]["model_load"] = round(time.monotonic() - t0, 3)
    out.mkdir(parents=True, exist_ok=True)
    run.data["ledger"] = str(ledger)
    run.save()
    driver = NativeDriver(
        options, choice, out, run, adapter=adapter, timeout_s=args.timeout, stop=stop, ledger=ledger
    )
    status, message, code = "failed", "", 1
    try:
        with stop.installed():
            run.data["versions"] = versions(to_json(driver.request(Hello())), None)
            t1 = time.monotonic()
            driver.drive(stored, in_flight)
            session["timings_s"]["sweep"] = round(time.monotonic() - t1, 3)
        status, message, code = "done", "", 0
    except (KeyboardInterrupt, SweepError) as error:
        status, message, code = ended_by(error)
    finally:
        message = end_session(run, session, driver, out, status, message)
    return ended(out, run, choice, (status, message, code))


def no_consent(
    options: Options, choice: ModelChoice, native_source: str | None = None
) -> SetupError:
    """What loading needs the user's consent for: model, revision, size, source, licence."""
    if native_source is not None:
        source = f"the local files in {native_source}, run natively"
    elif choice.fixture or choice.subject:
        source = "this site (bundled with the app)"
    else:
        source = options.model_host or options.model_folder or "https://huggingface.co/"
    size = f"≈ {choice.download_mb} MB" if choice.download_mb is not None else "size unknown"
    return SetupError(
        "no_consent",
        f"loading {choice.model_id} (revision {choice.revision}, {size}, from {source}, "
        f"licence: {choice.licence}) needs your consent: add --consent. Nothing was "
        "downloaded and no browser was started.",
    )


def begin_session(
    run: RunFile,
    args: argparse.Namespace,
    argv: list[str],
    options: Options,
    choice: ModelChoice,
    trials_at_start: int,
    in_flight: str | None,
) -> dict[str, Any]:
    """This invocation's entry in run.json (a new run.json for a new sweep)."""
    started = now()
    session: dict[str, Any] = {
        "started_at": started,
        "ended_at": None,
        "status": "running",
        "resumed": bool(args.resume),
        "command": argv,
        "in_flight_at_start": in_flight,
        "trials_at_start": trials_at_start,
        "trials_at_end": None,
        "message": None,
        "timings_s": {},
        "faults": fault_hooks(options.page_params.get("fault", "")),
    }
    if args.resume:
        run.data.setdefault("sessions", []).append(session)
        run.data["status"] = "running"
        return session
    run.data = {
        "schema_version": RUN_SCHEMA,
        "kind": "composition-lab-sweep-run",
        "status": "running",
        **run_evidence_fields(choice.fixture, choice.subject, choice.model_id),
        "command": argv,
        "started_at": started,
        "ended_at": None,
        "phase": None,
        "in_flight": None,
        "run_id": None,
        "trials": 0,
        "total": None,
        "options": options.to_json(),
        "faults": fault_hooks(options.page_params.get("fault", "")),
        "model": {
            "key": choice.key,
            "model_id": choice.model_id,
            "revision": choice.revision,
            "fixture": choice.fixture,
        },
        "versions": versions(None, None),
        "sessions": [session],
        "checks": None,
    }
    return session


def serve_model_folder(options: Options, choice: ModelChoice, servers: list[Any]) -> str | None:
    """The model host the page loads from: a local folder is served like the hub."""

    model_host = options.model_host
    if options.model_folder or (model_host and Path(model_host).is_dir()):
        folder = Path(options.model_folder or model_host or "")
        if options.model_host:  # a folder laid out like the hub: DIR/org/name/...
            folder = folder / choice.model_id
        hub, model_host, _ = serve_hub_in_thread({choice.model_id: folder})
        servers.append(hub)
        say(f"serving {folder} as {model_host}{choice.model_id}/resolve/*/")
    return model_host


def end_session(
    run: RunFile,
    session: dict[str, Any],
    driver: Driver | None,
    out: Path,
    status: str,
    message: str,
) -> str:
    """Close this invocation's entry in run.json; unless done, write a checkpoint from every
    trial that arrived. Returns the message (with any failure to write added)."""
    if driver is not None:
        if driver.blocked:
            run.data.setdefault("blocked_requests", []).extend(driver.blocked[:100])
        driver.trials.close()
        if status != "done":
            try:
                driver.checkpoint()
            except (OSError, FilesError) as error:
                message = f"{message}; writing trace.json failed: {error}"
    ended = now()
    session["ended_at"] = ended
    session["status"] = status
    session["message"] = message or None
    if (out / TRIALS).exists() or (out / TRACE).exists():
        trials = TrialsFile(out / TRIALS).count if (out / TRIALS).exists() else 0
        session["trials_at_end"] = trials
        run.data["trials"] = trials
    run.data["status"] = status
    run.data["ended_at"] = ended if status in ("done", "failed") else None
    if status == "done":
        run.data["in_flight"] = None
        run.data["phase"] = None
        run.data.pop("paused", None)
    run.save()
    return message


def _drive(
    driver: Driver,
    playwright: Any,
    site_url: str,
    stored: dict[str, Any] | None,
    in_flight: str | None,
) -> tuple[str, str, int]:
    executable, looked = find_chromium()
    if executable is None:
        managed = playwright.chromium.executable_path
        if not Path(managed).is_file():
            raise missing_chromium(looked, managed)
    args = [*CHROMIUM_ARGS, *driver.options.chromium_flags]
    timings = driver.run.session["timings_s"]
    t0 = time.monotonic()
    browser = playwright.chromium.launch(executable_path=executable, args=args)
    try:
        allowed = allowed_hosts(driver.options.model_host, driver.consent)
        context = browser.new_context()
        context.set_default_timeout(120_000)

        def guard(route: Any) -> None:
            parts = urlsplit(route.request.url)
            if parts.scheme in ("blob", "data") or host_allowed(parts.hostname or "", allowed):
                route.fallback()
            else:
                driver.blocked.append(route.request.url)
                route.abort("blockedbyclient")

        # Matched in Playwright's driver: requests to 127.0.0.1 never reach Python.
        context.route(OFF_LOCALHOST, guard)
        page = context.new_page()
        driver.page = page
        page.on("pageerror", lambda error: driver.page_errors.append(str(error)))
        page.on("crash", lambda _: driver.page_errors.append("the page crashed"))
        install_relay(page, lambda text, texts: driver.on_event(None, text, texts))
        query: dict[str, str] = {"seed": str(driver.options.seed)}
        if driver.options.model_host:
            query["model_host"] = driver.options.model_host
        query.update(driver.options.page_params)
        driver.boot(f"{site_url}?{page_query(query)}")
        timings["boot"] = round(time.monotonic() - t0, 3)
        hello = driver.request(Hello())
        driver.run.data["versions"] = versions(to_json(hello), browser.version)
        say(
            f"page ready in {timings['boot']:.1f} s (Chromium {browser.version}); loading the model"
        )
        t1 = time.monotonic()
        loaded = driver.load_model()
        timings["model_load"] = round(time.monotonic() - t1, 3)
        driver.run.session["model"] = loaded
        driver.run.save()
        driver.wait_experiment()
        t2 = time.monotonic()
        driver.sweep(stored, in_flight)
        timings["sweep"] = round(time.monotonic() - t2, 3)
    finally:
        with suppress(Exception):
            browser.close()
    if driver.blocked:
        say(f"blocked {len(driver.blocked)} request(s) off 127.0.0.1 (listed in run.json)")
    return "done", "", 0


def finish(out: Path, run: RunFile, choice: ModelChoice) -> int:
    trace, predictions = read_document(out / TRACE), read_document(out / "predictions.json")
    assert isinstance(trace, dict) and isinstance(predictions, dict)
    checks = check_files(out)
    run.data["checks"] = checks
    # The page knows best what was loaded: a model served from a folder or a local host whose
    # files are the test fixture's is labelled a fixture in the trace, and so is the run.
    recorded = (trace.get("model") or {}).get("evidence")
    fixture = choice.fixture or recorded == "fixture"
    subject = not fixture and (choice.subject or recorded == "reference-subject")
    config = (trace.get("model") or {}).get("config_sha256")
    run.data.update(run_evidence_fields(fixture, subject, choice.model_id, config))
    run.save()
    summary = trace.get("summary", {})
    banner = f"  *** {FIXTURE_BANNER} ***" if fixture else ""
    print(f"sweep done: {out}{banner}")
    print(
        f"  {summary.get('trials')} trials: {summary.get('correct')} correct, "
        f"{summary.get('incorrect')} incorrect, {summary.get('failed')} failed; "
        f"{len(trace.get('interruptions', []))} interruption(s); "
        f"model {choice.model_id} ({run.data['options']['backend']}), evidence: "
        f"{predictions.get('evidence')}"
    )
    report_scores(predictions)
    report_checks(checks, trace)
    print(f"  wrote {out / 'trace.json'}, {out / 'predictions.json'}, {out / 'run.json'}")
    if fixture:
        print(f"  {FIXTURE_NOTE}")
    return 0 if checks["ok"] else 1
