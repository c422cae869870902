// @ts-check
// The page's own records, as JSDoc types for the type check (tsconfig.json; nothing here runs):
// what the page's modules hand each other that is not Python's. Python's records — every
// message, the trace, predictions, the receipt — are generated into ./lab_types.js and
// ./common/model_types.js; nothing here repeats one of them.

/** @import { CorrectedField, BrowserInfo, Event as LabEvent, ModelProvenance, Prediction, PredictionsDocument, RequestFunction, RunPlots, Summary, SweepState, TaskRecord, TraceHeader } from "./lab_types.js" */
/** @import { Caps, HardStop, ModelProvenance as LoadedProvenance, ModelSpec, PanelEvent, ReplyTiming } from "./common/model_types.js" */
/** @import { Envelope } from "./common/envelope.js" */
/** @import { Models } from "./models_panel.js" */
/** @import { Trials } from "./experiment_state.js" */
/** @import { Row } from "./results_table.js" */

// ---- the model client (./model_client.js) and the Models panel (./models_panel.js) -------

/** @typedef {"webgpu" | "wasm"} Backend */
/** @typedef {"none" | "loading" | "loaded" | "unloaded" | "failed"} ClientState */
/**
 * The consented model as the Models panel chose it (site/models_panel.js currentSpec): the
 * load request's ModelSpec fields and what the panel shows beside them.
 * @typedef {ModelSpec & ChosenExtras} ChosenModel
 */
/**
 * @typedef {object} ChosenExtras
 * @property {string} key the catalogue key (`other`: a typed model id)
 * @property {string} label
 * @property {boolean} pinned whether the revision is a commit (or the model bundled)
 * @property {number | null} download_mb
 * @property {string} licence
 * @property {string | null} revision_note
 * @property {number | null} threads WASM threads (the bench's ?model_threads), null: all cores
 * @property {{ model_type: string, class: string } | null} architecture
 */
/**
 * A reply as this client passes it on: the envelope with the model channel's extras.
 * @typedef {Envelope & { elapsed_ms?: number | null, timing?: ReplyTiming, hard_stop?: HardStop }} Reply
 */
/**
 * The generation being supervised (the page's own, or a direct one: ./model_direct.js).
 * @typedef {object} Current
 * @property {number} id
 * @property {(reason: "cancelled" | "timeout") => void} stop
 * @property {boolean} firstToken
 * @property {number} sentAt
 * @property {number | null} lastTokenAt
 * @property {number} tokens
 * @property {Pick<Caps, "timeout_ms">} caps
 */
/**
 * One model of the catalogue (./models.json; docs/models.md).
 * @typedef {object} CatalogueEntry
 * @property {string} key
 * @property {string} label
 * @property {string} model_id
 * @property {string} revision
 * @property {ChosenModel["source"]} source
 * @property {Partial<Record<Backend, string[]>>} dtypes the dtypes offered, by backend
 * @property {Record<string, number>} [download_mb] by dtype
 * @property {string} [licence]
 * @property {string} [revision_note]
 * @property {Record<string, boolean | number | string>} [chat_template_options]
 * @property {{ model_type: string, class: string }} [architecture]
 */
/**
 * @typedef {object} Catalogue
 * @property {CatalogueEntry[]} models
 * @property {string} default_host
 * @property {string} [fixture_config_sha256]
 * @property {Record<string, string>} [standin_config_sha256]
 */
/**
 * What the WebGPU check found (local: nothing is downloaded).
 * @typedef {object} WebGpu
 * @property {boolean} checked
 * @property {boolean} available
 * @property {string} why
 * @property {{ vendor: string | null, architecture: string | null, fallback: boolean | null } | null} info
 * @property {boolean} [f16]
 */
/** @typedef {(event: PanelEvent | { type: "synthetic", spec: string | null }) => void} ChangeListener */
/** @typedef {[string, string, string?]} DetailRow a term, its value and the value's class */
/**
 * What the page reads of a WebGPU adapter (the DOM library this checks with has no WebGPU).
 * @typedef {object} GpuAdapter
 * @property {{ vendor?: string, architecture?: string, isFallbackAdapter?: boolean }} [info]
 * @property {boolean} [isFallbackAdapter]
 * @property {{ has(name: string): boolean }} features
 */
/**
 * The model in use, for the experiment section and the sweep CLI (window.lab.models.state()).
 * @typedef {object} ModelState
 * @property {string} state
 * @property {boolean} loaded
 * @property {string | null} model_id
 * @property {string | null} revision
 * @property {string | null} dtype
 * @property {string | null} source
 * @property {string | null} evidence
 * @property {string | null} label
 * @property {string | null} backend
 * @property {LoadedProvenance | ModelProvenance | null} provenance
 * @property {string | null} synthetic the synthetic model's spec in use
 */

// ---- the experiment (./experiment_state.js, ./experiment_view.js, ./experiment.js) ----

/**
 * What the experiment is built from (site/app.js).
 * @typedef {object} ExperimentParts
 * @property {RequestFunction} request
 * @property {Models} models
 * @property {() => BrowserInfo} environment
 * @property {() => number} currentSeed
 * @property {() => Record<string, unknown> | undefined} [currentParams]
 */
/** @typedef {Prediction & { state_aware_probability: number | null }} ShownPrediction */
/** @typedef {{ trial: string | null, change: string | null, receipt: string | null }} Texts */
/** @typedef {(event: LabEvent, text: string, texts: Texts) => void} Listener */
/**
 * The live sweep, kept aside while an opened trace is shown.
 * @typedef {object} LiveCopy
 * @property {SweepState | null} state
 * @property {TraceHeader | null} header
 * @property {string | null} headerJson
 * @property {Map<string, TaskRecord>} tasks
 * @property {Trials} trials
 * @property {Summary | null} summary
 * @property {PredictionsDocument | null} predictionsDoc
 * @property {RunPlots | null} plots
 * @property {Map<string, ShownPrediction[]>} shown
 * @property {Row[]} rows
 * @property {string | undefined} data
 */
/**
 * An opened trace being shown (site/viewer.js).
 * @typedef {object} Viewing
 * @property {LiveCopy} live
 * @property {string} [name]
 * @property {string} [evidence] Python's decision (trace_open's `evidence`)
 * @property {string} [label]
 * @property {Map<string, CorrectedField[]>} [corrections]
 * @property {string} [source] where it came from: "file" (opened from disk) or "browser" (stored here)
 * @property {string[]} [mismatches] what re-deriving it found (each mark in step 4 points to them)
 * @property {{trace: string | null, predictions: string | null}} [texts] its own files, for its downloads
 * @property {string} [runId] its run id
 */

export {};
