# #25 (Milan, 2026-12-05): hopper_stand seed 0, per-feature ranges, smoothing factors and first-layer errors.
# PYTHONPATH=. python runs/s16/hopper_features.py
import numpy as np
from actorq.analysis.trained_policy import load_trained_policy
from actorq.analysis.ptq import calibration_observations, _rollouts, episode_seeds
from actorq.runtime.policy_runtime import make_policy_runtime
from actorq.quantization.recipe import smoothing_factors
pol = load_trained_policy("runs/recipe_learning_d4pg_hopper_stand/int8_seed0")
rt = make_policy_runtime("xla"); rt.load(pol.package("fp32"))
cal = calibration_observations(pol, rt, 0)
rec=[]; _rollouts(pol, rt, episode_seeds(0, 5), rec); ev=np.stack(rec)
k0 = pol.params
import jax
leaves = [l for l in jax.tree_util.tree_leaves(pol.params) if l.ndim==2]
W = leaves[0]
print("cal", cal.shape, "eval", ev.shape, "W0", W.shape)
s = smoothing_factors(cal, W)
cm = np.abs(cal).max(0); em = np.abs(ev).max(0)
np.set_printoptions(precision=3, suppress=True, linewidth=200)
print("cal max ", cm); print("eval max", em); print("s", s)
print("cal row max of x/s (median over rows)", np.median(np.abs(cal/s).max(1)), "eval", np.median(np.abs(ev/s).max(1)))
print("argmax feature of x/s in eval rows:", np.bincount(np.abs(ev/s).argmax(1), minlength=len(s)))
print("argmax feature of x in eval rows (no smoothing):", np.bincount(np.abs(ev).argmax(1), minlength=len(s)))

import sys as _sys, os as _os
_sys.path.insert(0, _os.path.dirname(_os.path.abspath(__file__)))
from fake_quant import q_cols, q_rows
ref = ev @ W
for name, f in [("none", np.ones(15, np.float32))] + [(f"alpha {a}", smoothing_factors(cal, W, a)) for a in (0.25, 0.5, 0.75)]:
    out = q_rows(ev / f) @ q_cols(W * f[:, None])
    aerr = np.linalg.norm((q_rows(ev / f) @ (W * f[:, None])) - ref) / np.linalg.norm(ref)
    werr = np.linalg.norm(((ev / f) @ q_cols(W * f[:, None])) - ref) / np.linalg.norm(ref)
    print(f"{name:10s} first-layer rel. output error {np.linalg.norm(out-ref)/np.linalg.norm(ref):.4f} (activation rounding only {aerr:.4f}, weight rounding only {werr:.4f})")

ref_a = np.asarray(rt(ev))
for spec in ("rtn_int8", "int8", "nosmooth_int8"):
    r2 = make_policy_runtime("xla"); r2.load(pol.package(spec, cal)); a = np.asarray(r2(ev))
    d = a - ref_a
    print(spec, "mean diff per dim", d.mean(0).round(3), "mean |diff| per dim", np.abs(d).mean(0).round(3), "L2", np.linalg.norm(d, axis=1).mean().round(3))
    p = pol.package(spec, cal)
    print("   smoothing:", None if getattr(p, "input_smoothing", None) is None else np.asarray(p.input_smoothing).round(2))

flat = jax.tree_util.tree_flatten_with_path(pol.params)[0]
for p, l in flat: print(jax.tree_util.keystr(p), l.shape)
