// What the page keeps in IndexedDB (database "composition-lab", version 1). No DOM here.
//
//   store "sweeps"  keyPath run_id: one record per sweep, rewritten after every trial
//       {run_id, trace, in_flight, phase, finished, model_id, revision, trials, updated_at}
//       trace      the whole trace document as Python last sent it (exports/trace.schema.json)
//       in_flight  the trial id whose trial_start arrived without its trial_done yet, or null
//       phase      the phase the page was running ("measure" | "heldout" | "all"), or null
//       finished   true once every measure and held-out trial is observed
//   store "ledger"  keyPath key = "<model_id>@<revision>|<condition>":
//       {key, model_id, revision, condition, task_ids: [held-out task ids observed]}
//       It feeds `previously_observed` of a new sweep: a profile frozen after any of its
//       held-out tasks was observed (in any earlier sweep in this browser) is exploratory.
//
// "Clear stored data" deletes the stored sweeps; the ledger is deleted only by its own,
// confirmed action ("Clear the ledger…"), because without it a later freeze of a model whose
// held-out tasks were already seen here would be marked confirmatory (docs/page.md).

const DB_NAME = "composition-lab";
const DB_VERSION = 1;

function promised(request) {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

export class SweepStore {
  constructor() {
    this.db = null;
  }

  async open() {
    if (this.db) return this.db;
    const request = indexedDB.open(DB_NAME, DB_VERSION);
    request.onupgradeneeded = () => {
      const db = request.result;
      if (!db.objectStoreNames.contains("sweeps")) db.createObjectStore("sweeps", { keyPath: "run_id" });
      if (!db.objectStoreNames.contains("ledger")) db.createObjectStore("ledger", { keyPath: "key" });
    };
    this.db = await promised(request);
    return this.db;
  }

  async tx(storeName, mode, work) {
    const db = await this.open();
    const transaction = db.transaction(storeName, mode);
    const done = new Promise((resolve, reject) => {
      transaction.oncomplete = () => resolve();
      transaction.onerror = () => reject(transaction.error);
      transaction.onabort = () => reject(transaction.error ?? new Error("IndexedDB transaction aborted"));
    });
    const result = await work(transaction.objectStore(storeName));
    await done;
    return result;
  }

  // ---- sweeps ------------------------------------------------------------------------------

  putSweep(record) {
    return this.tx("sweeps", "readwrite", (store) => promised(store.put({ ...record, updated_at: new Date().toISOString() })));
  }

  getSweep(runId) {
    return this.tx("sweeps", "readonly", (store) => promised(store.get(runId)));
  }

  deleteSweep(runId) {
    return this.tx("sweeps", "readwrite", (store) => promised(store.delete(runId)));
  }

  async sweeps() {
    const all = await this.tx("sweeps", "readonly", (store) => promised(store.getAll()));
    return all.sort((a, b) => String(b.updated_at).localeCompare(String(a.updated_at)));
  }

  // The most recently updated sweep that is not finished, or null.
  async latestUnfinished() {
    return (await this.sweeps()).find((record) => !record.finished) ?? null;
  }

  // ---- ledger ------------------------------------------------------------------------------

  static ledgerKey(modelId, revision, condition) {
    return `${modelId}@${revision}|${condition}`;
  }

  // Add held-out task ids observed for a model (id + revision) under a condition.
  addObserved(modelId, revision, condition, taskIds) {
    const key = SweepStore.ledgerKey(modelId, revision, condition);
    return this.tx("ledger", "readwrite", async (store) => {
      const existing = (await promised(store.get(key))) ?? { key, model_id: modelId, revision, condition, task_ids: [] };
      const ids = new Set(existing.task_ids);
      const before = ids.size;
      for (const id of taskIds) ids.add(id);
      if (ids.size !== before) await promised(store.put({ ...existing, task_ids: [...ids].sort() }));
    });
  }

  // {condition: [task ids]} observed for this model id + revision in earlier sweeps.
  async observedFor(modelId, revision) {
    const all = await this.tx("ledger", "readonly", (store) => promised(store.getAll()));
    const seen = {};
    for (const entry of all) {
      if (entry.model_id === modelId && entry.revision === revision) seen[entry.condition] = [...entry.task_ids];
    }
    return seen;
  }

  async ledger() {
    return this.tx("ledger", "readonly", (store) => promised(store.getAll()));
  }

  // ---- clear -------------------------------------------------------------------------------

  // Delete every stored sweep (and, only when asked, the whole ledger); returns how many
  // records of each were deleted.
  async clear({ ledger: alsoLedger = false } = {}) {
    const sweeps = (await this.sweeps()).length;
    await this.tx("sweeps", "readwrite", (store) => promised(store.clear()));
    const ledger = alsoLedger ? await this.clearLedger() : 0;
    return { sweeps, ledger };
  }

  async clearLedger() {
    const count = (await this.ledger()).length;
    await this.tx("ledger", "readwrite", (store) => promised(store.clear()));
    return count;
  }
}
