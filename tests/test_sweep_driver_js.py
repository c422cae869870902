"""Every driver talks to the page through window.lab.send only (issues 13 and 22): the sweep
CLI's JavaScript (pyapp/sweep/driver.js) touches no page global but that entry point (plus the
driver's own window.__sweep / window.__sweepEvent), and the Python of the sweep CLI, the
benches and the scripts evaluates no other JavaScript in the page and names no DOM but the
named exceptions (`ALLOWED`). The consent is a click. The browser tests (tests/browser) read no
`window.lab` member but `send`; only the named user-interface tests (`UI_TESTS`, which drive
the page as a person does) and tests of a JavaScript module's internals (`MODULE_TESTS`)
evaluate anything in the page, bar the named exceptions (`BROWSER_ALLOWED`)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DRIVER_JS = ROOT / "pyapp" / "sweep" / "driver.js"
SWEEP_PY = sorted((ROOT / "pyapp" / "sweep").glob("*.py"))

OWN = {"__sweep", "__sweepEvent"}
"""The driver's own globals: the object it installs and the binding Python exposes."""
GLOBAL = re.compile(
    r"\b(?:window|globalThis|self|top|parent)\s*\.\s*([A-Za-z_$][\w$]*)((?:\s*\??\.\s*[A-Za-z_$][\w$]*)?)"
)


def strip_comments(js: str) -> str:
    return re.sub(r"//[^\n]*", "", js)


def foreign_globals(js: str) -> list[str]:
    """Every page global the text reaches other than window.lab.send and the driver's own."""
    found = []
    for match in GLOBAL.finditer(strip_comments(js)):
        name, member = match.group(1), re.sub(r"[\s?.]", "", match.group(2))
        if name in OWN or (name == "lab" and member == "send"):
            continue
        found.append(match.group(0))
    # `lab.` without `window.` (a bare global) counts too
    found += [
        m.group(0)
        for m in re.finditer(r"(?<![\w$.])lab\s*\??\.\s*(?!send\b)[\w$]+", strip_comments(js))
    ]
    return found


def test_checker_catches_what_it_must() -> None:
    assert foreign_globals("window.lab.experiment.start()") == ["window.lab.experiment"]
    assert foreign_globals("window.lab.models.state()") == ["window.lab.models"]
    assert foreign_globals("window.lab.request('hello')") == ["window.lab.request"]
    assert foreign_globals("lab.experiment.run('all')") == ["lab.experiment"]
    assert foreign_globals("globalThis.lab.timings") == ["globalThis.lab.timings"]
    assert foreign_globals("window.lab?.send(m); window.__sweepEvent(t)") == []


def test_driver_js_uses_only_the_entry_point() -> None:
    js = DRIVER_JS.read_text("utf-8")
    assert foreign_globals(js) == []
    assert "window.lab.send(" in js  # it does use the entry point


PAGE_ACCESS = re.compile(
    r"\b(?:page|context|frame)\s*\.\s*(?:evaluate|evaluate_handle|wait_for_function"
    r"|add_init_script|expose_binding|expose_function|dispatch_event|eval_on_selector\w*)\("
    r"|(?<!`)\b(?:window|globalThis)\s*\.\s*[\w$]+"
    r"|\bdocument\s*\.\s*(?:querySelector\w*|getElement\w*|body\b)|\bdataset\."
)
"""What reaches into a page other than by the protocol: Playwright's ways to run JavaScript
in it, and the page globals and DOM a script would read."""
ENTRY_POINT = re.compile(r"window\.lab\??\.send\b")
"""The one entry point, window.lab.send (site/entry.js): allowed everywhere."""
DRIVER_PATHS = ("pyapp", "bench", "scripts")
"""Where the drivers live: the sweep CLI, the benches, the scripts."""
ALLOWED: dict[str, tuple[str, ...]] = {
    # the one window.lab.send call every driver makes (SEND), and the relay of one long
    # request (driver.js: installed before the page loads, polled so Ctrl-C is noticed)
    "pyapp/sweep/panel.py": (
        "page.evaluate(SEND,",
        'page.expose_binding("__sweepEvent", relay)',
        "page.add_init_script(path=str(RELAY_JS))",
        'page.evaluate("(m) => window.__sweep.call(m)"',
        'page.wait_for_function("() => window.__sweep.callDone()"',
        'page.evaluate("() => window.__sweep.callResult()")',
    ),
    # a page of its own (pyapp/host/probe.js: one model worker, no window.lab), not the lab page
    "bench/wasm_loops.py": ('page.evaluate("(m) => window.probe.call(m)", m)',),
    "pyapp/host/serve.py": ("`window.probe.call(message)`",),
    # the screenshots (pictures of the page as a person sees it): the hold of the running
    # state, the tests' model-worker gate (a test hook, tests/browser/model_gate.js) closed at
    # a trial event and opened again
    "scripts/screenshots.py": (
        'context.add_init_script(GATE.read_text(encoding="utf-8"))',
        'HOLD_AT_TRIAL = "(n) => window.__closeGateAtTrial(n)"',
        "\"(n) => document.querySelectorAll('#sweep-results tbody tr').length >= n\"",
        '" && Boolean(window.__gate)"',
        "page.evaluate(HOLD_AT_TRIAL, HOLD_AFTER)",
        # a picture's framing: its anchor scrolled to the top, as a person scrolls
        'SCROLL_TO = "(s) => document.querySelector(s).scrollIntoView()"',
        "page.evaluate(SCROLL_TO, anchor)",
        'page.evaluate("() => window.__openGate()")',
        "page.wait_for_function(HELD, arg=HOLD_AFTER, timeout=TIMEOUT_MS)",
    ),
    # the bare Pyodide page (site/bench/bare.html), a page of its own with no window.lab
    "bench/boot.py": ('BARE_TIMINGS = "() => window.bareTimings"', "page.evaluate(BARE_TIMINGS)"),
    # a blank page of its own (Pyodide and the worktree's .py files, no window.lab)
    "bench/trial_python.py": ("text = page.evaluate(RUN_IN_PAGE, call)",),
}
"""The named exceptions (file: fragments a line may hold). The consent is a click
(`pyapp.sweep.panel.consent`) and the user-interface tests drive the page as a person does:
neither evaluates anything."""


def page_access(path: str, text: str) -> list[str]:
    """`path:line: text` of every line that reaches into the page other than through
    window.lab.send or a named exception."""
    allowed = ALLOWED.get(path, ())
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        rest = ENTRY_POINT.sub("", line)
        if PAGE_ACCESS.search(rest) and not any(fragment in line for fragment in allowed):
            found.append(f"{path}:{number}: {line.strip()}")
    return found


def test_page_access_checker_catches_what_it_must() -> None:
    caught = [
        'page.wait_for_function("() => window.__sweep.modelsReady()")',
        'page.evaluate("() => window.lab.models.client.provenance()")',
        "x = \"document.querySelector('#models').dataset.state\"",
        "page.evaluate(\"(r) => window.lab.request('memory')\")",
        "page.add_init_script(script=JS)",
    ]
    for line in caught:
        assert page_access("bench/x.py", line), line
    assert page_access("bench/x.py", "'(m) => window.lab.send(m)'  # the entry point") == []
    assert page_access("pyapp/x.py", "the driver API `window.lab` (prose, a name)") == []
    assert page_access("pyapp/sweep/panel.py", "reply = page.evaluate(SEND, text)") == []
    assert page_access("bench/x.py", "reply = page.evaluate(SEND, text)") != []


def test_drivers_reach_the_page_only_through_window_lab_send() -> None:
    """The sweep CLI, the benches and the scripts talk to the page through window.lab.send
    only: no DOM probe, no page.evaluate or wait_for_function but the named exceptions."""
    found = []
    for top in DRIVER_PATHS:
        for path in sorted((ROOT / top).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            found += page_access(relative, path.read_text("utf-8"))
    assert found == []
    for path, fragments in ALLOWED.items():  # every exception is still needed
        text = (ROOT / path).read_text("utf-8")
        assert all(fragment in text for fragment in fragments), path


# ---- the browser tests (tests/browser) ------------------------------------------------------

BROWSER = "tests/browser"
LAB_SIDE_DOOR = re.compile(
    r"\b(?:window|globalThis)\s*\.\s*lab\s*\??\.\s*(?!send\b)[\w$]+|\bwindow\.lab\s*\["
)
"""A page internal a driver would read instead of asking: any `window.lab` member but `send`."""
TEST_ACCESS = re.compile(PAGE_ACCESS.pattern + r"|\b(?:api|client_generate)\(page\b")
"""PAGE_ACCESS, and the browser tests' own wrappers of page.evaluate."""
UI_TESTS: dict[str, str] = {
    "tests/browser/browser_helpers.py": "unfolds the Tools as a reader does (open_tools)",
    "tests/browser/test_accessibility.py": "axe-core, focus and the keyboard on every state",
    "tests/browser/test_experiment.py": "the Experiment section's buttons, tables, plots,"
    " dialogs and downloads as a person uses and reads them",
    "tests/browser/test_page_details.py": "focus, the pager, the backend preselection, plot"
    " geometry: what is on screen",
    "tests/browser/test_results_page.py": "step 4's first screen, its marks, the receipt at"
    " the freeze, the runs list: what is on screen and where",
    "tests/browser/test_runs.py": "the stored-runs table and its buttons",
    "tests/browser/test_study_view.py": "the Study view: a study.json picked, its answer,"
    " verdicts and reliability diagrams as shown",
    "tests/browser/test_site_browser.py": "the task table, the control, sympy and the error"
    " panel as shown",
    "tests/browser/test_synthetic_models.py": "the synthetic group, its notice and the"
    " synthetic label in every place it is drawn",
    "tests/browser/test_viewer.py": "Open a trace and Compare runs: files dropped, tables and"
    " plots drawn",
}
"""The user-interface and accessibility tests: they drive the page as a person does and may
read what is on screen (the DOM), never the page's internals (`LAB_SIDE_DOOR`)."""
MODULE_TESTS: dict[str, str] = {
    "tests/browser/test_models.py": "site/model_client.js and model_worker.js themselves"
    " (generate, interrupt, load, first token) through window.lab.models.client",
    "tests/browser/test_standins.py": "the stand-in models' greedy parity through the model"
    " client (test_models' client_generate)",
    "tests/browser/test_greedy.py": "site/model_worker/greedy.js in a page of its own"
    " (window.probe)",
    "tests/browser/test_model_direct.py": "site/model_direct.js's count of Python's"
    " generate calls by path (window.lab.models.client.callCounts)",
}
"""Tests whose subject is a JavaScript module's internals: they call it directly."""
BROWSER_ALLOWED: dict[str, tuple[str, ...]] = {
    # the chain-protocol choice the page offers in step 2 (what a person sees in the select)
    "tests/browser/test_subject.py": ('"#chain-protocol option", "os => os.map(o => o.value)"',),
    # what the page showed at the moment a protocol event arrived (an in-page hook at that
    # event: a driver's relayed events reach Python after the page has moved on)
    "tests/browser/test_experiment.py": (
        "window.lab.experiment.onEvent((e) => {",
        "const off = window.lab.experiment.onEvent((e) => {",
    ),
    "tests/browser/test_synthetic_models.py": (
        '"""() => { const off = window.lab.experiment.onEvent((event) => {',
    ),
    # the subject is site/store.js's IndexedDB layout: version 1 written on a page of the
    # origin that does not open it, the converted stores read raw
    "tests/browser/test_store_upgrade.py": (
        'assert api(page, WRITE_V1, {"record": record, "ledger": ledger}) == 1',
        "converted = api(page, READ_STORES)",
    ),
}
"""The named exceptions in tests/browser (file: fragments a line may hold)."""


def browser_side_doors(path: str, text: str) -> list[str]:
    """`path:line: text` of every line of a browser test that reaches into the page other
    than through window.lab.send: a page internal anywhere but a module test, a DOM probe or
    an evaluate anywhere but a user-interface or module test, bar the named exceptions."""
    allowed = BROWSER_ALLOWED.get(path, ())
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if any(fragment in line for fragment in allowed) or path in MODULE_TESTS:
            continue
        rest = ENTRY_POINT.sub("", line)
        if LAB_SIDE_DOOR.search(rest) or (path not in UI_TESTS and TEST_ACCESS.search(rest)):
            found.append(f"{path}:{number}: {line.strip()}")
    return found


def test_browser_side_door_checker_catches_what_it_must() -> None:
    ui = "tests/browser/test_experiment.py"
    plain = "tests/browser/test_new.py"
    for line in (
        'api(page, "() => window.lab.experiment.persisted()")',
        "page.wait_for_function(\"() => window.lab.models.state().synthetic === 'x'\")",
        "page.evaluate(\"(r) => window.lab.request('memory')\")",
        "const snap = window.lab.experiment.snapshot();",
    ):
        assert browser_side_doors(ui, line), line  # not even in a UI test
        assert browser_side_doors(plain, line), line
    probe = "page.wait_for_function(\"() => document.querySelector('#app').dataset.state\")"
    assert browser_side_doors(plain, probe) and not browser_side_doors(ui, probe)
    assert browser_side_doors(plain, "converted = api(page, READ_STORES)")
    assert browser_side_doors(plain, 'page.eval_on_selector("#x", "e => e.id")')
    assert browser_side_doors(plain, "reply = page.evaluate(SEND, text)")
    assert browser_side_doors(plain, "state = send(page, PageStateRequest())") == []
    assert browser_side_doors("tests/browser/test_models.py", probe) == []


def test_browser_tests_reach_the_page_only_through_window_lab_send() -> None:
    """A browser test that is not a user-interface test (UI_TESTS) or a module's own test
    (MODULE_TESTS) talks to the page through window.lab.send (pyapp.sweep.panel) only, and
    no browser test reads `window.lab`'s other members, bar the named exceptions."""
    paths = sorted((ROOT / BROWSER).glob("*.py"))
    found = []
    for path in paths:
        relative = path.relative_to(ROOT).as_posix()
        found += browser_side_doors(relative, path.read_text("utf-8"))
    assert found == []
    names = {path.relative_to(ROOT).as_posix() for path in paths}
    assert set(UI_TESTS) | set(MODULE_TESTS) <= names  # every named file exists
    assert not set(UI_TESTS) & set(MODULE_TESTS)
    for path, fragments in BROWSER_ALLOWED.items():  # every exception is still needed
        text = (ROOT / path).read_text("utf-8")
        assert all(fragment in text for fragment in fragments), path
