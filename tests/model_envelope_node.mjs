// Runs site/common/model_envelope.js under Node for tests/test_model_envelope.py: builds one reply
// or event per case of the JSON on stdin ({replies: [[type, id, ok, result | [code, message],
// extras]], events: [["worker" | "panel", type, id | null, fields]]}) and prints each built
// message with what site/common/model_check.js says of it (null: it fits the protocol), or the
// error the envelope threw.

import { readFileSync } from "node:fs";
import { checkEvent, checkPanelEvent, checkReply } from "../site/common/model_check.js";
import { failedReply, okReply, panelEvent, workerEvent } from "../site/common/model_envelope.js";

const attempt = (build, check) => {
  try {
    const message = build();
    return { message, problem: check(message) };
  } catch (error) {
    return { thrown: String(error.message) };
  }
};

const cases = JSON.parse(readFileSync(0, "utf-8"));
const answer = {
  replies: cases.replies.map(([type, id, ok, body, extras]) =>
    attempt(
      () => (ok ? okReply(type, id, body, extras) : failedReply(type, id, body[0], body[1], extras)),
      (message) => checkReply(type, message),
    ),
  ),
  events: cases.events.map(([side, type, id, fields]) =>
    side === "worker"
      ? attempt(() => workerEvent(type, id, fields), checkEvent)
      : attempt(() => panelEvent(type, fields), checkPanelEvent),
  ),
};
process.stdout.write(JSON.stringify(answer));
