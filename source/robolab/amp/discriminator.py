"""The AMP discriminator on (s, s') pairs, its losses and the style reward (Peng et al. 2021)."""

from __future__ import annotations

import torch
from torch import nn

from robolab.rsl_rl_api import MLP

LOSS_TYPES = ("lsgan", "bce")


class Discriminator(nn.Module):
    """The AMP discriminator: an MLP scoring an (s, s') transition as reference motion or policy, with its loss
    (``lsgan`` with a gradient penalty, or ``bce``) and the style reward it gives."""

    def __init__(self, state_dim: int, hidden_dims=(1024, 512), activation: str = "relu", loss_type: str = "lsgan"):
        super().__init__()
        if loss_type not in LOSS_TYPES:
            raise ValueError(f"amp_cfg.loss_type={loss_type!r}: allowed are {list(LOSS_TYPES)}")
        self.loss_type = loss_type
        self.net = MLP(2 * state_dim, 1, list(hidden_dims), activation)

    def forward(self, s: torch.Tensor, s_next: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([s, s_next], dim=-1)).squeeze(-1)

    def loss(self, d_expert: torch.Tensor, d_policy: torch.Tensor) -> torch.Tensor:
        """LSGAN: expert -> +1, policy -> -1 (least squares). BCE: expert -> 1, policy -> 0 (logits)."""
        if self.loss_type == "lsgan":
            return 0.5 * ((d_expert - 1).square().mean() + (d_policy + 1).square().mean())
        bce = nn.functional.binary_cross_entropy_with_logits
        return 0.5 * (bce(d_expert, torch.ones_like(d_expert)) + bce(d_policy, torch.zeros_like(d_policy)))

    def style_reward(self, s: torch.Tensor, s_next: torch.Tensor) -> torch.Tensor:
        """Per-transition style reward, bounded: [0, 1] for LSGAN, [0, -log(1e-4)] for BCE."""
        d = self(s, s_next)
        if self.loss_type == "lsgan":
            return (1 - 0.25 * (d - 1).square()).clamp(min=0.0)
        return -torch.log((1 - torch.sigmoid(d)).clamp(min=1e-4))


def gradient_penalty(
    discriminator: Discriminator, s: torch.Tensor, s_next: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Discriminator output on expert pairs and the mean squared norm of its gradient w.r.t. those inputs."""
    s = s.detach().requires_grad_(True)
    s_next = s_next.detach().requires_grad_(True)
    d = discriminator(s, s_next)
    grads = torch.autograd.grad(d.sum(), (s, s_next), create_graph=True)
    penalty = torch.cat(grads, dim=-1).square().sum(dim=-1).mean()
    return d, penalty


class TransitionBuffer:
    """A ring buffer of policy (s, s') pairs on the device."""

    def __init__(self, state_dim: int, capacity: int, device: str):
        self.s = torch.zeros(capacity, state_dim, device=device)
        self.s_next = torch.zeros_like(self.s)
        self.capacity, self.size, self.cursor = capacity, 0, 0

    def insert(self, s: torch.Tensor, s_next: torch.Tensor) -> None:
        n = min(s.shape[0], self.capacity)
        idx = (self.cursor + torch.arange(n, device=self.s.device)) % self.capacity
        self.s[idx], self.s_next[idx] = s[-n:], s_next[-n:]
        self.cursor = int((self.cursor + n) % self.capacity)
        self.size = min(self.size + n, self.capacity)

    def sample(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self.size == 0:
            raise RuntimeError("the AMP transition buffer is empty")
        idx = torch.randint(0, self.size, (n,), device=self.s.device)
        return self.s[idx], self.s_next[idx]
