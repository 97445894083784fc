"""The resources of one compilation as the pages show them: registers, local (spill) bytes, shared
memory and occupancy, from what ingest stored (`compilations.resources`, read from the cubin or the
.amdgcn while it streamed by: the binary itself is not kept, so this could not be computed later)
and the metadata (dynamic shared memory, num_warps, tmem).

NVIDIA occupancy is the resident warps per SM that the CUDA occupancy calculator gives for these
registers, this shared memory and num_warps, with the target's limits (LIMITS; the formula is in
docs/resources.md). It is computed here when shown, not stored, so a corrected limit applies to old
runs too. AMD occupancy is the compiler's own (``; Occupancy:`` in the .amdgcn, waves per SIMD).
Runs ingested before the resources were stored get AMD numbers from the stored .amdgcn on demand.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app import render
from app.store.models import Artifact, Compilation
from parsers.caches.amdgcn_resources import amdgcn_resources

REGISTERS_PER_SM = 65536
REGISTER_UNIT = 256  # registers are allocated per warp in units of 256
SHARED_UNIT = 128  # shared memory is allocated per block in units of 128 bytes
RESERVED_SHARED = 1024  # the driver's shared memory reserved per block (sm80 and later)


@dataclass(frozen=True)
class Limits:
    max_warps: int  # resident warps per SM
    max_blocks: int  # resident blocks per SM
    shared_per_sm: int  # bytes of shared memory an SM can give blocks (with the reserved KB of each)


# CUDA C Programming Guide, "Technical Specifications per Compute Capability".
LIMITS = {
    80: Limits(64, 32, 167936),
    86: Limits(48, 16, 102400),
    87: Limits(48, 16, 167936),
    89: Limits(48, 24, 102400),
    90: Limits(64, 32, 233472),
    100: Limits(64, 32, 233472),
    103: Limits(64, 32, 233472),
    120: Limits(48, 32, 102400),
}


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


def nvidia_occupancy(arch: int, registers: int | None, shared_bytes: int, num_warps: int) -> dict[str, Any] | None:
    """Resident blocks and warps per SM, and what limits them (docs/resources.md)."""
    limits = limits_for(arch)
    if limits is None or num_warps <= 0:
        return None
    bounds: dict[str, int] = {"warps": limits.max_warps // num_warps, "blocks": limits.max_blocks}
    if registers:
        per_warp = _round_up(registers * 32, REGISTER_UNIT)
        bounds["registers"] = (REGISTERS_PER_SM // per_warp) // num_warps
    per_block = _round_up(shared_bytes, SHARED_UNIT) + RESERVED_SHARED
    bounds["shared"] = limits.shared_per_sm // per_block
    blocks = min(bounds.values())
    limited_by = [name for name, value in bounds.items() if value == blocks]
    return {"blocks_per_sm": blocks, "warps_per_sm": blocks * num_warps, "max_warps": limits.max_warps,
            "percent": round(100 * blocks * num_warps / limits.max_warps, 1), "limited_by": limited_by,
            "bounds": bounds}


def _amdgcn_on_demand(session: Session, compilation: Compilation) -> dict | None:
    digest = session.scalar(select(Artifact.blob).where(Artifact.compilation_pk == compilation.pk,
                                                         Artifact.kind == "amdgcn").limit(1))
    if digest is None:
        return None
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
        return {
            "source": "amdgcn", "registers": stored.get("vgprs"), "vgprs": stored.get("vgprs"),
            "sgprs": stored.get("sgprs"), "agprs": stored.get("agprs"), "vgpr_spills": vgpr_spills,
            "sgpr_spills": sgpr_spills, "local_bytes": local,
            "shared_bytes": max(dynamic, stored.get("lds_static") or 0),
            "occupancy": stored.get("occupancy"), "occupancy_unit": "waves per SIMD (the compiler's)",
            "spills": bool(vgpr_spills or sgpr_spills or local),
        }
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
    return out


def resources_line(resources: dict | None) -> str:
    """One line for a table cell: "205 regs · 0 B local · 1 block/SM (8 warps)"."""
    if not resources:
        return ""
    parts = []
    if resources.get("registers") is not None:
        parts.append(f"{resources['registers']} regs")
    parts.append(f"{resources.get('local_bytes') or 0} B local")
    detail = resources.get("occupancy_detail")
    if detail:
        blocks = detail["blocks_per_sm"]
        parts.append(f"{blocks} block{'s' if blocks != 1 else ''}/SM ({detail['warps_per_sm']} warps)")
    elif resources.get("occupancy") is not None:
        parts.append(f"occupancy {resources['occupancy']}")
    return " · ".join(parts)


def resource_counts(compilation: Compilation, session: Session | None = None) -> dict[str, int]:
    """The numbers of the compare page's "registers (A / B)" column: registers, local bytes, occupancy
    (the binary's or the .amdgcn's own counts, as on the compilation page)."""
    found = compilation_resources(compilation, session) or {}
    keys = ("registers", "local_bytes", "occupancy", "sgprs", "agprs", "vgpr_spills", "sgpr_spills")
    return {key: found[key] for key in keys if isinstance(found.get(key), int)}
