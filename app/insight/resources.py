"""The resources of one compilation as the pages show them: registers, local (spill) bytes, shared
memory and occupancy, from what ingest stored (`compilations.resources`, read from the cubin or the
.amdgcn while it streamed by: the binary itself is not kept, so this could not be computed later)
and the metadata (dynamic shared memory, num_warps, tmem).

NVIDIA occupancy is the resident warps per SM that the CUDA occupancy calculator gives for these
registers, this shared memory and num_warps, with the target's limits (LIMITS; the formula is in
docs/resources.md). It is computed here when shown, not stored, so a corrected limit applies to old
runs too. AMD occupancy is in waves per SIMD: the compiler's own (``; Occupancy:`` in the .amdgcn), or less
where Triton's dynamic LDS allows fewer workgroups per CU (the compiler does not see it).
Runs ingested before the resources were stored get AMD numbers from the stored .amdgcn on demand.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.store.models import Artifact, Compilation
from parsers.caches.amdgcn_resources import amdgcn_resources

REGISTERS_PER_SM = 65536
REGISTER_UNIT = 256  # registers are allocated per warp in units of 256
SUB_PARTITIONS = 4  # an SM's register file is four sub-partitions; a warp's registers come from one
MAX_REGISTERS = 255  # per thread
SHARED_UNIT = 128  # shared memory is allocated per block in units of 128 bytes
RESERVED_SHARED = 1024  # the driver's shared memory reserved per block (sm80 and later)


@dataclass(frozen=True)
class Limits:
    max_warps: int  # resident warps per SM
    max_blocks: int  # resident blocks per SM
    shared_per_sm: int  # bytes of shared memory an SM can give blocks (with the reserved KB of each)
    shared_per_block: int  # the most one block may opt in to (without the reserved KB)


# CUDA C Programming Guide, "Technical Specifications per Compute Capability".
LIMITS = {
    80: Limits(64, 32, 167936, 166912),
    86: Limits(48, 16, 102400, 101376),
    87: Limits(48, 16, 167936, 166912),
    89: Limits(48, 24, 102400, 101376),
    90: Limits(64, 32, 233472, 232448),
    100: Limits(64, 32, 233472, 232448),
    103: Limits(64, 32, 233472, 232448),
    120: Limits(48, 32, 102400, 101376),
}

# What each limit is called in a sentence, and its unit.
LIMIT_NAMES = {"registers": "registers", "shared": "shared memory", "warps": "warps per SM", "blocks": "blocks per SM",
               "vgprs": "VGPRs", "lds": "LDS", "waves": "waves per SIMD"}


def cuda_arch(target: str | None) -> int | None:
    match = re.search(r"cuda[:_ ]?(\d+)", target or "")
    return int(match.group(1)) if match else None


def limits_for(arch: int) -> Limits | None:
    if arch in LIMITS:
        return LIMITS[arch]
    lower = [known for known in LIMITS if known <= arch and known // 10 == arch // 10]
    return LIMITS[max(lower)] if lower else None


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def nvidia_occupancy(arch: int, registers: int | None, shared_bytes: int, num_warps: int,
                     shared_config: int | None = None) -> dict[str, Any] | None:
    """Resident blocks and warps per SM, and what limits them, as the CUDA occupancy calculator
    (cuda_occupancy.h) computes them; docs/resources.md gives the formula. `shared_config`: the SM's
    shared memory carve-out, when known (ncu's "Shared Memory Configuration Size"); by default the
    largest, which is what Triton asks for (it launches with "prefer shared") and where the driver
    never gives less than the other limits let resident blocks use."""
    limits = limits_for(arch)
    if limits is None or num_warps <= 0:
        return None
    bounds: dict[str, int] = {"warps": limits.max_warps // num_warps, "blocks": limits.max_blocks}
    per_warp = None
    if registers:
        per_warp = _round_up(registers * 32, REGISTER_UNIT)
        fits = registers <= MAX_REGISTERS and per_warp * _round_up(num_warps, SUB_PARTITIONS) <= REGISTERS_PER_SM
        per_partition = (REGISTERS_PER_SM // SUB_PARTITIONS) // per_warp
        bounds["registers"] = (per_partition * SUB_PARTITIONS) // num_warps if fits else 0
    per_block = _round_up(shared_bytes, SHARED_UNIT) + RESERVED_SHARED
    per_sm = shared_config or limits.shared_per_sm
    bounds["shared"] = per_sm // per_block if shared_bytes <= limits.shared_per_block else 0
    blocks = min(bounds.values())
    limited_by = [name for name in ("registers", "shared", "warps", "blocks") if bounds.get(name) == blocks]
    return {"blocks_per_sm": blocks, "warps_per_sm": blocks * num_warps, "max_warps": limits.max_warps,
            "percent": round(100 * blocks * num_warps / limits.max_warps, 1), "limited_by": limited_by,
            "bounds": bounds, "registers_per_warp": per_warp, "shared_per_block": per_block, "shared_bytes": shared_bytes,
            "shared_per_sm": per_sm, "max_blocks": limits.max_blocks, "num_warps": num_warps}


@dataclass(frozen=True)
class AmdLimits:
    vgprs: int  # per lane of a SIMD, arch and accumulation VGPRs together
    vgpr_unit: int
    max_waves: int  # per SIMD
    lds_per_cu: int


# LLVM's AMDGPU subtarget tables (AMDGPUBaseInfo: getTotalNumVGPRs, getVGPRAllocGranule,
# getMaxWavesPerEU, getLocalMemorySize) for the CDNA chips Triton targets.
AMD_LIMITS = {
    "gfx90a": AmdLimits(512, 8, 8, 65536),
    "gfx940": AmdLimits(512, 8, 8, 65536),
    "gfx941": AmdLimits(512, 8, 8, 65536),
    "gfx942": AmdLimits(512, 8, 8, 65536),
    "gfx950": AmdLimits(512, 8, 8, 163840),
}
SIMDS_PER_CU = 4


def amd_occupancy(arch: str | None, vgprs: int | None, lds_bytes: int, num_warps: int | None,
                  compiler: int | None) -> dict[str, Any] | None:
    """Waves per SIMD by VGPRs, by LDS and by the chip's maximum. The compiler's own `; Occupancy:`
    knows the VGPRs and the launch bounds but not Triton's LDS, which is dynamic (`LDSByteSize: 0
    bytes/workgroup (compile time only)`): the occupancy is the smaller of it and the LDS bound."""
    limits = AMD_LIMITS.get(arch or "")
    if limits is None or not vgprs or not num_warps:
        return None
    bounds = {"waves": limits.max_waves, "vgprs": min(limits.max_waves, limits.vgprs // _round_up(vgprs, limits.vgpr_unit))}
    if lds_bytes:
        groups = limits.lds_per_cu // lds_bytes
        bounds["lds"] = min(limits.max_waves, -(-groups * num_warps // SIMDS_PER_CU)) if groups else 0
    computed = min(bounds.values())
    shown = computed if compiler is None else min(compiler, bounds.get("lds", compiler))
    limited_by = [name for name in ("vgprs", "lds", "waves") if bounds.get(name) == shown]
    return {"waves_per_simd": shown, "computed": computed, "compiler": compiler, "limited_by": limited_by,
            "bounds": bounds, "max_waves": limits.max_waves, "vgpr_file": limits.vgprs, "vgpr_unit": limits.vgpr_unit,
            "lds_per_cu": limits.lds_per_cu, "lds_bytes": lds_bytes, "vgprs": vgprs, "num_warps": num_warps}


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def limiter(resources: dict | None) -> dict[str, Any] | None:
    """What limits this compilation's occupancy, for every page and sentence that says so:
    {"by": ["shared"], "names": "shared memory", "why": "shared memory (132,096 B/block of 233,472 B/SM)",
    "result": "1 block/SM (8 warps)"}. None when the resources do not tell."""
    if not resources:
        return None
    detail = resources.get("occupancy_detail")
    if detail and "blocks_per_sm" in detail:
        blocks, by = detail["blocks_per_sm"], detail["limited_by"]
        reasons = []
        for name in by:
            if name == "registers":
                reasons.append(f"registers ({resources.get('registers')}/thread → {detail['registers_per_warp']:,} a warp "
                               f"of {REGISTERS_PER_SM // SUB_PARTITIONS:,} per SM sub-partition)")
            elif name == "shared":
                reasons.append(f"shared memory ({detail['shared_bytes']:,} B/block + {RESERVED_SHARED:,} B the driver "
                               f"reserves, of {detail['shared_per_sm']:,} B/SM)")
            elif name == "warps":
                reasons.append(f"warps per SM ({detail['num_warps']} a block, of {detail['max_warps']})")
            else:
                reasons.append(f"blocks per SM (at most {detail['max_blocks']})")
        return {"by": by, "names": " and ".join(LIMIT_NAMES[name] for name in by), "why": " and ".join(reasons),
                "result": f"{_plural(blocks, 'block')}/SM ({_plural(detail['warps_per_sm'], 'warp')})",
                "unit": "warps per SM"}
    if detail and "waves_per_simd" in detail:
        by, waves = detail["limited_by"], detail["waves_per_simd"]
        reasons = []
        for name in by:
            if name == "vgprs":
                reasons.append(f"VGPRs ({detail['vgprs']} a lane, allocated in {detail['vgpr_unit']}s, "
                               f"of {detail['vgpr_file']})")
            elif name == "lds":
                reasons.append(f"LDS ({detail['lds_bytes']:,} B/workgroup of {detail['lds_per_cu']:,} B/CU, "
                               f"{detail['num_warps']} waves a workgroup over {SIMDS_PER_CU} SIMDs)")
            else:
                reasons.append(f"waves per SIMD (at most {detail['max_waves']})")
        result = f"{_plural(waves, 'wave')}/SIMD"
        if not by:
            return {"by": [], "names": "the compiler's count", "result": result, "unit": "waves per SIMD",
                    "why": f"the compiler's count (VGPRs and LDS would allow {detail['computed']})"}
        return {"by": by, "names": " and ".join(LIMIT_NAMES[name] for name in by), "why": " and ".join(reasons),
                "result": result, "unit": "waves per SIMD"}
    if resources.get("occupancy") is not None:
        unit = resources.get("occupancy_unit") or ""
        return {"by": [], "names": "not known", "why": "not known for this target",
                "result": f"{resources['occupancy']} {unit}".strip(), "unit": unit}
    return None


def _amdgcn_on_demand(session: Session, compilation: Compilation) -> dict | None:
    digest = session.scalar(select(Artifact.blob).where(Artifact.compilation_pk == compilation.pk,
                                                         Artifact.kind == "amdgcn").limit(1))
    if digest is None:
        return None
    from app import render  # here: `irlens ingest`'s summary reads resources, and needs no lexers

    text = render.blob_reader.text(session, digest) or ""
    found = amdgcn_resources(text)
    return {"source": "amdgcn", **found} if found else None


def compilation_resources(compilation: Compilation, session: Session | None = None) -> dict[str, Any] | None:
    """registers, local_bytes (per thread), shared_bytes (per block: dynamic + static), occupancy and the
    details behind them; None when neither a binary nor an .amdgcn told them."""
    stored = compilation.resources
    if stored is None and session is not None and (compilation.target or "").startswith("hip"):
        stored = _amdgcn_on_demand(session, compilation)
    if not stored or stored.get("problem") and "registers" not in stored:
        return None
    metadata = compilation.metadata_json or {}
    dynamic = compilation.shared if compilation.shared is not None else metadata.get("shared") or 0
    if stored.get("source") == "amdgcn":
        vgpr_spills, sgpr_spills = stored.get("vgpr_spills") or 0, stored.get("sgpr_spills") or 0
        local = stored.get("scratch_bytes") or 0
        amd: dict[str, Any] = {
            "source": "amdgcn", "registers": stored.get("vgprs"), "vgprs": stored.get("vgprs"),
            "sgprs": stored.get("sgprs"), "agprs": stored.get("agprs"), "vgpr_spills": vgpr_spills,
            "sgpr_spills": sgpr_spills, "local_bytes": local,
            "shared_bytes": max(dynamic, stored.get("lds_static") or 0),
            "occupancy": stored.get("occupancy"), "occupancy_unit": "waves per SIMD",
            "spills": bool(vgpr_spills or sgpr_spills or local),
        }
        warps = compilation.num_warps or metadata.get("num_warps")
        detail = amd_occupancy((compilation.target or "").partition(":")[2] or None, stored.get("vgprs"),
                               amd["shared_bytes"], warps if isinstance(warps, int) else None, stored.get("occupancy"))
        if detail is not None:
            amd["occupancy_detail"] = detail
            amd["compiler_occupancy"] = stored.get("occupancy")
            amd["occupancy"] = detail["waves_per_simd"]
        amd["limiter"] = limiter(amd)
        return amd
    # On sm80 and later the kernel's .nv.shared section (cuobjdump's SHARED) holds the driver's reserved
    # 1 KB: ncu reports that 1 KB as "Driver Shared Memory Per Block" and 0 static for such a kernel. So
    # the static shared is what is beyond it, and the occupancy adds the reserved KB once.
    arch = cuda_arch(compilation.target)
    in_section = stored.get("shared_static") or 0
    reserved = min(in_section, RESERVED_SHARED) if arch is not None and arch >= 80 else 0
    static = in_section - reserved
    registers = stored.get("registers")
    out: dict[str, Any] = {
        "source": "cubin", "registers": registers, "local_bytes": stored.get("local_bytes") or 0,
        "stack": stored.get("stack") or 0, "local": stored.get("local") or 0,
        "shared_bytes": dynamic + static, "shared_dynamic": dynamic, "shared_static": static,
        "shared_reserved": reserved,
        "occupancy": None, "occupancy_unit": "warps per SM",
        "spills": bool(stored.get("local_bytes")),
    }
    tmem = metadata.get("tmem_size")
    if isinstance(tmem, int) and tmem:
        out["tmem"] = tmem
    warps = compilation.num_warps or metadata.get("num_warps")
    if arch is not None and isinstance(warps, int):
        detail = nvidia_occupancy(arch, registers, dynamic + static, warps)
        if detail is not None:
            out["occupancy"] = detail["warps_per_sm"]
            out["occupancy_detail"] = detail
    out["limiter"] = limiter(out)
    return out


def resources_line(resources: dict | None) -> str:
    """One line for a table cell: "205 regs · 0 B local · 1 block/SM (8 warps), limited by registers"."""
    if not resources:
        return ""
    parts = []
    if resources.get("registers") is not None:
        parts.append(f"{resources['registers']} regs")
    parts.append(f"{resources.get('local_bytes') or 0} B local")
    found = resources.get("limiter") or limiter(resources)
    if found:
        parts.append(f"{found['result']}, limited by {found['names']}" if found["by"] else found["result"])
    return " · ".join(parts)


def resource_counts(compilation: Compilation, session: Session | None = None) -> dict[str, int]:
    """The numbers of the compare page's "registers (A / B)" column: registers, local bytes, occupancy
    (the binary's or the .amdgcn's own counts, as on the compilation page)."""
    found = compilation_resources(compilation, session) or {}
    keys = ("registers", "local_bytes", "occupancy", "sgprs", "agprs", "vgpr_spills", "sgpr_spills")
    return {key: found[key] for key in keys if isinstance(found.get(key), int)}
