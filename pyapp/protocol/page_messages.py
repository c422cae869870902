"""The requests the page answers itself (site/entry.js, site/panel_driver.js), never Python:
what a driver (the sweep CLI, the benches, the browser tests) asks of the page instead of
probing it. They are requests of the page ⇄ Python channel like every other
(`pyapp.protocol.messages.REQUESTS` ends with `PAGE_REQUESTS`; their result records are in
`pyapp.protocol.results`), so the schema, `site/lab_protocol.js` (`PAGE_REQUEST_TYPES`) and
the docs tables come from the same generator; Python refuses them (`unknown_type`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from pyapp.protocol import results
from pyapp.protocol.envelope import Request
from pyapp.protocol.model_messages import ChatMessage
from pyapp.records import JSON


@dataclass(frozen=True)
class PageStateRequest(Request):
    """Where the page, its Models panel and its Experiment section stand (the page answers)."""

    TYPE: ClassVar[str] = "page_state"
    RESULT: ClassVar[type] = results.PageState


@dataclass(frozen=True)
class ModelChoose(Request):
    """Choose in the Models panel and press "Load model…", as a person does (the consent
    stays a click). Answered by the page, which presses nothing for a choice it lacks."""

    TYPE: ClassVar[str] = "model_choose"
    RESULT: ClassVar[type] = results.ModelChosen
    key: str
    """A catalogue key (site/models.json), `other` (a typed model id) or `synthetic:NAME`."""
    backend: Literal["webgpu", "wasm"] | None = None
    """The backend (null: the panel's preselection)."""
    dtype: str | None = None
    """The dtype (null: the panel's first offer for the model and backend)."""
    model_id: str | None = None
    """`other`: the model id (org/name)."""
    revision: str | None = None
    """`other`: the revision (default `main`)."""


@dataclass(frozen=True)
class SweepStop(Request):
    """Stop the running sweep right after a trial is done (the Cancel): the page answers."""

    TYPE: ClassVar[str] = "sweep_stop"
    RESULT: ClassVar[type] = results.StopAsked
    after: int = 1
    """Stop once this many more trials are done (1: the trial in flight, or the next)."""


@dataclass(frozen=True)
class ModelDirect(Request):
    """One generation in the model worker, Python not involved (benches). Answered by the page."""

    TYPE: ClassVar[str] = "model_direct"
    RESULT: ClassVar[type] = results.DirectGenerated
    caps: dict[str, JSON]
    """Budgets (the model channel's Caps JSON)."""
    prompt: str | None = None
    """The prompt, as one user message; exactly one of prompt and messages."""
    messages: tuple[ChatMessage, ...] | None = None
    """A whole chat, instead of prompt."""


@dataclass(frozen=True)
class PageStoredRequest(Request):
    """What this browser's IndexedDB holds: the current (else latest) sweep, its texts as
    stored (Python assembles its trace: `pyapp.sweep.panel.stored_document`), and the
    ledger. Answered by the page."""

    TYPE: ClassVar[str] = "page_stored"
    RESULT: ClassVar[type] = results.PageStored


@dataclass(frozen=True)
class ModelSynthetic(Request):
    """Use a synthetic model by spec, as the panel's "Use synthetic model (no download)" does
    (no consent, no download, no model worker); null: the loaded model again. Answered by the
    page (its Models panel asks Python, `synthetic_select`)."""

    TYPE: ClassVar[str] = "model_synthetic"
    RESULT: ClassVar[type] = results.SyntheticChosen
    spec: str | None
    """`NAME` or `NAME:key=value,...` (e.g. `correlated:rho=0.9`); null to stop."""


PAGE_REQUESTS: tuple[type[Request], ...] = (
    PageStateRequest,
    ModelChoose,
    SweepStop,
    ModelDirect,
    PageStoredRequest,
    ModelSynthetic,
)
"""The requests the page answers itself (site/entry.js): no Python handler."""
