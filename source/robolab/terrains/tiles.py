"""Tile height functions: one function per terrain type, ``func(rng, difficulty, x, y, **params) -> heights``.

``x`` and ``y`` are (ny, nx) arrays of the tile's vertex coordinates in metres, from 0 to the tile's size; the
function returns the ground height at each vertex (metres, float). ``difficulty`` runs from 0 (the first row of the
grid) to 1 (the last): a parameter given as a ``(low, high)`` range takes the value ``low + difficulty * (high -
low)``. ``rng`` is the tile's own ``numpy.random.Generator`` (seeded from the terrain seed, row and column), so a
tile is the same wherever and whenever it is generated.

A user's own type is any function of this shape (``func: mypkg.terrain:ridges`` in ``env.terrain.types``).
Every pyramid keeps its outer edge at height 0, so neighbouring tiles meet without a step.
"""

from __future__ import annotations

import math

import numpy as np

from robolab.envs.terms import check_range


def lerp(value_range, difficulty: float, key: str, low_bound: float | None = 0.0) -> float:
    """The value of ``value_range`` at ``difficulty`` in [0, 1] (the range checked, naming ``key``)."""
    low, high = check_range(key, value_range, low_bound=low_bound)
    return low + difficulty * (high - low)


def _edge_distance(
    x: np.ndarray, y: np.ndarray, platform_width: float, border_width: float = 0.0
) -> tuple[np.ndarray, float]:
    """Each vertex's distance inwards from a flat ring ``border_width`` wide along the tile's edges (0 on the ring),
    and the distance at which the central platform starts."""
    size_x, size_y = float(x.max()), float(y.max())
    size = min(size_x, size_y)
    if border_width < 0:
        raise ValueError(f"border_width={border_width}: must be >= 0")
    if not 0 <= platform_width < size - 2 * border_width:
        raise ValueError(
            f"platform_width={platform_width}, border_width={border_width}: the platform must be >= 0 and smaller "
            f"than the tile ({size:g} m) less two borders"
        )
    distance = np.minimum.reduce([x, size_x - x, y, size_y - y]) - border_width
    return np.maximum(distance, 0.0), (size - platform_width) / 2 - border_width


def flat(rng: np.random.Generator, difficulty: float, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Level ground."""
    return np.zeros_like(x)


def random_rough(
    rng: np.random.Generator,
    difficulty: float,
    x: np.ndarray,
    y: np.ndarray,
    amplitude_range: tuple[float, float] = (0.02, 0.10),
    step: float = 0.005,
    downsampled_scale: float = 0.2,
) -> np.ndarray:
    """Uniform noise heights in [0, amplitude], drawn on a grid of ``downsampled_scale`` metres and interpolated
    between (bumps a foot can stand on), rounded to ``step``."""
    amplitude = lerp(amplitude_range, difficulty, "amplitude_range")
    if step <= 0 or downsampled_scale <= 0:
        raise ValueError(f"step={step}, downsampled_scale={downsampled_scale}: both must be > 0")
    levels = max(int(amplitude / step), 0)
    size_x, size_y = float(x.max()), float(y.max())
    nx, ny = math.ceil(size_x / downsampled_scale) + 1, math.ceil(size_y / downsampled_scale) + 1
    coarse = rng.integers(0, levels + 1, size=(ny, nx)) * step
    # Bilinear interpolation of the coarse grid at every vertex.
    u, v = x / downsampled_scale, y / downsampled_scale
    c0, r0 = np.minimum(u.astype(int), nx - 2), np.minimum(v.astype(int), ny - 2)
    fu, fv = u - c0, v - r0
    top = coarse[r0, c0] * (1 - fu) + coarse[r0, c0 + 1] * fu
    bottom = coarse[r0 + 1, c0] * (1 - fu) + coarse[r0 + 1, c0 + 1] * fu
    return top * (1 - fv) + bottom * fv


def pyramid_slope(
    rng: np.random.Generator,
    difficulty: float,
    x: np.ndarray,
    y: np.ndarray,
    slope_deg_range: tuple[float, float] = (0.0, 25.0),
    platform_width: float = 2.0,
    border_width: float = 0.25,
    inverted: bool = False,
) -> np.ndarray:
    """Four slopes of ``slope_deg`` rising from a flat ring ``border_width`` wide along the tile's edges to a flat
    central platform (``inverted``: falling to a pit, so a robot leaving the centre walks up). Isaac Lab's pyramid
    slope: a 2 m platform, a 0.25 m border."""
    slope = lerp(slope_deg_range, difficulty, "slope_deg_range")
    if slope >= 90:
        raise ValueError(f"slope_deg_range={list(slope_deg_range)}: a slope must be under 90 degrees")
    distance, platform_at = _edge_distance(x, y, platform_width, border_width)
    height = math.tan(math.radians(slope)) * np.minimum(distance, platform_at)
    return -height if inverted else height


def pyramid_stairs(
    rng: np.random.Generator,
    difficulty: float,
    x: np.ndarray,
    y: np.ndarray,
    step_height_range: tuple[float, float] = (0.05, 0.20),
    step_width: float = 0.3,
    platform_width: float = 3.0,
    border_width: float = 1.0,
    inverted: bool = False,
) -> np.ndarray:
    """Square rings of steps ``step_width`` wide and ``step_height`` high from a flat ring ``border_width`` wide
    along the tile's edges up to a central platform (``inverted``: down to it, so a robot leaving the centre
    climbs). Isaac Lab's pyramid stairs: 0.3 m steps, a 3 m platform, a 1 m border: 5 steps a flight on 8 m tiles."""
    step_height = lerp(step_height_range, difficulty, "step_height_range")
    if step_width <= 0:
        raise ValueError(f"step_width={step_width}: must be > 0")
    distance, platform_at = _edge_distance(x, y, platform_width, border_width)
    # a riser every step_width inwards from the border (1e-9: 1.5 m / 0.3 m is 5 steps, not 4.999...)
    steps = np.floor(np.minimum(distance, platform_at) / step_width + 1e-9)
    height = steps * step_height
    return -height if inverted else height


def discrete_obstacles(
    rng: np.random.Generator,
    difficulty: float,
    x: np.ndarray,
    y: np.ndarray,
    height_range: tuple[float, float] = (0.05, 0.20),
    width_range: tuple[float, float] = (0.25, 0.75),
    count: int = 30,
    platform_width: float = 2.0,
    both_signs: bool = True,
) -> np.ndarray:
    """``count`` rectangular boxes of random widths in ``width_range`` (m) and the height of this difficulty,
    raised (or, with ``both_signs``, raised or sunk at random) around a flat central platform."""
    height = lerp(height_range, difficulty, "height_range")
    w_lo, w_hi = check_range("width_range", width_range, low_bound=0.0)
    if count < 0:
        raise ValueError(f"count={count}: must be >= 0")
    size_x, size_y = float(x.max()), float(y.max())
    heights = np.zeros_like(x)
    for _ in range(count):
        wx, wy = rng.uniform(w_lo, w_hi, size=2)
        cx, cy = rng.uniform(0, size_x), rng.uniform(0, size_y)
        sign = rng.choice((-1.0, 1.0)) if both_signs else 1.0
        inside = (np.abs(x - cx) <= wx / 2) & (np.abs(y - cy) <= wy / 2)
        heights[inside] = sign * height
    distance, platform_at = _edge_distance(x, y, platform_width)
    heights[distance >= platform_at] = 0.0  # the robot starts on level ground
    return heights
