"""Package size, output error and publish cost of every quantizer on the paper policy.

    python -m benchmarks.quantization_error [--obs=24 --act=6 --hidden=2048,2048,2048]

Random-init policy (the error of a trained policy is in the PTQ study), 256 Gaussian observations.
Error is the max/mean absolute difference of the tanh actions vs the fp32 network. Publish cost is
what the learner pays per published version: quantize and serialize, the fastest of
``--repeats``, printed as a ratio to plain round-to-nearest's (``rtn_int8``) in the same run.
Quantizers that calibrate (the int8 recipe, GPTQ) get the same 256 observations, as the learner
hands them its fixed replay batch.
"""

from __future__ import annotations

import time

import jax
import numpy as np
from absl import flags

import actorq.quantization as q
from actorq.bounds import LAYER_SIZES, POSITIVE_INT, check_bounds
from actorq.command_line import bad_input, parse_ints, run_absl
from actorq.networks import make_policy_network

_OBS = flags.DEFINE_integer("obs", 24, "Observation size (walker: 24).")
_ACT = flags.DEFINE_integer("act", 6, "Action size (walker: 6).")
_HIDDEN = flags.DEFINE_list("hidden", ["2048", "2048", "2048"], "Hidden sizes.")
_SPECS = flags.DEFINE_list(
    "quantizers", ["fp32", "fp16", "bf16", "rtn_int8", "int8", "recipe_uact_int8", "nosmooth_int8",
                   "nobc_int8", "fp32in_int8", "int8_p999", "int7", "int6", "int5", "int4", "int3",
                   "int2", "uact_int8", "gptq_uact_int8", "gptq_uact_int4"],
    "Quantizer specs.")
_REPEATS = flags.DEFINE_integer("repeats", 3, "Timed publishes per quantizer (fastest kept).")


def publish_seconds(quantizer, params, network, repeats: int) -> tuple[bytes, float]:
    """The package bytes and the fastest quantize + serialize time of ``repeats``."""
    best = float("inf")
    for version in range(repeats):
        start = time.perf_counter()
        data = quantizer.quantize(params, network, version).to_bytes()
        best = min(best, time.perf_counter() - start)
    return data, best


def main(argv: list[str]) -> None:
    del argv
    with bad_input():
        hidden = tuple(parse_ints(_HIDDEN.value, "hidden", unique=False))
        check_bounds({"obs": _OBS.value, "act": _ACT.value, "hidden": hidden,
                      "repeats": _REPEATS.value},
                     {"obs": POSITIVE_INT, "act": POSITIVE_INT, "hidden": LAYER_SIZES,
                      "repeats": POSITIVE_INT}, prefix="--")
        for spec in _SPECS.value:
            q.make_quantizer(spec)
    network = make_policy_network(_ACT.value, hidden)
    params = network.init(jax.random.key(0), np.zeros((1, _OBS.value), np.float32))
    obs = np.random.default_rng(0).normal(size=(256, _OBS.value)).astype(np.float32)
    reference = np.asarray(network.apply(params, obs))
    rows = []
    base = "rtn_int8"
    for spec in dict.fromkeys([base, *_SPECS.value]):  # first: the ratios' base
        quantizer = q.make_quantizer(spec)
        if hasattr(quantizer, "with_calibration"):
            quantizer = quantizer.with_calibration(obs)
        data, seconds = publish_seconds(quantizer, params, network, _REPEATS.value)
        out = q.make_reference_forward(q.PolicyPackage.from_bytes(data))(obs)
        rows.append((spec, len(data), np.abs(out - reference), seconds))
    fp32_bytes = 4 * sum(np.size(leaf) for leaf in jax.tree.leaves(params))
    base_seconds = rows[0][3]
    print("| quantizer | package bytes | fp32 params / this | max abs action error "
          f"| mean abs error | publish ms | publish / {base} |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for spec, size, err, seconds in rows:
        if spec not in _SPECS.value:
            continue
        print(f"| {spec} | {size:,} | {fp32_bytes / size:.2f} | {err.max():.2e} "
              f"| {err.mean():.2e} | {seconds * 1e3:.0f} | {seconds / base_seconds:.1f}x |")


if __name__ == "__main__":
    run_absl(main)
