"""The paper's layer sizes (QuaRL: a 3 x 2048 policy, a 512-512-256 critic).

Plain constants in their own module so that configs can name them without importing Flax.
"""

from __future__ import annotations

PAPER_POLICY_SIZES: tuple[int, ...] = (2048, 2048, 2048)
PAPER_CRITIC_SIZES: tuple[int, ...] = (512, 512, 256)
# The policy torsos an agent config can name: "mlp" (flat observations, the config's
# hidden_sizes) or a conv torso for pixel observations (actorq.networks.conv.TORSOS: the Nature
# DQN CNN, the MinAtar paper's network).
TORSOS: tuple[str, ...] = ("mlp", "minatar", "nature")


def check_torso(torso: str) -> None:
    """Raises ValueError naming the valid torsos unless ``torso`` is one."""
    if torso not in TORSOS:
        raise ValueError(f"learner.torso={torso!r}; valid: {', '.join(TORSOS)}")
