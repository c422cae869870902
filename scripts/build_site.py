"""Build the offline static site into ``build/site`` (ignored by git).

What lands there, and where from:

    build/site/
      <- site/, copied as it is (committed sources; every import resolves there as here):
      index.html app.css app.js pyscript.json ...  the page's main thread (model_client.js ...)
      common/          modules both the page and the model worker load
      model_worker/    the model worker (model_worker.js: transformers.js)
      python_worker/   the PyScript worker's glue (lab_worker.py)
      bench/           the bench's bare Pyodide page
      pyscript/        <- node_modules/@pyscript/core/dist (npm, pinned by package-lock.json)
      pyodide/         <- node_modules/pyodide runtime files (npm, pinned)
      transformers/    <- node_modules/@huggingface/transformers dist/transformers.min.js and
                          the onnxruntime-web wasm files it pins (npm, pinned): the asyncify
                          build (WebGPU) and the plain threaded build (WASM only)
      models/fixture/tiny-chat/  <- tests/fixtures/tiny-chat (the committed TEST FIXTURE model;
                          not model evidence), served from this origin
      models/subject/reference-2/  <- tests/fixtures/subject (the locally trained REFERENCE
                          SUBJECT, scripts/train_subject.py), served from this origin
        pyodide-lock.json                <- GENERATED: the npm lock, with micropip, sympy, mpmath
                                            and composition-lab pointing at the wheels below
        micropip/sympy/mpmath *.whl      <- PyPI, cached in build/wheels, sha256 pinned here
        composition_lab-*.whl            <- THIS checkout's packages (interpreter, pyapp, prompts)

Pyodide resolves packages named in its lock relative to the lock's folder, so nothing
is ever fetched from a CDN or PyPI at runtime. The script uses only the standard
library plus ``pip download`` (build time only) and, with ``--pyc``, Node.js to
precompile bytecode under Pyodide's own CPython (a ``.pyc`` is CPython-version specific).

Usage: ``python scripts/build_site.py [--pyc | --no-pyc] [--out build/site]``
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NODE_MODULES = ROOT / "node_modules"
PYODIDE_NPM = NODE_MODULES / "pyodide"
PYSCRIPT_DIST = NODE_MODULES / "@pyscript" / "core" / "dist"
TRANSFORMERS_NPM = NODE_MODULES / "@huggingface" / "transformers"
ORT_WEB_NPM = NODE_MODULES / "onnxruntime-web"
FIXTURE_SRC = ROOT / "tests" / "fixtures" / "tiny-chat"
FIXTURE_OUT = Path("models") / "fixture" / "tiny-chat"
SITE_SRC = ROOT / "site"
WHEEL_CACHE = ROOT / "build" / "wheels"
DEFAULT_OUT = ROOT / "build" / "site"

PYODIDE_VERSION = "314.0.7"
PYSCRIPT_VERSION = "0.7.31"
TRANSFORMERS_VERSION = "4.3.2"
ORT_WASM_FILES = (
    "ort-wasm-simd-threaded.asyncify.mjs",
    "ort-wasm-simd-threaded.asyncify.wasm",
    "ort-wasm-simd-threaded.mjs",
    "ort-wasm-simd-threaded.wasm",
)
"""The onnxruntime-web builds the model worker loads: asyncify (needed for WebGPU; also runs
WASM) and the plain threaded build (WASM only, 2-3x faster to reload)."""
FIXTURE_SKIP = (".md",)
"""Fixture files that are documentation, not model files."""
PYODIDE_RUNTIME_FILES = (
    "pyodide.mjs",
    "pyodide.asm.mjs",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "pyodide-lock.json",
)
# A fixed timestamp makes our wheel byte-reproducible (zip cannot store times before 1980).
ZIP_TIME = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class PinnedWheel:
    """One third-party wheel from PyPI, pinned by version and sha256."""

    name: str
    """Distribution name as written in the Pyodide lock."""
    version: str
    """Exact version downloaded."""
    sha256: str
    """SHA-256 of the wheel file as published on PyPI."""
    imports: tuple[str, ...]
    """Top-level import names (for the lock entry)."""
    depends: tuple[str, ...] = ()
    """Lock names this package needs (Pyodide loads them first)."""

    @property
    def file_name(self) -> str:
        return f"{self.name}-{self.version}-py3-none-any.whl"


PINNED_WHEELS = (
    PinnedWheel(
        "micropip",
        "0.11.1",
        "768de165adb8e66906039d8fec4127a57f522dfdf8e6fbff877a4616941ecfd3",
        ("micropip",),
    ),
    # sympy 1.14 needs mpmath < 1.4: the npm lock's mpmath 1.4.1 entry is replaced.
    PinnedWheel(
        "mpmath",
        "1.3.0",
        "a0b2b9fe80bbcd81a6647ff13108738cfb482d481d826cc0e02f5b35e5c88d2c",
        ("mpmath",),
    ),
    PinnedWheel(
        "sympy",
        "1.14.0",
        "e091cc3e99d2141a0ba2847328f5479b05d94a6635cb96148ccb3f34671bd8f5",
        ("isympy", "sympy"),
        ("mpmath",),
    ),
)

# Compiles every .py under a folder to an unchecked-hash .pyc (valid whatever the file
# mtimes are after unpacking) with Pyodide's CPython, through a NODEFS mount.
PYC_COMPILER_MJS = """
const { loadPyodide } = await import(process.argv[2]);
const py = await loadPyodide({ indexURL: process.argv[3] });
py.FS.mkdirTree("/src");
py.FS.mount(py.FS.filesystems.NODEFS, { root: process.argv[4] }, "/src");
const compileall = py.pyimport("compileall");
const mode = py.pyimport("py_compile").PycInvalidationMode.UNCHECKED_HASH;
const ok = compileall.compile_dir.callKwargs("/src", {
  quiet: 1, invalidation_mode: mode,
});
process.exit(ok ? 0 : 1);
"""


class BuildError(Exception):
    """A build step failed; the message says which and what to do."""


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB"):
        if value < 1024 or unit == "MB":
            return f"{value:.1f} {unit}" if unit != "B" else f"{size} B"
        value /= 1024
    raise AssertionError("unreachable")


def say(message: str) -> None:
    print(f"[build_site] {message}", flush=True)


def check_npm_packages() -> None:
    """Fail early, and say how to fix it, when `npm ci` has not run or pinned the wrong version."""
    expected = {
        PYODIDE_NPM: PYODIDE_VERSION,
        PYSCRIPT_DIST.parent: PYSCRIPT_VERSION,
        TRANSFORMERS_NPM: TRANSFORMERS_VERSION,
    }
    for folder, version in expected.items():
        manifest = folder / "package.json"
        if not manifest.is_file():
            raise BuildError(f"{folder} is missing: run `npm ci --ignore-scripts` first")
        found = json.loads(manifest.read_text(encoding="utf-8"))["version"]
        if found != version:
            raise BuildError(f"{folder.name} is {found}, expected {version}: run `npm ci`")


def fetch_pinned_wheel(wheel: PinnedWheel) -> Path:
    """Return the cached wheel, downloading it with pip if absent; verify its sha256."""
    WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
    path = WHEEL_CACHE / wheel.file_name
    if path.is_file() and sha256_of(path) == wheel.sha256:
        say(f"cached  {wheel.file_name} (sha256 ok)")
        return path
    path.unlink(missing_ok=True)
    say(f"pip download {wheel.name}=={wheel.version}")
    command = [
        sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
        "--no-deps", "--only-binary=:all:", "--python-version", "3.14",
        "--implementation", "py", "--abi", "none", "--platform", "any",
        "--dest", str(WHEEL_CACHE), f"{wheel.name}=={wheel.version}",
    ]  # fmt: skip
    subprocess.run(command, check=True)
    if not path.is_file():
        raise BuildError(f"pip did not produce {path}")
    actual = sha256_of(path)
    if actual != wheel.sha256:
        path.unlink()
        raise BuildError(
            f"sha256 mismatch for {wheel.file_name}: expected {wheel.sha256}, got {actual}"
        )
    say(f"fetched {wheel.file_name} (sha256 ok)")
    return path


def project_metadata() -> tuple[str, str, tuple[str, ...]]:
    """(distribution name, version, top-level packages) from pyproject.toml."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    project = data["project"]
    packages = tuple(
        str(name) for name in data["tool"]["setuptools"]["packages"] if "." not in str(name)
    )
    return str(project["name"]), str(project["version"]), packages


def package_files(root: Path, packages: tuple[str, ...]) -> list[tuple[str, Path]]:
    """(archive name, source path) for every file of our packages (data files too), sorted."""
    files: list[tuple[str, Path]] = []
    for package in packages:
        base = root / package
        if not (base / "__init__.py").is_file() and not base.is_dir():
            raise BuildError(f"package folder {base} is missing")
        for path in sorted(base.rglob("*")):
            relative = path.relative_to(root)
            if path.is_dir() or "__pycache__" in relative.parts or path.suffix == ".pyc":
                continue
            files.append((relative.as_posix(), path))
    return files


def compile_pyc(source_root: Path) -> None:
    """Write unchecked-hash .pyc files next to every .py under source_root (Pyodide's CPython)."""
    node = shutil.which("node")
    if node is None:
        raise BuildError("--pyc needs Node.js on PATH")
    with tempfile.TemporaryDirectory() as scratch:
        script = Path(scratch) / "compile_pyc.mjs"
        script.write_text(PYC_COMPILER_MJS, encoding="utf-8")
        command = [
            node,
            str(script),
            (PYODIDE_NPM / "pyodide.mjs").as_uri(),
            str(PYODIDE_NPM) + "/",
            str(source_root),
        ]
        subprocess.run(command, check=True, timeout=600)


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_own_wheel(out_dir: Path, *, pyc: bool) -> Path:
    """Zip this checkout's packages (pyproject's ``[tool.setuptools] packages``, with their
    data files) into a pure-Python wheel with reproducible bytes."""
    dist_name, version, packages = project_metadata()
    normalized = dist_name.replace("-", "_")
    dist_info = f"{normalized}-{version}.dist-info"
    with tempfile.TemporaryDirectory() as scratch:
        staging = Path(scratch)
        entries: dict[str, bytes] = {}
        for name, path in package_files(ROOT, packages):
            target = staging / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        if pyc:
            compile_pyc(staging)
        for path in sorted(staging.rglob("*")):
            if path.is_file():
                entries[path.relative_to(staging).as_posix()] = path.read_bytes()
    entries[f"{dist_info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {dist_name}\nVersion: {version}\n"
        "Summary: Composition Lab packages (interpreter, pyapp) for the browser build\n"
    ).encode()
    entries[f"{dist_info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: composition-lab build_site.py\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n"
    )
    entries[f"{dist_info}/top_level.txt"] = ("\n".join(packages) + "\n").encode()
    record_name = f"{dist_info}/RECORD"
    record = [record_line(name, data) for name, data in entries.items()]
    entries[record_name] = ("\n".join([*record, f"{record_name},,"]) + "\n").encode()

    wheel_path = out_dir / f"{normalized}-{version}-py3-none-any.whl"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    wheel_path.write_bytes(buffer.getvalue())
    return wheel_path


def lock_entry(
    name: str,
    version: str,
    wheel: Path,
    imports: tuple[str, ...],
    depends: tuple[str, ...],
) -> dict[str, object]:
    return {
        "name": name,
        "version": version,
        "file_name": wheel.name,
        "install_dir": "site",
        "sha256": sha256_of(wheel),
        "package_type": "package",
        "imports": list(imports),
        "depends": list(depends),
        "unvendored_tests": False,
        "tool": {},
    }


def write_lock(pyodide_out: Path, entries: dict[str, dict[str, object]]) -> None:
    """Write the npm lock with our entries replacing/adding theirs (file names are local)."""
    lock = json.loads((PYODIDE_NPM / "pyodide-lock.json").read_text(encoding="utf-8"))
    lock["packages"].update(entries)
    text = json.dumps(lock, indent=1, sort_keys=True) + "\n"
    (pyodide_out / "pyodide-lock.json").write_text(text, encoding="utf-8")


def copy_tree(source: Path, target: Path, *, skip_suffixes: tuple[str, ...] = ()) -> None:
    shutil.copytree(
        source,
        target,
        ignore=lambda _dir, names: [n for n in names if n.endswith(skip_suffixes)],
        dirs_exist_ok=True,
    )


def pinned_ort_version() -> str:
    """The onnxruntime-web version transformers.js pins (its package.json), checked against
    the installed one: the .wasm must be exactly the build the bundled JS expects."""
    manifest = json.loads((TRANSFORMERS_NPM / "package.json").read_text(encoding="utf-8"))
    wanted = str(manifest["dependencies"]["onnxruntime-web"])
    ort_manifest = ORT_WEB_NPM / "package.json"
    if not ort_manifest.is_file():
        raise BuildError(f"{ORT_WEB_NPM} is missing: run `npm ci --ignore-scripts` first")
    found = str(json.loads(ort_manifest.read_text(encoding="utf-8"))["version"])
    if found != wanted:
        raise BuildError(
            f"onnxruntime-web is {found} but transformers.js {TRANSFORMERS_VERSION} pins {wanted}:"
            " run `npm ci --ignore-scripts`"
        )
    return found


def copy_transformers(out: Path) -> dict[str, str]:
    """transformers.min.js + the pinned ORT wasm builds into out/transformers; returns versions."""
    ort_version = pinned_ort_version()
    target = out / "transformers"
    target.mkdir()
    shutil.copyfile(
        TRANSFORMERS_NPM / "dist" / "transformers.min.js", target / "transformers.min.js"
    )
    for name in ORT_WASM_FILES:
        shutil.copyfile(ORT_WEB_NPM / "dist" / name, target / name)
    versions = {"transformers_js": TRANSFORMERS_VERSION, "onnxruntime_web": ort_version}
    (target / "versions.json").write_text(json.dumps(versions, indent=1) + "\n", encoding="utf-8")
    architectures = {"transformers_js": TRANSFORMERS_VERSION, "causal_lm": causal_lm_types()}
    (target / "architectures.json").write_text(
        json.dumps(architectures, indent=1) + "\n", encoding="utf-8"
    )
    return versions


def causal_lm_types() -> dict[str, str]:
    """config.json `model_type` -> class, for every causal LM the pinned transformers.js runs
    (its MODEL_FOR_CAUSAL_LM_MAPPING_NAMES); the page refuses other architectures before any
    download."""
    source = (TRANSFORMERS_NPM / "src" / "models" / "registry.js").read_text(encoding="utf-8")
    start = source.index("export const MODEL_FOR_CAUSAL_LM_MAPPING_NAMES = new Map([")
    block = source[start : source.index("]);", start)]
    found = dict(re.findall(r"\['([\w-]+)',\s*'(\w+)'\]", block))
    bundle = (TRANSFORMERS_NPM / "dist" / "transformers.min.js").read_text(encoding="utf-8")
    missing = [name for name in found.values() if name not in bundle]
    if not found or missing:
        raise SystemExit(f"transformers.js causal LM list unreadable or not bundled: {missing}")
    return found


def copy_fixture(out: Path, src: Path = FIXTURE_SRC, dest: Path = FIXTURE_OUT) -> Path | None:
    """A committed bundled model (by default the test fixture, tests/fixtures/tiny-chat) into
    out/`dest` (None if absent)."""
    if not (src / "config.json").is_file():
        return None
    target = out / dest
    shutil.copytree(
        src,
        target,
        ignore=lambda _dir, names: [n for n in names if n.endswith(FIXTURE_SKIP)],
    )
    return target


def copy_subjects(out: Path) -> None:
    """Every reference subject's committed files into out/models/MODEL_ID; a subject whose
    files are absent (not trained yet) is dropped from the built catalogue, with a warning."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from pyapp.records import SUBJECT_SOURCE, SUBJECTS

    missing = set()
    for subject in SUBJECTS:
        dest = Path("models") / subject.model_id
        copied = copy_fixture(out, ROOT / subject.folder, dest)
        if copied is None or subject.config_sha256 is None:
            if copied is not None:
                shutil.rmtree(copied)
            missing.add(subject.model_id)
            say(
                f"WARNING: no reference subject {subject.model_id} at {subject.folder}: "
                "it is unavailable until trained"
            )
        else:
            say(f"copied the reference subject to {dest} ({human(folder_size(copied))})")
    if missing:
        catalogue = json.loads((out / "models.json").read_text(encoding="utf-8"))
        catalogue["models"] = [
            e
            for e in catalogue["models"]
            if not (e.get("source") == SUBJECT_SOURCE and e.get("model_id") in missing)
        ]
        (out / "models.json").write_text(json.dumps(catalogue, indent=2) + "\n", encoding="utf-8")


SPIN_WAIT = "f&&(d=(e,t)=>{do{f()}while(p(e,t)<1)})"
"""@pyscript/core's worker (coincident 4) waits for each synchronous call to the main thread
(`xworker.sync.*`: every session event, every model call) by spinning on `Atomics.pause`
when the browser has it, holding a whole core for the call's length (a model generation
included). On a machine with few cores that core is the model worker's and the page's: the
wait is made to sleep on `Atomics.wait` instead, coincident's own path where there is no
`Atomics.pause` (issue 22 §3; the harness time per trial and the model's own time both
fall)."""


def sleep_in_sync_waits(pyscript_out: Path) -> None:
    """Patch the copied @pyscript/core so the worker's sync waits sleep (`SPIN_WAIT`); fails
    the build unless exactly one chunk holds the spin, once (an upgrade must look again)."""
    found = [p for p in sorted(pyscript_out.glob("*.js")) if SPIN_WAIT in p.read_text("utf-8")]
    if len(found) != 1 or found[0].read_text("utf-8").count(SPIN_WAIT) != 1:
        raise BuildError(f"@pyscript/core {PYSCRIPT_VERSION}: the sync wait's spin is not one")
    text = found[0].read_text("utf-8")
    found[0].write_text(text.replace(SPIN_WAIT, "!1&&" + SPIN_WAIT), "utf-8")


def folder_size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def build(out: Path, *, pyc: bool) -> None:
    check_npm_packages()
    if not SITE_SRC.is_dir():
        raise BuildError(f"{SITE_SRC} is missing")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)

    copy_tree(SITE_SRC, out)  # as it is: every import resolves here as in site/
    say(f"copied site/ ({human(folder_size(out))})")

    pyscript_out = out / "pyscript"
    copy_tree(PYSCRIPT_DIST, pyscript_out, skip_suffixes=(".map",))
    sleep_in_sync_waits(pyscript_out)
    say(f"copied @pyscript/core {PYSCRIPT_VERSION} dist ({human(folder_size(pyscript_out))})")

    pyodide_out = out / "pyodide"
    pyodide_out.mkdir()
    for name in PYODIDE_RUNTIME_FILES:
        shutil.copyfile(PYODIDE_NPM / name, pyodide_out / name)
    say(f"copied pyodide {PYODIDE_VERSION} runtime ({human(folder_size(pyodide_out))})")

    versions = copy_transformers(out)
    say(
        f"copied transformers.js {versions['transformers_js']} + onnxruntime-web"
        f" {versions['onnxruntime_web']} wasm ({human(folder_size(out / 'transformers'))})"
    )
    fixture = copy_fixture(out)
    if fixture is None:
        say(f"WARNING: no fixture model at {FIXTURE_SRC}: the bundled test fixture is unavailable")
    else:
        say(f"copied test-fixture model to {FIXTURE_OUT} ({human(folder_size(fixture))})")
    copy_subjects(out)

    entries: dict[str, dict[str, object]] = {}
    for wheel in PINNED_WHEELS:
        cached = fetch_pinned_wheel(wheel)
        local = pyodide_out / wheel.file_name
        shutil.copyfile(cached, local)
        entries[wheel.name] = lock_entry(
            wheel.name, wheel.version, local, wheel.imports, wheel.depends
        )

    dist_name, version, packages = project_metadata()
    own = build_own_wheel(pyodide_out, pyc=pyc)
    entries[dist_name] = lock_entry(dist_name, version, own, packages, ())
    say(f"built   {own.name} ({human(own.stat().st_size)}, pyc={'yes' if pyc else 'no'})")

    write_lock(pyodide_out, entries)
    say("wrote   pyodide/pyodide-lock.json (local entries: " + ", ".join(sorted(entries)) + ")")

    for wheel_name, entry in sorted(entries.items()):
        size = (pyodide_out / str(entry["file_name"])).stat().st_size
        say(f"  {wheel_name:<18} {human(size):>9}  sha256 {str(entry['sha256'])[:16]}…")
    say(f"done: {out} ({human(folder_size(out))})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    parser.add_argument(
        "--pyc",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="precompile .pyc into our wheel under Pyodide's CPython (needs Node.js)",
    )
    args = parser.parse_args(argv)
    try:
        build(args.out.resolve(), pyc=args.pyc)
    except (BuildError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        print(f"[build_site] FAILED: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
