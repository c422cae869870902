// @ts-check
// The sweep's ETA, estimated per phase and condition from what has been measured (no DOM, no
// clock of its own: the caller passes `now` in milliseconds, so a test drives it with a
// scripted clock — tests/site/test_eta.py).
//
// Trials of different conditions cost very different times (a supplied-program trial is
// near-instant, a model-program one waits for the model; a controlled chain makes up to six
// calls), so elapsed time divided evenly over trials misleads. Each group (phase, condition)
// left in the run is estimated from the mean duration of its own finished trials. A group
// with no finished trial yet is not given one number: it contributes a range, from the
// fastest mean measured so far (or the same condition's mean in the other phase, when it has
// one) to twice the slowest (a condition not timed yet may be slower
// than any timed one: a model-program trial writes a whole program where a model-only trial
// writes one integer), and the estimate is shown as a range, naming the groups not timed,
// until every group left has been timed. Before any trial has finished there is no estimate.

export const UNTIMED_FACTOR = 2; // the high end of an untimed group: this × the slowest mean

/** @import { PlanLeft } from "./lab_types.js" */

/** @param {string} phase @param {string} condition */
const key = (phase, condition) => `${phase}/${condition}`;

/**
 * The estimate: a range in seconds, and the groups not timed yet.
 * @typedef {{ low_s: number, high_s: number, unmeasured: string[] }} Estimate
 */

export class Eta {
  /**
   * @param {Iterable<Pick<PlanLeft, "phase" | "condition" | "trials">>} left what the run has still
   *   to do (Python's SweepState.left, restricted to the phases the run covers)
   */
  constructor(left) {
    /** @type {Map<string, { phase: string, condition: string, left: number, n: number, totalMs: number }>} */
    this.groups = new Map();
    for (const { phase, condition, trials } of left) {
      if (trials > 0) this.groups.set(key(phase, condition), { phase, condition, left: trials, n: 0, totalMs: 0 });
    }
    /** @type {{ id: string, since: number } | null} */
    this.inFlight = null;
  }

  /** @param {string} phase @param {string} condition @param {number} now */
  started(phase, condition, now) {
    this.inFlight = { id: key(phase, condition), since: now };
  }

  /** @param {string} phase @param {string} condition @param {number} now */
  finished(phase, condition, now) {
    const id = key(phase, condition);
    const group = this.groups.get(id);
    if (group && this.inFlight?.id === id) {
      group.n += 1;
      group.totalMs += Math.max(0, now - this.inFlight.since);
    }
    if (group) group.left = Math.max(0, group.left - 1);
    this.inFlight = null;
  }

  // {low_s, high_s, unmeasured: ["heldout/model-program", ...]} or null before any trial has
  // been timed. low_s === high_s once every group left has been timed.
  /** @param {number} now @returns {Estimate | null} */
  estimate(now) {
    const means = [...this.groups.values()].filter((g) => g.n > 0).map((g) => g.totalMs / g.n);
    if (!means.length) return null;
    const fastest = Math.min(...means);
    const slowest = Math.max(...means);
    let low = 0;
    let high = 0;
    /** @type {string[]} */
    const unmeasured = [];
    for (const [id, group] of this.groups) {
      if (!group.left) continue;
      // the trial in flight has already used part of its expected time
      const spent = this.inFlight?.id === id ? now - this.inFlight.since : 0;
      if (group.n > 0) {
        const mean = group.totalMs / group.n;
        const rest = group.left * mean - Math.min(spent, mean);
        low += rest;
        high += rest;
      } else {
        unmeasured.push(id);
        // the same condition timed in the other phase bounds it from below
        const same = [...this.groups.values()].find((g) => g.condition === group.condition && g.n > 0);
        low += Math.max(0, group.left * (same ? same.totalMs / same.n : fastest) - spent);
        high += Math.max(0, group.left * slowest * UNTIMED_FACTOR - spent);
      }
    }
    return { low_s: low / 1000, high_s: high / 1000, unmeasured };
  }
}

/** @param {number} seconds */
export function duration(seconds) {
  const s = Math.round(seconds);
  if (s < 120) return `${s} s`;
  const minutes = Math.floor(s / 60);
  if (minutes < 120) return `${minutes} min ${s % 60} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

// What #sweep-eta says.
/** @param {Estimate | null} estimate */
export function etaText(estimate) {
  if (!estimate) return "ETA: known once the first trial has been timed";
  const { low_s, high_s, unmeasured } = estimate;
  if (!unmeasured.length || duration(low_s) === duration(high_s)) return `ETA ${duration(high_s)}`;
  return `ETA ${duration(low_s)}–${duration(high_s)} (a range until ${unmeasured.join(", ")} has been timed)`;
}
