"""The headless sweep (`python -m pyapp sweep`), one concern per module:

main       the command: set-up, one session in the browser, the end-of-run report
options    the command line, what --resume takes from run.json, the model chosen
chromium   Chromium's flags (shared with tests and benches), finding it, allowed hosts
driver     one sweep in one headless page, through panel
files      trials.jsonl as trials arrive, trace.json / predictions.json at checkpoints
runfile    run.json
progress   the progress bar / lines on stderr
signals    Ctrl-C and SIGTERM
checks     schemas and exact re-derivation at the end
errors     SweepError, SetupError, Paused, Interrupted
native     the same sweep without Chromium: the page swapped for this process
           (`--backend native`, a local ONNX model from pyapp.native)
panel      how every driver talks to the page: window.lab.send only (page_state,
           model_choose, the consent's click; the relay driver.js), shared with tests,
           benches and screenshots
"""
