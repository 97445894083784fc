"""Phrases the layout explanations share: counts, shapes, tiles, parents, linear bases."""

from __future__ import annotations

from app.highlight.layout_params import Context


def counted(count: int, noun: str, plural: str | None = None) -> str:
    return f"{count} {noun if count == 1 else (plural or noun + 's')}"


def dims_text(values: list[int]) -> str:
    """[4, 1] → '4 along dim 0, 1 along dim 1'."""
    return ", ".join(f"{value} along dim {dim}" for dim, value in enumerate(values))


def shape_text(values: list[int]) -> str:
    return "×".join(str(value) for value in values)


def tile_text(values: list[int]) -> str:
    """[32, 64] → 'a 32×64 tile'; [128] → '128 elements'."""
    if len(values) == 1:
        return counted(values[0], "element")
    return f"a {shape_text(values)} tile"


def verb(count: int, singular: str, plural: str) -> str:
    return singular if count == 1 else plural


def fastest_dim(context: Context, rank: int) -> int:
    order = context.ints("order")
    if order and 0 <= order[0] < rank:
        return order[0]
    return rank - 1


def parent_text(value: str, context: Context) -> str:
    alias = value.lstrip("#")
    target = context.aliases.get(alias)
    if target is not None:
        return f"{value} ({target.kind}: {target.summary})"
    if value.startswith("#") and "." in value.split("<")[0]:
        return f"the inline {value.split('<')[0].split('.', 1)[1]} layout"
    return value


def bases_text(name: str, bases: list[list[int]]) -> str:
    if not bases:
        return f"no {name} bits: a single {name}" if name != "block" else "a single CTA (no block bits)"
    count = 2 ** len(bases)
    noun = {
        "register": "registers per thread",
        "lane": "lanes per warp",
        "warp": "warps",
        "block": "CTAs",
        "offset": "shared-memory offsets",
    }.get(name, f"values of {name}")
    moves = ", ".join(
        f"{'bit' if index else name + ' bit'} {index} moves to {base}"
        + (" (a broadcast: no new elements)" if not any(base) else "")
        for index, base in enumerate(bases)
    )
    return f"{count} {noun}; {moves}"


def linear_tile(bases_by_name: dict[str, list[list[int]]]) -> list[int] | None:
    all_bases = [base for bases in bases_by_name.values() for base in bases]
    if not all_bases:
        return None
    rank = max(len(base) for base in all_bases)
    tile = []
    for dim in range(rank):
        combined = 0
        for base in all_bases:
            if dim < len(base):
                combined |= base[dim]
        tile.append(combined + 1)
    return tile
