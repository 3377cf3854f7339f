"""robolab's Hydra config tree, shipped as package data (``robolab.hydra_configs``); see ``robolab.config``."""
