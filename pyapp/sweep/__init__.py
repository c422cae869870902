"""The headless sweep (`python -m pyapp sweep`), one concern per module:

main       the command: set-up, one session in the browser, the end-of-run report
options    the command line, what --resume takes from run.json, the model chosen
chromium   Chromium's flags (shared with tests and benches), finding it, allowed hosts
driver     one sweep in one headless page; all its JavaScript is in driver.js
files      trials.jsonl as trials arrive, trace.json / predictions.json at checkpoints
runfile    run.json
progress   the progress bar / lines on stderr
signals    Ctrl-C and SIGTERM
checks     schemas and exact re-derivation at the end
errors     SweepError, SetupError, Paused, Interrupted
panel      the Models panel driven as a user drives it (tests, benches, screenshots)
"""
