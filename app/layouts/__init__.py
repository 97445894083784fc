"""Triton's layout algebra in plain Python: encoding text -> linear layout -> who holds what.

Follows Triton 3.9 (include/triton/Tools/LinearLayout.h and
lib/Dialect/TritonGPU/IR/LinearLayoutConversions.cpp); checked element by element
against Triton 3.9's own ``to_linear_layout`` in tests/test_layouts_triton.py.
No Triton import at run time.

Pure: imports only `parsers/` and itself; no database, no web.
"""

from app.layouts.convert import to_linear_layout
from app.layouts.errors import LayoutError
from app.layouts.linear import LinearLayout

__all__ = ["LayoutError", "LinearLayout", "to_linear_layout"]
