"""The terrain on the env's device: heights looked up in batch, and each env's tile (its level and type).

``height_at`` interpolates the height field over the same triangles MuJoCo builds from it (each cell split along
the diagonal from its (row, col) corner to its (row + 1, col + 1) corner) and, on a box tile, takes the top of the
box over the point (the square nearest a sample, at the sample's height), so a height read here is the ground the
physics stands on (``tests/test_terrain.py`` checks it against MuJoCo's ray casts). All of it is torch on the
device: the height scan and the curriculum never wait for the host.
"""

from __future__ import annotations

import torch

from robolab.terrains.generator import TerrainMap


class TerrainField:
    """The terrain on the device: each env's tile, level and origin, the curriculum's moves, and the height map the
    scan reads."""

    def __init__(
        self, terrain: TerrainMap, num_envs: int, device: torch.device, generator: torch.Generator, max_init_level: int
    ):
        self.map = terrain
        self.device = device
        self.heights = torch.as_tensor(terrain.heights, device=device)
        self._field = torch.as_tensor(terrain.field_heights, device=device)
        # Box tops where a box stands, -inf elsewhere (None without box tiles: the height field alone).
        stepped = torch.as_tensor(terrain.stepped, device=device)
        self._box_tops = torch.where(stepped, self.heights, float("-inf")) if terrain.stepped.any() else None
        self.spacing = terrain.spacing
        self._origin = torch.tensor(terrain.origin, device=device)
        self._max_index = torch.tensor([self.heights.shape[1] - 2, self.heights.shape[0] - 2], device=device)
        self.tile_origins = torch.as_tensor(terrain.tile_origins, device=device)
        self.num_rows, self.num_cols = terrain.tile_origins.shape[:2]
        self.type_names = list(terrain.type_names)
        # Columns in blocks (env i on column i * cols // n), levels drawn up to max_init_level.
        self.types = torch.arange(num_envs, device=device) * self.num_cols // num_envs
        top = min(max_init_level, self.num_rows - 1)
        self.levels = torch.randint(0, top + 1, (num_envs,), generator=generator, device=device)
        self.level_type_names = list(dict.fromkeys(self.type_names))
        """The distinct types, in column order (the curriculum logs a mean level per type)."""
        self._column_type = torch.tensor([self.level_type_names.index(n) for n in self.type_names], device=device)
        self._type_counts = torch.bincount(self._column_type[self.types], minlength=len(self.level_type_names))
        self._nan = torch.full((len(self.level_type_names),), float("nan"), device=device)

    @property
    def env_origins(self) -> torch.Tensor:
        """(num_envs, 3) the centre of each env's tile, on its ground."""
        return self.tile_origins[self.levels, self.types]

    def height_at(self, xy: torch.Tensor) -> torch.Tensor:
        """Ground height (m) under world points ``xy`` (..., 2); points off the map take the nearest edge cell."""
        uv = (xy - self._origin) / self.spacing
        cell = torch.minimum(uv.floor().clamp_min(0), self._max_index)
        f = (uv - cell).clamp(0.0, 1.0)
        c0, r0 = cell[..., 0].long(), cell[..., 1].long()
        h = self._field
        h00, h01 = h[r0, c0], h[r0, c0 + 1]
        h10, h11 = h[r0 + 1, c0], h[r0 + 1, c0 + 1]
        fu, fv = f[..., 0], f[..., 1]
        below = fu >= fv  # the triangle (00, 01, 11), else (00, 10, 11)
        ground = torch.where(
            below, h00 + fu * (h01 - h00) + fv * (h11 - h01), h00 + fv * (h10 - h00) + fu * (h11 - h10)
        )
        if self._box_tops is None:
            return ground
        # the sample nearest the point owns the box square it lies in
        nearest = torch.minimum(uv.round().clamp_min(0), self._max_index + 1).long()
        return torch.maximum(ground, self._box_tops[nearest[..., 1], nearest[..., 0]])

    def mean_level_by_type(self) -> torch.Tensor:
        """(types,) mean level of the envs on each type of ``level_type_names``, NaN for a type with no env here."""
        sums = self.sum_by_type(self.levels)
        return torch.where(self._type_counts > 0, sums / self._type_counts.clamp_min(1), self._nan)

    def sum_by_type(self, values: torch.Tensor) -> torch.Tensor:
        """(types,) the sum of a per-env value (a mask counts its envs) over each type of ``level_type_names``."""
        env_type = self._column_type[self.types]
        return torch.zeros(len(self.level_type_names), device=self.device).index_add_(0, env_type, values.float())

    # --- checkpoints ----------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"levels": self.levels.clone()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Levels saved by a run of any size: resumed as saved when the env counts match, else each env takes the
        level of the saved env at its relative position (the level distribution is kept)."""
        levels = state["levels"].to(self.device).long().clamp(0, self.num_rows - 1)
        n = self.levels.shape[0]
        if levels.shape[0] != n:
            levels = levels[torch.arange(n, device=self.device) * levels.shape[0] // n]
        self.levels = levels
