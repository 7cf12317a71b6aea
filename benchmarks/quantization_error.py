"""Package size and output error of every quantizer on the paper policy.

    python -m benchmarks.quantization_error [--obs=24 --act=6 --hidden=2048,2048,2048]

Random-init policy (the error of a trained policy is in the PTQ study), 256 Gaussian observations.
Error is the max/mean absolute difference of the tanh actions vs the fp32 network.
"""

from __future__ import annotations

import jax
import numpy as np
from absl import app, flags

import actorq.quantization as q
from actorq.networks import make_policy_network

_OBS = flags.DEFINE_integer("obs", 24, "Observation size (walker: 24).")
_ACT = flags.DEFINE_integer("act", 6, "Action size (walker: 6).")
_HIDDEN = flags.DEFINE_list("hidden", ["2048", "2048", "2048"], "Hidden sizes.")
_SPECS = flags.DEFINE_list(
    "quantizers", ["fp32", "fp16", "bf16", "int8", "int8_p999", "int7", "int6", "int5", "int4",
                   "int3", "int2"], "Quantizer specs.")


def main(argv: list[str]) -> None:
    del argv
    network = make_policy_network(_ACT.value, tuple(int(h) for h in _HIDDEN.value))
    params = network.init(jax.random.key(0), np.zeros((1, _OBS.value), np.float32))
    obs = np.random.default_rng(0).normal(size=(256, _OBS.value)).astype(np.float32)
    reference = np.asarray(network.apply(params, obs))
    fp32_bytes = None
    print("| quantizer | package bytes | fp32 / this | max abs action error | mean abs error |")
    print("|---|---:|---:|---:|---:|")
    for spec in _SPECS.value:
        data = q.make_quantizer(spec).quantize(params, network, 0).to_bytes()
        fp32_bytes = fp32_bytes or len(data)
        out = q.make_reference_forward(q.PolicyPackage.from_bytes(data))(obs)
        err = np.abs(out - reference)
        print(f"| {spec} | {len(data):,} | {fp32_bytes / len(data):.2f} | {err.max():.2e} "
              f"| {err.mean():.2e} |")


if __name__ == "__main__":
    app.run(main)
