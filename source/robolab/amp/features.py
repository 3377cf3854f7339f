"""The AMP state: one definition shared by the env (policy transitions) and the motion clips (expert ones)."""

from __future__ import annotations

import torch

AMP_TERMS = ("joint_pos", "joint_vel", "base_lin_vel", "base_ang_vel", "foot_pos")
"""Available terms, in the order they are concatenated. Velocities and foot positions are in the base frame."""


def check_terms(terms: list[str] | tuple[str, ...]) -> None:
    """Refuse AMP state terms that are unknown or an empty list, in one line naming ``env.amp_terms``."""
    unknown = [t for t in terms if t not in AMP_TERMS]
    if unknown or not terms:
        raise ValueError(f"env.amp_terms={list(terms)}: choose a non-empty subset of {list(AMP_TERMS)}")


def amp_features(terms, **quantities: torch.Tensor) -> torch.Tensor:
    """Concatenate the chosen terms (each (..., k) or foot_pos (..., feet, 3)) in ``AMP_TERMS`` order."""
    check_terms(terms)
    parts = []
    for term in AMP_TERMS:
        if term in terms:
            x = quantities[term]
            parts.append(x.flatten(-2) if term == "foot_pos" else x)
    return torch.cat(parts, dim=-1)
