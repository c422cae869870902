// Run one Python function of this checkout under Pyodide in Node, offline, and print its
// JSON result on stdout. Used by bench/interpreter.py for the Pyodide figure.
//
//   node bench/in_pyodide.mjs REPO FILE FUNCTION ARGS_JSON
//
// REPO is mounted read-only-in-practice at /lab (NODEFS) and put first on sys.path, so
// the packages run from the worktree's own .py files; FILE (relative to REPO) is run
// with runpy under another module name, and FUNCTION(*ARGS) is called.
import path from "node:path";
import { pathToFileURL } from "node:url";

const [repo, file, fn, argsJson] = process.argv.slice(2);
const npm = path.join(repo, "node_modules", "pyodide");
const { loadPyodide } = await import(pathToFileURL(path.join(npm, "pyodide.mjs")).href);
const py = await loadPyodide({ indexURL: npm + path.sep, stdout: () => {}, stderr: () => {} });
py.FS.mkdirTree("/lab");
py.FS.mount(py.FS.filesystems.NODEFS, { root: repo }, "/lab");
py.globals.set("lab_call", [file, fn, argsJson]);
const result = py.runPython(`
import json, runpy, sys
sys.path.insert(0, "/lab")
_file, _fn, _args = lab_call
_module = runpy.run_path("/lab/" + _file, run_name="lab_pyodide")
json.dumps({"python": sys.version.split()[0], "result": _module[_fn](*json.loads(_args))})
`);
process.stdout.write(result + "\n");
