"""The names the page shares with Python besides the messages, each written once here:
the four `xworker.sync` names (`SYNC_NAMES`), the page's URL parameters (`URL_PARAMS`), the
driver API `window.lab` (`LAB_API`) and the condition checkboxes (`CONDITION_LABELS`).

`python -m pyapp schema` generates them into `site/lab_protocol.js` (`SYNC`, `PARAM`,
`LAB_API`), the condition checkboxes of `site/index.html` and the tables of docs/page.md
(`markdown_tables`); the sweep CLI builds the page's address with `page_query`. Tests fail
when a generated file drifts or when site/ or lab_worker.py write one of these
names by hand.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

from pyapp.conditions import ALL_CONDITIONS
from pyapp.records import CHAIN_PROTOCOL_NAMES, CONDITIONS, DEFAULT_CHAIN_PROTOCOL


@dataclass(frozen=True)
class SyncName:
    """A function on PyScript's `xworker.sync` channel between the page's main thread and the
    Python worker."""

    name: str
    """Its name on `xworker.sync` (the page) and `pyscript.sync` (the worker)."""
    defined_by: str
    """Who defines it (the other side calls it)."""
    signature: str
    """What it takes and returns."""
    meaning: str
    """What it is for."""


HANDLE = "handle"
MODEL_CALL = "model_call"
SESSION_EVENT = "session_event"
CANCEL_REQUESTED = "cancel_requested"

SYNC_NAMES: tuple[SyncName, ...] = (
    SyncName(
        HANDLE,
        "Python (site/python_worker/lab_worker.py `__export__`)",
        "(requestJson) → replyJson",
        "every request of the page ⇄ Python protocol (pyapp.browser.bridge)",
    ),
    SyncName(
        MODEL_CALL,
        "the page (site/app.js; the model client's `call`)",
        "(requestJson) → replyJson",
        "Python's model adapter (pyapp.browser.model) reaches the model channel",
    ),
    SyncName(
        SESSION_EVENT,
        "the page (site/app.js; the experiment's `sessionEvent`)",
        "(eventJson, posted, trial, change, receipt) → answerJson",
        "a sweep's event (trial_start, trial_done, ...) told synchronously where it is not"
        " posted (site/experiment_channel.js: before the page shares its flags, or after a"
        " posted one failed), answered once the `posted` events before it arrived, at once"
        " with an `EventAnswer` (pyapp.protocol.messages: the Cancel flag, the model client's"
        " version; its keys are `EVENT_ANSWER_FIELDS`); the page stores and draws it later."
        " The event's JSON text holds no document: what it brings (`EventTexts`) comes in"
        " the last three arguments, each Python's own text or null",
    ),
    SyncName(
        CANCEL_REQUESTED,
        "the page (site/app.js; the experiment's `cancelRequested`)",
        "(posted) → bool",
        "the experiment's Cancel flag where neither an event's answer nor the shared flags"
        " tell it, and a run's end (answered once the `posted` events before it arrived)",
    ),
)
"""Every `xworker.sync` name, in the order the docs list them."""


@dataclass(frozen=True)
class UrlParam:
    """A parameter of the page's address."""

    name: str
    """The parameter."""
    value: str
    """What its value is."""
    read_by: str
    """The page's module that reads it."""
    meaning: str
    """What it does."""


URL_PARAMS: tuple[UrlParam, ...] = (
    UrlParam("seed", "N", "site/app.js", "the task seed (the page writes it back)"),
    UrlParam(
        "conditions",
        "a,b,…",
        "site/guide.js",
        "the checked conditions (the page writes it back)",
    ),
    UrlParam(
        "preset",
        "NAME",
        "site/guide.js",
        "the task set: a name of `pyapp/tasks/presets.py` (design, calibration-60, "
        "calibration-300, subject-ladder/1 … /4)",
    ),
    UrlParam(
        "model",
        "KEY",
        "site/guide.js",
        "the model choice (a catalogue key, `fixture`, `synthetic:NAME`, or `other`): chosen,"
        " never loaded (loading waits for consent)",
    ),
    UrlParam("model_id", "ORG/NAME", "site/guide.js", "with `model=other`: the id typed in"),
    UrlParam("revision", "R", "site/guide.js", "with `model=other`: the revision typed in"),
    UrlParam(
        "model_host",
        "URL",
        "site/models_panel.js",
        "the model hub (default https://huggingface.co/; the sweep CLI's `--model-host`)",
    ),
    UrlParam(
        "model_threads",
        "N",
        "site/models_panel.js",
        "WASM threads of a load (bench/generation.py); default: every core",
    ),
    UrlParam(
        "fault",
        "KIND@N,…",
        "site/models_panel.js",
        "fault-injection hooks for tests (docs/sweep.md#fault-injection)",
    ),
    UrlParam(
        "model_step_delay_ms",
        "MS",
        "site/models_panel.js",
        "await this long before every generation step (tests, benches)",
    ),
    UrlParam(
        "boot_timeout_ms",
        "MS",
        "site/app.js",
        "give up starting Python after this long (default 60000; tests)",
    ),
)
"""Every parameter of the page's address, in the order the docs list them."""
URL_PARAM_NAMES: frozenset[str] = frozenset(p.name for p in URL_PARAMS)


def page_query(values: Mapping[str, str]) -> str:
    """The query string of the page's address (without `?`); `ValueError` for a parameter
    the page does not read."""
    unknown = sorted(set(values) - URL_PARAM_NAMES)
    if unknown:
        known = ", ".join(p.name for p in URL_PARAMS)
        raise ValueError(f"the page reads no parameter {', '.join(unknown)} (it reads {known})")
    return urlencode(dict(values))


@dataclass(frozen=True)
class LabMember:
    """A member of `window.lab`, the page's API for drivers and tests (site/app.js)."""

    name: str
    """The member."""
    shape: str
    """What it takes and returns, or what it is."""
    meaning: str
    """What it is for."""


LAB_API: tuple[LabMember, ...] = (
    LabMember(
        "send",
        "(messageJson, onEvent?) → Promise<replyJson>",
        "the one entry point for drivers (the sweep CLI): a request of the page ⇄ Python"
        " protocol in, its reply envelope out (site/entry.js)",
    ),
    LabMember(
        "request",
        "(type, fields?, timeoutMs?) → Promise<result>",
        "the path the page's buttons use: a request to Python, its result (or an Error with"
        " the code)",
    ),
    LabMember(
        "experiment",
        "object",
        "the Experiment section's [state API](#the-state-api-windowlabexperiment)",
    ),
    LabMember(
        "models",
        "object",
        "the Models panel: `state()`, `useSynthetic(spec)`, … (site/models_panel.js)",
    ),
    LabMember(
        "timings",
        "object",
        "the boot's milestones, `performance.now()` values (`python_ready_ms`, `first_table_ms`)",
    ),
    LabMember("t0", "number", "`performance.now()` when site/app.js started"),
)
"""Every member of `window.lab`, in the order the docs list them."""

CONDITION_LABELS: dict[str, str] = {c.name: c.label for c in CONDITIONS}
"""The condition checkboxes of the page, in its order, with their labels (every condition of
`pyapp.conditions.run.ALL_CONDITIONS`, checked by `condition_checkboxes`)."""


def _upper(name: str) -> str:
    return name.upper()


def constants() -> dict[str, object]:
    """What `site/lab_protocol.js` exports of these tables."""
    return {
        "SYNC": {_upper(s.name): s.name for s in SYNC_NAMES},
        "PARAM": {_upper(p.name): p.name for p in URL_PARAMS},
        "LAB_API": [m.name for m in LAB_API],
    }


def condition_checkboxes() -> str:
    """The condition checkboxes `site/index.html` holds between its `conditions` markers."""
    if sorted(CONDITION_LABELS) != sorted(ALL_CONDITIONS):
        raise ValueError("CONDITION_LABELS must name every condition of ALL_CONDITIONS once")
    lines = [
        f'      <label><input type="checkbox" name="condition" value="{html.escape(c)}"'
        f" checked> {html.escape(label, quote=False)}</label>"
        for c, label in CONDITION_LABELS.items()
    ]
    return "\n".join(lines) + "\n"


CHAIN_PROTOCOL_LABELS: dict[str, str] = {
    "design": "design (chain-design/1: primitives and recurrences routed, 6 calls a route; "
    "determinants and derivatives unsupported)",
    "extended": "extended (chain-extended/1: every family routed, 7 calls, 3,584 input "
    "tokens and 105 s a route)",
}
"""The page's chain-protocol choices (step 2), the design's first and selected; every
protocol of `pyapp.records.terms.CHAIN_PROTOCOLS`, checked by `chain_protocol_options`."""


def chain_protocol_options() -> str:
    """The `<option>`s `site/index.html` holds between its `chain-protocols` markers."""
    if list(CHAIN_PROTOCOL_LABELS) != list(CHAIN_PROTOCOL_NAMES):
        raise ValueError("CHAIN_PROTOCOL_LABELS must name every chain protocol, in order")
    lines = [
        f'        <option value="{html.escape(name)}"'
        f"{' selected' if name == DEFAULT_CHAIN_PROTOCOL.name else ''}>"
        f"{html.escape(label, quote=False)}</option>"
        for name, label in CHAIN_PROTOCOL_LABELS.items()
    ]
    return "\n".join(lines) + "\n"


def markdown_tables() -> str:
    """docs/page.md's tables of the names the page shares with Python."""
    lines = ["| URL parameter | value | read by | what it does |", "|---|---|---|---|"]
    lines += [f"| `{p.name}` | {p.value} | `{p.read_by}` | {p.meaning} |" for p in URL_PARAMS]
    lines += ["", "| `window.lab` member | takes / is | what it is for |", "|---|---|---|"]
    lines += [f"| `{m.name}` | `{m.shape}` | {m.meaning} |" for m in LAB_API]
    lines += ["", "| `xworker.sync` name | defined by | takes → returns | what for |"]
    lines.append("|---|---|---|---|")
    lines += [
        f"| `{s.name}` | {s.defined_by} | `{s.signature}` | {s.meaning} |" for s in SYNC_NAMES
    ]
    return "\n".join(lines) + "\n"
