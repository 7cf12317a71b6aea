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


def check_torso_fits(torso: str, pixel_shape: tuple[int, ...] | None) -> None:
    """Raises ValueError (naming ``learner.torso``) unless the torso reads the task's
    observations: ``mlp`` flat features (``pixel_shape`` None), a conv torso ``[H, W, C]``
    images (``pixel_shape`` may be ``()`` when only that the task has pixels is known)."""
    if torso == "mlp" and pixel_shape is not None:
        shape = f"{tuple(pixel_shape)} " if pixel_shape else ""
        raise ValueError(f"learner.torso='mlp' takes flat observations; this task's are {shape}"
                         "images (use learner.torso='minatar' or 'nature')")
    if torso != "mlp" and (pixel_shape is None or len(pixel_shape) not in (0, 3)):
        raise ValueError(f"learner.torso={torso!r} takes [H, W, C] pixel observations; this "
                         "task's are flat features (use learner.torso='mlp')")
