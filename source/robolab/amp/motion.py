"""Reference motion clips for AMP: the file format, a validating loader and (s, s') sampling.

File format (``.npz``, one clip per file), arrays by name:

=================  ==============  =====================================================================
field              shape           meaning
=================  ==============  =====================================================================
``fps``            ()              frame rate of the clip (Hz), > 0
``joint_names``    (J,)            joint order of the columns below; must contain the robot's joints
``joint_pos``      (T, J)          joint positions (rad)
``joint_vel``      (T, J)          joint velocities (rad/s)
``base_lin_vel``   (T, 3)          base linear velocity, base frame (m/s)
``base_ang_vel``   (T, 3)          base angular velocity, base frame (rad/s)
``foot_names``     (F,)            foot bodies, in the order of ``foot_pos``
``foot_pos``       (T, F, 3)       foot positions in the base frame (m)
=================  ==============  =====================================================================

``T >= 2``. The loader reorders joints and feet to the robot's order by name and fails with a one-line
message naming the file and the problem otherwise. ``MotionLibrary.sample_pairs`` draws random times and
returns the AMP state at ``t`` and ``t + dt`` with linear interpolation between frames.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass

import numpy as np
import torch

from robolab import files
from robolab.amp.features import amp_features

REQUIRED = ("fps", "joint_names", "joint_pos", "joint_vel", "base_lin_vel", "base_ang_vel", "foot_names", "foot_pos")
MAX_FPS = 1000.0
"""The highest frame rate a clip may have (motion capture runs at 100-500 Hz)."""
MAX_ARRAY_BYTES = 256 * 2**20
"""The most a clip's arrays may take once read (hours of motion at 50 fps take a few MB): an archive's headers
declaring more are refused before any data is inflated (a small file can inflate to gigabytes)."""


class MotionFormatError(ValueError):
    """A clip that does not follow the format; the message names the file and the field."""


@dataclass
class MotionClip:
    """One AMP reference clip, in the robot's joint order: joint positions and velocities, base velocities and foot
    positions in the base frame, sampled at ``fps`` (the ``.npz`` format of this module)."""

    name: str
    fps: float
    joint_pos: np.ndarray  # (T, J), robot joint order
    joint_vel: np.ndarray
    base_lin_vel: np.ndarray  # (T, 3)
    base_ang_vel: np.ndarray
    foot_pos: np.ndarray  # (T, F, 3), robot foot order

    @property
    def num_frames(self) -> int:
        return self.joint_pos.shape[0]

    @property
    def duration(self) -> float:
        return (self.num_frames - 1) / self.fps

    def save(self, path: str, joint_names: list[str], foot_names: list[str]) -> None:
        """Write the clip to exactly ``path`` (no suffix added), whole or not at all (``robolab.files``)."""
        files.atomic_write(path, lambda f: self._savez(f, joint_names, foot_names))

    def _savez(self, f, joint_names: list[str], foot_names: list[str]) -> None:
        np.savez(
            f,
            fps=np.float64(self.fps),
            joint_names=np.array(joint_names),
            foot_names=np.array(foot_names),
            joint_pos=self.joint_pos,
            joint_vel=self.joint_vel,
            base_lin_vel=self.base_lin_vel,
            base_ang_vel=self.base_ang_vel,
            foot_pos=self.foot_pos,
        )


def load_clip(path: str, joint_names: list[str], foot_names: list[str]) -> MotionClip:
    """Read and validate one clip, reordering joints and feet to the given (robot) order."""
    return clip_from_arrays(read_arrays(path), path, joint_names, foot_names)


def read_arrays(path: str) -> dict[str, np.ndarray]:
    """The named arrays of a clip file, unvalidated."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"motion file {path!r}: no such file")
    if not zipfile.is_zipfile(path):  # np.load would call a text file "pickled data"
        raise MotionFormatError(f"motion file {path!r} is not an .npz archive (numpy.savez writes one)")
    declared = _declared_bytes(path)
    if declared > MAX_ARRAY_BYTES:
        raise MotionFormatError(
            f"motion file {path!r}: its arrays would take {declared / 2**20:.0f} MiB, over the "
            f"{MAX_ARRAY_BYTES / 2**20:.0f} MiB a clip may take"
        )
    try:
        return dict(np.load(path, allow_pickle=False))
    except Exception as err:  # zip, pickle and format errors alike
        raise MotionFormatError(f"motion file {path!r} is not a readable .npz ({type(err).__name__}: {err})") from None


def _declared_bytes(path: str) -> int:
    """The bytes an ``.npz``'s arrays take once read, from each member's ``.npy`` header (a few hundred bytes read,
    nothing inflated beyond them) and, for a member that is not an array, its declared size."""
    total = 0
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if not info.filename.endswith(".npy"):
                    total += info.file_size
                    continue
                with archive.open(info) as member:
                    version = np.lib.format.read_magic(member)
                    read_header = (
                        np.lib.format.read_array_header_1_0
                        if version == (1, 0)
                        else np.lib.format.read_array_header_2_0
                    )
                    shape, _, dtype = read_header(member)
                total += int(np.prod(shape, dtype=object)) * dtype.itemsize
    except Exception as err:  # a broken header or archive
        raise MotionFormatError(f"motion file {path!r} is not a readable .npz ({type(err).__name__}: {err})") from None
    return total


def clip_from_arrays(
    data: dict[str, np.ndarray], path: str, joint_names: list[str], foot_names: list[str]
) -> MotionClip:
    """Validate a clip's arrays (``path`` names it in errors) and reorder joints and feet to the robot's order."""
    missing = [f for f in REQUIRED if f not in data]
    if missing:
        raise MotionFormatError(f"motion file {path!r}: missing fields {missing} (required: {list(REQUIRED)})")
    if np.shape(data["fps"]) != () or not np.issubdtype(np.asarray(data["fps"]).dtype, np.number):
        shown = np.array2string(np.asarray(data["fps"]), threshold=4)
        raise MotionFormatError(f"motion file {path!r}: fps must be one number (frames per second), got {shown}")
    fps = float(data["fps"])
    if not (np.isfinite(fps) and 0 < fps <= MAX_FPS):
        raise MotionFormatError(f"motion file {path!r}: fps={fps} must be a frame rate in (0, {MAX_FPS:g}]")
    for names in ("joint_names", "foot_names"):
        if np.ndim(data[names]) != 1:
            raise MotionFormatError(
                f"motion file {path!r}: {names} must be a list of names, got shape {np.shape(data[names])}"
            )
    if np.ndim(data["joint_pos"]) != 2:
        raise MotionFormatError(
            f"motion file {path!r}: joint_pos has shape {np.shape(data['joint_pos'])}, expected (frames, joints)"
        )
    t = data["joint_pos"].shape[0]
    expected = {
        "joint_pos": (t, len(data["joint_names"])),
        "joint_vel": (t, len(data["joint_names"])),
        "base_lin_vel": (t, 3),
        "base_ang_vel": (t, 3),
        "foot_pos": (t, len(data["foot_names"]), 3),
    }
    for field, shape in expected.items():
        if data[field].shape != shape:
            raise MotionFormatError(f"motion file {path!r}: {field} has shape {data[field].shape}, expected {shape}")
        if not np.issubdtype(data[field].dtype, np.number):
            raise MotionFormatError(f"motion file {path!r}: {field} holds {data[field].dtype} values, expected numbers")
        if not np.isfinite(data[field]).all():
            raise MotionFormatError(f"motion file {path!r}: {field} holds non-finite values")
    if t < 2:
        raise MotionFormatError(f"motion file {path!r}: {t} frame(s); a clip needs at least 2")
    joints = _order(path, "joint", list(map(str, data["joint_names"])), joint_names)
    feet = _order(path, "foot", list(map(str, data["foot_names"])), foot_names)
    return MotionClip(
        name=os.path.splitext(os.path.basename(path))[0],
        fps=fps,
        joint_pos=data["joint_pos"][:, joints],
        joint_vel=data["joint_vel"][:, joints],
        base_lin_vel=data["base_lin_vel"],
        base_ang_vel=data["base_ang_vel"],
        foot_pos=data["foot_pos"][:, feet],
    )


def _order(path: str, kind: str, have: list[str], want: list[str]) -> list[int]:
    missing = [n for n in want if n not in have]
    if missing:
        raise MotionFormatError(
            f"motion file {path!r}: {kind}s {missing} of the robot are not in the clip (it has {have})"
        )
    return [have.index(n) for n in want]


class MotionLibrary:
    """Clips on a device, sampled as (s, s') AMP-state pairs ``dt`` apart."""

    def __init__(self, clips: list[MotionClip], terms, device: str = "cpu", weights: list[float] | None = None):
        if not clips:
            raise ValueError("a motion library needs at least one clip")
        self.clips, self.terms, self.device = clips, list(terms), torch.device(device)
        w = torch.tensor(weights if weights is not None else [c.duration for c in clips], dtype=torch.float64)
        self.weights = w / w.sum()
        self._features = [self._clip_features(c) for c in clips]
        # All clips' frames in one tensor, with each clip's first row, frame count, rate and length beside it on the
        # device: sample_pairs draws and interpolates every pair there, with no host read (it runs every update).
        self._frames = torch.cat(self._features)
        on_device = lambda values, dtype: torch.tensor(values, dtype=dtype, device=self.device)
        self._first_row = on_device(np.cumsum([0] + [c.num_frames for c in clips[:-1]]).tolist(), torch.long)
        self._num_frames = on_device([c.num_frames for c in clips], torch.long)
        self._fps = on_device([c.fps for c in clips], torch.float32)
        self._duration = on_device([c.duration for c in clips], torch.float32)
        self._device_weights = self.weights.to(self.device, torch.float32)

    def _clip_features(self, clip: MotionClip) -> torch.Tensor:
        as_t = lambda a: torch.as_tensor(a, dtype=torch.float32, device=self.device)
        return amp_features(
            self.terms,
            joint_pos=as_t(clip.joint_pos),
            joint_vel=as_t(clip.joint_vel),
            base_lin_vel=as_t(clip.base_lin_vel),
            base_ang_vel=as_t(clip.base_ang_vel),
            foot_pos=as_t(clip.foot_pos),
        )

    @property
    def feature_dim(self) -> int:
        return self._features[0].shape[-1]

    def state_at(self, clip_index: int, times: torch.Tensor) -> torch.Tensor:
        """AMP states of one clip at ``times`` (s), linearly interpolated between frames."""
        clip, feats = self.clips[clip_index], self._features[clip_index]
        f = (times * clip.fps).clamp(0, clip.num_frames - 1)
        i0 = f.floor().long().clamp(max=clip.num_frames - 2)
        alpha = (f - i0).unsqueeze(-1)
        return (1 - alpha) * feats[i0] + alpha * feats[i0 + 1]

    def sample_pairs(
        self, n: int, dt: float, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` expert transitions (s at t, s' at t + dt), clips drawn in proportion to their weights; drawn on the
        library's device (``generator``, if given, must be on it too), with no host read."""
        which = torch.multinomial(self._device_weights, n, replacement=True, generator=generator)
        span = (self._duration[which] - dt).clamp(min=0.0)
        t = torch.rand(n, generator=generator, device=self.device) * span
        return self._states(which, t), self._states(which, t + dt)

    def _states(self, which: torch.Tensor, times: torch.Tensor) -> torch.Tensor:
        """AMP states of clips ``which`` at ``times``: ``state_at`` for many clips at once."""
        frames = self._num_frames[which]
        f = torch.minimum((times * self._fps[which]).clamp(min=0.0), (frames - 1).float())
        i0 = torch.minimum(f.floor().long(), frames - 2)
        alpha = (f - i0).unsqueeze(-1)
        rows = self._first_row[which] + i0
        return (1 - alpha) * self._frames[rows] + alpha * self._frames[rows + 1]
