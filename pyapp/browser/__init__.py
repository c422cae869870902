"""The browser side of the experiment (its messages are ``pyapp.protocol``'s): the one
handler table (``bridge``), the experiment session those handlers drive (``session``), the
page as a run sees it (``page_link``: events posted or told, the Cancel flag), the model
adapter that reaches the page's model worker (``model``; its generate calls through the
memory it shares with the model worker, ``mailbox``), and what the page shows for
documents a reader opens (``viewer``: Open a trace, Compare runs, and the plots the page
shows, drawn by ``pyapp.report.plots``), the verdict step 4 leads with (``verdict``: the
run's answer in words and its skill picture), and the Study view of a study.json
(``study_view``)."""

from pyapp.browser.bridge import HANDLERS, handle, handle_async, new_session
from pyapp.browser.mailbox import Mailbox
from pyapp.browser.model import (
    BrowserModelAdapter,
    completion_from_reply,
    generate_request,
    handle_model_generate,
    parse_provenance,
    read_generate_reply,
)
from pyapp.browser.page_link import Context
from pyapp.browser.session import ANSWER_KINDS, Session, answer_tokens, model_calls, resumed_trace
from pyapp.browser.verdict import run_verdict
from pyapp.browser.viewer import compare_runs, open_run, receipt_of, run_plots

__all__ = [
    "ANSWER_KINDS",
    "HANDLERS",
    "BrowserModelAdapter",
    "Context",
    "Mailbox",
    "Session",
    "answer_tokens",
    "compare_runs",
    "completion_from_reply",
    "generate_request",
    "handle",
    "handle_async",
    "handle_model_generate",
    "model_calls",
    "new_session",
    "open_run",
    "parse_provenance",
    "read_generate_reply",
    "receipt_of",
    "resumed_trace",
    "run_plots",
    "run_verdict",
]
