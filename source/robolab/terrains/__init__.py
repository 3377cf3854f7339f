"""Generated terrain: tile height functions, the grid generator, the MuJoCo height field and the device-side map."""

from robolab.terrains.config import TerrainCfg, TerrainTypeCfg, rough_terrain_types
from robolab.terrains.generator import TerrainMap, generate

__all__ = ["TerrainCfg", "TerrainMap", "TerrainTypeCfg", "generate", "rough_terrain_types"]
