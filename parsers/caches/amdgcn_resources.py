"""What an AMDGCN assembly file (Triton's ``.amdgcn`` cache file) says about its kernel's resources.

Two places hold them and both are read: the HSA metadata note (YAML between ``.amdgpu_metadata`` and
``.end_amdgpu_metadata``: ``.vgpr_count``, ``.sgpr_count``, ``.agpr_count``, ``.vgpr_spill_count``,
``.sgpr_spill_count``, ``.private_segment_fixed_size`` (scratch bytes per lane),
``.group_segment_fixed_size`` (static LDS)), and the compiler's own comments after the function
(``; Occupancy: N`` waves per SIMD, ``; ScratchSize: N``). The occupancy is the compiler's, not
recomputed: it knows the target's limits and the launch bounds it compiled for.
"""

from __future__ import annotations

import re

_META = re.compile(
    r"^\s*(?:-\s+)?\.(vgpr_count|sgpr_count|agpr_count|vgpr_spill_count|sgpr_spill_count|"
    r"private_segment_fixed_size|group_segment_fixed_size):\s+(\d+)\s*$", re.MULTILINE)
_COMMENT = re.compile(r"^; (Occupancy|ScratchSize|NumVgprs|NumAgprs|NumSgprs|TotalNumVgprs|LDSByteSize):\s+(\d+)",
                      re.MULTILINE)


def amdgcn_resources(text: str) -> dict[str, int]:
    """Keys: vgprs, sgprs, agprs, vgpr_spills, sgpr_spills, scratch_bytes, lds_static, occupancy (waves
    per SIMD). The first kernel's values (a Triton .amdgcn holds one kernel); {} when none are there."""
    found: dict[str, int] = {}
    names = {"vgpr_count": "vgprs", "sgpr_count": "sgprs", "agpr_count": "agprs", "vgpr_spill_count": "vgpr_spills",
             "sgpr_spill_count": "sgpr_spills", "private_segment_fixed_size": "scratch_bytes",
             "group_segment_fixed_size": "lds_static"}
    start = text.find(".amdgpu_metadata")
    if start >= 0:
        for key, value in _META.findall(text, start):
            found.setdefault(names[key], int(value))
    comments = {"Occupancy": "occupancy", "ScratchSize": "scratch_bytes", "NumAgprs": "agprs",
                "NumSgprs": "sgprs", "TotalNumVgprs": "vgprs", "LDSByteSize": "lds_static"}
    for key, value in _COMMENT.findall(text):
        if key in comments:
            found.setdefault(comments[key], int(value))
    return found
