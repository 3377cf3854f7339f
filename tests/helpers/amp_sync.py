"""Test helper: a short 2-rank AMP run, with robolab's PPOAMP or with the source document's behaviour.

Usage: python amp_sync.py DUMP_DIR MODE [train.py args...]; MODE is `synced` (robolab) or `ppo_only`, where the
discriminator is left out of broadcasting and gradient averaging exactly as when PPOAMP inherits PPO's.
Each rank writes DUMP_DIR/rank<R>.json with digests of its discriminator's parameters.
"""

import json
import os
import sys

from robolab import distributed
from robolab.algorithms.ppo_amp import PPOAMP
from robolab.cli.train import build_parser
from robolab.launch import TrainOptions
from robolab.session import prepare_training, run_training


class PPOOnlySync(PPOAMP):
    """The defect the source document describes: only the PPO modules are synchronised."""

    def synced_modules(self):
        modules = super().synced_modules()
        modules.pop("discriminator")
        modules.pop("amp_normalizer")
        return modules

    def synced_optimizers(self):
        optimizers = super().synced_optimizers()
        optimizers.pop("disc_optimizer")
        return optimizers

    def reduce_discriminator_gradients(self):
        pass


def main() -> None:
    dump_dir, mode, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
    if mode == "ppo_only":
        argv.append("agent.algorithm.class_name=helpers.amp_sync:PPOOnlySync")
    args, overrides = build_parser().parse_known_args(argv)
    session = prepare_training(TrainOptions.from_namespace(args), overrides)
    run_training(session)
    alg = session.runner.alg
    digests = {f"discriminator.{n}": distributed.tensor_digest(t) for n, t in alg.discriminator.state_dict().items()}
    digests.update({f"actor.{n}": distributed.tensor_digest(t) for n, t in alg.actor.state_dict().items()})
    with open(os.path.join(dump_dir, f"rank{session.ctx.rank}.json"), "w") as f:
        json.dump(digests, f)
    distributed.shutdown()


if __name__ == "__main__":  # also imported, as helpers.amp_sync, to resolve PPOOnlySync
    main()
