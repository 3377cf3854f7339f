"""Tiles held by box geoms (``geometry: boxes``): vertical risers where a height field can only hold ramps.

A height field joins two samples by a triangle, so a 0.15 m stair riser over a 0.1 m sample is a 56-degree ramp,
where a foot slips. A box tile keeps the same heights (``TerrainMap.heights``: what the scan reads and the
curriculum judges) but stands them up as boxes: each sample inside the tile owns the square of ground nearest to it
(one sample spacing wide, centred on it), and the squares are merged into rectangles, one box geom each: of equal
height, or stacked (``tile_boxes``; a 5-step pyramid: 6 boxes, the pit of ``inverted`` stairs: 21). Under the boxes
the height field is sunk (each sample to the lowest of its 3 x 3 neighbourhood, ``BOX_CLEARANCE`` lower), so its
ramps never reach above a box top and the robot touches the boxes alone. The tile's outer ring of samples stays
height field: the boxes never leave their tile.
"""

from __future__ import annotations

import numpy as np

BOX_CLEARANCE = 0.005
"""Metres the height field lies below the box tops of a box tile (no contact with both at once)."""
BOX_DEPTH = 0.1
"""Metres each box reaches below the sunk height field beneath its tile (no gap under a box)."""
MAX_BOXES_PER_TILE = 256
"""More than this and the tile is not stepped (a slope or noise would need a box per sample)."""


def rectangles(mask: np.ndarray) -> list[tuple[int, int, int, int]]:
    """A cover of the true cells of a 2-D mask by rectangles ``(r0, r1, c0, c1)`` (inclusive), no two overlapping:
    greedy, each uncovered cell (in row-major order) grows right, then down while the whole row span is true."""
    rows, cols = mask.shape
    free = mask.copy()
    found = []
    for r in range(rows):
        for c in np.flatnonzero(free[r]).tolist():
            if not free[r, c]:  # taken by a rectangle started earlier in this row
                continue
            c1 = c
            while c1 + 1 < cols and free[r, c1 + 1]:
                c1 += 1
            r1 = r
            while r1 + 1 < rows and free[r1 + 1, c : c1 + 1].all():
                r1 += 1
            free[r : r1 + 1, c : c1 + 1] = False
            found.append((r, r1, c, c1))
    return found


def tile_boxes(tile: np.ndarray, key: str, func_name: str) -> list[tuple[int, int, int, int, float]]:
    """Boxes ``(r0, r1, c0, c1, top)`` over one tile's inner samples (its outer ring excluded) whose union is the
    tile's ground: the fewer of two exact covers, the flat patches (each patch of one height a box) and the stacked
    slabs (for each height, a box wherever the ground is at least that high: a pyramid's squares are one box each,
    6 for a 5-step flight, where its rings of patches take 21). Refused when there are too many."""
    inner = tile[1:-1, 1:-1]
    levels = np.unique(inner).tolist()
    patches = [(*rect, top) for top in levels for rect in rectangles(inner == top)]
    slabs = [(*rect, top) for top in levels for rect in rectangles(inner >= top)]
    boxes = min(patches, slabs, key=len)
    if len(boxes) > MAX_BOXES_PER_TILE:
        raise ValueError(
            f"{key}.geometry='boxes': a tile of {func_name} needs {len(boxes)} boxes (at most "
            f"{MAX_BOXES_PER_TILE}): boxes suit stepped tiles such as stairs; use geometry='heightfield' for this type"
        )
    return boxes


def sink_under_boxes(heights: np.ndarray, inner: np.ndarray, radius: int = 1) -> np.ndarray:
    """The height field beneath box tiles: at each sample of ``inner`` (bool, like ``heights``) the lowest height
    within ``radius`` samples (a 3 x 3 neighbourhood for 1) less ``BOX_CLEARANCE``; elsewhere ``heights``. A
    triangle of the sunk field, sampled every ``radius`` samples or finer, then stays below every box top it lies
    under."""
    window = 2 * radius + 1
    padded = np.pad(heights, radius, mode="edge")
    lowest = np.lib.stride_tricks.sliding_window_view(padded, (window, window)).min(axis=(-2, -1))
    return np.where(inner, lowest - BOX_CLEARANCE, heights)


def box_geoms(
    boxes: list[tuple[int, int, int, int, float]],
    field: np.ndarray,
    offset: tuple[int, int],
    tile_shape: tuple[int, int],
    spacing: float,
    origin: tuple[float, float],
) -> np.ndarray:
    """(len(boxes), 6) box geoms ``(x, y, z, half_x, half_y, half_z)``, world frame, of one tile's boxes (indices of
    its inner samples; the tile's corner sample at ``offset`` (row, col) of the map): each covers its samples'
    squares and reaches from ``BOX_DEPTH`` under the tile's sunk field up to its top."""
    r0, c0 = offset
    rows, cols = tile_shape
    bottom = float(field[r0 : r0 + rows, c0 : c0 + cols].min()) - BOX_DEPTH
    x0, y0 = origin
    geoms = np.empty((len(boxes), 6), dtype=np.float64)
    for i, (br0, br1, bc0, bc1, top) in enumerate(boxes):
        centre_col, centre_row = c0 + 1 + (bc0 + bc1) / 2, r0 + 1 + (br0 + br1) / 2
        geoms[i] = (
            x0 + centre_col * spacing,
            y0 + centre_row * spacing,
            (top + bottom) / 2,
            (bc1 - bc0 + 1) * spacing / 2,
            (br1 - br0 + 1) * spacing / 2,
            (top - bottom) / 2,
        )
    return geoms
