"""`python -m pyapp sweep`: the whole protocol, unattended, in the real page.

The command serves the built site on 127.0.0.1, starts a headless Chromium, loads the model
through the Models panel's consent dialog (``--consent`` is the click on *Download and
load*), and drives the page's own experiment API, ``window.lab.experiment``: measure →
freeze → held-out → score all happen in the page (Pyodide + the transformers.js worker).
Python here only watches, writes files and checks them; it never runs a trial itself.

Files in ``--out`` (each written atomically, via a temporary file and a rename):

    trace.json        the page's trace, rewritten after every finished trial
    predictions.json  the predictions document: from the freeze on, after every held-out
                      trial (``pyapp.predict.predictor.score_trace`` of that trace, the function the
                      page runs); at the end, the page's own ``predictions()``
    run.json          command line, versions, model, options, start/end times, status, the
                      trial in flight, one entry per session (first run and each --resume),
                      requests blocked, and the end-of-run checks

``--resume`` reads trace.json and run.json's in-flight trial and hands both to the page
(``resumeFrom``): the page records the interruption and continues with the next unobserved
trial, so no held-out task is ever observed twice under the same frozen profile.

Errors (one boundary, one small tree; each carries the exit status it maps to)::

    SweepError                 status 1: the sweep failed (page, model, checks)
    ├── SetupError             status 2: bad options, no consent, no Chromium, no site,
    │                                    an --out folder already in use, nothing to resume
    └── Interrupted            status 130 (Ctrl-C / SIGTERM) or 1 (--timeout): files consistent,
                                         continue with --resume
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import re
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any, TextIO
from urllib.parse import urlencode, urlsplit

from pyapp import __version__
from pyapp.cli.main import EXPORTS, REPO_ROOT, UsageError, param_overrides, write_atomically

DEFAULT_SITE = REPO_ROOT / "build" / "site"
RUN_SCHEMA = "sweep-run/1"
FIXTURE_BANNER = "TEST FIXTURE — NOT MODEL EVIDENCE"
FIXTURE_NOTE = (
    "The model is the bundled test fixture (tests/fixtures/tiny-chat, ~100k parameters): "
    "this sweep tests the pipeline, not a model. Nothing in it is model evidence."
)
CHROMIUM_ARGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
"""From PLATFORM-NOTES: without the background-networking flags Chromium floods a closed
network."""
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser")
OFF_LOCALHOST = re.compile(r"^(?!(?:https?|wss?)://127\.0\.0\.1(?::\d+)?/|blob:|data:)")
"""Every URL the guard looks at: anything not on 127.0.0.1 (nor blob:/data:)."""
HF_HOSTS = ("huggingface.co", "hf.co")
"""The hub redirects file downloads to its CDNs (subdomains of these)."""
BOOT_TIMEOUT_S = 120.0
LOAD_TIMEOUT_S = 1800.0
POLL_MS = 500
CANCEL_GRACE_S = 180.0
"""After --timeout the current trial gets this long to finish before the browser is closed
(a Ctrl-C waits for it until a second Ctrl-C)."""


class SweepError(Exception):
    """The sweep failed; `code` is stable and machine-readable, `status` the exit status."""

    status = 1

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class SetupError(SweepError):
    """Nothing ran: bad options, no consent, something missing (exit status 2)."""

    status = 2


class Interrupted(SweepError):
    """Stopped by Ctrl-C / SIGTERM (exit 130) or --timeout (exit 1); files consistent."""

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(code, message)
        self.status = status


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def dump(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


# ---- options ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelChoice:
    """What the Models panel is asked to load."""

    key: str
    """Catalogue key (`fixture`, `smollm2-135m`, ...) or `other` for a free model id."""
    model_id: str
    """Model id as the hub spells it (`fixture/tiny-chat` for the fixture)."""
    revision: str
    """Revision the page loads."""
    fixture: bool
    """The bundled test fixture: the sweep is NOT model evidence."""
    download_mb: float | None
    """Approximate download for the chosen dtype, from the catalogue; None when unknown."""
    licence: str
    """Licence as the catalogue states it."""


@dataclass(frozen=True)
class Options:
    """A sweep's settings; recorded in run.json and taken from it on --resume."""

    model: str
    backend: str
    dtype: str | None
    revision: str | None
    seed: int
    params: dict[str, Any]
    conditions: list[str] | None
    model_host: str | None
    model_folder: str | None
    chromium_flags: list[str]
    page_params: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "backend": self.backend,
            "dtype": self.dtype,
            "revision": self.revision,
            "seed": self.seed,
            "params": self.params,
            "conditions": self.conditions,
            "model_host": self.model_host,
            "model_folder": self.model_folder,
            "chromium_flags": self.chromium_flags,
            "page_params": self.page_params,
        }


def parse_conditions(text: str | None) -> list[str] | None:
    from pyapp.session import ALL_CONDITIONS

    if text is None:
        return None
    chosen = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in chosen if c not in ALL_CONDITIONS]
    if unknown or not chosen:
        raise UsageError(
            f"--conditions: unknown {', '.join(unknown) or '(empty)'}; "
            f"choose from {','.join(ALL_CONDITIONS)}"
        )
    return chosen


def parse_page_params(items: list[str] | None) -> dict[str, str]:
    result: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--page-param expects KEY=VALUE, got {item!r}")
        result[key] = value
    return result


def options_from_args(args: argparse.Namespace) -> Options:
    from pyapp.tasks.taskset import DEFAULT_SEED

    if not args.model:
        raise UsageError("--model is required (e.g. --model fixture)")
    seed = DEFAULT_SEED if args.seed is None else args.seed
    return Options(
        model=args.model,
        backend=args.backend or "webgpu",
        dtype=args.dtype,
        revision=args.revision,
        seed=seed,
        params=param_overrides(args.param, seed),
        conditions=parse_conditions(args.conditions),
        model_host=args.model_host,
        model_folder=args.model_folder,
        chromium_flags=list(args.chromium_flag or []),
        page_params=parse_page_params(args.page_param),
    )


def options_for_resume(args: argparse.Namespace, recorded: dict[str, Any]) -> Options:
    """The recorded options; an explicit option that disagrees with them is refused."""
    given: dict[str, Any] = {
        "model": args.model,
        "backend": args.backend,
        "dtype": args.dtype,
        "revision": args.revision,
        "seed": args.seed,
        "params": None if args.param is None else param_overrides(args.param, args.seed or 0),
        "conditions": parse_conditions(args.conditions),
    }
    for key, value in given.items():
        if value is not None and value != recorded.get(key):
            raise UsageError(
                f"--resume: --{key.replace('_', '-')} {value!r} differs from the sweep's "
                f"recorded {recorded.get(key)!r} (omit it to continue the recorded sweep)"
            )
    return Options(
        model=recorded["model"],
        backend=recorded["backend"],
        dtype=recorded.get("dtype"),
        revision=recorded.get("revision"),
        seed=int(recorded["seed"]),
        params=dict(recorded.get("params") or {}),
        conditions=recorded.get("conditions"),
        model_host=args.model_host or recorded.get("model_host"),
        model_folder=args.model_folder or recorded.get("model_folder"),
        chromium_flags=list(args.chromium_flag or recorded.get("chromium_flags") or []),
        page_params=parse_page_params(args.page_param) or dict(recorded.get("page_params") or {}),
    )


def read_catalogue(site: Path) -> dict[str, Any]:
    try:
        catalogue: dict[str, Any] = json.loads((site / "models.json").read_text("utf-8"))
    except (OSError, ValueError) as error:
        raise SetupError("no_catalogue", f"cannot read {site / 'models.json'}: {error}") from None
    return catalogue


def choose_model(options: Options, catalogue: dict[str, Any]) -> ModelChoice:
    """`fixture`, a catalogue key or model id, or any other hub model id."""
    wanted = options.model
    for entry in catalogue.get("models", []):
        if wanted not in (entry["key"], entry["model_id"]):
            continue
        fixture = entry.get("source") == "bundled-fixture"
        if options.revision not in (None, entry["revision"]) and not fixture:
            break  # another revision of a catalogue model: load it as "other"
        dtypes = entry.get("dtypes", {}).get(options.backend) or [None]
        dtype = options.dtype or dtypes[0]
        return ModelChoice(
            key=entry["key"],
            model_id=entry["model_id"],
            revision=entry["revision"],
            fixture=fixture,
            download_mb=(entry.get("download_mb") or {}).get(dtype),
            licence=entry.get("licence", "unknown"),
        )
    if "/" not in wanted:
        keys = ", ".join(e["key"] for e in catalogue.get("models", []))
        raise UsageError(
            f"--model {wanted!r}: not in the catalogue ({keys}) and not an org/name id"
        )
    return ModelChoice(
        key="other",
        model_id=wanted,
        revision=options.revision or "main",
        fixture=False,
        download_mb=None,
        licence="see the model card",
    )


# ---- Chromium and the request guard ------------------------------------------------------------


def find_chromium() -> tuple[str | None, list[str]]:
    """(executable or None meaning "Playwright's own", what was looked at)."""
    looked: list[str] = []
    env = os.environ.get("PLAYWRIGHT_CHROMIUM_EXECUTABLE_PATH")
    if env:
        looked.append(f"PLAYWRIGHT_CHROMIUM_EXECUTABLE_PATH={env}")
        if Path(env).is_file():
            return env, looked
    for candidate in CHROMIUM_CANDIDATES:
        looked.append(candidate)
        found = candidate if Path(candidate).is_file() else shutil.which(candidate)
        if found:
            return found, looked
    return None, looked


def missing_chromium(looked: list[str], managed: str) -> SetupError:
    return SetupError(
        "no_chromium",
        "no Chromium found (looked at: "
        + ", ".join([*looked, f"Playwright's own {managed}"])
        + "). Install Debian's: `sudo apt-get install chromium` (bash scripts/lab test does it),"
        " or point PLAYWRIGHT_CHROMIUM_EXECUTABLE_PATH at a Chromium/Chrome binary, or, where the"
        " network allows, `python -m playwright install chromium`.",
    )


def allowed_hosts(model_host: str | None, consent: bool) -> set[str]:
    """Hosts (besides 127.0.0.1) the page may reach: only a remote model host, with consent."""
    if not consent or not model_host:
        return set()
    host = urlsplit(model_host).hostname or ""
    if not host or host == "127.0.0.1":
        return set()
    return {host}


def host_allowed(host: str, allowed: set[str]) -> bool:
    if host == "127.0.0.1" or host in allowed:
        return True
    if any(a in HF_HOSTS for a in allowed):  # the hub's download redirects
        return any(host == h or host.endswith("." + h) for h in HF_HOSTS)
    return False


# ---- run.json ----------------------------------------------------------------------------------


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


# ---- progress ----------------------------------------------------------------------------------


def clock_text(seconds: float | None) -> str:
    if seconds is None:
        return "--:--"
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class Progress:
    """Trials done/total, the current condition and task, elapsed and ETA, on stderr: a bar
    redrawn in place on a terminal, one plain line per finished trial otherwise."""

    def __init__(self, stream: TextIO, done: int, total: int) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.done = done
        self.total = total
        self.first_done = done
        self.started = time.monotonic()
        self.current = ""
        self.phase = ""

    def eta(self) -> float | None:
        finished = self.done - self.first_done
        if finished <= 0:
            return None
        return (time.monotonic() - self.started) / finished * max(0, self.total - self.done)

    def line(self) -> str:
        elapsed = clock_text(time.monotonic() - self.started)
        where = f"{self.phase} {self.current}".strip()
        return f"{self.done}/{self.total}  {where}  elapsed {elapsed}  ETA {clock_text(self.eta())}"

    def draw(self) -> None:
        if not self.tty:
            return
        width = shutil.get_terminal_size((100, 20)).columns
        filled = int(20 * self.done / self.total) if self.total else 20
        bar = "[" + "#" * filled + "." * (20 - filled) + "] "
        self.stream.write("\r\x1b[2K" + (bar + self.line())[: width - 1])
        self.stream.flush()

    def trial_start(self, event: dict[str, Any]) -> None:
        self.current = str(event.get("trial_id") or "")
        self.phase = str(event.get("phase") or "")
        self.draw()

    def trial_done(self, event: dict[str, Any]) -> None:
        self.done += 1
        trial = event.get("trial") or {}
        self.current = str(trial.get("trial_id") or self.current)
        if self.tty:
            self.draw()
        else:
            outcome = trial.get("outcome", "?")
            self.stream.write(f"[sweep] {self.line()}  -> {outcome}\n")
            self.stream.flush()

    def note(self, text: str) -> None:
        if self.tty:
            self.stream.write("\r\x1b[2K")
        self.stream.write(f"[sweep] {text}\n")
        self.stream.flush()
        self.draw()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def say(text: str) -> None:
    print(f"[sweep] {text}", file=sys.stderr, flush=True)


# ---- signals -----------------------------------------------------------------------------------


class StopFlag:
    """Ctrl-C / SIGTERM once: ask the page to stop after its current trial. Twice: stop now."""

    def __init__(self) -> None:
        self.reason: str | None = None

    def handler(self, signum: int, frame: FrameType | None) -> None:
        if self.reason is not None:
            raise KeyboardInterrupt
        self.reason = signal.Signals(signum).name
        say(
            f"{self.reason}: stopping when the current trial is done (Ctrl-C again: stop now;"
            " that trial is then recorded as interrupted); continue later with --resume"
        )

    @contextmanager
    def installed(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {s: signal.signal(s, self.handler) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for signum, old in previous.items():
                signal.signal(signum, old)


# ---- the driver --------------------------------------------------------------------------------


def retype(document: Any, kind: str) -> Any:
    """The document rebuilt through its record class: JavaScript has one number type, so a
    float such as 1.0 crosses the page as 1; the record's field types restore it (the
    values are unchanged). A document that does not fit is written as it came."""
    from pyapp.predict.predictor import PredictionsDocument
    from pyapp.records.base import RecordError, from_json, to_json
    from pyapp.records.trace import Trace

    record_type = Trace if kind == "trace" else PredictionsDocument
    try:
        return to_json(from_json(record_type, document))
    except RecordError:
        return document


def unwrap(value: Any, key: str) -> Any:
    """`{key: X}` -> X (the bridge's shape); anything else unchanged (the page unwrapped it)."""
    if isinstance(value, dict) and set(value) == {key}:
        return value[key]
    return value


class Driver:
    """One sweep session in one headless page."""

    def __init__(
        self,
        options: Options,
        choice: ModelChoice,
        out: Path,
        run: RunFile,
        *,
        consent: bool,
        site: Path,
        timeout_s: float | None,
        stop: StopFlag,
    ) -> None:
        self.options = options
        self.choice = choice
        self.out = out
        self.run = run
        self.consent = consent
        self.site = site
        self.deadline = None if not timeout_s else time.monotonic() + timeout_s
        self.timeout_s = timeout_s
        self.stop = stop
        self.cancel_sent_at: float | None = None
        self.progress: Progress | None = None
        self.blocked: list[str] = []
        self.callback_error: BaseException | None = None
        self.page_errors: list[str] = []
        self.page: Any = None
        self.frozen = False

    # -- files --

    def write_trace(self, trace: Any, *, typed: bool = True) -> None:
        """trace.json; `typed=False` (after each trial) skips the re-typing through the
        records, which costs tens of ms on a long trace: the numbers are the same and every
        reader (the page on --resume, the schema, reproduce) takes an integral float as it
        is. Checkpoints (start, freeze, end, interruption) write it re-typed."""
        document = retype(trace, "trace") if typed else trace
        write_atomically(self.out / "trace.json", dump(document))

    def write_predictions(self, predictions: Any) -> None:
        write_atomically(self.out / "predictions.json", dump(retype(predictions, "predictions")))

    def derive_predictions(self, trace: Any) -> None:
        """predictions.json as it grows: the page's own scoring function over its trace."""
        from pyapp.predict.predictor import score_trace
        from pyapp.records.base import from_json, to_json
        from pyapp.records.trace import Trace

        parsed = from_json(Trace, trace)
        if parsed.freezes:
            self.write_predictions(to_json(score_trace(parsed)))

    # -- page events --

    def on_event(self, source: Any, event_json: str) -> None:
        try:
            self._on_event(json.loads(event_json))
        except BaseException as error:  # raised later, on the main path
            self.callback_error = error

    def _on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("event") or event.get("type")
        if kind == "trial_start":
            self.run.data["in_flight"] = event.get("trial_id")
            self.run.data["phase"] = event.get("phase")
            self.run.save()
            if self.progress:
                self.progress.trial_start(event)
        elif kind == "trial_done":
            trace = event.get("trace")
            if trace is not None:
                self.write_trace(trace, typed=False)
                if event.get("phase") == "heldout":
                    self.derive_predictions(trace)
            self.run.data["in_flight"] = None
            self.run.data["trials"] = (self.progress.done + 1) if self.progress else None
            self.run.save()
            if self.progress:
                self.progress.trial_done(event)

    # -- calling the page --

    def check_stop(self) -> None:
        if self.callback_error is not None:
            raise SweepError("write_failed", f"writing the files failed: {self.callback_error}")
        timed_out = self.deadline is not None and time.monotonic() > self.deadline
        if timed_out and self.stop.reason is None:
            self.stop.reason = "timeout"
            say(f"--timeout {self.timeout_s:g} s reached: stopping after the current trial")
        if self.stop.reason is None:
            return
        if self.cancel_sent_at is None:
            # Stop between trials: the page cancels as soon as the current trial is done
            # (the onEvent hook in `sweep`), so no generation is cut short and recorded.
            self.cancel_sent_at = time.monotonic()
            try:
                self.page.evaluate("() => { window.__sweepStop = true; }")
            except Exception as error:  # the page is gone: stop now
                raise self.interrupted() from error
        elif self.stop.reason == "timeout" and (
            time.monotonic() - self.cancel_sent_at > CANCEL_GRACE_S
        ):
            raise self.interrupted()

    def interrupted(self) -> Interrupted:
        reason = self.stop.reason or "interrupted"
        if reason == "timeout":
            return Interrupted("timeout", f"stopped by --timeout {self.timeout_s:g} s", 1)
        return Interrupted("interrupted", f"stopped by {reason}", 130)

    def call(self, method: str, *args: Any) -> Any:
        """`await window.lab.experiment[method](...args)`, polling so that Ctrl-C, --timeout
        and a crashed page are noticed while the page works."""
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        page = self.page
        page.evaluate(
            """([method, args]) => {
                 const slot = { done: false };
                 window.__sweepCall = slot;
                 Promise.resolve()
                   .then(() => window.lab.experiment[method](...args))
                   .then((value) => { slot.ok = true; slot.value = value; },
                         (error) => {
                           slot.ok = false;
                           slot.error = String(error?.message ?? error);
                         })
                   .finally(() => { slot.done = true; });
               }""",
            [method, list(args)],
        )
        while True:
            try:
                page.wait_for_function(
                    "() => window.__sweepCall.done", timeout=POLL_MS, polling=100
                )
                break
            except PlaywrightTimeout:
                self.check_stop()
            except PlaywrightError as error:
                raise SweepError(
                    "page_failed", f"the page failed during {method}: {error}"
                ) from None
        slot = page.evaluate("() => window.__sweepCall")
        if self.callback_error is not None:
            self.check_stop()
        if not slot.get("ok"):
            raise SweepError("page_refused", f"experiment.{method} failed: {slot.get('error')}")
        return slot.get("value")

    # -- steps --

    def boot(self, url: str) -> None:
        page = self.page
        page.goto(url, timeout=60_000)
        page.wait_for_function(
            "() => ['ready', 'done', 'error']"
            ".includes(document.querySelector('#app').dataset.state)",
            timeout=BOOT_TIMEOUT_S * 1000,
        )
        if page.get_attribute("#app", "data-state") == "error":
            raise SweepError(
                "boot_failed", f"the page failed to start: {page.inner_text('#status')}"
            )

    def load_model(self) -> dict[str, Any]:
        """Select model, backend and dtype in the Models panel; consent in its dialog."""
        page, choice = self.page, self.choice
        page.wait_for_function(
            "() => document.querySelector('#model-choice').options.length > 1"
            " && !document.querySelector('#backend-status').textContent.startsWith('Checking')",
            timeout=60_000,
        )
        page.select_option("#model-choice", choice.key)
        if choice.key == "other":
            page.fill("#model-id", choice.model_id)
            page.fill("#model-revision", choice.revision)
        page.check(f'input[name="backend"][value="{self.options.backend}"]')
        offered = page.eval_on_selector_all("#model-dtype option", "els => els.map(e => e.value)")
        if self.options.dtype:
            if self.options.dtype not in offered:
                raise SetupError(
                    "bad_dtype",
                    f"--dtype {self.options.dtype}: the page offers {', '.join(offered)} for "
                    f"{choice.model_id} on {self.options.backend}",
                )
            page.select_option("#model-dtype", self.options.dtype)
        if self.options.model_host:
            page.fill("#model-host", self.options.model_host)
        backend_line = page.inner_text("#backend-status")
        page.click("#model-review")
        page.wait_for_function(
            "() => document.querySelector('#consent-dialog').open"
            " || ['failed', 'loading', 'loaded']"
            ".includes(document.querySelector('#models').dataset.state)",
            timeout=30_000,
        )
        dialog = ""
        if page.evaluate("() => document.querySelector('#consent-dialog').open"):
            dialog = page.inner_text("#consent-details")
            self.run.session["consent_dialog"] = dialog
            page.click("#consent-accept")  # --consent: the explicit "Download and load"
        page.wait_for_function(
            "() => ['failed', 'loaded'].includes(document.querySelector('#models').dataset.state)",
            timeout=self.remaining_ms(LOAD_TIMEOUT_S),
        )
        status = page.inner_text("#model-status")
        if page.get_attribute("#models", "data-state") != "loaded":
            hint = ""
            if self.options.backend == "webgpu" and "WebGPU is not available" in backend_line:
                hint = (
                    f" ({backend_line.strip()}) Try --chromium-flag=--enable-unsafe-webgpu"
                    " (a software adapter: slow) or --backend wasm."
                )
            raise SweepError("load_failed", f"the model did not load: {status}{hint}")
        say(status)
        state = page.evaluate(
            "() => window.lab.models.state ? window.lab.models.state()"
            " : window.lab.models.client.provenance()"
        )
        return {"status": status, "backend_status": backend_line, "dialog": dialog, "state": state}

    def remaining_ms(self, cap_s: float) -> float:
        if self.deadline is None:
            return cap_s * 1000
        return max(1.0, min(cap_s, self.deadline - time.monotonic())) * 1000

    def wait_experiment(self) -> None:
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        try:
            self.page.wait_for_function(
                "() => window.lab && window.lab.experiment"
                " && typeof window.lab.experiment.start === 'function'",
                timeout=30_000,
            )
        except PlaywrightTimeout:
            raise SetupError(
                "no_experiment_api",
                f"the page at {self.site} has no window.lab.experiment: rebuild the site"
                " (python scripts/build_site.py)",
            ) from None

    def sweep(self, resume_trace: Any, in_flight: str | None) -> dict[str, Any]:
        """Start or resume, then measure → freeze → held-out → score, all in the page."""
        from pyapp.session import ALL_CONDITIONS

        self.page.evaluate(
            """() => window.lab.experiment.onEvent((event) => {
                 window.__sweepEvent(JSON.stringify(event)); // native: cheaper than a walk
                 // Called before the page hands the trial back to Python: a cancel here
                 // stops the run before the next trial starts.
                 if (event.event === "trial_done" && window.__sweepStop) {
                   window.lab.experiment.cancel();
                 }
               })"""
        )
        if resume_trace is not None:
            state = self.call("resumeFrom", resume_trace, in_flight)
            if in_flight:
                say(f"resumed; the trial in flight at the interruption was {in_flight}")
        else:
            request: dict[str, Any] = {"seed": self.options.seed, "params": self.options.params}
            # Explicit, so the sweep never depends on the page's checkboxes.
            request["conditions"] = self.options.conditions or list(ALL_CONDITIONS)
            state = self.call("start", request)
        state = unwrap(state, "state")
        self.write_trace(unwrap(self.call("trace"), "trace"))
        self.run.data["run_id"] = state.get("run_id")
        self.run.data["in_flight"] = None
        done = int(state["trials"])
        total = done + int(state["measure_left"]) + int(state["heldout_left"])
        self.run.data["total"] = total
        self.run.data["trials"] = done
        self.run.save()
        self.progress = Progress(sys.stderr, done, total)
        self.progress.note(
            f"run {state.get('run_id')}: {done}/{total} trials done; conditions "
            + ", ".join(state.get("conditions", []))
        )
        if state["measure_left"]:
            self.phase("measure")
            state = self.run_phase("measure")
        if state.get("can_freeze"):
            frozen = self.call("freeze")
            state = frozen.get("state", state) if isinstance(frozen, dict) else state
            self.write_trace(unwrap(self.call("trace"), "trace"))
            self.write_predictions(unwrap(self.call("predictions"), "predictions"))
            self.progress.note(
                "froze "
                + ", ".join(
                    f"{p['profile']['condition']} {p['sha256'][:12]}"
                    for p in frozen.get("frozen", [])
                )
            )
        if state["heldout_left"]:
            self.phase("heldout")
            state = self.run_phase("heldout")
        self.progress.close()
        trace = unwrap(self.call("trace"), "trace")
        predictions = unwrap(self.call("predictions"), "predictions")
        self.write_trace(trace)
        self.write_predictions(predictions)
        self.run.data["trials"] = len(trace.get("trials", []))
        return dict(state)

    def phase(self, name: str) -> None:
        self.run.data["phase"] = name
        self.run.save()

    def run_phase(self, phase: str) -> dict[str, Any]:
        result: dict[str, Any] = self.call("run", phase)
        if self.stop.reason is not None or result.get("cancelled"):
            self.write_trace(unwrap(self.call("trace"), "trace"))
            raise self.interrupted()
        state: dict[str, Any] = result["state"]
        return state


# ---- checks ------------------------------------------------------------------------------------


def validate(document: Any, schema_name: str) -> list[str] | None:
    """Schema errors (first ten) of a document; None when jsonschema is not installed."""
    try:
        jsonschema: Any = importlib.import_module("jsonschema")
    except ImportError:
        return None
    schema = json.loads((EXPORTS / schema_name).read_text("utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(document), key=str)
    return [f"{list(e.absolute_path)}: {e.message}" for e in errors[:10]]


def check_files(out: Path) -> dict[str, Any]:
    """Validate trace.json and predictions.json against exports/ and re-derive both."""
    from pyapp.records.reproduce import reproduce, reproduce_predictions

    trace = json.loads((out / "trace.json").read_text("utf-8"))
    predictions = json.loads((out / "predictions.json").read_text("utf-8"))
    checks: dict[str, Any] = {}
    trace_errors = validate(trace, "trace.schema.json")
    if trace_errors is None:
        checks["schema"] = "skipped: jsonschema is not installed (pip install jsonschema)"
    else:
        prediction_errors = validate(predictions, "predictions.schema.json") or []
        checks["schema"] = {"trace.json": trace_errors, "predictions.json": prediction_errors}
    mismatches = [str(m) for m in reproduce(trace)]
    prediction_mismatches = [str(m) for m in reproduce_predictions(trace, predictions)]
    checks["reproduce"] = {"trace.json": mismatches, "predictions.json": prediction_mismatches}
    checks["exact"] = not mismatches and not prediction_mismatches
    schema_ok = isinstance(checks["schema"], str) or not any(checks["schema"].values())
    checks["ok"] = schema_ok and checks["exact"]
    return checks


def report_checks(checks: dict[str, Any], trace: dict[str, Any]) -> None:
    schema = checks["schema"]
    if isinstance(schema, str):
        print(f"schema: {schema}")
    else:
        for name, errors in schema.items():
            kind = "trace" if name == "trace.json" else "predictions"
            if errors:
                print(f"schema: {name} INVALID against exports/{kind}.schema.json:")
                for error in errors:
                    print(f"  {error}")
            else:
                print(f"schema: {name} valid against exports/{kind}.schema.json")
    for name, mismatches in checks["reproduce"].items():
        if mismatches:
            print(f"reproduce: {name}: {len(mismatches)} mismatch(es)")
            for mismatch in mismatches[:20]:
                print(f"  MISMATCH {mismatch}")
        elif name == "trace.json":
            print(
                f"reproduce: ok: {len(trace.get('tasks', []))} tasks and "
                f"{len(trace.get('trials', []))} trials re-derived exactly"
            )
        else:
            print("reproduce: ok: every number in predictions.json re-derived exactly")


def report_scores(predictions: dict[str, Any]) -> None:
    for result in predictions.get("conditions", []):
        frozen = result["frozen"]
        scores = result["scores"]

        def fmt(value: Any) -> str:
            return "—" if value is None else f"{value:.3f}"

        print(
            f"  {frozen['profile']['condition']:<17} profile {frozen['sha256'][:12]}  "
            f"held-out n={scores['n']}  Brier(final, proxy) {fmt(scores['brier_final_proxy'])}  "
            f"Brier(all steps) {fmt(scores['brier_all_steps'])}"
        )


# ---- the command -------------------------------------------------------------------------------


def versions(page_hello: dict[str, Any] | None, browser_version: str | None) -> dict[str, Any]:
    try:
        from importlib.metadata import version

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


def prepare_out(out: Path, resume: bool) -> tuple[RunFile, Any, str | None]:
    """(run.json, the trace to resume from or None, the trial in flight)."""
    run_path = out / "run.json"
    if not resume:
        if run_path.exists() or (out / "trace.json").exists():
            raise SetupError(
                "out_in_use",
                f"{out} already holds a sweep: continue it with --resume, or choose another --out",
            )
        return RunFile(run_path), None, None
    if not run_path.exists():
        raise SetupError("nothing_to_resume", f"--resume: {run_path} does not exist")
    run = RunFile.load(run_path)
    trace_path = out / "trace.json"
    trace = None
    if trace_path.exists():
        try:
            trace = json.loads(trace_path.read_text("utf-8"))
        except (OSError, ValueError) as error:
            raise SetupError("nothing_to_resume", f"cannot read {trace_path}: {error}") from None
    in_flight = run.data.get("in_flight")
    return run, trace, in_flight if isinstance(in_flight, str) else None


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
    from pyapp.cli.serve import SiteMissingError, check_site

    out = Path(args.out)
    run, resume_trace, in_flight = prepare_out(out, args.resume)
    if args.resume:
        if run.data.get("status") == "done":
            print(
                f"{out}: this sweep finished already ({run.data.get('ended_at')});"
                " nothing to resume"
            )
            return 0
        options = options_for_resume(args, run.data["options"])
    else:
        options = options_from_args(args)
    try:
        site = check_site(Path(args.site))
    except SiteMissingError as error:
        raise SetupError("no_site", str(error)) from None
    if options.model_folder and options.model_host:
        raise UsageError("give --model-folder or --model-host, not both")
    choice = choose_model(options, read_catalogue(site))
    if choice.fixture:
        say(f"*** {FIXTURE_BANNER} ***  {FIXTURE_NOTE}")
    if not args.consent:
        if choice.fixture:
            source = "this site (bundled with the app)"
        else:
            source = options.model_host or options.model_folder or "https://huggingface.co/"
        size = f"≈ {choice.download_mb} MB" if choice.download_mb is not None else "size unknown"
        raise SetupError(
            "no_consent",
            f"loading {choice.model_id} (revision {choice.revision}, {size}, from {source}, "
            f"licence: {choice.licence}) needs your consent: add --consent. Nothing was "
            "downloaded and no browser was started.",
        )
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
    started = now()
    session: dict[str, Any] = {
        "started_at": started,
        "ended_at": None,
        "status": "running",
        "resumed": bool(args.resume),
        "command": argv,
        "in_flight_at_start": in_flight,
        "trials_at_start": len(resume_trace.get("trials", [])) if resume_trace else 0,
        "trials_at_end": None,
        "message": None,
        "timings_s": {},
    }
    if args.resume:
        run.data.setdefault("sessions", []).append(session)
        run.data["status"] = "running"
    else:
        run.data = {
            "schema_version": RUN_SCHEMA,
            "kind": "composition-lab-sweep-run",
            "status": "running",
            "evidence": "fixture" if choice.fixture else "model",
            "evidence_note": FIXTURE_NOTE if choice.fixture else "model evidence (check the trace)",
            "command": argv,
            "started_at": started,
            "ended_at": None,
            "phase": None,
            "in_flight": None,
            "run_id": None,
            "trials": 0,
            "total": None,
            "options": options.to_json(),
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
    out.mkdir(parents=True, exist_ok=True)
    run.save()

    servers: list[Any] = []
    driver: Driver | None = None
    status, message, code = "failed", "", 1
    try:
        with stop.installed(), sync_playwright() as playwright:
            from pyapp.cli.serve import serve_hub_in_thread, serve_in_thread

            server, site_url = serve_in_thread(site)
            servers.append(server)
            model_host = options.model_host
            if options.model_folder or (model_host and Path(model_host).is_dir()):
                folder = Path(options.model_folder or model_host or "")
                if options.model_host:  # a folder laid out like the hub: DIR/org/name/...
                    folder = folder / choice.model_id
                hub, model_host, _ = serve_hub_in_thread({choice.model_id: folder})
                servers.append(hub)
                say(f"serving {folder} as {model_host}{choice.model_id}/resolve/*/")
            driver = Driver(
                replace(options, model_host=model_host),
                choice,
                out,
                run,
                consent=bool(args.consent),
                site=site,
                timeout_s=args.timeout,
                stop=stop,
            )
            status, message, code = _drive(driver, playwright, site_url, resume_trace, in_flight)
    except KeyboardInterrupt:
        status, message, code = "interrupted", "stopped by a second Ctrl-C", 130
    except Interrupted as error:
        status, message, code = "interrupted", error.message, error.status
    except SweepError as error:
        status, message, code = "failed", f"[{error.code}] {error.message}", error.status
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
        if driver is not None and driver.blocked:
            run.data.setdefault("blocked_requests", []).extend(driver.blocked[:100])
        ended = now()
        session["ended_at"] = ended
        session["status"] = status
        session["message"] = message or None
        trace_path = out / "trace.json"
        if trace_path.exists():
            trials = len(json.loads(trace_path.read_text("utf-8")).get("trials", []))
            session["trials_at_end"] = trials
            run.data["trials"] = trials
        run.data["status"] = status
        run.data["ended_at"] = ended if status in ("done", "failed") else None
        if status == "done":
            run.data["in_flight"] = None
            run.data["phase"] = None
        run.save()
    if status != "done":
        resumable = (out / "trace.json").exists()
        print(f"sweep {status}: {message}", file=sys.stderr)
        if resumable:
            print(
                f"the files in {out} are consistent; continue with: "
                f"python -m pyapp sweep --resume --consent --out {out}",
                file=sys.stderr,
            )
        return code
    return finish(out, run, choice)


def _drive(
    driver: Driver,
    playwright: Any,
    site_url: str,
    resume_trace: Any,
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
        page.expose_binding("__sweepEvent", driver.on_event)
        query: dict[str, str] = {"seed": str(driver.options.seed)}
        if driver.options.model_host:
            query["model_host"] = driver.options.model_host
        query.update(driver.options.page_params)
        driver.boot(f"{site_url}?{urlencode(query)}")
        timings["boot"] = round(time.monotonic() - t0, 3)
        hello = page.evaluate("() => window.lab.request('hello')")
        driver.run.data["versions"] = versions(hello, browser.version)
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
        driver.sweep(resume_trace, in_flight)
        timings["sweep"] = round(time.monotonic() - t2, 3)
    finally:
        with suppress(Exception):
            browser.close()
    if driver.blocked:
        say(f"blocked {len(driver.blocked)} request(s) off 127.0.0.1 (listed in run.json)")
    return "done", "", 0


def finish(out: Path, run: RunFile, choice: ModelChoice) -> int:
    trace = json.loads((out / "trace.json").read_text("utf-8"))
    predictions = json.loads((out / "predictions.json").read_text("utf-8"))
    checks = check_files(out)
    run.data["checks"] = checks
    # The page knows best what was loaded: a model served from a folder or a local host whose
    # files are the test fixture's is labelled a fixture in the trace, and so is the run.
    fixture = choice.fixture or (trace.get("model") or {}).get("evidence") == "fixture"
    run.data["evidence"] = "fixture" if fixture else "model"
    run.data["evidence_note"] = FIXTURE_NOTE if fixture else "model evidence (check the trace)"
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
