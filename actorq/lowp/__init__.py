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

# Lazy (PEP 562): configs and actor processes import actorq.lowp.fixes without JAX.
from actorq.lazy_exports import lazy_getattr

_EXPORTS = {
    "FIX_NAMES": "actorq.lowp.fixes",
    "HAdamState": "actorq.lowp.optim",
    "LowpAdamConfig": "actorq.lowp.optim",
    "LowpAdamInfo": "actorq.lowp.optim",
    "LowpAdamState": "actorq.lowp.optim",
    "LowpFixes": "actorq.lowp.fixes",
    "NaiveAdamState": "actorq.lowp.optim",
    "PRECISIONS": "actorq.lowp.fixes",
    "cast_tree": "actorq.lowp.precision",
    "current_loss_scale": "actorq.lowp.optim",
    "dtype_of": "actorq.lowp.precision",
    "flat_lowp_adam_update": "actorq.lowp.optim",
    "gaussian_log_prob": "actorq.lowp.numerics",
    "hadam": "actorq.lowp.optim",
    "kahan_add": "actorq.lowp.polyak",
    "kahan_apply_updates": "actorq.lowp.optim",
    "kahan_init": "actorq.lowp.optim",
    "lowp_adam_init": "actorq.lowp.optim",
    "lowp_adam_update": "actorq.lowp.optim",
    "naive_gaussian_log_prob": "actorq.lowp.numerics",
    "naive_polyak_update": "actorq.lowp.polyak",
    "naive_tanh_log_det_jacobian": "actorq.lowp.numerics",
    "polyak_update": "actorq.lowp.polyak",
    "scale_by_hadam": "actorq.lowp.optim",
    "scale_by_learning_rate_in_dtype": "actorq.lowp.optim",
    "scale_by_lowp_adam": "actorq.lowp.optim",
    "stable_softplus": "actorq.lowp.numerics",
    "tanh_log_det_jacobian": "actorq.lowp.numerics",
    "tree_bytes": "actorq.lowp.precision",
    "value_and_scaled_grad": "actorq.lowp.optim",
}
__getattr__ = lazy_getattr(__name__, _EXPORTS)

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
    "flat_lowp_adam_update",
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
    "value_and_scaled_grad",
]
