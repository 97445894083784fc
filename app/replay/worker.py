"""The replay worker: runs inside an interpreter that holds the capture's `triton` (any 3.x), started by
app/replay/runner.py with time and memory limits. Standard library and `triton` only: the interpreter
need not have irlens's dependencies.

One JSON request a line on stdin, one JSON answer a line on stdout:
- {"op": "plan", "target": "cuda:90", "options": {...}, "language": "triton" | "gluon"}: the passes the
  backend's own stages add, in order, recorded on a recording pass manager: for each, the binding
  (`passes.ttgpuir.add_coalesce`), its arguments, and the pipeline text the binding builds.
- {"op": "run", "passes": [N, ...], "module": TEXT}: parse TEXT, add plan passes N... through their
  bindings (a pass, then those after it that printed no dump), run them;
  the module printed after it, or the error with MLIR's diagnostics as Triton printed them.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
import traceback

STAGES = ("ttir", "ttgir", "llir")  # the MLIR stages; llir's translation to LLVM IR is not replayed


class _Anything:
    """A stand-in module for the dry run: every attribute is a callable that returns None."""

    def __init__(self, context):
        self.context = context

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


class Recorder:
    """Wraps each `add_*` binding of the `passes` modules, so the backend's stages can be run dry: the
    calls are recorded; the recording pass manager's run() does nothing."""

    def __init__(self, triton):
        self.triton = triton
        self.calls = []
        self.raw = []  # the arguments as given (a pybind object such as 3.1's ClusterInfo stays one)
        self.patched = []

    def binding_modules(self):
        lib = self.triton._C.libtriton
        found = []

        def walk(module, path, depth):
            for name in dir(module):
                value = getattr(module, name, None)
                if type(value).__name__ == "module" and depth < 3 and not name.startswith("_"):
                    walk(value, f"{path}.{name}", depth + 1)
            found.append((path, module))

        for root in ("passes", "nvidia", "amd"):
            if hasattr(lib, root):
                walk(getattr(lib, root), root, 0)
        return found

    def __enter__(self):
        for path, module in self.binding_modules():
            for name in dir(module):
                real = getattr(module, name)
                if name.startswith("add_") and callable(real):
                    setattr(module, name, self._wrap(f"{path}.{name}", real))
                    self.patched.append((module, name, real))
        return self

    def __exit__(self, *exc):
        for module, name, real in reversed(self.patched):
            setattr(module, name, real)

    def _wrap(self, binding, real):
        def record(pm, *args, **kwargs):
            self.raw.append((args, kwargs))
            self.calls.append({"binding": binding, "args": [_plain(a) for a in args],
                               "kwargs": {k: _plain(v) for k, v in kwargs.items()}})
        return record


def _plain(value):
    return value if isinstance(value, (int, float, str, bool, type(None))) else repr(value)


class _RecordingPassManager:
    def __init__(self, *args, **kwargs):
        pass

    def enable_debug(self):
        return True  # as with MLIR_ENABLE_DUMP: the stages add the passes a dumping compile adds

    def run(self, *args, **kwargs):
        return None  # the stage goes on with the stand-in module (AMD's make_ttgir runs two managers)


def add_pass(triton, pm, call, raw):
    """Adds a planned pass to `pm` through its binding, with the arguments the backend gave it."""
    args, kwargs = raw
    binding(triton, call["binding"])(pm, *args, **kwargs)


def binding(triton, path):
    obj = triton._C.libtriton
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def make_context(triton, backend):
    ir = triton._C.libtriton.ir
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    return context


def pipeline_text(triton, context, call, raw):
    """The pipeline the binding builds (Triton >= 3.4 prints it), or None."""
    pm = triton._C.libtriton.ir.pass_manager(context)
    if not hasattr(pm, "get_pipeline_str"):
        return None
    add_pass(triton, pm, call, raw)
    return pm.get_pipeline_str()


_PROBE_MODULE = "module {\n  tt.func @probe() {\n    tt.return\n  }\n}\n"
_BANNER = re.compile(r"IR Dump Before (.+?) \((\S+)\) \('([\w.]+)' operation")
_MARK = "@@irlens-probe "


def probe_banners(triton, backend, calls, raws, seconds=30.0):
    """What each pass's banner says on a Triton that cannot print its pipeline (< 3.4): each binding
    runs on a tiny module with MLIR_ENABLE_DUMP set, in a forked child (a pass given IR it does not
    expect may abort), and the "IR Dump Before Name (arg) ('op' operation)" line it prints is read."""
    found = {}
    start = 0
    while start < len(calls):
        with tempfile.TemporaryFile() as out:
            pid = os.fork()
            if pid == 0:  # the child: never returns
                try:
                    os.dup2(out.fileno(), 2)
                    os.environ["MLIR_ENABLE_DUMP"] = "1"
                    os.environ.pop("MLIR_DUMP_PATH", None)
                    ir = triton._C.libtriton.ir
                    for index in range(start, len(calls)):
                        os.write(2, f"\n{_MARK}{index}\n".encode())
                        context = make_context(triton, backend)
                        module = _parse(ir, _PROBE_MODULE, context)
                        pm = ir.pass_manager(context)
                        pm.enable_debug()
                        add_pass(triton, pm, calls[index], raws[index])
                        try:
                            pm.run(module)
                        except Exception:  # noqa: BLE001, S110 (any failure of a foreign Triton is reported, never raised)
                            pass  # the banner printed before the pass ran
                finally:
                    os._exit(0)
            deadline = time.monotonic() + seconds
            while os.waitpid(pid, os.WNOHANG) == (0, 0):
                if time.monotonic() > deadline:
                    os.kill(pid, 9)
                    os.waitpid(pid, 0)
                    break
                time.sleep(0.01)
            out.seek(0)
            text = out.read().decode("utf-8", "replace")
        last = start - 1
        for chunk in text.split(_MARK)[1:]:
            head, _, body = chunk.partition("\n")
            last = int(head)
            match = _BANNER.search(body)
            if match:
                found[last] = {"pass_name": match.group(1), "pass_arg": match.group(2), "anchor": match.group(3)}
        start = last + 1 if last >= start else start + 1  # past the pass that took the child down
    return found


class Worker:
    def __init__(self):
        import triton  # the capture's Triton, imported once

        self.triton = triton
        self.backend = None
        self.plan_calls = []
        self.plan_raw = []
        self.context = None

    def make_backend(self, target, warp_size=None):
        from triton.backends.compiler import GPUTarget
        from triton.compiler.compiler import make_backend

        backend_name, _, arch = target.partition(":")
        arch_value = int(arch) if arch.isdigit() else arch
        warp = warp_size or (64 if str(arch).startswith("gfx9") else 32)  # CDNA is wave64, RDNA and CUDA 32
        return make_backend(GPUTarget(backend_name, arch_value, warp))

    def plan(self, request):
        backend = self.backend = self.make_backend(request["target"], request.get("warp_size"))
        options = _parse_options(backend, dict(request.get("options") or {}))
        self.context = make_context(self.triton, backend)
        stages = {}
        language = request.get("language", "triton")
        try:
            from triton.compiler.compiler import Language  # 3.4 and later

            backend.add_stages(stages, options, Language.GLUON if language == "gluon" else Language.TRITON)
        except ImportError:
            backend.add_stages(stages, options)
        ir = self.triton._C.libtriton.ir
        real_pm = ir.pass_manager
        with Recorder(self.triton) as recorder:
            ir.pass_manager = _RecordingPassManager
            try:
                stub = _Anything(self.context)
                for name, stage in stages.items():
                    if name not in STAGES:
                        continue
                    before = len(recorder.calls)
                    try:
                        stage(stub, {})
                    except Exception:  # noqa: BLE001 — code after the last run() that needs a real module: its adds are kept
                        if len(recorder.calls) == before:
                            continue
                    for call in recorder.calls[before:]:
                        call["stage"] = name
                    if name == "llir":
                        break
            finally:
                ir.pass_manager = real_pm
        self.plan_calls, self.plan_raw = recorder.calls, recorder.raw
        if not hasattr(real_pm(self.context), "get_pipeline_str"):
            for index, banner in probe_banners(self.triton, backend, self.plan_calls, self.plan_raw).items():
                self.plan_calls[index].update(banner)
        for call, raw in zip(self.plan_calls, self.plan_raw):
            try:
                call["pipeline"] = pipeline_text(self.triton, self.context, call, raw)
            except Exception as error:  # noqa: BLE001 (any failure of a foreign Triton is reported as the pass's error)
                call["pipeline"] = None
                call["pipeline_error"] = str(error)
        return {"triton": self.triton.__version__, "passes": self.plan_calls,
                "options": {k: _plain(v) for k, v in sorted(vars(options).items())} if hasattr(options, "__dict__") else {}}

    def run(self, request):
        indexes = request.get("passes") or [request["pass"]]  # the pass, and any that printed no dump after it
        ir = self.triton._C.libtriton.ir
        context = make_context(self.triton, self.backend)
        started = time.perf_counter()
        with _Stderr() as stderr:
            try:
                module = ir.parse_mlir_module_from_text(request["module"], context) if hasattr(
                    ir, "parse_mlir_module_from_text") else _parse(ir, request["module"], context)
                parsed = time.perf_counter()
                pm = ir.pass_manager(context)
                for index in indexes:
                    add_pass(self.triton, pm, self.plan_calls[index], self.plan_raw[index])
                _run(pm, module)
                ran = time.perf_counter()
                text = module.str()
                error = None
            except Exception as exc:  # noqa: BLE001 (any failure of a foreign Triton is reported as the pass's error)
                text, error = None, f"{type(exc).__name__}: {exc}"
                parsed = ran = time.perf_counter()
        return {"module": text, "error": error, "diagnostics": stderr.text,
                "seconds": {"parse": parsed - started, "run": ran - parsed, "print": time.perf_counter() - ran}}


def _run(pm, module):
    """pm.run(module, name) (Triton 3.4+ names each run), else pm.run(module). pybind refuses the wrong
    arity with a TypeError before anything runs."""
    try:
        pm.run(module, "replay")
    except TypeError as error:
        if "incompatible function arguments" not in str(error):
            raise
        pm.run(module)


def _parse(ir, text, context):
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as handle:
        handle.write(text)
    try:
        return ir.parse_mlir_module(handle.name, context)
    finally:
        os.unlink(handle.name)


def _parse_options(backend, given):
    """The backend's options from the compilation's metadata: the fields it knows, where it takes them."""
    try:
        import dataclasses

        options_class = type(backend.parse_options({}))
        names = {field.name for field in dataclasses.fields(options_class)}
        usable = {k: (tuple(v) if isinstance(v, list) else v) for k, v in given.items() if k in names}
        usable.pop("extern_libs", None)
        return backend.parse_options(usable)
    except Exception:  # noqa: BLE001 (any failure of a foreign Triton is reported as the pass's error)
        return backend.parse_options({})


class _Stderr:
    """What the C++ side writes to file descriptor 2 (MLIR's diagnostics) while a pass runs."""

    def __enter__(self):
        sys.stderr.flush()
        self.file = tempfile.TemporaryFile()
        self.saved = os.dup(2)
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        sys.stderr.flush()
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.file.seek(0)
        self.text = self.file.read(1 << 20).decode("utf-8", "replace")
        self.file.close()


def _limit(argv):
    """Caps this process's address space and CPU time (--memory-mb, --cpu-seconds) before Triton loads."""
    import resource

    args = dict(zip(argv[::2], argv[1::2]))
    if "--memory-mb" in args:
        size = int(args["--memory-mb"]) << 20
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    if "--cpu-seconds" in args:
        seconds = int(args["--cpu-seconds"])
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 5))


def main():
    started = time.perf_counter()
    _limit(sys.argv[1:])
    out = sys.stdout
    sys.stdout = sys.stderr  # anything Triton prints must not mix into the answers
    worker = Worker()
    out.write(json.dumps({"ready": True, "triton": worker.triton.__version__,
                          "import_seconds": time.perf_counter() - started}) + "\n")
    out.flush()
    for line in sys.stdin:
        try:
            request = json.loads(line)
            answer = worker.plan(request) if request.get("op") == "plan" else worker.run(request)
        except Exception as error:  # noqa: BLE001 (any failure of a foreign Triton is reported as the pass's error)
            answer = {"error": f"{type(error).__name__}: {error}", "traceback": traceback.format_exc(limit=5)}
        out.write(json.dumps(answer) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
