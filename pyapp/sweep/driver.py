"""One sweep session in one headless page: boot, load the model (consent), start or resume,
then one `sweep_run` of phase `all` — Python orders measure → freeze → held-out, as for the
page's "Run all" — all through protocol messages (pyapp/protocol/messages.py) sent to the
page's one entry point, window.lab.send. The driver follows the run through its events
(trial_start, trial_done, trial_interrupted, frozen): each trial is appended to trials.jsonl
as it arrives, and trace.json (with predictions.json) is written at the freeze, at the end
and at Ctrl-C. The page's state and the Models panel are asked for through window.lab.send
too (`page_state`, `model_choose`, `sweep_stop`: `pyapp.sweep.panel`); the one thing it does
as a person would is the consent, a click on "Download and load". The JavaScript it runs is
panel.py's: one window.lab.send call, and the relay of one long request and its events
(driver.js, installed before the page loads)."""

from __future__ import annotations

import fcntl
import json
import sys
import time
from pathlib import Path
from typing import Any

from pyapp.browser import parse_provenance
from pyapp.conditions import ALL_CONDITIONS
from pyapp.errors import InputError
from pyapp.experiment import LedgerError, observed_for, read_ledger, record_trace, seen_in
from pyapp.host import read_seal, write_atomically
from pyapp.protocol import (
    ErrorBody,
    EventTexts,
    HeaderText,
    ModelChoose,
    ModelChosen,
    PredictionsText,
    Request,
    RunEnded,
    StudySealChoice,
    SweepHeader,
    SweepPredictions,
    SweepResume,
    SweepRun,
    SweepStart,
    SweepState,
    SweepStop,
    parse_event,
)
from pyapp.records import Trace, chain_protocol, document_text, from_json, task_params, to_json
from pyapp.sweep.errors import Interrupted, Paused, SetupError, SweepError
from pyapp.sweep.files import (
    PREDICTIONS,
    RECEIPT,
    TRIALS,
    TrialsFile,
    write_checkpoint,
    write_receipt,
)
from pyapp.sweep.options import ModelChoice, Options
from pyapp.sweep.panel import (
    consent,
    page_state,
    refused,
    relayed,
    send,
    wait_booted,
    wait_catalogue,
    wait_models,
)
from pyapp.sweep.progress import Progress, say
from pyapp.sweep.runfile import RunFile
from pyapp.sweep.signals import StopFlag
from pyapp.tasks import generate
from pyapp.verify import receipt_lines

BOOT_TIMEOUT_S = 120.0
LOAD_TIMEOUT_S = 1800.0
POLL_MS = 500
CANCEL_GRACE_S = 180.0
"""After --timeout the current trial gets this long to finish before the browser is closed
(a Ctrl-C waits for it until a second Ctrl-C)."""


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
        ledger: Path | None = None,
    ) -> None:
        self.options = options
        self.ledger = ledger
        """The ledger file of held-out tasks observed across sweeps (None: keep none)."""
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
        self.trials = TrialsFile(out / TRIALS)
        self.header_json: str | None = None
        """The sweep's header (the trace without its trials), as Python last wrote it."""
        self.changes: list[str] = []
        """The records that joined the header since (`EventTexts.change`), as Python wrote
        them, in order."""
        self.provenance: Any = None
        """The loaded model's provenance (JSON), as `page_state` reports it."""

    # -- files --

    def checkpoint(self, header_json: str | None = None) -> Trace | None:
        """trace.json (and predictions.json once frozen) from the header, the changes since
        and trials.jsonl."""
        if header_json is not None:
            self.header_json = header_json
            self.changes = []
        if self.header_json is None:
            return None
        trace = write_checkpoint(self.out, self.header_json, self.trials.lines(), self.changes)
        self.record_ledger(trace)
        return trace

    def record_ledger(self, trace: Trace) -> None:
        """Add the held-out tasks this trace observed to the ledger file (at checkpoints)."""

        if self.ledger is None:
            return
        try:  # a ledger shared by sweeps running at once (a matrix): one writer at a time
            self.ledger.parent.mkdir(parents=True, exist_ok=True)
            with open(f"{self.ledger}.lock", "a", encoding="utf-8") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                write_atomically(
                    self.ledger,
                    document_text(record_trace(read_ledger(self.ledger), trace), "ledger"),
                )
        except (LedgerError, OSError) as error:
            raise SweepError("ledger_failed", f"the ledger {self.ledger}: {error}") from None

    def previously_observed(self) -> dict[str, list[str]]:
        """What the ledger holds for the loaded model (id and revision), per condition:
        held-out task content keys (`pyapp.predict.exploratory`)."""

        if self.ledger is None:
            return {}
        provenance = parse_provenance(self.provenance)
        try:
            return observed_for(read_ledger(self.ledger), provenance)
        except LedgerError as error:
            raise SetupError("bad_ledger", f"{error} (choose another with --ledger)") from None

    def exploratory_for(self, keys: dict[str, list[str]]) -> dict[str, tuple[str, ...]]:
        """Per condition, the held-out tasks of this sweep those keys name (the one rule)."""
        params = task_params(self.options.seed, self.options.params)
        conditions = tuple(self.options.conditions or ALL_CONDITIONS)
        protocol = chain_protocol(self.options.chain_protocol)
        return seen_in(keys, generate(params), conditions, protocol)

    # -- page events --

    def on_event(self, source: Any, event_json: str, texts: Any = None, *_: Any) -> None:
        try:
            self._on_event(event_json, from_json(EventTexts, texts or {}, "$texts"))
        except BaseException as error:  # raised later, on the main path
            self.callback_error = error

    def _on_event(self, event_json: str, texts: EventTexts) -> None:
        event = json.loads(event_json)
        parse_event(event)  # what the page relays is checked against its record
        kind = event.get("type")
        if texts.change is not None:  # records that joined the header with this event
            self.changes.append(texts.change)
        if kind == "trial_start":
            self.run.data["in_flight"] = event.get("trial_id")
            self.run.data["phase"] = event.get("phase")
            self.run.save()
            if self.progress:
                self.progress.trial_start(event)
        elif kind == "trial_done":
            text = texts.trial
            if text is None:
                raise SweepError("bad_event", "a trial_done came without its trial")
            self.trials.append(text)  # Python's text, untouched: 1.0 stays 1.0
            if texts.change is not None:  # a reload's load record joined the chain before it:
                self.checkpoint()  # on disk before a crash can lose it
            self.run.data["in_flight"] = None
            self.run.data["trials"] = self.trials.count
            self.run.save()
            if self.progress:
                self.progress.trial_done({"trial": json.loads(text)})
        elif kind == "frozen":
            # Python froze the profiles inside the run: a checkpoint (trace.json with the
            # freezes, predictions.json) before the first held-out trial starts
            trace = self.checkpoint()
            if self.progress and trace is not None:
                self.progress.note("froze " + ", ".join(frozen_names(trace, event)))
            if trace is not None and texts.receipt is not None:
                receipt = write_receipt(self.out, texts.receipt, trace)
                print(
                    f"freeze receipt {self.out / RECEIPT}: fingerprint {receipt.fingerprint} "
                    "(keep it elsewhere before the held-out results)",
                    *receipt_lines(receipt)[1:],
                    sep="\n",
                    flush=True,
                )
        if kind == "trial_interrupted":
            # kept raw under `interruptions` (a Cancel or an infrastructure failure) and
            # attempted again: no longer in flight
            self.run.data["in_flight"] = None
            self.run.save()
            if self.progress:
                self.progress.note(
                    f"{event.get('trial_id')} interrupted ({event.get('code')}): not scored,"
                    " attempted again"
                )

    # -- calling the page --

    def check_stop(self) -> None:
        if self.callback_error is not None:
            raise SweepError("write_failed", f"writing the files failed: {self.callback_error}")
        self.note_timeout()
        if self.stop.reason is None:
            return
        if self.cancel_sent_at is None:
            # Stop between trials: the page cancels as soon as the current trial is done
            # (`sweep_stop`), so no generation is cut short and recorded.
            self.cancel_sent_at = time.monotonic()
            try:
                send(self.page, SweepStop())
            except Exception as error:  # the page is gone: stop now
                raise self.interrupted() from error
        elif self.stop.reason == "timeout" and (
            time.monotonic() - self.cancel_sent_at > CANCEL_GRACE_S
        ):
            raise self.interrupted()

    def note_timeout(self) -> None:
        """Once --timeout has passed, the stop's reason is `timeout` (said once)."""
        timed_out = self.deadline is not None and time.monotonic() > self.deadline
        if timed_out and self.stop.reason is None:
            self.stop.reason = "timeout"
            say(f"--timeout {self.timeout_s:g} s reached: stopping after the current trial")

    def interrupted(self) -> Interrupted:
        reason = self.stop.reason or "interrupted"
        if reason == "timeout":
            return Interrupted("timeout", f"stopped by --timeout {self.timeout_s:g} s", 1)
        return Interrupted("interrupted", f"stopped by {reason}", 130)

    def request(self, sent: Request) -> Any:
        """Send a protocol request record to window.lab.send (through the relay) and return
        its reply's result record (`sent.RESULT`, checked), polling so that Ctrl-C, --timeout
        and a crashed page are noticed while the page works."""
        try:
            answer = self.call(sent)
        finally:
            if self.callback_error is not None:
                self.check_stop()
        if isinstance(answer, ErrorBody):
            raise refused(sent, answer)
        return answer

    def call(self, sent: Request) -> Any:
        """One request to the page through the relay: its result record or the ErrorBody of
        a refusal (a native sweep answers it in this process instead)."""
        return relayed(self.page, sent, on_poll=self.check_stop, poll_ms=POLL_MS)

    def header(self) -> str:
        """Python's JSON text of the sweep's header."""
        answer: HeaderText = self.request(SweepHeader())
        return answer.header_json

    # -- steps --

    def boot(self, url: str) -> None:
        self.page.goto(url, timeout=60_000)
        try:
            state = wait_booted(self.page, BOOT_TIMEOUT_S * 1000)
        except SweepError:
            self.wait_experiment()  # no entry point at all: an old site
            raise
        if state.app == "error":
            raise SweepError("boot_failed", f"the page failed to start: {state.status}")

    def load_model(self) -> dict[str, Any]:
        """Choose model, backend and dtype in the Models panel (`model_choose`); consent in
        its dialog (the click); wait for the load to end (`page_state`)."""
        page, choice, options = self.page, self.choice, self.options
        wait_catalogue(page, 60_000)
        other = choice.key == "other"
        sent = ModelChoose(
            key=choice.key,
            backend=options.backend,  # type: ignore[arg-type]
            dtype=options.dtype,
            model_id=choice.model_id if other else None,
            revision=choice.revision if other else None,
        )
        chosen: ModelChosen = send(page, sent)
        if chosen.outcome == "not_offered":
            if options.dtype and options.dtype not in chosen.models.dtypes:
                raise SetupError("bad_dtype", f"--dtype {options.dtype}: {chosen.why}")
            raise SweepError("load_failed", f"the Models panel: {chosen.why}")
        backend_line = chosen.models.backend_status
        dialog = ""
        if chosen.outcome == "consent":
            dialog = chosen.models.consent_details
            self.run.session["consent_dialog"] = dialog
            consent(page)  # --consent: the explicit "Download and load"
        wait_models(page, "loaded failed", self.remaining_ms(LOAD_TIMEOUT_S))
        state = page_state(page)
        assert state is not None  # it answered a moment ago
        status = state.models.status
        if state.models.state != "loaded":
            hint = ""
            if options.backend == "webgpu" and "WebGPU is not available" in backend_line:
                hint = (
                    f" ({backend_line.strip()}) Try --chromium-flag=--enable-unsafe-webgpu"
                    " (a software adapter: slow) or --backend wasm."
                )
            raise SweepError("load_failed", f"the model did not load: {status}{hint}")
        say(status)
        # The provenance, as the panel's "Download load diagnostics JSON" gives it.
        self.provenance = to_json(state.models.provenance)
        return {
            "status": status,
            "backend_status": backend_line,
            "dialog": dialog,
            "provenance": self.provenance,
        }

    def remaining_ms(self, cap_s: float) -> float:
        if self.deadline is None:
            return cap_s * 1000
        return max(1.0, min(cap_s, self.deadline - time.monotonic())) * 1000

    def wait_experiment(self) -> None:
        """The page has its one entry point (window.lab.send), else `no_experiment_api`."""
        if page_state(self.page) is None:
            raise SetupError(
                "no_experiment_api",
                f"the page at {self.site} has no window.lab.send: rebuild the site"
                " (python scripts/build_site.py)",
            )

    def sweep(self, stored: dict[str, Any] | None, in_flight: str | None) -> SweepState:
        """Start or resume, then one run of phase `all` (Python orders measure → freeze →
        held-out and says where it stands), then score, all in the page."""

        state: SweepState
        if stored is not None:
            # a sealed sweep matches the ledger at its draw: it needs the keys on resume too
            kept = self.previously_observed() if self.options.sealed else {}
            state = self.request(
                SweepResume(
                    header_json=stored["header_json"],
                    trials_json=tuple(stored["trials_json"]),
                    in_flight=in_flight,
                    previously_observed={c: tuple(ids) for c, ids in kept.items()} or None,
                    study_seal=self.study_seal(),
                )
            )
            if in_flight:
                say(f"resumed; the trial in flight at the interruption was {in_flight}")
        else:
            seen = self.previously_observed()
            shown = {} if self.options.sealed else self.exploratory_for(seen)
            if self.options.sealed:
                say(
                    "sealed: the held-out tasks are drawn after every profile is frozen; the "
                    "ledger is matched against them at the draw"
                )
            if shown:
                say(
                    "the ledger holds held-out tasks of this sweep observed in earlier runs "
                    "of this model: this sweep is exploratory for "
                    + ", ".join(f"{c} ({len(ids)})" for c, ids in sorted(shown.items()))
                )
            state = self.request(
                SweepStart(
                    seed=self.options.seed,
                    params=self.options.params,
                    # Explicit, so the sweep never depends on the page's checkboxes.
                    conditions=tuple(self.options.conditions or ALL_CONDITIONS),
                    previously_observed={c: tuple(ids) for c, ids in seen.items()} or None,
                    chain_protocol=self.options.chain_protocol,
                    sealed=self.options.sealed or None,
                    study_seal=self.study_seal(),
                )
            )
        self.checkpoint(self.header())
        self.run.data["run_id"] = state.run_id
        self.run.data["in_flight"] = None
        total = state.trials + state.measure_left + state.heldout_left
        self.run.data["total"] = total
        self.run.data["trials"] = state.trials
        self.run.save()
        self.progress = Progress(sys.stderr, state.trials, total)
        self.progress.note(
            f"run {state.run_id}: {state.trials}/{total} trials done; conditions "
            + ", ".join(state.conditions)
        )
        state = self.run_all()
        self.progress.close()
        self.checkpoint(self.header())
        # The page's own predictions document, as Python wrote it.
        predictions: PredictionsText = self.request(SweepPredictions())
        write_atomically(self.out / PREDICTIONS, predictions.predictions_json)
        self.run.data["trials"] = self.trials.count
        return state

    def study_seal(self) -> StudySealChoice | None:
        """The study-level seal the sweep draws from (`--study-seal`): None for a sweep
        under its own seal; the seal once the study's file exists, else a choice without
        one (the sweep stops at its freeze)."""
        if not self.options.study_seal:
            return None
        try:
            seal = read_seal(Path(self.options.study_seal), self.options.seed)
        except InputError as error:
            raise SetupError(error.code, f"{error.path}: {error.message}") from None
        return StudySealChoice(seal=seal)

    def run_all(self) -> SweepState:
        """One `sweep_run` of phase `all`: whatever is left, in the order Python keeps (a
        finished sweep answers at once). Returns Python's state; a Cancel (Ctrl-C,
        --timeout) or a pause ends the session with a checkpoint."""
        self.run.data["phase"] = "all"
        self.run.save()
        result: RunEnded = self.request(SweepRun(phase="all"))
        if self.stop.reason is not None or result.cancelled:
            self.checkpoint(self.header())
            raise self.interrupted()
        own = result.state.awaiting_study_seal
        if own:
            self.checkpoint(self.header())
            where = self.options.study_seal
            message = (
                f"stopped at the freeze: every profile is frozen (this run's own seal "
                f"{own[:16]}…); the held-out tasks are drawn once the study's seal {where} "
                "exists (matrix writes it when every run of this task seed is frozen)"
            )
            self.run.data["paused"] = {"code": "awaiting_study_seal", "message": message}
            raise Paused("awaiting_study_seal", message)
        paused = result.state.paused
        if paused:
            self.checkpoint(self.header())
            self.run.data["paused"] = to_json(paused)
            raise Paused(
                "paused",
                f"paused after {paused.in_a_row} infrastructure failures in a row "
                f"(last: {paused.code} on {paused.trial_id}: {paused.message}); "
                "nothing was scored",
            )
        return result.state


def frozen_names(trace: Trace, event: dict[str, Any]) -> list[str]:
    """`condition sha256…` of each freeze a `frozen` event announces (the progress line's
    "froze")."""
    now = set(event.get("conditions") or ())
    return [f"{f.condition} {f.profile_sha256[:12]}" for f in trace.freezes if f.condition in now]
