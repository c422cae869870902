// @ts-check
// Bench baseline: load the local Pyodide in a module worker and run one statement.
import { loadPyodide } from "../pyodide/pyodide.mjs";

const t0 = performance.now();
const pyodide = await loadPyodide({ indexURL: new URL("../pyodide/", import.meta.url).href });
const version = String(pyodide.pyimport("sys").version).split(" ")[0];
postMessage({ ready_ms: performance.now() - t0, version });
