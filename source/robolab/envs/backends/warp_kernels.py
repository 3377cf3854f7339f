"""The warp kernels of the warp backend's step (``warp_backend.py``): they run inside its CUDA graph.

Warp reads these functions' annotations as kernel types (``wp.array2d(dtype=float)``), which Python type checkers
cannot follow; their checks are off for this file alone.
"""

# pyright: reportInvalidTypeForm=false, reportCallIssue=false, reportArgumentType=false
# pyright: reportAssignmentType=false, reportGeneralTypeIssues=false

import warp as wp


@wp.kernel
def track_contact_peaks(
    sensordata: wp.array2d(dtype=float),
    sensor_adr: wp.array(dtype=int),
    first: int,
    peak: wp.array2d(dtype=float),
    non_finite: wp.array(dtype=wp.bool),
):
    """After one physics step: the running peak of each contact sensor's force norm (world, sensor)."""
    world, k = wp.tid()
    adr = sensor_adr[k]
    norm = wp.length(wp.vec3(sensordata[world, adr], sensordata[world, adr + 1], sensordata[world, adr + 2]))
    if not wp.isfinite(norm):
        non_finite[world] = True
    if first != 0:
        peak[world, k] = norm
    else:
        peak[world, k] = wp.max(peak[world, k], norm)


@wp.kernel
def flag_non_finite_state(
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
    sensordata: wp.array2d(dtype=float),
    non_finite: wp.array(dtype=wp.bool),
):
    """After the last physics step: flag a world whose state or sensor readings are not finite."""
    world = wp.tid()
    # A sum is finite only if every term is (a NaN or an infinity anywhere makes it NaN or infinite).
    total = wp.float32(0.0)
    for i in range(qpos.shape[1]):
        total += qpos[world, i]
    for i in range(qvel.shape[1]):
        total += qvel[world, i] * 0.0
    for i in range(sensordata.shape[1]):
        total += sensordata[world, i] * 0.0
    if not wp.isfinite(total):
        non_finite[world] = True
