// @ts-check
// The page's half of the run's event channel from the Python worker (site/python_worker/lab_worker.py,
// pyapp/browser/page_link.py; issue 22 §3: no call to the page per trial).
//
// Python posts each event without waiting ({lab_event: json, texts, seq}, the worker's
// postMessage, delivered in order: the event's JSON text, which holds no document, and beside
// it the documents it brings as Python's own text, `texts` = {trial, change, receipt},
// pyapp.protocol.messages.EventTexts) once the page has attached the flags Python shares with it: an
// Int32Array over a SharedArrayBuffer ({lab_flags: buffer}, posted once), where the page keeps
// its Cancel flag and its model client's version (+ 1; 0: ask) for Python's checks to read
// with no call. A posted event that fails here (a store that failed) sets `trouble`: Python
// then tells the next event synchronously (xworker.sync.session_event), where it is thrown.
// Each synchronous call says how many events were posted before it (`posted`): it is answered
// once all of them arrived (`after`), so the page sees every event in order.

// The flags' slots: site/python_worker/lab_worker.py FLAG (tests/test_page_link.py checks they agree).
// `stop_at`: a driver's stop (stopAfter): the Cancel once Python has sent that many trial_done
// events in all (0: none); both sides count them, so Python stops before the next trial.
export const FLAG = Object.freeze({ attached: 0, cancel: 1, model_version: 2, trouble: 3, stop_at: 4 });

/** @import { EventTexts } from "./lab_types.js" */
/** @typedef {keyof typeof FLAG} FlagName */
/**
 * What the Python worker posts (site/python_worker/lab_worker.py): the flags once, then each
 * event with the documents it brings and its number.
 * @typedef {{ lab_flags?: unknown, lab_event?: unknown, texts?: Partial<EventTexts>, seq?: number }} Posted
 */

export class EventChannel {
  /** @param {(json: string, texts: Partial<EventTexts>) => unknown} deliver the page's handling of one event (ExperimentState.sessionEvent) */
  constructor(deliver) {
    this.deliver = deliver;
    /** @type {Int32Array | null} */
    this.flags = null; // the shared Int32Array, once Python posted it
    this.received = 0; // posted events received so far
    /** @type {{ posted: number, resolve: () => void }[]} */
    this.waiters = []; // [{posted, resolve}] of synchronous calls waiting for posted events
    /** @type {Partial<Record<FlagName, number>>} */
    this.values = { cancel: 0, model_version: 0, stop_at: 0 }; // kept here until the flags arrive
  }

  // A message from the worker: true when it was the channel's.
  /** @param {unknown} message */
  message(message) {
    const data = /** @type {Posted | null} */ (typeof message === "object" ? message : null);
    if (data?.lab_flags instanceof SharedArrayBuffer) {
      const flags = new Int32Array(data.lab_flags);
      this.flags = flags;
      for (const [name, value] of Object.entries(this.values)) Atomics.store(flags, FLAG[/** @type {FlagName} */ (name)], value);
      Atomics.store(flags, FLAG.attached, 1);
      return true;
    }
    if (typeof data?.lab_event !== "string") return false;
    this.received = data.seq ?? this.received;
    try {
      this.deliver(data.lab_event, data.texts ?? {});
    } catch (error) {
      console.error("[composition-lab] a posted event failed; the next one is told", error);
      this.set("trouble", 1);
    }
    const ready = this.waiters.filter((waiter) => waiter.posted <= this.received);
    this.waiters = this.waiters.filter((waiter) => waiter.posted > this.received);
    for (const waiter of ready) waiter.resolve();
    return true;
  }

  // null when every event posted before a call (`posted`) has arrived, else a promise of it.
  /** @param {unknown} posted @returns {Promise<void> | null} */
  after(posted) {
    if (!(Number(posted) > this.received)) return null;
    return new Promise((resolve) => this.waiters.push({ posted: Number(posted), resolve }));
  }

  // answer(): what a synchronous call answers, once the events posted before it arrived.
  /** @template T @param {unknown} posted @param {() => T} answer @returns {T | Promise<T>} */
  answerAfter(posted, answer) {
    const waiting = this.after(posted);
    return waiting ? waiting.then(answer) : answer();
  }

  /** @param {FlagName} name @param {unknown} value */
  set(name, value) {
    const number = Number(value);
    if (name in this.values) this.values[name] = number;
    if (this.flags) Atomics.store(this.flags, FLAG[name], number);
  }

  /** @param {boolean} flag */
  cancel(flag) {
    this.set("cancel", flag ? 1 : 0);
  }

  // The model client changed state: Python asks the provenance (0) until this task's changes
  // are all made, then reads the new version (+ 1) again.
  /** @param {number} version */
  modelChanged(version) {
    this.set("model_version", 0);
    setTimeout(() => this.set("model_version", version + 1), 0);
  }
}
