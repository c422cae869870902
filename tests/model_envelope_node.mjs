// Runs site/common/envelope.js with the model channel's table (MODEL_CHANNEL) under Node for
// tests/test_model_envelope.py: builds one reply or event per case of the JSON on stdin
// ({replies: [[type, id, ok, result | [code, message], extras]], events: [["client" | "panel",
// type, fields]]}) and prints each built message with what site/common/model_check.js says of it
// (null: it fits the protocol), or the error the envelope threw.

import { readFileSync } from "node:fs";
import { checkEvent, checkPanelEvent, checkReply } from "../site/common/model_check.js";
import { channelEvent, failedReply, okReply } from "../site/common/envelope.js";
import { MODEL_CHANNEL } from "../site/common/model_protocol.js";

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
      () =>
        ok
          ? okReply(MODEL_CHANNEL, type, id, body, extras)
          : failedReply(MODEL_CHANNEL, type, id, body[0], body[1], extras),
      (message) => checkReply(type, message),
    ),
  ),
  events: cases.events.map(([to, type, fields]) =>
    attempt(() => channelEvent(MODEL_CHANNEL, to, type, fields), to === "client" ? checkEvent : checkPanelEvent),
  ),
};
process.stdout.write(JSON.stringify(answer));
