// The reply envelope of the page ⇄ Python protocol, built and read in this one place
// (pyapp/protocol/messages.py `ok` / `failed` build it in Python; exports/messages.schema.json
// describes it, one reply per request type with that request's result record):
//
//   {type, id, ok: true, result}  |  {type, id, ok: false, error: {code, message}}
//
// site/entry.js answers drivers with it; site/app.js reads Python's replies with readReply.

// A successful reply: `result` is the request's result record, unchanged.
export function okReply(type, id, result) {
  return JSON.stringify({ type, id, ok: true, result });
}

// A refused request: `code` is one of FAILURE_CODES (site/lab_protocol.js).
export function failedReply(type, id, code, message) {
  return JSON.stringify({ type, id, ok: false, error: { code, message } });
}

// The result of the reply to request `type`#`id`; a refusal throws an Error carrying `code`.
export function readReply(replyJson, type, id) {
  const reply = JSON.parse(replyJson);
  if (reply.id !== id || reply.type !== type) {
    throw new Error(`reply mismatch: sent ${type}#${id}, got ${reply.type}#${reply.id}`);
  }
  if (typeof reply.ok !== "boolean" || (reply.ok ? !("result" in reply) : typeof reply.error?.code !== "string")) {
    throw new Error(`malformed reply to ${type}#${id}`);
  }
  if (!reply.ok) {
    const error = new Error(`${reply.error.code}: ${reply.error.message}`);
    error.code = reply.error.code;
    throw error;
  }
  return reply.result;
}
