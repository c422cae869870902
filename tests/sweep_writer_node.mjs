// Runs site/store.js's SweepWriter under Node with a stand-in store whose transactions the
// script commits by hand (nothing waits for real time), for tests/test_sweep_writer.py.
// Prints one JSON object: what each transaction wrote, in order, and what happened when.

import { SweepWriter } from "../site/store.js";

const transactions = []; // {status, header, trials, observed, commit, fail}
const store = {
  putSweep(status, { header, trials, observed }) {
    return new Promise((resolve, reject) => {
      transactions.push({ status, header, trials: [...trials], observed: [...observed], commit: resolve, fail: reject });
    });
  },
};
const settle = () => new Promise((resolve) => setImmediate(resolve));
const log = [];
const writer = new SweepWriter(store);

// Three events in one task: one batch. Two more while it is written: the next batch.
const first = writer.write({ n: 1 }, { trials: [{ seq: 0 }], after: () => log.push("after 1") });
writer.write({ n: 2 }, { header: "H1", after: () => log.push("after 2") });
writer.write({ n: 3 }, { trials: [{ seq: 1 }], observed: [{ task_id: "a" }], after: () => log.push("after 3") });
await settle();
writer.write({ n: 4 }, { trials: [{ seq: 2 }], after: () => log.push("after 4") });
writer.write({ n: 5 }, { after: () => log.push("after 5") });
await settle();
log.push(`transactions before the first commit: ${transactions.length}`);
first.then(() => log.push("first resolved"));
transactions[0].commit();
await settle();
log.push(`transactions after the first commit: ${transactions.length}`);
transactions[1].commit();
await writer.flush();
log.push("flushed");

// A failed transaction: its callbacks still run, the next write and flush throw it once.
writer.write({ n: 6 }, { after: () => log.push("after 6") });
await settle();
transactions[2].fail(new Error("quota"));
await writer.settled();
let thrown = null;
try {
  writer.write({ n: 7 });
} catch (error) {
  thrown = error.message;
}
let flushed = null;
try {
  await writer.flush();
} catch (error) {
  flushed = error.message;
}
console.log(
  JSON.stringify({
    transactions: transactions.map(({ status, header, trials, observed }) => ({ status, header, trials, observed })),
    log,
    thrown,
    flushed,
  }),
);
