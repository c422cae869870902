// @ts-check
// What the page keeps in IndexedDB (database "composition-lab", version 2). No DOM here.
//
// A sweep is stored as records that never grow with the sweep: a trial is written once, as
// the JSON text Python sent, and the whole trace is assembled only on demand, by Python, from
// the stored texts (pyapp/records/stored.py: a resume, a driver reading persisted()).
//
//   store "sweeps"   keyPath run_id: one small status record per sweep
//       {run_id, in_flight, phase, finished, model_id, revision, evidence, seed, trials, updated_at}
//       in_flight  the trial id whose trial_start arrived without its trial_done yet, or null
//       phase      the phase the page was running ("measure" | "heldout" | "all"), or null
//       finished   true once every measure and held-out trial is observed
//       trials     how many trial records the sweep has
//       receipt_json  the freeze receipt as Python made it at the freeze (its text), or null
//                  (kept so that the runs list downloads the receipt made before the
//                  held-out results; a record written before it existed has none)
//   store "headers"  keyPath run_id: {run_id, json, changes}: the sweep's header as Python's
//       JSON text (the trace without its trials: run, tasks, model, environment, freezes,
//       interruptions, journal), rewritten at checkpoints (start, freeze, end of a run,
//       resume, journal), and `changes`: the records that joined it during a run since (a
//       reload's load records, an interruption, the freezes), one HeaderChange text per event
//       that brought any, as Python wrote it; emptied when the header is rewritten (a record
//       written before changes existed has none: read as [])
//   store "trials"   keyPath [run_id, seq]: {run_id, seq, trial_id, json}: one record per
//       trial, `json` exactly as Python wrote it (so 1.0 stays 1.0)
//   store "ledger"   keyPath key = "<model_id>@<revision>|<condition>|<content>": one record
//       per held-out task observed {key, model_id, revision, revision_served, condition,
//       task_id} (revision_served: the commit the hub served, null when unknown), where
//       <content> (kept in `task_id`) is the task's content key Python names in trial_done
//       (`heldout_content`: SHA-256 of its registers and question; records written before it
//       hold the task id). It feeds `previously_observed` of a new sweep, and Python decides
//       which of that sweep's held-out tasks it names (pyapp/predict/exploratory.py, the one
//       rule, also the sweep CLI's): a profile frozen after any of them was observed is
//       exploratory.
//
// Version 1 kept the whole trace in the sweep's record (rewritten after every trial) and one
// ledger record per condition; opening the database converts those records.
//
// "Clear stored data" deletes every record of every store but the ledger; the ledger is
// deleted only by its own, confirmed action ("Clear the ledger…"), because without it a later
// freeze of a model whose held-out tasks were already seen here would be marked
// confirmatory (docs/page.md).

/** @import { LedgerEntry, Summary, Trace } from "./lab_types.js" */

/**
 * A sweep's status record (store "sweeps").
 * @typedef {object} SweepStatus
 * @property {string} run_id
 * @property {string | null} in_flight
 * @property {string | null} phase
 * @property {boolean} finished
 * @property {string | null} [model_id]
 * @property {string | null} [revision]
 * @property {string | null} [evidence]
 * @property {number | null} [seed]
 * @property {import("./lab_types.js").TaskParams} [task_params] the runs panel names the calibration preset
 * @property {string | null} [created_at]
 * @property {number} [trials]
 * @property {Summary | null} [summary]
 * @property {string} [updated_at]
 * @property {string | null} [receipt_json] the freeze receipt as Python made it at the freeze
 */
/** @typedef {{ run_id: string, json: string, changes?: string[] }} HeaderRecord store "headers" */
/** @typedef {{ seq: number, trial_id: string, json: string }} TrialText a trial as stored, less its run */
/** @typedef {{ key: string, model_id: string, revision: string, revision_served: string | null, condition: string, task_id: string }} LedgerRecord */
/** @typedef {{ model_id: string, revision: string, revision_served?: string | null, condition: string, task_id: string }} Observed */
/** @typedef {{ header_json: string, changes_json: string[], trials_json: string[] }} StoredTexts */
/**
 * What one write brings beside the status record.
 * @typedef {object} SweepWrites
 * @property {string | null} [header] the header text whole
 * @property {string[]} [changes] header changes since
 * @property {TrialText[]} [trials] new trial records
 * @property {Observed[]} [observed] new ledger records
 */

const DB_NAME = "composition-lab";
const DB_VERSION = 2;
const STORES = ["sweeps", "headers", "trials", "ledger"];

/** @template T @param {IDBRequest<T>} request @returns {Promise<T>} */
function promised(request) {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

// Version 1 → 2: split each stored trace into its header and one record per trial, and each
// ledger entry into one record per task. Runs inside the upgrade transaction.
/** @param {IDBTransaction} transaction */
function migrateV1(transaction) {
  const sweeps = transaction.objectStore("sweeps");
  const sweepCursor = sweeps.openCursor();
  sweepCursor.onsuccess = () => {
    const cursor = sweepCursor.result;
    if (!cursor) return;
    // a version-1 record: the status with the whole trace in it
    const { trace, ...status } = /** @type {SweepStatus & { trace?: Trace }} */ (cursor.value);
    if (trace) {
      const trials = trace.trials ?? [];
      trials.forEach((trial, seq) =>
        transaction.objectStore("trials").put({ run_id: status.run_id, seq, trial_id: trial.trial_id, json: JSON.stringify(trial) }),
      );
      const header = { ...trace, trials: [], summary: { trials: 0, correct: 0, incorrect: 0, failed: 0, model_evidence_trials: 0 } };
      transaction.objectStore("headers").put({ run_id: status.run_id, json: JSON.stringify(header) });
      cursor.update({ ...status, evidence: trace.model?.evidence ?? null, seed: trace.run?.seed ?? null, trials: trials.length, summary: trace.summary ?? null });
    }
    cursor.continue();
  };
  const ledger = transaction.objectStore("ledger");
  const ledgerCursor = ledger.openCursor();
  ledgerCursor.onsuccess = () => {
    const cursor = ledgerCursor.result;
    if (!cursor) return;
    const entry = /** @type {LedgerEntry} */ (cursor.value); // a version-1 record: one per condition
    if (Array.isArray(entry.task_ids)) {
      for (const taskId of entry.task_ids) ledger.put(ledgerRecord(entry.model_id, entry.revision, entry.condition, taskId));
      cursor.delete();
    }
    cursor.continue();
  };
}

/** @param {string} modelId @param {string} revision @param {string} condition @param {string} taskId @param {string | null} [revisionServed] @returns {LedgerRecord} */
function ledgerRecord(modelId, revision, condition, taskId, revisionServed = null) {
  return { key: `${modelId}@${revision}|${condition}|${taskId}`, model_id: modelId, revision, revision_served: revisionServed, condition, task_id: taskId };
}

export class SweepStore {
  constructor() {
    /** @type {IDBDatabase | null} */
    this.db = null;
  }

  async open() {
    if (this.db) return this.db;
    const request = indexedDB.open(DB_NAME, DB_VERSION);
    request.onupgradeneeded = (event) => {
      const db = request.result;
      if (!db.objectStoreNames.contains("sweeps")) db.createObjectStore("sweeps", { keyPath: "run_id" });
      if (!db.objectStoreNames.contains("ledger")) db.createObjectStore("ledger", { keyPath: "key" });
      if (!db.objectStoreNames.contains("headers")) db.createObjectStore("headers", { keyPath: "run_id" });
      if (!db.objectStoreNames.contains("trials")) db.createObjectStore("trials", { keyPath: ["run_id", "seq"] });
      if (event.oldVersion === 1 && request.transaction) migrateV1(request.transaction);
    };
    this.db = await promised(request);
    return this.db;
  }

  /**
   * One transaction over `storeNames`; `work` gets their stores in that order.
   * @template T
   * @param {string | string[]} storeNames
   * @param {IDBTransactionMode} mode
   * @param {(...stores: IDBObjectStore[]) => T | Promise<T>} work
   * @returns {Promise<T>}
   */
  async tx(storeNames, mode, work) {
    const db = await this.open();
    const transaction = db.transaction(storeNames, mode);
    /** @type {Promise<void>} */
    const done = new Promise((resolve, reject) => {
      transaction.oncomplete = () => resolve();
      transaction.onerror = () => reject(transaction.error);
      transaction.onabort = () => reject(transaction.error ?? new Error("IndexedDB transaction aborted"));
    });
    const stores = Array.isArray(storeNames) ? storeNames.map((name) => transaction.objectStore(name)) : [transaction.objectStore(storeNames)];
    const result = await work(...stores);
    await done;
    return result;
  }

  // ---- sweeps ------------------------------------------------------------------------------

  // The status record, and (when given) the header text, header changes after it (or after
  // the stored header), new trial records and new ledger records ({model_id, revision,
  // condition, task_id}), in one transaction: what is stored is always consistent.
  /** @param {SweepStatus} status @param {SweepWrites} [writes] */
  putSweep(status, { header = null, changes = [], trials = [], observed = [] } = {}) {
    return this.tx(["sweeps", "headers", "trials", "ledger"], "readwrite", (sweeps, headers, trialStore, ledger) => {
      /** @type {Promise<unknown>[]} */
      const writes = [promised(sweeps.put({ ...status, updated_at: new Date().toISOString() }))];
      if (header !== null) writes.push(promised(headers.put({ run_id: status.run_id, json: header, changes })));
      else if (changes.length) {
        const appended = promised(headers.get(status.run_id)).then((found) => {
          const stored = /** @type {HeaderRecord} */ (found);
          return promised(headers.put({ ...stored, changes: [...(stored.changes ?? []), ...changes] }));
        });
        writes.push(appended);
      }
      for (const trial of trials) writes.push(promised(trialStore.put({ run_id: status.run_id, ...trial })));
      for (const o of observed) writes.push(promised(ledger.put(ledgerRecord(o.model_id, o.revision, o.condition, o.task_id, o.revision_served ?? null))));
      return Promise.all(writes);
    });
  }

  /** @param {string} runId @returns {Promise<SweepStatus | undefined>} */
  getSweep(runId) {
    return this.tx("sweeps", "readonly", (store) => promised(store.get(runId)));
  }

  // {header_json, changes_json: [text], trials_json: [text]} of a stored sweep: what
  // `sweep_resume` takes.
  /** @param {string} runId @returns {Promise<StoredTexts | null>} */
  async storedTexts(runId) {
    return this.tx(["headers", "trials"], "readonly", async (headers, trials) => {
      const range = IDBKeyRange.bound([runId, 0], [runId, Infinity]);
      const [found, records] = await Promise.all([promised(headers.get(runId)), promised(trials.getAll(range))]);
      const header = /** @type {HeaderRecord | undefined} */ (found);
      if (!header) return null;
      const texts = /** @type {TrialText[]} */ (records);
      return { header_json: header.json, changes_json: header.changes ?? [], trials_json: texts.map((r) => r.json) };
    });
  }

  /** @param {string} runId */
  deleteSweep(runId) {
    return this.tx(["sweeps", "headers", "trials"], "readwrite", (sweeps, headers, trials) =>
      Promise.all([
        promised(sweeps.delete(runId)),
        promised(headers.delete(runId)),
        promised(trials.delete(IDBKeyRange.bound([runId, 0], [runId, Infinity]))),
      ]),
    );
  }

  /** @returns {Promise<SweepStatus[]>} */
  async sweeps() {
    /** @type {SweepStatus[]} */
    const all = await this.tx("sweeps", "readonly", (store) => promised(store.getAll()));
    return all.sort((a, b) => String(b.updated_at).localeCompare(String(a.updated_at)));
  }

  // The most recently updated sweep that is not finished, or null.
  async latestUnfinished() {
    return (await this.sweeps()).find((record) => !record.finished) ?? null;
  }

  // ---- ledger ------------------------------------------------------------------------------

  // [{key, model_id, revision, revision_served, condition, task_ids}]: one entry per model,
  // revision, commit served (null when unknown, or recorded before it was kept) and
  // condition. Which entries are the model of a new sweep is Python's rule
  // (pyapp/predict/exploratory.py same_model: ids case-folded, a branch and its commit alike).
  /** @returns {Promise<LedgerEntry[]>} */
  async ledger() {
    /** @type {LedgerRecord[]} */
    const all = await this.tx("ledger", "readonly", (store) => promised(store.getAll()));
    /** @type {Map<string, LedgerEntry>} */
    const entries = new Map();
    for (const record of all) {
      const served = record.revision_served ?? null;
      const key = `${record.model_id}@${record.revision}|${served ?? ""}|${record.condition}`;
      const entry = entries.get(key) ?? { key, model_id: record.model_id, revision: record.revision, revision_served: served, condition: record.condition, task_ids: [] };
      entries.set(key, entry);
      entry.task_ids.push(record.task_id);
    }
    for (const entry of entries.values()) entry.task_ids.sort();
    return [...entries.values()];
  }

  // ---- clear -------------------------------------------------------------------------------

  // Delete every stored sweep (and, only when asked, the whole ledger); returns how many
  // records of each were deleted.
  /** @param {{ ledger?: boolean }} [what] */
  async clear({ ledger: alsoLedger = false } = {}) {
    const sweeps = (await this.sweeps()).length;
    const kept = STORES.filter((name) => name !== "ledger");
    await this.tx(kept, "readwrite", (...stores) => Promise.all(stores.map((store) => promised(store.clear()))));
    const ledger = alsoLedger ? await this.clearLedger() : 0;
    return { sweeps, ledger };
  }

  async clearLedger() {
    const count = (await this.ledger()).length;
    await this.tx("ledger", "readwrite", (store) => promised(store.clear()));
    return count;
  }
}

// The live sweep's writes, in order and off the trial-to-trial path (issue 22 §3): Python's
// events return at once, and what each changes is merged into the next batch, written in ONE
// transaction (the status record as it stands last, the header text when Python sent it
// whole, the header changes since, the new trial records, the new ledger records). A batch starts as soon as the one before it has
// committed, so only the events of one transaction's time wait, and what is stored is always
// a consistent prefix of the sweep: a page closed mid-batch keeps the batch before (its
// in_flight trial is recorded as interrupted on resume, and what came after it is attempted
// again). After a batch commits, its `after` callbacks run in order (the experiment's
// listeners are told of an event only once it is stored). A failed write is kept and thrown
// by the next `write` and by `flush`, so a run stops instead of going on unstored.
/**
 * One batch of writes, gathered until the one before it has committed.
 * @typedef {object} Batch
 * @property {SweepStatus} status
 * @property {string | null} header
 * @property {string[]} changes
 * @property {TrialText[]} trials
 * @property {Observed[]} observed
 * @property {(() => void)[]} after
 * @property {Promise<void>} done
 * @property {() => void} resolve
 */

export class SweepWriter {
  /** @param {SweepStore} store */
  constructor(store) {
    this.store = store;
    /** @type {Batch | null} */
    this.pending = null; // the batch being gathered
    /** @type {Promise<void> | null} */
    this.running = null; // the loop writing batches, while there are any
    /** @type {unknown} */
    this.failure = null;
  }

  // Merge into the next batch; resolves once it is committed (callers on the trial path do not
  // wait for it).
  /** @param {SweepStatus} status @param {SweepWrites & { after?: (() => void) | null }} [writes] @returns {Promise<void>} */
  write(status, { header = null, changes = [], trials = [], observed = [], after = null } = {}) {
    if (this.failure) throw this.failure;
    if (!this.pending) {
      /** @type {() => void} */
      let resolve = () => {};
      /** @type {Promise<void>} */
      const done = new Promise((r) => (resolve = r));
      this.pending = { status, header: null, changes: [], trials: [], observed: [], after: [], done, resolve };
    }
    const batch = this.pending;
    batch.status = status;
    if (header !== null) {
      batch.header = header; // the header whole: it holds every change before it
      batch.changes = [];
    }
    batch.changes.push(...changes);
    batch.trials.push(...trials);
    batch.observed.push(...observed);
    if (after) batch.after.push(after);
    this.running ??= this.drain();
    return batch.done;
  }

  async drain() {
    await null; // what the same task writes joins the batch
    while (this.pending) {
      const batch = this.pending;
      this.pending = null;
      try {
        await this.store.putSweep(batch.status, batch);
      } catch (error) {
        this.failure ??= error;
        console.error("[composition-lab] storing the sweep failed", error);
      }
      for (const callback of batch.after) callback();
      batch.resolve();
    }
    this.running = null;
  }

  // Every write so far committed or failed.
  async settled() {
    while (this.running) await this.running;
  }

  // Every write so far committed (or its failure thrown).
  async flush() {
    await this.settled();
    if (this.failure) {
      const failure = this.failure;
      this.failure = null;
      throw failure;
    }
  }
}
