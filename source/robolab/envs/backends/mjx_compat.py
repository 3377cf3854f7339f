"""MJX internals robolab needs, in one version-checked place.

MJX has no body-matched net-force contact sensor, so the mjx backend sums contact forces per body itself. That
needs two things MJX keeps private: the contact list of a step (``Data._impl.contact``) and the force of each
contact in its frame (``mujoco.mjx._src.support.contact_force_dim``). Both are looked up here once, at import,
and a MuJoCo that moved them fails with one message naming what is missing and the versions this was checked
with, instead of an AttributeError inside a compiled step.
"""

from __future__ import annotations

import mujoco
from mujoco import mjx

CHECKED_WITH = "mujoco 3.3-4.0, mujoco-mjx 3.17"

try:
    from mujoco.mjx._src.support import contact_force_dim as _contact_force_dim
except ImportError as err:  # pragma: no cover - depends on the installed MuJoCo
    raise ImportError(
        f"mujoco {mujoco.__version__}: mujoco.mjx._src.support.contact_force_dim is gone ({err}); robolab's mjx "
        f"backend was checked with {CHECKED_WITH}"
    ) from None


def contacts(data: mjx.Data):
    """The contact list of ``data`` (geom pairs, frames, dims) as MJX's JAX implementation keeps it."""
    impl = getattr(data, "_impl", None)
    contact = getattr(impl, "contact", None)
    if contact is None:
        raise ImportError(
            f"mujoco {mujoco.__version__}: mjx.Data has no _impl.contact; robolab's mjx backend was checked with "
            f"{CHECKED_WITH}"
        )
    return contact


def contact_force_dim(model: mjx.Model, data: mjx.Data, dim: int):
    """(forces in the contact frame, contact indices) of the contacts with ``dim`` dimensions."""
    return _contact_force_dim(model, data, dim)
