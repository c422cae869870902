"""site/envelope.js, the page's one builder and reader of the reply envelope, under Node: what it
builds fits exports/messages.schema.json, and it reads Python's own replies (bridge.handle)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from pyapp.browser.bridge import handle
from pyapp.protocol import exports as message_exports

ENVELOPE = Path(__file__).resolve().parents[2] / "site" / "envelope.js"

SCRIPT = """
import { okReply, failedReply, readReply } from %(module)s;
const [hello, refused] = %(replies)s;
const out = {
  ok: JSON.parse(okReply("sweep_header", 4, { header_json: "{}" })),
  failed: JSON.parse(failedReply("sweep_run", 5, "page_refused", "busy")),
  read: readReply(hello, "hello", 1),
};
try { readReply(refused, "tasks", 2); } catch (error) { out.code = error.code; }
try { readReply(hello, "hello", 9); } catch (error) { out.mismatch = error.message; }
console.log(JSON.stringify(out));
"""


def test_the_page_envelope_fits_the_schema_and_reads_pythons_replies() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed")
    hello = handle(json.dumps({"type": "hello", "id": 1}))
    refused = handle(json.dumps({"type": "tasks", "id": 2, "seed": "x"}))
    script = SCRIPT % {
        "module": json.dumps(ENVELOPE.as_uri()),
        "replies": json.dumps([hello, refused]),
    }
    done = subprocess.run(
        [node, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    check = jsonschema.Draft202012Validator(message_exports.messages_schema())
    check.validate(out["ok"])
    check.validate(out["failed"])
    assert out["read"] == json.loads(hello)["result"]
    assert out["code"] == "bad_request"
    assert out["mismatch"] == "reply mismatch: sent hello#9, got hello#1"
