"""Pure low-precision (fp16/bf16) training fixes of Björck et al. 2021 (ICML).

"Low-Precision Reinforcement Learning: Running Soft Actor-Critic in Half Precision", Table 1:

1. hAdam (:func:`hadam`, ``LowpAdamConfig.hadam``): Adam storing ``sqrt(v)``, updated as a
   hypotenuse.
2. Compound loss scaling (``LowpAdamConfig.loss_scaling``): the scale lives inside the moments and
   eps; halve and skip on overflow, double after ``increase_every`` clean steps.
3. Softplus-fix (:func:`tanh_log_det_jacobian`).
4. Normal-fix (:func:`gaussian_log_prob`).
5. Kahan-momentum (:func:`polyak_update`).
6. Kahan-gradients (``LowpAdamConfig.kahan_gradients``, :func:`kahan_apply_updates`).

Each fix has a ``naive_*`` counterpart (or a config switch) for ablations.
"""

from actorq.lowp.numerics import (
    gaussian_log_prob,
    naive_gaussian_log_prob,
    naive_tanh_log_det_jacobian,
    stable_softplus,
    tanh_log_det_jacobian,
)
from actorq.lowp.optim import (
    HAdamState,
    LowpAdamConfig,
    LowpAdamInfo,
    LowpAdamState,
    NaiveAdamState,
    current_loss_scale,
    hadam,
    kahan_apply_updates,
    kahan_init,
    lowp_adam_init,
    lowp_adam_update,
    scale_by_hadam,
    scale_by_learning_rate_in_dtype,
    scale_by_lowp_adam,
)
from actorq.lowp.polyak import kahan_add, naive_polyak_update, polyak_update
from actorq.lowp.precision import (
    FIX_NAMES,
    PRECISIONS,
    LowpFixes,
    cast_tree,
    dtype_of,
    tree_bytes,
)

__all__ = [
    "FIX_NAMES",
    "PRECISIONS",
    "HAdamState",
    "LowpAdamConfig",
    "LowpAdamInfo",
    "LowpAdamState",
    "LowpFixes",
    "NaiveAdamState",
    "cast_tree",
    "current_loss_scale",
    "dtype_of",
    "gaussian_log_prob",
    "hadam",
    "kahan_add",
    "kahan_apply_updates",
    "kahan_init",
    "lowp_adam_init",
    "lowp_adam_update",
    "naive_gaussian_log_prob",
    "naive_polyak_update",
    "naive_tanh_log_det_jacobian",
    "polyak_update",
    "scale_by_hadam",
    "scale_by_learning_rate_in_dtype",
    "scale_by_lowp_adam",
    "stable_softplus",
    "tanh_log_det_jacobian",
    "tree_bytes",
]
