// @ts-check
// The sweep's ETA (no DOM, no clock of its own: the caller passes `now` in milliseconds, so a
// test replays recorded trials on a fake clock — tests/site/test_eta.py).
//
// Trials of different conditions cost very different times (a supplied-program trial is
// near-instant, a model-program one waits for the model; a held-out controlled chain makes up
// to six calls where a profile probe makes one), so each group (phase, condition) left is
// estimated on its own, from what has been measured, and given as a range:
//
// - a group with trials of its own timed: its trials left × its mean per trial, the range
//   spanning its mean over all its trials and over the latest ones (durations drift: a
//   shared machine's load changes), widened by the mean's own uncertainty; where Python's plan
//   says how many answer tokens the trials left will write (`work`: the exact answers'
//   characters — a model-only answer, a chain's every planned step — known before a trial
//   runs; profile trials only: a held-out answer's length stays out of the page until it is
//   observed), the estimate, its range with it, moves by the group's own least-squares slope of
//   time on answer tokens (≥ 0) × how far the trials left's tokens differ from the timed
//   trials' mean (a calibration set's tasks run add, sub, then mul, whose answers are longer:
//   a generation costs a model pass per token written); no constant is fitted: the slope is
//   the run's own, and only its sign is fixed, by that argument;
//   trials left that make more or fewer model calls than the timed ones (a held-out chain's
//   route is 4 to 6 calls, none for a family without a route) scale by the calls left;
// - a group with none timed yet: its model calls left (Python's plan: a chain's route length,
//   0 for an unsupported route or the control) × the per-call time of its nearest kin timed
//   over the kin's latest calls (a run's first calls are slower: the engine compiles as it
//   goes) (`KIN`: the same condition in the other phase, a condition whose model writes the
//   same kind of answer, any), as a range (a held-out prompt is longer, yet its calls can run
//   faster than the profile's latest, mul's longer answers: `KIN.condition`);
// - before any model call has been timed, the run's model groups have no estimate, and
//   neither has the run: the page says so instead of a number.
//
// The point shown is the estimate itself — a timed group's trials left × its mean per trial
// (moved by its answer tokens left), an untimed one's calls left × its kin's middle — kept
// within the range: not the range's own middle, whose ends are widened on purpose and lie
// ratios apart. tests/site/test_eta.py replays recorded subject sweeps on a fake clock and
// pins how often the range holds the time that really remained and the point is within ±25 %
// of it; docs/page.md gives the figures, and why some runs miss: an untimed condition's cost
// rests on another condition's per call, a ratio that differs between runs by more than
// ±25 %, and a loaded machine's speed swings.
//
// A resumed sweep counts the durations of its earlier session's trials (`done`), so the
// estimate right after a resume is as good as before it. What the page shows is short: "about
// 1 min 40 s left", the range beside it for whoever wants it.

// An untimed group's range, × the per-call time measured by its nearest kin: the same
// condition in the other phase, a condition whose model writes the same kind of answer (an
// integer, a program) in the same or the other phase, or any model condition.
export const KIN = Object.freeze({
  condition: [0.45, 4.5], // the same condition, the other phase: a held-out group's time per
  // call ran 0.49-4.38 x its profile condition's latest 50 calls in the first eight recordings
  // (held-out prompts are longer, the profile's last calls are mul's longer answers); checked
  // on four later ones before it was kept (docs/page.md)
  kind: [0.7, 1.5], // the same kind of answer, the same phase
  kindOther: [1.0, 3.5], // the same kind of answer, the other phase
  any: [0.7, 4.0], // any model condition (a program answer is longer than an integer)
});
const RECENT = 50; // the latest trials a group's recent mean is taken over
const Z = 2; // the mean's uncertainty: ± Z standard errors
const TRUSTED = 10; // below this many timed trials a group's estimate leans on its kin's
const DRIFT = 0.2; // what a measured mean may drift by over the rest of its group (operands grow
// through a calibration set; a shared machine's load changes): ± this share

const key = (/** @type {string} */ phase, /** @type {string} */ condition) => `${phase}/${condition}`;

/** @typedef {{phase: string, condition: string, trials: number, calls?: number | null, answer?: string | null, work?: number | null}} Left */
/** @typedef {{low_s: number, high_s: number, mid_s: number, unmeasured: string[]} | null} Estimate */

class Group {
  /** @param {Left} left */
  constructor({ phase, condition, trials, calls, answer, work }) {
    this.phase = phase;
    this.condition = condition;
    this.left = trials;
    this.callsLeft = calls ?? trials; // older states carry no calls: one per trial
    this.callsPerTrial = trials ? this.callsLeft / trials : 0;
    this.answer = answer ?? condition; // what kind of answer its model writes (Python's plan)
    this.workLeft = work ?? null; // answer tokens its trials left will write (null: not known)
    /** @type {number[]} */
    this.durations = []; // ms, every timed trial of this group
    /** @type {(number | null)[]} */
    this.sizes = []; // answer tokens each timed trial was to write (null: not known)
    this.calls = 0; // model calls of those trials
    /** @type {[number, number][]} */
    this.called = []; // [ms, calls] of the latest RECENT timed trials that made model calls
  }

  /** ms per model call over the latest RECENT timed trials that made calls (a run's first
   * calls are slower — the engine compiles as it goes — and a machine's load drifts), or null
   * before one is timed. */
  get perCall() {
    const calls = this.called.reduce((a, [, c]) => a + c, 0);
    return calls ? this.called.reduce((a, [ms]) => a + ms, 0) / calls : null;
  }

  get n() {
    return this.durations.length;
  }

  get totalMs() {
    return this.durations.reduce((a, b) => a + b, 0);
  }

  /** What the trials left add to or take from `left × mean` because they write more or fewer
   * answer tokens than the timed ones did: the least-squares slope of ms on answer tokens over
   * the group's timed trials × (tokens left − trials left × the timed trials' mean tokens). No
   * constant: the slope is this run's own, measured; floored at 0 (writing more tokens never
   * takes less time: a negative slope is noise); 0 where a size is not known (a program
   * answer, an older state) or the timed trials' sizes do not vary (nothing to measure). */
  get sizeShift() {
    const sizes = this.sizes;
    if (this.workLeft === null || this.n < 2 || sizes.some((x) => x === null)) return 0;
    const xs = /** @type {number[]} */ (sizes);
    const mx = xs.reduce((a, b) => a + b, 0) / this.n;
    const my = this.totalMs / this.n;
    let sxy = 0;
    let sxx = 0;
    xs.forEach((x, i) => {
      sxy += (x - mx) * (this.durations[i] - my);
      sxx += (x - mx) ** 2;
    });
    if (sxx === 0) return 0;
    return Math.max(0, sxy / sxx) * (this.workLeft - this.left * mx);
  }
}

export class Eta {
  /** `left`: what the run has still to do (Python's SweepState.left for the phases it covers);
   * `done`: [phase, condition, ms, calls, answer tokens or null] of trials timed before (a
   * resumed sweep's earlier session), counted as this run's own.
   * @param {Left[]} left
   * @param {[string, string, number, number, (number | null)?][]} [done] */
  constructor(left, done = []) {
    /** @type {Map<string, Group>} */
    this.groups = new Map();
    for (const entry of left) if (entry.trials > 0) this.groups.set(key(entry.phase, entry.condition), new Group(entry));
    /** @type {Map<string, string | null | undefined>} each condition's kind of answer */
    this.answers = new Map(left.map((entry) => [entry.condition, entry.answer]));
    /** @type {Map<string, Group>} groups of trials timed but not left (a phase already done) */
    this.history = new Map();
    for (const [phase, condition, ms, calls, size] of done) this.record(phase, condition, ms, calls, false, size ?? null);
    /** @type {{id: string, since: number, size: number | null, calls: number | null} | null} */
    this.inFlight = null;
  }

  /** @param {string} phase @param {string} condition @param {number} ms @param {number} calls
   * @param {boolean} counts @param {number | null} size */
  record(phase, condition, ms, calls, counts, size) {
    const id = key(phase, condition);
    let group = this.groups.get(id) ?? this.history.get(id);
    if (!group) {
      group = new Group({ phase, condition, trials: 0, calls: 0, answer: this.answers.get(condition) });
      this.history.set(id, group);
    }
    group.durations.push(ms);
    group.sizes.push(size);
    group.calls += calls;
    if (calls > 0) group.called = [...group.called.slice(1 - RECENT), [ms, calls]];
    if (counts) {
      group.left = Math.max(0, group.left - 1);
      group.callsLeft = Math.max(0, group.callsLeft - calls);
      if (group.workLeft !== null) group.workLeft = Math.max(0, group.workLeft - (size ?? 0));
    }
  }

  /** `size`: the answer tokens the trial is to write (Python's `TrialStart.answer_tokens`);
   * `calls`: the model calls it is planned to make (`TrialStart.calls`).
   * @param {string} phase @param {string} condition @param {number} now
   * @param {number | null} [size] @param {number | null} [calls] */
  started(phase, condition, now, size = null, calls = null) {
    this.inFlight = { id: key(phase, condition), since: now, size, calls };
  }

  /** `calls`: the model calls the trial made; default: those it was planned to make (given to
   * `started`: the page passes Python's `TrialStart.calls`), else the group's calls per trial.
   * @param {string} phase @param {string} condition @param {number} now @param {number} [calls] */
  finished(phase, condition, now, calls) {
    const id = key(phase, condition);
    const group = this.groups.get(id);
    const flight = this.inFlight;
    const planned = flight?.id === id ? flight.calls : null;
    const made = calls ?? planned ?? Math.round(group?.callsPerTrial ?? 0);
    if (flight?.id === id) this.record(phase, condition, Math.max(0, now - flight.since), made, true, flight.size);
    else if (group) {
      group.left = Math.max(0, group.left - 1);
      group.workLeft = null; // an untimed trial's size is not known here: no longer known
    }
    this.inFlight = null;
  }

  /** The per-call time (ms) of the group's nearest kin that has model calls timed, as a range
   * (`KIN`): [low, high], or null when no model call has been timed.
   * @param {Group} g @returns {[number, number] | null} */
  callTime(g) {
    const timed = [...this.groups.values(), ...this.history.values()].filter((h) => h.perCall !== null);
    const kin = (/** @type {(h: Group) => boolean} */ test) =>
      timed.filter(test).map((h) => /** @type {number} */ (h.perCall));
    const tiers = /** @type {[number[], number[]][]} */ ([
      [kin((h) => h.condition === g.condition && h.phase !== g.phase), KIN.condition],
      [kin((h) => h.answer === g.answer && h.phase === g.phase && h !== g), KIN.kind],
      [kin((h) => h.answer === g.answer && h !== g), KIN.kindOther],
      [kin((h) => h !== g), KIN.any],
    ]);
    for (const [times, [lowBy, highBy]] of tiers) {
      if (times.length) return [Math.min(...times) * lowBy, Math.max(...times) * highBy];
    }
    return null;
  }

  /** The remaining time as a range, or null before the run's model calls can be estimated.
   * @param {number} now @returns {Estimate} */
  estimate(now) {
    let low = 0;
    let high = 0;
    let point = 0; // the estimate itself: each group's mean (its kin's middle when untimed)
    /** @type {string[]} */
    const unmeasured = [];
    for (const [id, g] of this.groups) {
      if (!g.left) continue;
      const spent = this.inFlight?.id === id ? now - this.inFlight.since : 0;
      const per = g.callsLeft ? this.callTime(g) : null;
      if (g.n > 0) {
        const mean = g.totalMs / g.n;
        const latest = g.durations.slice(-RECENT);
        const recent = latest.reduce((a, b) => a + b, 0) / latest.length;
        const sd = Math.sqrt(g.durations.reduce((a, d) => a + (d - mean) ** 2, 0) / g.n);
        const error = (Z * sd) / Math.sqrt(g.n);
        // trials that make more or fewer model calls than those timed (a held-out chain's route
        // is 4 to 6 calls, none where the family has no route) scale by the calls left
        const timedCalls = g.calls / g.n;
        const trials = timedCalls > 0 ? g.callsLeft / timedCalls : g.left;
        let lo = trials * Math.max(0, Math.min(mean, recent) - error) * (1 - DRIFT);
        let hi = (trials * (Math.max(mean, recent) + error)) / (1 - DRIFT);
        let at = trials * mean;
        // the trials left write more (or fewer) answer tokens than those timed: the whole
        // estimate moves by what the group's own measured slope says they cost
        const shift = g.sizeShift;
        lo = Math.max(0, lo + shift);
        hi += shift;
        at += shift;
        // a few trials say little (the first ones of a calibration set are its smallest
        // operands): their estimate leans on the kin's until TRUSTED trials are timed
        if (per && g.n < TRUSTED) {
          const w = g.n / TRUSTED;
          lo = w * lo + (1 - w) * g.callsLeft * per[0];
          hi = w * hi + (1 - w) * g.callsLeft * per[1];
          at = w * at + (1 - w) * g.callsLeft * Math.sqrt(per[0] * per[1]);
        }
        low += Math.max(0, lo - spent);
        high += Math.max(0, hi - spent);
        point += Math.max(0, at - spent);
        continue;
      }
      if (g.callsLeft === 0) continue; // the control, unsupported routes: no model call
      if (!per) return null; // no model call timed yet: no honest number
      unmeasured.push(id);
      low += Math.max(0, g.callsLeft * per[0] - spent);
      high += Math.max(0, g.callsLeft * per[1] - spent);
      point += Math.max(0, g.callsLeft * Math.sqrt(per[0] * per[1]) - spent); // ratios apart
    }
    // the point shown: the estimate itself (each timed group's mean per trial, an untimed
    // one's kin's middle), not the middle of the range — the range's ends are widened for
    // the mean's error and drift on purpose, and their middle is not the best guess
    const mid = Math.min(high, Math.max(low, point));
    return { low_s: low / 1000, high_s: high / 1000, mid_s: mid / 1000, unmeasured };
  }
}

/** @param {number} seconds */
export function duration(seconds) {
  const s = Math.round(seconds);
  if (s < 120) return s < 60 ? `${s} s` : `1 min ${s - 60} s`;
  const minutes = Math.floor(s / 60);
  if (minutes < 120) return `${minutes} min ${s % 60} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** What #sweep-eta says: short ("about 1 min 40 s left"); `etaRange` is its title.
 * @param {Estimate} estimate */
export function etaText(estimate) {
  if (!estimate) return "time left: known once a model trial has been timed";
  return `about ${duration(estimate.mid_s)} left`;
}

/** The range behind the short text (the element's title), with the groups not timed yet.
 * @param {Estimate} estimate */
export function etaRange(estimate) {
  if (!estimate) return "No model call has been timed yet, so no estimate is given.";
  const { low_s, high_s, unmeasured } = estimate;
  const untimed = unmeasured.length ? `; not timed yet: ${unmeasured.join(", ")}` : "";
  return `between ${duration(low_s)} and ${duration(high_s)} left${untimed}`;
}
