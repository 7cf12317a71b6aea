"""The paper's layer sizes (QuaRL: a 3 x 2048 policy, a 512-512-256 critic).

Plain constants in their own module so that configs can name them without importing Flax.
"""

from __future__ import annotations

PAPER_POLICY_SIZES: tuple[int, ...] = (2048, 2048, 2048)
PAPER_CRITIC_SIZES: tuple[int, ...] = (512, 512, 256)
