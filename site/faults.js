// @ts-check
// Fault-injection hooks for tests (docs/sweep.md#fault-injection), read from the page
// parameter `fault`: comma-separated KIND@N, N counting the generations of the page's life
// from 1 (every generate request the model client passes to a loaded worker).
//
// The kinds (worker_crash, reload_fail, hang, bad_reply) and what each does are written once,
// in pyapp/records/faults.py: generated into ./faults_grammar.js (FAULT, FAULT_MEANINGS) and
// into docs/sweep.md's table of hooks.
//
// A page run with faults is a test of the instrument: the sweep records the hooks in the
// trace (`run.faults`) and the sweep CLI in run.json.
//
// The grammar (kinds, pattern, limits) comes from the same place: the CLI refuses exactly what
// this page ignores.

import { FAULT_HOOK, FAULT_KINDS, FAULT_MAX_HOOKS, FAULT_MAX_TEXT } from "./faults_grammar.js";

export { FAULT_KINDS };

/**
 * The hooks a `fault` value asks for: `at(kind, n)` whether a hook of `kind` acts on
 * generation n, `next(n)` the first generation after n that some hook acts on.
 * @typedef {object} Faults
 * @property {string[]} hooks the hooks, as written
 * @property {string[]} errors what was ignored, one line each
 * @property {(kind: string, n: number) => boolean} at
 * @property {(n: number) => number} next
 */

/** @param {unknown} text @returns {Faults} */
export function parseFaults(text) {
  /** @type {string[]} */
  const hooks = [];
  /** @type {string[]} */
  const errors = [];
  /** @type {Map<string, Set<number>>} */
  const at = new Map(FAULT_KINDS.map((kind) => [kind, new Set()]));
  const value = String(text ?? "");
  if (value.length > FAULT_MAX_TEXT) {
    errors.push(`fault: a value of ${value.length} characters (at most ${FAULT_MAX_TEXT})`);
    return { hooks, errors, at: () => false, next: () => Infinity };
  }
  const items = value.split(",").map((s) => s.replace(/^[ \t]+|[ \t]+$/g, "")).filter(Boolean);
  if (items.length > FAULT_MAX_HOOKS) {
    errors.push(`fault: ${items.length} hooks (at most ${FAULT_MAX_HOOKS})`);
  }
  for (const item of items.slice(0, FAULT_MAX_HOOKS)) {
    const match = FAULT_HOOK.exec(item);
    const numbers = match ? at.get(match[1]) : undefined;
    if (!match || !numbers) {
      errors.push(`fault ${JSON.stringify(item)}: expected KIND@N with KIND one of ${FAULT_KINDS.join(", ")}`);
      continue;
    }
    numbers.add(Number(match[2]));
    hooks.push(item);
  }
  // next(n): the first generation after n that some hook acts on (Infinity: none)
  const numbers = [...at.values()].flatMap((set) => [...set]);
  /** @param {number} n */
  const next = (n) => Math.min(Infinity, ...numbers.filter((m) => m > n));
  return { hooks, errors, at: (kind, n) => at.get(kind)?.has(n) === true, next };
}
