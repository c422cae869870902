"""The long hostile-input run, for before a release (issue 12): prints figures, asserts nothing.

CI runs the fuzz properties of `tests/test_fuzz.py` with 40 cases each (derandomized) and
skips the tests marked `long`. This runs the same properties with `FUZZ_LONG=1` (2,000
fresh random cases each, hypothesis's 5 s deadline per case) together with every test of
`tests/test_hostile_input.py`, the `long` ones included (a 20,000-trial trace reproduced
end to end), then prints the outcome and the time it took.

Usage: .venv/bin/python bench/fuzz.py [extra pytest arguments]
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            "-m", "long or not long",
            "tests/test_fuzz.py", "tests/test_hostile_input.py", *sys.argv[1:],
        ],
        cwd=ROOT,
        env={**os.environ, "FUZZ_LONG": "1"},
        check=False,
    )  # fmt: skip
    minutes = (time.perf_counter() - started) / 60
    print(f"long fuzz run: exit status {done.returncode} after {minutes:.1f} min")
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main())
