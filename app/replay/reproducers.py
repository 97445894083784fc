"""Reproducers of one pass, built from stored text only (pure: no Triton needed to build them).

- `reproducer.mlir`: the module as dumped before the pass, then MLIR's reproducer resource block
  (`{-# external_resources: { mlir_reproducer: { pipeline: ..., disable_threading: true,
  verify_each: true } } #-}`), so `triton-opt --run-reproducer reproducer.mlir` runs exactly that pass.
  The pipeline is the banner's: the pass's textual form with its options (Triton >= 3.4 prints them),
  nested under its anchor op (`builtin.module(tt.func(canonicalize{...}))`). An older banner prints
  the pass's argument only: a comment says so and lists what the compilation's metadata fixes.
- `reproducer.py`: a script for the capture's `triton` wheel that parses the module, adds the pass
  through the wheel's own binding and runs it, then prints the result, or its diff against the dump
  after the pass (a file given as its argument). Where the binding is known (the backend's pass list
  was recorded, app/replay/worker.py) the script calls it directly; else it records the backend's
  passes itself and picks the one whose pipeline text is the banner's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from app.replay.plan import MODULE, anchor_op, pass_text

_METADATA_KEYS = ("num_warps", "num_ctas", "num_stages", "warp_size", "arch", "ptx_version", "maxnreg")


@dataclass(frozen=True)
class PassSpec:
    """What a reproducer needs of one pass and its compilation."""

    compilation: str  # RUN-N
    index: int  # the dump before the pass: /s/INDEX
    pass_name: str
    pass_arg: str | None
    pass_options: str | None
    scope: str | None
    triton_version: str | None
    target: str | None
    metadata: dict | None = None
    binding: str | None = None  # `passes.ttgpuir.add_coalesce`, where the plan is known
    args: tuple | None = None
    language: str = "triton"

    @property
    def has_options(self) -> bool:
        """Triton >= 3.4 banners print a pass's options (braces), or it has none to print."""
        return bool(self.pass_options) or _new_banner(self.triton_version)


def _new_banner(version: str | None) -> bool:
    try:
        major, minor = (int(part) for part in (version or "").split(".")[:2])
    except ValueError:
        return True  # unknown: assume the banner printed all it had
    return (major, minor) >= (3, 4)


def pipeline(spec: PassSpec) -> str:
    """The pass's pipeline, nested under its anchor op, its options as the banner printed them."""
    text = (spec.pass_arg or spec.pass_name) + (spec.pass_options or "")
    anchor = anchor_op(spec.scope)
    return f"{MODULE}({text})" if anchor == MODULE else f"{MODULE}({anchor}({text}))"


def _metadata_line(spec: PassSpec) -> str:
    metadata = spec.metadata or {}
    fixed = [f"{key}={metadata[key]}" for key in _METADATA_KEYS if metadata.get(key) is not None]
    return " ".join(fixed + ([f"target={spec.target}"] if spec.target else [])) or "nothing (no cache metadata)"


def reproducer_mlir(spec: PassSpec, module: str) -> str:
    lines = [
        f"// irlens reproducer: {spec.compilation} /s/{spec.index}, the IR before {spec.pass_name}",
        f"// (Triton {spec.triton_version or 'version unknown'}, target {spec.target or 'unknown'}).",
        "// Run it with a triton-opt built from that Triton:  triton-opt --run-reproducer reproducer.mlir",
    ]
    if not spec.has_options:
        lines += [
            "// This Triton's banner printed the pass's argument only, not its options: the pipeline below",
            f"// runs {spec.pass_arg or spec.pass_name} with its defaults. The compilation's metadata fixes: {_metadata_line(spec)}.",
            "// Add the options the pass takes from these in braces, e.g. pass{num-warps=8}.",
        ]
    pipe = pipeline(spec).replace("\\", "\\\\").replace('"', '\\"')
    resources = [
        "{-#", "  external_resources: {", "    mlir_reproducer: {", f'      pipeline: "{pipe}",',
        "      disable_threading: true,", "      verify_each: true", "    }", "  }", "#-}",
    ]
    return "\n".join(lines) + "\n" + module.rstrip("\n") + "\n\n" + "\n".join(resources) + "\n"


def _literal(text: str) -> str:
    """A Python literal of `text`, readable where it can be (a raw triple-quoted string)."""
    if '"""' not in text and not text.endswith("\\") and "\r" not in text:
        return 'r"""' + text + '"""'
    return json.dumps(text)


_LOOKUP = '''
def find_pass(pm_class, want):
    """The binding call the backend makes for the pass whose pipeline text is `want`: the backend's
    stages run dry on a recording pass manager, and each recorded call builds its own pipeline text."""
    from triton._C.libtriton import ir
    calls, patched = [], []
    lib = triton._C.libtriton
    def walk(module, depth=0):
        for name in dir(module):
            value = getattr(module, name)
            if type(value).__name__ == "module" and depth < 3 and not name.startswith("_"):
                walk(value, depth + 1)
            elif name.startswith("add_") and callable(value):
                patched.append((module, name, value))
                setattr(module, name, lambda pm, *a, _f=value, **k: calls.append((_f, a, k)))
    for root in ("passes", "nvidia", "amd"):
        if hasattr(lib, root):
            walk(getattr(lib, root))
    class Recording:
        def __init__(self, *a): pass
        def enable_debug(self): return True
        def run(self, *a): pass
    class Anything:
        def __init__(self, context): self.context = context
        def __getattr__(self, name): return lambda *a, **k: None
    ir.pass_manager, stages = Recording, {}
    try:
        from triton.compiler.compiler import Language
        BACKEND.add_stages(stages, OPTIONS, Language.GLUON if LANGUAGE == "gluon" else Language.TRITON)
        for stage in ("ttir", "ttgir", "llir"):
            try:
                stages[stage](Anything(CONTEXT), {}) if stage in stages else None
            except Exception:
                pass
    finally:
        ir.pass_manager = pm_class
        for module, name, value in patched:
            setattr(module, name, value)
    if not hasattr(pm_class(CONTEXT), "get_pipeline_str"):
        sys.exit("this triton cannot print pass pipelines (< 3.4): irlens replay --python PY finds the binding")
    for function, args, kwargs in calls:
        pm = pm_class(CONTEXT)
        function(pm, *args, **kwargs)
        if " ".join(pm.get_pipeline_str().split()).replace(" }", "}") == want:
            return lambda pm: function(pm, *args, **kwargs)
    sys.exit(f"no pass of this Triton's backend prints as {want!r}")
'''


def reproducer_py(spec: PassSpec, module: str) -> str:
    """A script for the capture's triton: the module, the pass, the run, and an optional diff."""
    target = spec.target or "cuda:90"
    backend, _, arch = target.partition(":")
    arch_literal = arch if arch.isdigit() else json.dumps(arch)
    warp = (spec.metadata or {}).get("warp_size") or (64 if arch.startswith("gfx9") else 32)
    known = spec.binding is not None and spec.args is not None and all(
        isinstance(arg, (int, float, bool, str)) and not (isinstance(arg, str) and arg.startswith("<"))
        for arg in spec.args)
    options = {key: value for key, value in (spec.metadata or {}).items()
               if key in _METADATA_KEYS and value is not None and key != "arch"}
    if known:
        call = f"{spec.binding}(pm{''.join(', ' + repr(arg) for arg in spec.args)})"
        root = spec.binding.split(".")[0]
        add = f"    from triton._C.libtriton import {root}\n    {call}  # as Triton's backend adds it\n"
        lookup = ""
    else:
        want = pass_text(spec.pass_arg or spec.pass_name, spec.pass_options)
        anchor = anchor_op(spec.scope)
        want = f"any({want})" if anchor == MODULE else f"any({anchor}({want}))"
        add = f"    find_pass(ir.pass_manager, {want!r})(pm)\n"
        lookup = _LOOKUP
    return f'''#!/usr/bin/env python3
"""Re-run {spec.pass_name} on the IR irlens stored as {spec.compilation} /s/{spec.index}.
Needs triton=={spec.triton_version or "<the capture's version>"} (pip install it; a CPU is enough).
    python reproducer.py              # print the module after the pass
    python reproducer.py AFTER.mlir   # diff it against the dump after the pass (irlens: /s/N/raw)
"""
import difflib
import os
import sys
import tempfile

import triton
from triton._C.libtriton import ir
from triton.backends.compiler import GPUTarget
from triton.compiler.compiler import make_backend

PIPELINE = {json.dumps(pipeline(spec))}
BACKEND = make_backend(GPUTarget({json.dumps(backend)}, {arch_literal}, {warp}))
OPTIONS = BACKEND.parse_options({options!r})
LANGUAGE = {json.dumps(spec.language)}
CONTEXT = ir.context()
ir.load_dialects(CONTEXT)
BACKEND.load_dialects(CONTEXT)
MODULE = {_literal(module)}
{lookup}

def main():
    if {spec.triton_version!r} not in (None, triton.__version__):
        print(f"warning: this is triton {{triton.__version__}}; the capture used {spec.triton_version}", file=sys.stderr)
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as file:
        file.write(MODULE)
    module = ir.parse_mlir_module(file.name, CONTEXT)
    os.unlink(file.name)
    pm = ir.pass_manager(CONTEXT)
{add}    try:
        pm.run(module, "reproducer")
    except TypeError:  # Triton < 3.4: run(module)
        pm.run(module)
    result = module.str()
    if len(sys.argv) < 2:
        print(result)
        return
    expected = open(sys.argv[1]).read()
    diff = list(difflib.unified_diff(expected.splitlines(), result.splitlines(), "stored", "replayed", lineterm=""))
    print("\\n".join(diff) if diff else "same text as the stored dump")


if __name__ == "__main__":
    main()
'''
