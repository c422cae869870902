// Fault-injection hooks for tests (docs/sweep.md#fault-injection), read from the page
// parameter `fault`: comma-separated KIND@N, N counting the generations of the page's life
// from 1 (every generate request the model client passes to a loaded worker).
//
//   worker_crash@N  the model worker dies during the Nth generation (the client fails it with
//                   `worker_error` and reloads the same model)
//   reload_fail@N   after the Nth generation the worker is replaced, and that reload fails
//                   once (`load_failed`); the next generation finds no model (`not_loaded`)
//                   and reloads again
//   hang@N          the Nth generation never returns (the worker blocks), so the hard
//                   deadline fires: finish `timeout`, terminate, reload
//   bad_reply@N     the worker's answer to the Nth generation is replaced by a malformed one
//
// A page run with faults is a test of the instrument: the sweep records the hooks in the
// trace (`run.faults`) and the sweep CLI in run.json.

export const FAULT_KINDS = ["worker_crash", "reload_fail", "hang", "bad_reply"];

export function parseFaults(text) {
  const hooks = [];
  const errors = [];
  const at = new Map(FAULT_KINDS.map((kind) => [kind, new Set()]));
  for (const item of String(text ?? "").split(",").map((s) => s.trim()).filter(Boolean)) {
    const match = /^([a-z_]+)@([1-9][0-9]*)$/.exec(item);
    if (!match || !at.has(match[1])) {
      errors.push(`fault ${JSON.stringify(item)}: expected KIND@N with KIND one of ${FAULT_KINDS.join(", ")}`);
      continue;
    }
    at.get(match[1]).add(Number(match[2]));
    hooks.push(item);
  }
  return { hooks, errors, at: (kind, n) => at.get(kind)?.has(n) === true };
}
