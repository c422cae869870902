"""The names the page shares with Python are written once (pyapp/protocol/page.py, the fault
grammar, the plots drawn once, the ledger's records) and generated: every generated file matches
its source, and no hand-written copy of a shared name is left in site/ or pyapp/."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import jsonschema
import pytest
from test_exploratory import answer, cli_sweep

from pyapp.cli import schema
from pyapp.conditions import ALL_CONDITIONS
from pyapp.errors import UsageError
from pyapp.experiment import ENTRY_FIELDS, OPTIONAL_FIELDS, LedgerEntry, ledger_schema, upgraded
from pyapp.protocol import constants, envelope, messages, model_messages, page
from pyapp.records import FAULT_KINDS, Caps, ScriptedAdapter
from pyapp.report import COLOURS
from pyapp.sweep import parse_page_params
from pyapp.tasks import TaskParams

ROOT = Path(__file__).resolve().parents[1]
SYNC_NAMES = [s.name for s in page.SYNC_NAMES]


def page_sources() -> list[Path]:
    """The page's and the workers' hand-written JavaScript (generated modules aside)."""
    generated = {"lab_protocol.js", "lab_types.js", "model_protocol.js", "model_types.js"}
    generated |= {"faults_grammar.js"}
    paths = sorted((ROOT / "site").rglob("*.js"))
    return [p for p in paths if p.name not in generated]


def code_of(path: Path) -> str:
    """A JavaScript file without its comments (a `//` that starts a line or follows a space)."""
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"(^|\s)//.*$", r"\1", text, flags=re.M)


# ---- every generated file, drift-checked -------------------------------------------------------


def test_every_generated_file_matches_its_source() -> None:
    """`python -m pyapp schema --check` in a test: each file it writes is up to date."""
    drifted = [
        str(path.relative_to(ROOT))
        for path, text in schema.generated().items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ]
    assert drifted == [], f"run: python -m pyapp schema ({drifted})"


def test_the_generator_covers_the_shared_names() -> None:
    files = {str(p.relative_to(ROOT)) for p in schema.generated()}
    for name in ("site/index.html", "docs/page.md", "docs/sweep.md", "exports/ledger.schema.json"):
        assert name in files
    shared = constants()
    assert shared["SYNC"] == {name.upper(): name for name in SYNC_NAMES}
    assert set(shared["PARAM"].values()) == page.URL_PARAM_NAMES
    assert shared["LAB_API"] == [m.name for m in page.LAB_API]
    assert not [name for name in shared if name.startswith("PLOT_")]  # the page draws no plot


# ---- the xworker.sync names ---------------------------------------------------------------------


def test_no_sync_name_is_written_by_hand_in_the_page() -> None:
    literal = re.compile(r"\bsync\s*\.\s*(" + "|".join(SYNC_NAMES) + r")\b")
    used = re.compile(r"\bSYNC\.([A-Z_]+)")
    found, named = [], set()
    for path in page_sources():
        code = code_of(path)
        found += [f"{path.name}: sync.{m}" for m in literal.findall(code)]
        named |= set(used.findall(code))
    assert found == [], "use SYNC (site/lab_protocol.js) for the xworker.sync names"
    assert named == {name.upper() for name in SYNC_NAMES}  # each name is used, none unknown


def test_the_worker_glue_takes_the_sync_names_from_the_table() -> None:
    tree = ast.parse(
        (ROOT / "site" / "python_worker" / "lab_worker.py").read_text(encoding="utf-8")
    )
    attributes = [n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)]
    assert not set(attributes) & set(SYNC_NAMES), "use pyapp.protocol.page's names"
    strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)]
    assert not set(strings) & set(SYNC_NAMES)
    functions = {n.name for n in tree.body if isinstance(n, ast.AsyncFunctionDef)}
    assert page.HANDLE in functions  # the one function the page calls is the exported one


# ---- the URL parameters -------------------------------------------------------------------------


def test_no_url_parameter_is_a_literal_in_the_page() -> None:
    """A `params.get("…")` (or set/delete/has) with a literal name fails; every `PARAM.X` the
    page uses is in the table."""
    literal = re.compile(r"\b(?:params|searchParams)\s*\.\s*(?:get|set|delete|has)\(\s*[\"'`]")
    used = re.compile(r"\bPARAM\.([A-Z_]+)")
    found, named = [], set()
    for path in page_sources():
        code = code_of(path)
        found += [
            f"{path.name}:{code[: m.start()].count(chr(10)) + 1}" for m in literal.finditer(code)
        ]
        named |= set(used.findall(code))
    assert found == [], "use PARAM (site/lab_protocol.js): a page parameter is named in one table"
    assert named <= {p.name.upper() for p in page.URL_PARAMS}
    assert named == {p.name.upper() for p in page.URL_PARAMS}  # the table names no dead one


def test_the_sweep_cli_builds_the_address_from_the_table() -> None:
    assert page.page_query({"seed": "7", "fault": "hang@1"}) == "seed=7&fault=hang%401"
    with pytest.raises(ValueError, match="colour"):
        page.page_query({"seed": "7", "colour": "red"})
    assert parse_page_params(["model_step_delay_ms=5"]) == {"model_step_delay_ms": "5"}
    with pytest.raises(UsageError, match="reads no colour"):
        parse_page_params(["colour=red"])
    main = (ROOT / "pyapp" / "sweep" / "main.py").read_text(encoding="utf-8")
    assert "urlencode" not in main and "page_query(" in main


ADDRESS_LITERAL = re.compile(
    r"(?<!`)[?&](?:" + "|".join(sorted(page.URL_PARAM_NAMES)) + r")="  # `?seed=…`, `&fault=…`
    r"|[\"']&[\"']\s*\.join\(|\burlencode\("  # a query joined by hand
)
"""A page address built by hand: a parameter name written in a query, or a query joined
without `page_query` (a backticked address in prose is a name, not code)."""
DRIVER_DIRS = ("bench", "scripts", "pyapp")
"""Where the drivers build the page's address (the benches, the scripts, the sweep CLI)."""


def address_literals(path: str, text: str) -> list[str]:
    """`path:line: text` of every line that builds a page address by hand."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0] if line.lstrip().startswith("#") else line
        if ADDRESS_LITERAL.search(code):
            found.append(f"{path}:{number}: {line.strip()}")
    return found


def test_the_address_checker_catches_what_it_must() -> None:
    for line in (
        'query = f"?seed={seed}" + (f"&model_step_delay_ms={ms}" if ms else "")',
        'boot_fixture(page, f"{url}?seed={seed}")',
        'url += "?" + "&".join(f"{k}={v}" for k, v in query.items())',
        "url += '?' + urlencode(query)",
        'page.goto(url + "?fault=hang@1")',
    ):
        assert address_literals("bench/x.py", line), line
    for line in (
        "boot_fixture(page, f\"{url}?{page_query({'seed': str(seed)})}\")",
        'url += "?" + page_query({"model_threads": "2"})',
        'bare = url + "bench/bare.html"',
        "(``?model_host=http://127.0.0.1:PORT/``) in prose",
    ):
        assert address_literals("bench/x.py", line) == [], line


def test_drivers_build_the_page_address_with_page_query() -> None:
    """The benches, the scripts and the sweep CLI name no page parameter in an address they
    write: the address is `page_query` of the table's names (pyapp/protocol/page.py)."""
    found = []
    for top in DRIVER_DIRS:
        for path in sorted((ROOT / top).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative == "pyapp/protocol/page.py":  # the table and page_query themselves
                continue
            found += address_literals(relative, path.read_text("utf-8"))
    assert found == []
    users = [p for top in ("bench",) for p in (ROOT / top).glob("*.py")]
    assert any("page_query(" in p.read_text("utf-8") for p in users)  # the benches do use it


# ---- the driver API window.lab -----------------------------------------------------------------


def test_window_lab_has_exactly_the_documented_members() -> None:
    code = code_of(ROOT / "site" / "app.js")
    match = re.search(r"window\.lab\s*=\s*\{([^}]*)\}", code)
    assert match is not None, "site/app.js defines window.lab"
    members = [part.split(":")[0].strip() for part in match.group(1).split(",") if part.strip()]
    assert sorted(members) == sorted(m.name for m in page.LAB_API)
    assert len(re.findall(r"window\.lab\s*=", code)) == 1


# ---- the condition checkboxes ------------------------------------------------------------------


def test_the_condition_checkboxes_are_generated_from_all_conditions() -> None:
    html = (ROOT / "site" / "index.html").read_text(encoding="utf-8")
    begin, end = html.index("<!-- conditions:begin"), html.index("<!-- conditions:end -->")
    inside = re.findall(r'name="condition" value="([^"]+)"', html[begin:end])
    outside = re.findall(r'name="condition"', html[:begin] + html[end:])
    assert sorted(inside) == sorted(ALL_CONDITIONS) and outside == []
    assert page.condition_checkboxes() in html


def test_a_condition_without_a_label_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(page.CONDITION_LABELS, "model-program")
    with pytest.raises(ValueError, match="every condition"):
        page.condition_checkboxes()


# ---- the fault grammar and the plots -------------------------------------------------------------


def test_the_fault_kinds_are_defined_once() -> None:
    """No list of the kinds outside pyapp/records/faults.py and its generated module; every
    kind a worker module tests for is one of them."""
    kinds = set(FAULT_KINDS)
    for path in sorted((ROOT / "pyapp").rglob("*.py")):
        if path.name == "faults.py" and path.parent.name == "records":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            items = getattr(node, "elts", None) or getattr(node, "keys", None) or []
            values = {n.value for n in items if isinstance(n, ast.Constant)}
            assert not kinds <= values, f"{path}: a copy of the fault kinds"
    tested = set()
    for path in page_sources():
        code = code_of(path)
        assert not re.search(r"\[\s*\"worker_crash\"", code), f"{path.name}: a copy of the kinds"
        tested |= set(re.findall(r"\bfault\(\"([a-z_]+)\"\)", code))
    assert tested and tested <= kinds
    faults_js = (ROOT / "site" / "faults.js").read_text(encoding="utf-8")
    assert not any(f"{kind}@N " in faults_js for kind in kinds), "its meaning is generated"


def test_the_plots_are_drawn_once_by_python() -> None:
    """Issue 22 §3: the page shows the SVG its Python draws (pyapp/report/plots.py, the
    report's drawing); no page source draws a plot, copies a colour, or parses markup but
    the plots' SVG text, in one function (site/profile_views.js `plotSvg`)."""
    assert not (ROOT / "site" / "plots.js").exists()
    parsers = []
    for path in page_sources():
        text = path.read_text(encoding="utf-8")
        for colour in COLOURS.values():
            assert colour.lower() not in text.lower(), f"{path.name}: a copy of {colour}"
        assert "createElementNS" not in text, f"{path.name} draws SVG itself"
        for needle in ("innerHTML", "outerHTML =", "insertAdjacentHTML", "document.write"):
            assert needle not in code_of(path), f"{path.name} inserts markup ({needle})"
        parsers += [(path.name, line) for line in text.splitlines() if "DOMParser" in line]
    assert parsers == [
        (
            "profile_views.js",
            '  const body = new DOMParser().parseFromString(text, "text/html").body;',
        )
    ]


# ---- the ledger file ---------------------------------------------------------------------------


def test_the_ledger_schema_describes_what_the_cli_writes() -> None:
    schema = json.loads((ROOT / "exports" / "ledger.schema.json").read_text(encoding="utf-8"))
    assert schema == ledger_schema()
    check = jsonschema.Draft202012Validator(schema)
    legacy = {
        "schema_version": "sweep-ledger/1",
        "entries": [
            {
                "identity": "x",
                "model_id": "fixture/tiny-chat",
                "revision": "bundled",
                "task_set": "abc",
                "condition": "model-only",
                "task_ids": ["add-1", "mul-2"],
                "runs": ["run-1"],
            }
        ],
    }
    check.validate(upgraded(legacy))
    _, written = cli_sweep(ScriptedAdapter(answer), upgraded(legacy), TaskParams())
    assert len(written["entries"]) > 1
    check.validate(written)
    with pytest.raises(jsonschema.ValidationError):
        check.validate({"schema_version": "sweep-ledger/2", "entries": [{"model_id": "m"}]})
    assert [*ENTRY_FIELDS, *OPTIONAL_FIELDS] == [f for f in LedgerEntry.__dataclass_fields__]


# ---- the one envelope --------------------------------------------------------------------------


def test_both_channels_build_and_read_one_envelope() -> None:
    caps = Caps(max_input_tokens=8, max_new_tokens=4, max_output_bytes=64, timeout_ms=1000)
    sent = model_messages.request(model_messages.Generate(caps=caps, prompt="hi"), 3)
    assert sent == envelope.outgoing(model_messages.Generate(caps=caps, prompt="hi"), 3)
    assert model_messages.parse_message(sent) == model_messages.Generate(caps=caps, prompt="hi")
    page_sent = messages.request_message(messages.TasksRequest(seed=4), 9)
    assert page_sent == {"type": "tasks", "id": 9, "seed": 4}  # a default null is left out
    assert messages.parse_request(page_sent) == messages.TasksRequest(seed=4)
    reply = json.loads(messages.failed("tasks", 9, "bad_params", "no"))
    assert reply == envelope.failed_reply("tasks", 9, "bad_params", "no")
    assert envelope.check_reply(reply, "tasks", 9) is reply


def test_the_pages_event_answer_writes_exactly_the_records_fields() -> None:
    """The page's answer to each event (site/experiment_state.js `answer`) is the EventAnswer
    record: its keys are the generated EVENT_ANSWER_FIELDS, no more, no fewer."""
    fields = constants()["EVENT_ANSWER_FIELDS"]
    assert fields == ["cancel", "model_version"]
    text = (ROOT / "site" / "experiment_state.js").read_text("utf-8")
    found = re.search(r"\n  answer\(cancel\) \{\n    return JSON\.stringify\(\{(.*?)\}\);", text)
    assert found, "site/experiment_state.js has no answer(cancel) building the EventAnswer"
    keys = [part.strip().split(":")[0].strip() for part in found.group(1).split(",")]
    assert keys == fields


def test_the_chain_protocol_options_are_generated_from_the_protocols() -> None:
    from pyapp.records import CHAIN_PROTOCOL_NAMES

    html = (ROOT / "site" / "index.html").read_text(encoding="utf-8")
    assert page.chain_protocol_options() in html
    begin = html.index("<!-- chain-protocols:begin")
    block = html[begin : html.index("<!-- chain-protocols:end -->")]
    assert re.findall(r'<option value="([a-z]+)"', block) == list(CHAIN_PROTOCOL_NAMES)
    assert 'value="design" selected' in block  # the design's is the default
