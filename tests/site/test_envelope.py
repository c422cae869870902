"""site/common/envelope.js, the one builder and reader of the reply envelope of both channels,
under Node with the page ⇄ Python channel's table (LAB_CHANNEL): what it builds fits
exports/messages.schema.json, and it reads Python's own replies (bridge.handle). The model
channel's side: tests/test_model_envelope.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from pyapp.browser import handle
from pyapp.protocol import exports as message_exports

SITE = Path(__file__).resolve().parents[2] / "site"
ENVELOPE = SITE / "common" / "envelope.js"
PROTOCOL = SITE / "lab_protocol.js"

SCRIPT = """
import { okReply, failedReply, readReply } from %(module)s;
import { LAB_CHANNEL } from %(protocol)s;
const [hello, refused] = %(replies)s.map((text) => JSON.parse(text));
const out = {
  ok: okReply(LAB_CHANNEL, "sweep_header", 4, { header_json: "{}" }),
  failed: failedReply(LAB_CHANNEL, "sweep_run", 5, "page_refused", "busy"),
  hostile: failedReply(LAB_CHANNEL, 7, { any: "id" }, "unknown_type", "no such type"),
  read: readReply(hello, "hello", 1),
};
try { readReply(refused, "tasks", 2); } catch (error) { out.code = error.code; }
try { readReply(hello, "hello", 9); } catch (error) { out.mismatch = error.message; }
try { okReply(LAB_CHANNEL, "no_such_request", 3, {}); }
catch (error) { out.unknown = error.message; }
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
        "protocol": json.dumps(PROTOCOL.as_uri()),
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
    check.validate(out["hostile"])  # a type that is no string is not echoed; any id is
    assert out["hostile"]["type"] is None and out["hostile"]["id"] == {"any": "id"}
    assert "no_such_request is not a request of the Composition Lab messages" in out["unknown"]
    assert out["read"] == json.loads(hello)["result"]
    assert out["code"] == "bad_request"
    assert out["mismatch"] == "reply mismatch: sent hello#9, got hello#1"
