"""Test helper: train through robolab's own entry point, then dump this rank's replication digests.

Usage (under torchrun or with launcher variables set): python train_and_dump.py DUMP_DIR [train.py args...]
Each rank writes DUMP_DIR/rank<R>.json mapping every parameter, buffer and optimiser-state tensor to a digest.
"""

import json
import os
import sys

from robolab import distributed
from robolab.cli.train import build_parser
from robolab.launch import TrainOptions
from robolab.session import prepare_training, run_training

dump_dir, argv = sys.argv[1], sys.argv[2:]
args, overrides = build_parser().parse_known_args(argv)
session = prepare_training(TrainOptions.from_namespace(args), overrides)
run_training(session)
digests = {name: distributed.tensor_digest(t) for name, t in session.runner.alg.replication_tensors().items()}
with open(os.path.join(dump_dir, f"rank{session.ctx.rank}.json"), "w") as f:
    json.dump({"digests": digests, "seed": session.env.cfg.seed, "run_dir": session.plan.run_dir}, f)
distributed.shutdown()
