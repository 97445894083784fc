"""`irlens capture --dsl`: the switches that make each tile DSL write what irlens reads, and the files
they write, gathered with the run.

Each DSL's switches are environment variables that act only when that DSL runs, and each writes into
the capture's own folder, so all of them are on by default (`--dsl all`); `--dsl helion,cute` chooses,
`--dsl none` leaves them off. A variable the user set already is kept (`setdefault`).

- helion: `HELION_PRINT_OUTPUT_CODE=1` prints each generated module (with its `# src[file:line]`
  comments) to stderr, into the log; `HELION_AUTOTUNE_LOG` writes the autotuner's CSV into the capture;
  `HELION_KEEP_CACHE=1` (and `HELION_KEEP_TRITON_CACHE`, which Helion 1.0 reads) keeps every autotuning
  candidate's cache entry (Helion otherwise compiles them in a throwaway cache). Helion's autotuner sets `TRITON_STORE_BINARY_ONLY=1` unless it is set, so
  capture always sets it to 0 (a Triton switch: every stage is kept, whatever the DSL).
  The Helion files the comments name (by base name) are found beside the program and in the working
  folder, and kept where their lines read as the comments quote them.
- cute (`nvidia-cutlass-dsl`): `CUTE_DSL_KEEP=all` (ir, ir-debug, ptx, cubin, sass) into
  `CUTE_DSL_DUMP_DIR`, and `CUTE_DSL_LINEINFO=1` so the binary maps to Python lines.
- cutile (`cuda-tile`): `CUDA_TILE_LOGS=CUTILEIR,TILEIR` (the IR printed to stderr, into the log),
  `CUDA_TILE_DUMP_BYTECODE` (`.tileirbc` files) and `CUDA_TILE_DUMP_TILEIR` (TileIR text, where the
  installed tools can disassemble it).
- tilelang: its IR dumps are a pass-config (`tl.enable_dump_ir`, `tl.dump_ir_path`), not an environment
  variable. A `sitecustomize.py` put first on PYTHONPATH (:data:`TILELANG_BOOT`) adds both to every
  kernel's pass-configs where TileLang normalizes them (`tilelang.transform.pass_config.
  normalize_pass_configs`, wrapped as that module loads), one folder per compile under
  `IRLENS_TILELANG_DUMP_DIR`; a program's own `tl.enable_dump_ir`/`tl.dump_ir_path` win.
  `TILELANG_DISABLE_CACHE=1` makes every kernel compile (its disk cache would skip the passes).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from parsers.helion.generated import matches_source, parse

DSLS = ("helion", "cute", "cutile", "tilelang")
# the folders each DSL writes into, under the capture's folder
FOLDERS = {"helion": (), "cute": ("cute-dsl",), "cutile": ("cutile-bytecode", "cutile-tileir"),
           "tilelang": ("tilelang-dump-ir",)}
HELION_AUTOTUNE_LOG = "helion-autotune"  # Helion writes helion-autotune.csv (and .log) beside the log
_SRC_NAME = re.compile(rb"# src\[([^\]\n:/\\]{1,255}\.py):\d+")
SCAN_BLOCK = 1 << 20
MAX_WALK = 20_000  # directory entries looked at in the working folder for a Helion file
_SKIPPED_DIRS = {".git", ".hg", ".venv", "venv", "node_modules", "__pycache__", "site-packages", ".tox"}


TILELANG_BOOT = '''
import os as _os, sys as _sys
_tl_dir = _os.environ.get("IRLENS_TILELANG_DUMP_DIR")
if _tl_dir:
    import importlib.abc as _abc, importlib.machinery as _machinery, itertools as _itertools

    class _IrlensTileLangDumps(_abc.MetaPathFinder):
        """irlens capture: TileLang's per-pass IR dumps on for every kernel (docs/dsl.md)."""
        counter = _itertools.count()

        def find_spec(self, name, path, target=None):
            if name != "tilelang.transform.pass_config":
                return None
            spec = _machinery.PathFinder.find_spec(name, path)
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return spec
            load = spec.loader.exec_module

            def exec_module(module):
                load(module)
                normalize = getattr(module, "normalize_pass_configs", None)
                if normalize is None:
                    _sys.stderr.write("irlens: this TileLang has no normalize_pass_configs: no IR dumps\\n")
                    return

                def with_dumps(*args, **kwargs):
                    configs = normalize(*args, **kwargs)
                    if "tl.dump_ir_path" not in configs:
                        configs.setdefault("tl.enable_dump_ir", True)
                        configs["tl.dump_ir_path"] = _os.path.join(_tl_dir, "%03d" % next(self.counter))
                    return configs

                module.normalize_pass_configs = with_dumps

            spec.loader.exec_module = exec_module
            return spec

    _sys.meta_path.insert(0, _IrlensTileLangDumps())
'''


def parse_dsls(value: str) -> tuple[str, ...]:
    """`--dsl`'s value: `all`, `none`, or names from DSLS separated by commas. ValueError otherwise."""
    names = [name.strip().lower() for name in value.split(",") if name.strip()]
    if names == ["all"]:
        return DSLS
    if names in ([], ["none"]):
        return ()
    unknown = [name for name in names if name not in DSLS]
    if unknown:
        raise ValueError(f"unknown DSL {', '.join(unknown)}: choose from {', '.join(DSLS)}, all or none")
    return tuple(name for name in DSLS if name in names)


def dsl_environment(env: dict[str, str], folder: Path, dsls: Iterable[str]) -> None:
    """Turn on the chosen DSLs' dumps in `env`, writing into `folder`."""
    env["TRITON_STORE_BINARY_ONLY"] = "0"  # Helion's autotuner would set 1: no TTIR/TTGIR in the cache
    for dsl in dsls:
        if dsl == "helion":
            env.setdefault("HELION_PRINT_OUTPUT_CODE", "1")
            env.setdefault("HELION_AUTOTUNE_LOG", str(folder / HELION_AUTOTUNE_LOG))
            env.setdefault("HELION_KEEP_CACHE", "1")
            env.setdefault("HELION_KEEP_TRITON_CACHE", env["HELION_KEEP_CACHE"])  # its older name (Helion 1.0 reads only this)
        elif dsl == "cute":
            env.setdefault("CUTE_DSL_KEEP", "all")
            env.setdefault("CUTE_DSL_DUMP_DIR", str(folder / "cute-dsl"))
            env.setdefault("CUTE_DSL_LINEINFO", "1")
        elif dsl == "cutile":
            env.setdefault("CUDA_TILE_LOGS", "CUTILEIR,TILEIR")
            env.setdefault("CUDA_TILE_DUMP_BYTECODE", str(folder / "cutile-bytecode"))
            env.setdefault("CUDA_TILE_DUMP_TILEIR", str(folder / "cutile-tileir"))
        elif dsl == "tilelang":
            env.setdefault("IRLENS_TILELANG_DUMP_DIR", str(folder / "tilelang-dump-ir"))
            env.setdefault("TILELANG_DISABLE_CACHE", "1")


# Last in the start-up file: the program's own sitecustomize.py, if one is on its path, runs too
# (Python imports only the first it finds, which is ours).
CHAIN_BOOT = '''
def _irlens_chain():
    import os, sys
    here = os.path.dirname(os.path.abspath(__file__))
    ours = sys.modules.pop("sitecustomize", None)
    saved = sys.path[:]
    sys.path[:] = [entry for entry in saved if os.path.abspath(entry or ".") != here]
    try:
        import sitecustomize  # noqa: F401  (the next one on the path)
    except ModuleNotFoundError as error:
        if error.name != "sitecustomize":
            raise
    except Exception as error:  # as Python's site module does for a failing sitecustomize
        sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\\n%s: %s\\n"
                         % (type(error).__name__, error))
    finally:
        sys.path[:] = saved
        if ours is not None:
            sys.modules["sitecustomize"] = ours


_irlens_chain()
'''


def boot_code(dsls: Iterable[str]) -> str:
    """What the program must run at start-up (in a `sitecustomize.py`) for the chosen DSLs, then the
    program's own sitecustomize, if any."""
    return TILELANG_BOOT + CHAIN_BOOT if "tilelang" in dsls else ""


def boot_environment(env: dict[str, str], folder: Path, code: str) -> None:
    """Run `code` at the program's start-up: a `sitecustomize.py` first on its PYTHONPATH."""
    boot = folder / "dsl-boot"
    boot.mkdir(exist_ok=True)
    (boot / "sitecustomize.py").write_text(code)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(boot), env.get("PYTHONPATH", "")]))


def written(folder: Path, dsls: Iterable[str]) -> list[str]:
    """What the chosen DSLs wrote into the capture's folder: their dump folders that hold files, and
    Helion's autotuning CSV."""
    found = []
    for dsl in dsls:
        for name in FOLDERS[dsl]:
            path = folder / name
            if path.is_dir() and any(p.is_file() for p in path.rglob("*")):
                found.append(str(path))
        if dsl == "helion":
            found += [str(path) for path in sorted(folder.glob(HELION_AUTOTUNE_LOG + ".*"))
                      if path.is_file() and path.stat().st_size]
    return found


def _names_in(path: Path) -> set[str]:
    """The Helion files `# src[...]` comments in `path` name (base names), read in blocks."""
    names: set[str] = set()
    tail = b""
    with open(path, "rb") as stream:
        while block := stream.read(SCAN_BLOCK):
            data = tail + block
            names.update(match.group(1).decode("utf-8", "replace") for match in _SRC_NAME.finditer(data))
            tail = data[-512:]
    return names


def helion_sources(texts: Sequence[Path], command: Sequence[str], cwd: Path | None = None) -> list[str]:
    """The Helion files that the generated code in `texts` (the log, the generated modules) came from:
    files of the names its comments give, beside the program's file arguments or under the working
    folder, whose lines read as the generated code quotes them."""
    names: set[str] = set()
    generated = []
    for path in texts:
        found = _names_in(path)
        names |= found
        if found and path.suffix == ".py":
            generated.append(path)
    if not names:
        return []
    cwd = cwd or Path.cwd()
    candidates: dict[str, list[Path]] = {name: [] for name in names}
    folders = [cwd] + [Path(arg).resolve().parent for arg in command if os.path.isfile(arg)]
    for folder in dict.fromkeys(folders):
        for name in names:
            if (folder / name).is_file():
                candidates[name].append((folder / name).resolve())
    seen = 0
    for root, dirs, files in os.walk(cwd):
        dirs[:] = [d for d in dirs if d not in _SKIPPED_DIRS and not d.startswith(".")]
        seen += len(dirs) + len(files)
        for name in names.intersection(files):
            candidates[name].append((Path(root) / name).resolve())
        if seen > MAX_WALK:
            break
    codes = [parse(path.read_text("utf-8", "replace")) for path in generated]
    kept = []
    for name, paths in candidates.items():
        for path in dict.fromkeys(paths):
            try:
                text = path.read_text("utf-8", "replace")
            except OSError:
                continue
            # the log's printed modules are not parsed here: a file of the name beside the program
            # counts when no generated module was kept to check it against
            if not codes or any(matches_source(code, name, text) for code in codes):
                kept.append(str(path))
    return sorted(set(kept))
