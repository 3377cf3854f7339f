"""Checkpoint files: an interrupted write never replaces or shadows a complete checkpoint."""

from __future__ import annotations

import os

import pytest
import torch

from robolab import checkpoint, files


def test_interrupted_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = str(tmp_path / "model_3.pt")
    checkpoint.save_atomic({"iter": 3, "w": torch.ones(2)}, path)

    def crash(f):
        f.write(b"partial bytes")
        raise KeyboardInterrupt  # the process is stopped mid-write

    with pytest.raises(KeyboardInterrupt):
        files.atomic_write(path, crash)
    assert checkpoint.load(path)["iter"] == 3
    assert os.listdir(tmp_path) == ["model_3.pt"]


def test_latest_checkpoint_ignores_temporary_and_foreign_files(tmp_path):
    for it in (0, 50, 100):
        checkpoint.save_atomic({"iter": it}, str(tmp_path / f"model_{it}.pt"))
    (tmp_path / "model_150.pt.abc.tmp").write_bytes(b"half a checkpoint")
    (tmp_path / "notes.txt").write_text("x")
    assert checkpoint.latest_checkpoint(str(tmp_path)) == str(tmp_path / "model_100.pt")
    assert checkpoint.checkpoint_iteration(str(tmp_path / "model_100.pt")) == 100
    with pytest.raises(ValueError, match="model_<iteration>.pt"):
        checkpoint.checkpoint_iteration("best.pt")
    with pytest.raises(FileNotFoundError, match="no such file"):
        checkpoint.load(str(tmp_path / "model_7.pt"))
