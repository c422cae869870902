// @ts-check
// What a model load observes about itself, for its LoadResult and provenance
// (pyapp/protocol/model_messages.py; site/model_worker/model_worker.js calls these): the WebGPU adapter
// (`webgpuAdapter`), the WASM runtime's measured features (`measureWasm`), every file that
// crosses the network API and its bytes (`watchFetches`), the config.json's SHA-256 — also
// from the browser's cache (`checkCachedConfig`) — by which a test fixture is told from a
// model, and the commit the hub served, kept with the cached files (`keepServedRevision`).

import { env } from "../transformers/transformers.min.js";
import { messageOf } from "../common/errors.js";

/** @import { AdapterInfo, ModelSpec, WasmInfo } from "../common/model_types.js" */

/**
 * What a load sees crossing the network API (`watchFetches`).
 * @typedef {object} Seen
 * @property {Map<string, number>} files model files fetched over the network API -> bytes
 * @property {number} runtimeBytes the ORT wasm runtime, fetched once per worker
 * @property {number | null} firstFetch
 * @property {number | null} lastDone
 * @property {string | null} servedCommit the hub's X-Repo-Commit: which commit a branch revision resolved to
 * @property {boolean} configFetched
 * @property {string | null} configSha256 the config.json this load used (null when none was seen)
 * @property {boolean} isTestFixture
 * @property {(digest: string) => void} noteConfig
 */

/** @returns {Promise<{ adapter: null, why: string } | { adapter: GPUAdapter, info: AdapterInfo }>} */
export async function webgpuAdapter() {
  if (!("gpu" in navigator) || !navigator.gpu) return { adapter: null, why: "navigator.gpu is missing" };
  let adapter = null;
  try {
    adapter = await navigator.gpu.requestAdapter();
  } catch (error) {
    return { adapter: null, why: `requestAdapter() failed: ${messageOf(error)}` };
  }
  if (!adapter) return { adapter: null, why: "navigator.gpu.requestAdapter() returned no adapter" };
  /** @type {Partial<GPUAdapterInfo> & { isFallbackAdapter?: boolean }} */
  const info = adapter.info ?? {};
  /** @type {unknown} an older browser's name for it */
  const fallback = Reflect.get(adapter, "isFallbackAdapter");
  return {
    adapter,
    info: {
      vendor: info.vendor || null,
      architecture: info.architecture || null,
      description: info.description || null,
      is_fallback_adapter: info.isFallbackAdapter ?? (typeof fallback === "boolean" ? fallback : null),
      shader_f16: adapter.features.has("shader-f16"),
    },
  };
}

// SHA-256 (hex) of a config.json response: recorded in the provenance, and compared with the
// test fixtures' digests.
/** @param {Response} response */
async function configDigest(response) {
  const digest = await crypto.subtle.digest("SHA-256", await response.arrayBuffer());
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

// What the WASM runtime runs with, measured: SIMD by validating a tiny SIMD module (the
// wasm-feature-detect probe), threads only where the page is cross-origin isolated.
const SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11,
]);

/** @param {unknown} threads @returns {WasmInfo} */
export function measureWasm(threads) {
  const isolated = self.crossOriginIsolated === true;
  return {
    threads: typeof threads === "number" && Number.isInteger(threads) ? threads : null,
    simd: WebAssembly.validate(SIMD_PROBE),
    cross_origin_isolated: isolated,
    threads_allowed: isolated && typeof SharedArrayBuffer !== "undefined",
  };
}

// The commit the hub served is kept WITH the cached files (an entry of the same Cache
// Storage, so "Clear stored data" removes both): a later load from the cache still names it.
const REVISION_CACHE = "transformers-cache";

/** @param {ModelSpec} spec @param {string | null} commit @returns {Promise<{ commit: string | null, note: string | null }>} */
export async function keepServedRevision(spec, commit) {
  if (spec.source !== "hub") return { commit: null, note: null };
  const marker = `${spec.host}${spec.model_id}/resolve/${spec.revision}/.composition-lab-revision-served`;
  try {
    const cache = await caches.open(REVISION_CACHE);
    if (commit) {
      await cache.put(marker, new Response(commit));
      return { commit, note: "download (the hub's X-Repo-Commit header)" };
    }
    const kept = await cache.match(marker);
    if (kept) return { commit: await kept.text(), note: "kept with the cached files (recorded when they were downloaded)" };
    return { commit: null, note: "unknown: the files came from the browser cache and no download of them recorded the commit" };
  } catch (error) {
    return { commit, note: commit ? "download (not kept: Cache Storage failed)" : `unknown: Cache Storage failed (${messageOf(error)})` };
  }
}

// Counts what actually crosses the network API (cache hits never reach env.fetch): the model
// files, the ORT runtime, the hub's served commit, and the config.json's digest. A model
// whose config.json is byte for byte a test fixture's (the tiny fixture or a catalogue
// stand-in, site/models.json) is a fixture, whatever host served it: never model evidence.
/** @param {ModelSpec} spec @param {string} wasmBase @returns {Seen} */
export function watchFetches(spec, wasmBase) {
  const fixtureConfigs = [spec.fixture_config_sha256].flat().filter((x) => typeof x === "string");
  /** @type {Seen} */
  const seen = {
    files: new Map(), // model files fetched over the network API -> bytes
    runtimeBytes: 0, // the ORT wasm runtime, fetched once per worker
    firstFetch: null,
    lastDone: null,
    servedCommit: null, // the hub's X-Repo-Commit: which commit a branch revision resolved to
    configFetched: false,
    configSha256: null, // the config.json this load used (null when none was seen)
    isTestFixture: false,
    noteConfig: (digest) => {
      seen.configSha256 = digest;
      if (fixtureConfigs.includes(digest)) seen.isTestFixture = true;
    },
  };
  const realFetch = globalThis.fetch.bind(globalThis);
  /** @param {string | URL} url @param {RequestInit} [init] */
  env.fetch = async (url, init) => {
    seen.firstFetch ??= performance.now();
    const response = await realFetch(url, init);
    if ((init?.method ?? "GET") !== "GET" || !response.ok) return response;
    const size = Number(response.headers.get("content-length")) || 0;
    const name = String(url);
    if (name.startsWith(wasmBase)) {
      seen.runtimeBytes += size;
      return response;
    }
    seen.files.set(name, size);
    seen.servedCommit ??= response.headers.get("x-repo-commit");
    if (/(^|\/)config\.json(\?|$)/.test(name) && !/_config\.json/.test(name)) {
      seen.configFetched = true;
      seen.noteConfig(await configDigest(response.clone()));
    }
    return response;
  };
  return seen;
}

// config.json came from the browser's cache (no fetch to look at): hash the cached copy.
/** @param {ModelSpec} spec @param {Seen} seen */
export async function checkCachedConfig(spec, seen) {
  if (spec.source !== "hub" || seen.configFetched) return;
  const url = new URL(`${spec.model_id}/resolve/${encodeURIComponent(spec.revision)}/config.json`, spec.host ?? undefined).href;
  const cached = await caches.open(REVISION_CACHE).then((cache) => cache.match(url)).catch(() => undefined);
  if (cached) seen.noteConfig(await configDigest(cached));
}
