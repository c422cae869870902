// @ts-check
// The one envelope of both channels — page ⇄ Python (site/app.js reads Python's replies,
// site/entry.js answers drivers) and page ⇄ model worker (site/model_worker/model_worker.js
// builds every reply and event it posts, site/model_client.js every reply it answers Python
// with and every event it hands the Models panel) — built and read in this one place, as
// pyapp/protocol/envelope.py builds and reads it in Python for both:
//
//   reply  {type, id, ok: true, result, ...extras}  |  {type, id, ok: false, error: {code, message}, ...extras}
//   event  {type, ...fields}
//
// A channel is its generated table (LAB_CHANNEL in site/lab_protocol.js, MODEL_CHANNEL in
// site/common/model_protocol.js): the request types a reply answers and the event types by
// receiver. A reply to a type that is not a request of the channel, or an event that is not
// its receiver's, is a bug and throws. tests/site/test_envelope.py and
// tests/test_model_envelope.py check what it builds against each channel's schema.

/**
 * What the envelope knows of a channel (pyapp.protocol.generate.channel_table).
 * @typedef {object} ChannelTable
 * @property {string} title the channel's schema title
 * @property {readonly string[]} replies the request types a reply answers
 * @property {Readonly<Record<string, readonly string[]>>} events the event types, by receiver
 * @property {boolean} integer_ids whether a request's `id` is an integer
 */

/**
 * A reply as sent: `{type, id, ok, result | error, ...extras}`.
 * @typedef {{ type: string | null, id: unknown, ok: boolean, result?: unknown, error?: { code: string, message: string } | null } & Record<string, unknown>} Envelope
 */

/** A refused request read from its reply: an Error carrying the reply's `code`. */
export class ReplyFailed extends Error {
  /** @param {string} code @param {string} message */
  constructor(code, message) {
    super(`${code}: ${message}`);
    this.code = code;
  }
}

/** @param {readonly string[] | undefined} types @param {unknown} type @param {string} what @param {ChannelTable} channel */
function known(types, type, what, channel) {
  if (typeof type !== "string" || !types?.includes(type)) {
    throw new Error(`${String(type)} is not ${what} of the ${channel.title} (its generated table)`);
  }
}

/**
 * A successful reply to request `type`#`id`: `result` is its result record; `extras` are the
 * reply's other fields (the model channel's elapsed_ms, hard_stop, timing).
 * @template R
 * @param {ChannelTable} channel
 * @param {string} type
 * @param {unknown} id
 * @param {R} result
 * @param {Record<string, unknown>} [extras]
 * @returns {{ type: string, id: unknown, ok: true, result: R }}
 */
export function okReply(channel, type, id, result, extras = {}) {
  known(channel.replies, type, "a request", channel);
  return { type, id, ok: true, result, ...extras };
}

/**
 * A refused request's reply (`code`: one of the channel's codes). `type` and `id` are echoed
 * only when they are what a request of the channel carries, so that a reply to a malformed
 * message is always a well-formed reply.
 * @param {ChannelTable} channel
 * @param {unknown} type
 * @param {unknown} id
 * @param {string} code
 * @param {unknown} message
 * @param {Record<string, unknown>} [extras]
 * @returns {{ type: string | null, id: unknown, ok: false, error: { code: string, message: string } }}
 */
export function failedReply(channel, type, id, code, message, extras = {}) {
  const echoed = channel.integer_ids ? (Number.isInteger(id) ? id : null) : (id ?? null);
  return {
    type: typeof type === "string" ? type : null,
    id: echoed,
    ok: false,
    error: { code, message: String(message) },
    ...extras,
  };
}

/**
 * An event of the channel to `to` (a receiver of the channel's table: the model channel's
 * `client` or `panel`, the page ⇄ Python channel's `page`).
 * @template {Record<string, unknown>} F
 * @param {ChannelTable} channel
 * @param {string} to
 * @param {string} type
 * @param {F} [fields]
 * @returns {{ type: string } & F}
 */
export function channelEvent(channel, to, type, fields = /** @type {F} */ ({})) {
  known(channel.events[to], type, `an event to the ${to}`, channel);
  return { type, ...fields };
}

// The result of a decoded reply to request `type`#`id`; a refusal throws a ReplyFailed
// carrying its `code`, a reply that does not answer the request (or is no envelope) an Error.
/** @param {unknown} reply @param {string} type @param {unknown} id @returns {unknown} */
export function readReply(reply, type, id) {
  const r = /** @type {Partial<Envelope>} */ (typeof reply === "object" && reply !== null ? reply : {});
  if (r.id !== id || r.type !== type) {
    throw new Error(`reply mismatch: sent ${type}#${id}, got ${r.type}#${r.id}`);
  }
  if (typeof r.ok !== "boolean" || (r.ok ? !("result" in r) : typeof r.error?.code !== "string")) {
    throw new Error(`malformed reply to ${type}#${id}`);
  }
  if (!r.ok) {
    const error = /** @type {{ code: string, message: string }} */ (r.error);
    throw new ReplyFailed(error.code, error.message);
  }
  return r.result;
}
