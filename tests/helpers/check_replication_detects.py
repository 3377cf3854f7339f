"""Test helper: the replication check passes on identical ranks and names the first tensor that differs."""

import sys

import torch

from robolab import distributed
from robolab.distributed import ReplicationError, read_context

ctx = read_context()
distributed.initialize(ctx, "cpu")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
distributed.check_replication(dict(model.state_dict()))  # identical: must pass
if ctx.rank == 1:
    with torch.no_grad():
        model[1].bias[0] += 1e-7  # one ulp-sized drift on one rank
try:
    distributed.check_replication(dict(model.state_dict()))
except ReplicationError as err:
    print(f"rank {ctx.rank}: {err}")
    sys.exit(0 if "'1.bias'" in str(err) else 3)
finally:
    distributed.shutdown()
sys.exit(4)  # the drift went unnoticed
