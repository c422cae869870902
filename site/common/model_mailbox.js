// @ts-check
// The model mailbox: the generate call from the Python worker to the model worker without
// the page's main thread in its path (issue 22 §3). One SharedArrayBuffer, created by Python
// (pyapp/browser/mailbox.py, which writes the same layout: tests/test_model_mailbox.py checks
// they agree), posted once to the page ({model_mailbox: buffer}), which hands it to every model
// worker it spawns (site/model_direct.js). Layout: Int32 slots (SLOT), then from
// HEADER_BYTES the request or the reply, UTF-8 JSON of `length` bytes.
//
// One request at a time. Python writes a `generate` request, sets `state` to (seq, request)
// and wakes the waiters (Atomics.notify); it then blocks (Atomics.wait) until (seq, replied).
// Whoever takes the request moves `state` by compare-exchange, so exactly one side takes it:
//   the model worker (request -> worker), when the page's gate lets it (generation number
//     <= `direct_until`: a model loaded, no fault hook due) — the direct path;
//   the page (request -> page), otherwise: its ModelClient.generate as before (a pending
//     load's wait, not_loaded, the fault hooks, the reply checks).
// A reply is written by whoever claims it (worker|page -> writing, compare-exchange: a page's
// hard stop, crash or Cancel racing the worker's reply — one wins, the other's is dropped),
// then `state` = (seq, replied), notify. The page supervises a direct generation as it does
// its own (deadlines, stall judgement, Cancel): it watches `state` (Atomics.waitAsync).
//
// The buffer is growable (up to its maxByteLength): a writer grows it for a text that does
// not fit; a reply that cannot fit at all is replaced by a failed reply `bad_reply`.

import { failedReply } from "./envelope.js";
import { MODEL_CHANNEL, MODEL_ERROR, MODEL_TYPE } from "./model_protocol.js";

export const SLOT = Object.freeze({
  state: 0,
  attached: 1,
  direct_until: 2,
  generations: 3,
  length: 4,
  request_id: 5,
  timeout_ms: 6,
  direct: 7,
});
export const PHASE = Object.freeze({ idle: 0, request: 1, worker: 2, page: 3, writing: 4, replied: 5 });
export const HEADER_BYTES = 64;
export const SEQ_MASK = 0x0fffffff; // a request's seq, kept in the state's upper bits

/** @param {number} seq @param {number} phase */
export const stateOf = (seq, phase) => ((seq & SEQ_MASK) << 3) | phase;
/** @param {number} state */
export const seqOf = (state) => state >>> 3;
/** @param {number} state */
export const phaseOf = (state) => state & 7;

/** @typedef {keyof typeof SLOT} SlotName */

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

export class Mailbox {
  /** @param {SharedArrayBuffer} buffer */
  constructor(buffer) {
    this.buffer = buffer;
    this.slots = new Int32Array(buffer, 0, HEADER_BYTES / 4);
  }

  /** @param {SlotName} name */
  load(name) {
    return Atomics.load(this.slots, SLOT[name]);
  }

  /** @param {SlotName} name @param {number} value */
  store(name, value) {
    Atomics.store(this.slots, SLOT[name], value);
  }

  /** @param {SlotName} name @param {number} value */
  add(name, value) {
    return Atomics.add(this.slots, SLOT[name], value);
  }

  state() {
    return Atomics.load(this.slots, SLOT.state);
  }

  // Move `state` from `from` to `to`; true when this side won.
  /** @param {number} from @param {number} to */
  move(from, to) {
    return Atomics.compareExchange(this.slots, SLOT.state, from, to) === from;
  }

  // The request's (or reply's) text: copied out of the shared bytes first.
  text() {
    const length = this.load("length");
    return fromUtf8.decode(new Uint8Array(this.buffer, HEADER_BYTES, length).slice());
  }

  // Write `text` (growing the buffer when it can); false when it cannot fit.
  /** @param {string} text */
  write(text) {
    const bytes = utf8.encode(text);
    const needed = HEADER_BYTES + bytes.length;
    if (needed > this.buffer.byteLength) {
      if (!this.buffer.growable || needed > this.buffer.maxByteLength) return false;
      this.buffer.grow(needed);
    }
    new Uint8Array(this.buffer, HEADER_BYTES, bytes.length).set(bytes);
    this.store("length", bytes.length);
    return true;
  }

  // Answer the request this side holds (`held`: its state, phase worker or page) with the
  // reply's JSON text (or a function making it: called only once this side has won). False
  // when the other side answered it first (nothing written).
  /** @param {number} held @param {string | (() => string)} reply */
  answer(held, reply) {
    const seq = seqOf(held);
    if (!this.move(held, stateOf(seq, PHASE.writing))) return false;
    if (!this.write(typeof reply === "function" ? reply() : reply)) {
      const why = `the reply does not fit the model mailbox (at most ${this.buffer.maxByteLength ?? this.buffer.byteLength} bytes)`;
      this.write(JSON.stringify(failedReply(MODEL_CHANNEL, MODEL_TYPE.GENERATE, this.load("request_id"), MODEL_ERROR.BAD_REPLY, why)));
    }
    Atomics.store(this.slots, SLOT.state, stateOf(seq, PHASE.replied));
    Atomics.notify(this.slots, SLOT.state);
    return true;
  }

  // Call `onState(state)` with the state now and after every change (Atomics.waitAsync), for
  // as long as this side lives; an awaited onState holds the next call back.
  /** @param {(state: number) => unknown} onState */
  async watch(onState) {
    let seen = this.state();
    for (;;) {
      await onState(seen);
      const waiting = Atomics.waitAsync(this.slots, SLOT.state, seen);
      if (waiting.async) await waiting.value;
      seen = this.state();
    }
  }
}
