"""Python's own work per trial, natively and under Pyodide (issue 22 §3): prints figures,
asserts nothing.

A whole default sweep (all four conditions, measure → freeze → held-out) runs through the
page's own session (`Session.start`, `Session.run`) with a synthetic model in Python and a
page stand-in that takes each event as the worker posts it (`json.dumps` of the event; the
worker then hands that text to `postMessage`, which neither CPython nor Pyodide in Node has).
Three figures, each natively and (unless `--native-only`) under Pyodide in Node
(`bench/in_pyodide.mjs`, the worktree's own .py files):

* per trial: the wall time from one `trial_start` event to the next (everything Python does
  for a trial, the synthetic model's own drawing included: no model worker here);
* the steps between two trials, each timed on its own over the sweep's trials (median ms):
  the chain hash of the trial (`chain.sha256_of`), its JSON line (`writer.line_text`), the
  `trial_done` and `trial_start` events as posted (`event` + `json.dumps`), the binding of
  the model (`Sweep.bind`, `Sweep.run_under`: what `attempt` does), the counts;
* a profile (cProfile) of a second sweep: the functions with the most own time, in ms per
  trial (under the profiler, which inflates small calls: read it for shares, not totals).

Also: the measure phase's wall time per trial; under Pyodide, stand-ins for the worker's
glue per event (`to_js` and a JavaScript call; the shared flags' reads); `--trace FILE`: the
steps timed over that trace's trials too (e.g. the tiny-chat fixture's, `bench/harness.py
--save`: larger trials than the synthetic model's); `--chromium`: the same figures in
Pyodide in headless Chromium (a blank page's main thread, no PyScript); `--page`: the
measure phase in the real page (headless Chromium, the built site, the synthetic model in
the page's Python worker): the wall time per trial (the page's storing and drawing count
too: a run's end waits for the page to have every event) and the gaps between the trials'
`started_at` in the worker; `--profile` adds V8's profile of that worker over the phase, by
kind of work.

Usage: .venv/bin/python bench/trial_python.py [--seed 1729] [--model size-dependent]
       [--top 20] [--native-only] [--trace trace.json] [--chromium] [--page [--profile]]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

_HERE = Path(__file__).resolve().parent
ROOT = _HERE.parent
# bench/interpreter.py would shadow the `interpreter` package: the repository comes first.
sys.path.insert(0, str(ROOT))

from pyapp.browser import (  # noqa: E402
    Context,
    Session,
)
from pyapp.experiment import Sweep  # noqa: E402
from pyapp.predict import content_sha256  # noqa: E402
from pyapp.protocol import (  # noqa: E402
    EventAnswer,
    SweepRun,
    SweepStart,
    SyntheticSelect,
    TrialDone,
    TrialStart,
    event,
)
from pyapp.records import (  # noqa: E402
    NO_TRIALS,
    ModelProvenance,
    Trial,
    chain,
    counted,
    line_text,
    loads,
)

T = TypeVar("T")
CONDITIONS = ("supplied-program", "model-only", "model-program", "controlled-chain")


def drive(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never waits on anything outside Python (the synthetic model):
    the same under CPython and under Pyodide, whose event loop `asyncio.run` cannot drive."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coroutine.close()
    raise RuntimeError("the sweep waited on something outside Python")


class PageStandIn:
    """The page as the worker sees it during a run: events posted (as JSON text), the shared
    flags read (no Cancel); the time of each `trial_start` kept."""

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.conditions: list[str] = []
        self.posted = 0

    def post(self, message: dict[str, Any], texts: dict[str, Any]) -> None:
        if message["type"] == "trial_start":
            self.starts.append(time.perf_counter())
            self.conditions.append(message["condition"])
        json.dumps(message)  # what the worker's _post does before postMessage (texts: as they are)
        self.posted += 1

    def context(self) -> Context:
        return Context(
            adapter=lambda: None,
            notify=lambda message, texts: None,
            cancel_requested=lambda: False,
            post=self.post,
            flags=lambda: EventAnswer(cancel=False, model_version=None),
        )


def run_sweep(seed: int, model: str) -> tuple[Session, PageStandIn]:
    """A whole sweep through the session, as the page runs it with a synthetic model."""
    session, page = Session(), PageStandIn()
    ctx = page.context()
    session.select_synthetic(SyntheticSelect(spec=model))
    session.start(SweepStart(seed=seed, conditions=CONDITIONS), ctx)
    ended = drive(session.run(SweepRun(phase="all"), ctx))
    if ended.state.stage != "done":
        raise RuntimeError(f"the sweep ended in {ended.state.stage}")
    return session, page


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 4)


def timed(step: Callable[[Trial], object], trials: list[Trial], repeats: int = 3) -> float:
    """Median ms of `step(trial)` over the trials (each trial `repeats` times)."""
    samples = []
    for _ in range(repeats):
        for trial in trials:
            start = time.perf_counter()
            step(trial)
            samples.append(time.perf_counter() - start)
    return _median_ms(samples)


def between_steps(sweep: Sweep) -> dict[str, float]:
    """The steps Python takes for a trial outside the trial itself, each timed alone over
    the sweep's trials."""
    trials = list(sweep.trials)
    by_id = {t.id: t for t in sweep.tasks}
    provenance = sweep.model

    def done_event(trial: Trial) -> tuple[str, str]:
        """The posted `trial_done`: the event's text and, beside it, the trial's line."""
        done = TrialDone(
            **where(trial),
            heldout_observed=False,
            summary=NO_TRIALS,
            heldout_content=None,
        )
        return json.dumps(event(done)), line_text(trial)

    def start_event(trial: Trial) -> str:
        return json.dumps(event(TrialStart(**where(trial))))

    def where(trial: Trial) -> dict[str, Any]:
        """The fields `trial_start` and `trial_done` share."""
        return {
            "trial_id": trial.trial_id,
            "condition": trial.condition,
            "task_id": trial.task_id,
            "index": 1,
            "total": len(trials),
            "phase": "measure",
        }

    def bound(trial: Trial, sweep: Sweep = sweep, loaded: ModelProvenance = provenance) -> object:
        sweep.bind(loaded)  # what `attempt` does before a model trial
        return sweep.run_under()

    def stamped(trial: Trial) -> object:
        return replace(trial, sequence=trial.sequence, prev_sha256=trial.prev_sha256)

    return {
        "chain hash (sha256_of)": timed(chain.sha256_of, trials),
        "canonical form (canonical)": timed(chain.canonical, trials),
        "trial JSON line (json_text)": timed(line_text, trials),
        "trial_done event, posted texts": timed(done_event, trials),
        "trial_start event, posted text": timed(start_event, trials),
        "model binding (bind, load id, identity)": timed(bound, trials),
        "stamp (replace)": timed(stamped, trials),
        "counts (counted)": timed(lambda t: counted(NO_TRIALS, t), trials),
        "held-out content hash": timed(lambda t: content_sha256(by_id[t.task_id]), trials),
    }


def profile_rows(seed: int, model: str, top: int) -> list[list[object]]:
    """The `top` functions by own time over a profiled sweep: [function, calls per trial,
    own ms per trial, cumulative ms per trial]."""
    profiler = cProfile.Profile()
    profiler.enable()
    session, _ = run_sweep(seed, model)
    profiler.disable()
    assert session.sweep is not None
    n = len(session.sweep.trials)
    stats: dict[Any, Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    rows = []
    for (file, line, name), (_, calls, own, cumulative, _) in stats.items():
        where = f"{Path(file).parent.name}/{Path(file).name}:{line}({name})" if line else name
        rows.append([where, round(calls / n, 2), own * 1000 / n, cumulative * 1000 / n])
    rows.sort(key=lambda row: -float(row[2]))  # type: ignore[arg-type]
    return [[w, c, round(o, 4), round(cu, 4)] for w, c, o, cu in rows[:top]]


def measure_phase_ms(seed: int, model: str) -> float:
    """The measure phase of a fresh sweep through the session: wall ms per trial (what
    `--page` measures in the page, for comparison)."""
    session, page = Session(), PageStandIn()
    ctx = page.context()
    session.select_synthetic(SyntheticSelect(spec=model))
    session.start(SweepStart(seed=seed, conditions=CONDITIONS), ctx)
    start = time.perf_counter()
    drive(session.run(SweepRun(phase="measure"), ctx))
    elapsed = time.perf_counter() - start
    assert session.sweep is not None
    return round(elapsed * 1000 / len(session.sweep.trials), 4)


class WorkerProfiler:
    """V8's sampling profiler on the page's Python worker (Chromium's DevTools protocol,
    through the browser's session: Playwright opens none on a worker), for `--page
    --profile`: the worker's time by kind, from the samples' own time."""

    def __init__(self, browser: Any, page: Any) -> None:
        self.cdp, self.page, self.replies, self.sent = (
            browser.new_browser_cdp_session(),
            page,
            {},
            0,
        )
        targets = self.cdp.send("Target.getTargets")["targetInfos"]
        worker = next(t for t in targets if t["type"] == "worker")  # (no model worker yet)
        attach = {"targetId": worker["targetId"], "flatten": False}
        self.session = self.cdp.send("Target.attachToTarget", attach)["sessionId"]
        self.cdp.on("Target.receivedMessageFromTarget", self._received)

    def _received(self, event: dict[str, Any]) -> None:
        message = json.loads(event["message"])
        self.replies[message.get("id")] = message

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.sent += 1
        message = json.dumps({"id": self.sent, "method": method, "params": params or {}})
        self.cdp.send("Target.sendMessageToTarget", {"sessionId": self.session, "message": message})
        for _ in range(1200):
            if self.sent in self.replies:
                return self.replies.pop(self.sent)  # type: ignore[no-any-return]
            self.page.wait_for_timeout(25)
        raise SystemExit(f"the worker did not answer {method}")

    def start(self) -> None:
        self.call("Profiler.enable")
        self.call("Profiler.setSamplingInterval", {"interval": 200})
        self.call("Profiler.start")

    def stop(self, trials: int) -> dict[str, float]:
        """ms per trial by kind: Python (the WebAssembly of Pyodide: the interpreter and
        the runtime), `postMessage`, other JavaScript, the engine's own (`(program)`), its
        garbage collector, and idle (the profile's window holds the request's round trip)."""
        profile = self.call("Profiler.stop")["result"]["profile"]
        frames = {node["id"]: node["callFrame"] for node in profile["nodes"]}
        kinds: dict[str, float] = {}
        for sample, delta in zip(profile["samples"], profile["timeDeltas"], strict=False):
            frame = frames[sample]
            name = frame["functionName"]
            if "wasm" in frame["url"] or name.startswith("wasm"):
                kind = "Python (WebAssembly)"
            elif name in ("postMessage", "(program)", "(garbage collector)", "(idle)"):
                kind = name
            else:
                kind = "other JavaScript"
            kinds[kind] = kinds.get(kind, 0.0) + delta / 1000 / trials
        return {kind: round(ms, 3) for kind, ms in sorted(kinds.items(), key=lambda kv: -kv[1])}


def in_page(seed: int, model: str, profile: bool = False) -> dict[str, Any]:
    """The measure phase of a sweep in the real page (headless Chromium, the built site),
    the synthetic model in the page's Python worker: the wall time per trial as the driver
    sees it (the page's storing and drawing count: a run's end waits for the page to have
    every event) and the median gap between the trials' `started_at` (the wall clock in the
    worker, millisecond resolution; a synthetic model times its phases on a virtual clock,
    not its timestamps): Python's work per trial in the page's worker, its glue included."""
    from harness import CHROMIUM, SITE, trial_gaps
    from playwright.sync_api import sync_playwright

    from pyapp.host import serve_in_thread
    from pyapp.protocol import SweepTrace, page_query
    from pyapp.sweep import CHROMIUM_ARGS, send, use_synthetic, wait_booted

    server, url = serve_in_thread(SITE)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))
            page = browser.new_context().new_page()
            page.goto(f"{url}?{page_query({'seed': str(seed)})}", timeout=30_000)
            wait_booted(page, 120_000)
            use_synthetic(page, model)
            send(page, SweepStart(seed=seed, conditions=CONDITIONS))
            profiler = WorkerProfiler(browser, page) if profile else None
            if profiler is not None:
                profiler.start()
            start = time.perf_counter()
            ended = send(page, SweepRun(phase="measure"))
            elapsed = time.perf_counter() - start
            kinds = profiler.stop(ended.state.trials) if profiler is not None else {}
            trace = json.loads(send(page, SweepTrace()).trace_json or "{}")
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    pairs = trial_gaps(trace["trials"])
    by_condition: dict[str, list[float]] = {}
    for gap, trial in pairs:
        by_condition.setdefault(trial["condition"], []).append(gap)
    return {
        "wall_ms": round(elapsed * 1000 / ended.state.trials, 4),
        "trials": ended.state.trials,
        "agent": trace["environment"]["browser"]["user_agent"],
        "gap_ms": statistics.median(gap for gap, _ in pairs),
        "gap_mean_ms": statistics.fmean(gap for gap, _ in pairs),
        "by_condition_ms": {c: statistics.median(g) for c, g in by_condition.items()},
        "worker_profile_ms": kinds,
    }


def figures(seed: int, model: str, top: int, trace_file: str = "") -> dict[str, Any]:
    """Every figure of this bench, in this Python (CPython or Pyodide); `trace_file` (relative
    to the repository): also time the steps over that trace's trials."""
    trace_text = (ROOT / trace_file).read_text(encoding="utf-8") if trace_file else ""
    run_sweep(seed, model)  # warm-up: imports, caches, the task set
    session, page = run_sweep(seed, model)
    assert session.sweep is not None
    gaps = [b - a for a, b in zip(page.starts, page.starts[1:], strict=False)]
    by_condition: dict[str, list[float]] = {}
    for condition, gap in zip(page.conditions, gaps, strict=False):
        by_condition.setdefault(condition, []).append(gap)
    return {
        "trials": len(session.sweep.trials),
        "per_trial_ms": _median_ms(gaps),
        "by_condition_ms": {c: _median_ms(g) for c, g in by_condition.items()},
        "per_trial_mean_ms": round(statistics.fmean(gaps) * 1000, 4),
        "measure_phase_ms": measure_phase_ms(seed, model),
        "steps_ms": between_steps(session.sweep),
        "profile": profile_rows(seed, model, top),
        "glue_ms": worker_glue(session.sweep.trials),
        "trace_steps_ms": between_steps(Sweep.from_trace(loads(trace_text))) if trace_text else {},
    }


def worker_glue(trials: list[Trial]) -> dict[str, float]:
    """Under Pyodide, what the worker's `_post` and `_flags_read`
    (site/python_worker/lab_worker.py) add per event beside Python's own work, with stand-ins:
    the posted message made a JavaScript object (`to_js`) and handed to a JavaScript function
    that does nothing (no postMessage in Node), and the five reads of the shared flags (an
    `Int32Array`). Empty natively."""
    if sys.platform != "emscripten":
        return {}
    import js  # type: ignore[import-not-found]  # only under Pyodide
    from pyodide.code import run_js  # type: ignore[import-not-found]
    from pyodide.ffi import to_js  # type: ignore[import-not-found]

    sink = run_js("(message) => undefined")
    flags = js.Int32Array.new(5)
    texts = [line_text(trial) for trial in trials]
    samples: dict[str, list[float]] = {"to_js + call (per event)": [], "flag reads (5)": []}
    for _ in range(3):
        for n, text in enumerate(texts):
            start = time.perf_counter()
            message = {"lab_event": "{}", "texts": {"trial": text}, "seq": n}
            sink(to_js(message, dict_converter=js.Object.fromEntries))
            middle = time.perf_counter()
            read = [int(flags[slot]) for slot in range(5)]
            end = time.perf_counter()
            assert len(read) == 5
            samples["to_js + call (per event)"].append(middle - start)
            samples["flag reads (5)"].append(end - middle)
    return {name: _median_ms(values) for name, values in samples.items()}


def in_pyodide(seed: int, model: str, top: int, trace_file: str) -> dict[str, Any]:
    node = shutil.which("node")
    if node is None or not (ROOT / "node_modules" / "pyodide" / "pyodide.mjs").exists():
        raise SystemExit("Pyodide figures: need `node` and node_modules/pyodide (npm ci)")
    script = [node, str(_HERE / "in_pyodide.mjs"), str(ROOT), "bench/trial_python.py"]
    completed = subprocess.run(
        [*script, "figures", json.dumps([seed, model, top, trace_file])],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if completed.returncode != 0:
        raise SystemExit(f"Pyodide run failed:\n{completed.stderr.strip()[-4000:]}")
    answer: dict[str, Any] = json.loads(completed.stdout)
    return {"python": answer["python"], **answer["result"]}


RUN_IN_PAGE = """async ([call, args]) => {
  const { loadPyodide } = await import("./pyodide/pyodide.mjs");
  const py = await loadPyodide({ indexURL: new URL("./pyodide/", location.href).href });
  const tree = await (await fetch("./tree.zip")).arrayBuffer();
  py.unpackArchive(tree, "zip", { extractDir: "/lab" });
  py.globals.set("lab_call", py.toPy([call, args]));
  return py.runPython(`
import json, runpy, sys
sys.path.insert(0, "/lab")
_module = runpy.run_path("/lab/bench/trial_python.py", run_name="lab_pyodide")
_result = _module[lab_call[0]](*json.loads(lab_call[1]))
json.dumps({"python": sys.version.split()[0], "result": _result})
`);
}"""


def in_chromium(seed: int, model: str, top: int, trace_file: str) -> dict[str, Any]:
    """`figures` in Pyodide in headless Chromium (the page's own Pyodide from the built site,
    on a blank page's main thread: no PyScript, no worker), the worktree's .py files
    unpacked into its file system."""
    import tempfile
    import zipfile

    from harness import CHROMIUM, SITE
    from playwright.sync_api import sync_playwright

    from pyapp.host import serve_in_thread
    from pyapp.sweep import CHROMIUM_ARGS

    with tempfile.TemporaryDirectory() as folder:
        served = Path(folder)
        shutil.copytree(SITE / "pyodide", served / "pyodide")
        (served / "index.html").write_text("<!doctype html><title>bench</title>\n")
        with zipfile.ZipFile(served / "tree.zip", "w") as tree:
            packages = ("pyapp", "interpreter", "prompts")  # (the wheel's, with its data)
            names = [p for d in packages for p in ROOT.glob(f"{d}/**/*") if p.is_file()]
            names += [_HERE / "trial_python.py"] + ([ROOT / trace_file] if trace_file else [])
            for name in names:
                tree.write(name, name.relative_to(ROOT).as_posix())
        server, url = serve_in_thread(served)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=CHROMIUM, args=list(CHROMIUM_ARGS)
                )
                page = browser.new_context().new_page()
                page.goto(url + "index.html", timeout=30_000)
                call = ["figures", json.dumps([seed, model, top, trace_file])]
                text = page.evaluate(RUN_IN_PAGE, call)
                browser.close()
        finally:
            server.shutdown()
            server.server_close()
    answer: dict[str, Any] = json.loads(text)
    return {"python": answer["python"], **answer["result"]}


def report(where: str, found: dict[str, Any]) -> None:
    print(f"{where}: {found['trials']} trials")
    print(
        f"  per trial (trial_start to trial_start): median {found['per_trial_ms']:.3f} ms, "
        f"mean {found['per_trial_mean_ms']:.3f} ms (synthetic model's drawing included)"
    )
    print(
        "  per trial by condition (median ms): "
        + ", ".join(f"{c} {ms:.3f}" for c, ms in found["by_condition_ms"].items())
    )
    print(f"  measure phase, wall per trial: {found['measure_phase_ms']:.3f} ms")
    print("  steps between trials, each timed alone (median ms per trial):")
    for name, ms in found["steps_ms"].items():
        print(f"    {name:<42} {ms:8.3f}")
    if found["trace_steps_ms"]:
        print("  the same steps over the trials of the given trace (median ms per trial):")
        for name, ms in found["trace_steps_ms"].items():
            print(f"    {name:<42} {ms:8.3f}")
    if found["glue_ms"]:
        print("  the worker's glue per event, stand-ins (median ms):")
        for name, ms in found["glue_ms"].items():
            print(f"    {name:<42} {ms:8.3f}")
    print("  profile, top functions by own time (ms per trial, under cProfile):")
    print(f"    {'calls':>7} {'own ms':>8} {'cum ms':>8}  function")
    for where_, calls, own, cumulative in found["profile"]:
        print(f"    {calls:>7} {own:>8.3f} {cumulative:>8.3f}  {where_}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1729)
    parser.add_argument("--model", default="size-dependent", help="a synthetic structure")
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--native-only", action="store_true")
    parser.add_argument(
        "--chromium", action="store_true", help="also the figures in Pyodide in Chromium"
    )
    parser.add_argument(
        "--profile", action="store_true", help="with --page: profile the page's Python worker"
    )
    parser.add_argument(
        "--page", action="store_true", help="also the measure phase in the real page (Chromium)"
    )
    parser.add_argument(
        "--trace",
        type=Path,
        help="also time the steps over this trace's trials (e.g. "
        "the tiny-chat fixture's, from `bench/harness.py --save`)",
    )
    options = parser.parse_args()
    trace_file = ""
    if options.trace is not None:  # under the repository: Pyodide sees only the worktree
        copy = ROOT / "build" / "bench" / "trial_python_trace.json"
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(options.trace.read_text(encoding="utf-8"), encoding="utf-8")
        trace_file = copy.relative_to(ROOT).as_posix()
    load = " / ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"Python's own work per trial; synthetic model {options.model}, seed {options.seed}")
    print(f"load average {load} (1 / 5 / 15 min)")
    native = figures(options.seed, options.model, options.top, trace_file)
    report(f"native CPython {sys.version.split()[0]}", native)
    summary = {"native_ms": native["per_trial_ms"]}
    if not options.native_only:
        pyodide = in_pyodide(options.seed, options.model, options.top, trace_file)
        report(f"Pyodide (CPython {pyodide['python']}) in Node", pyodide)
        summary["pyodide_ms"] = pyodide["per_trial_ms"]
    if options.chromium:
        found = in_chromium(options.seed, options.model, options.top, trace_file)
        report(f"Pyodide (CPython {found['python']}) in Chromium", found)
        summary["chromium_ms"] = found["per_trial_ms"]
    if options.page:
        found = in_page(options.seed, options.model, options.profile)
        print(f"the page (Chromium, {found['agent']}): measure phase, {found['trials']} trials")
        print(f"  wall per trial: {found['wall_ms']:.3f} ms (the page's storing and drawing too)")
        print(
            f"  started_at to started_at in the worker: median {found['gap_ms']:.2f} ms, mean "
            f"{found['gap_mean_ms']:.2f} ms (millisecond stamps: the mean is not rounded); by "
            "condition (medians): "
            + ", ".join(f"{c} {ms:.2f}" for c, ms in found["by_condition_ms"].items())
        )
        if found["worker_profile_ms"]:
            print(
                "  the worker under V8's profiler (ms per trial): "
                + ", ".join(f"{k} {ms:.2f}" for k, ms in found["worker_profile_ms"].items())
            )
        summary["page_measure_ms"] = found["wall_ms"]
        summary["page_gap_ms"] = found["gap_ms"]
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
