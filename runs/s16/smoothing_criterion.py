# #25 (Milan, 2026-12-05): does smoothing lower the error of each recipe policy? Per run dir: the first
# layer's relative output error on the calibration states with and without smoothing, and the action L2
# distance from fp32 of `int8` and `nosmooth_int8` on 3 held-out episodes and on the calibration states.
# PYTHONPATH=. python runs/s16/smoothing_criterion.py <run_dir> ...
import sys, numpy as np, jax
from actorq.analysis.trained_policy import load_trained_policy
from actorq.analysis.ptq import calibration_observations, _rollouts, episode_seeds
from actorq.runtime.policy_runtime import make_policy_runtime
from actorq.quantization.recipe import smoothing_factors
from actorq.networks.mlp import mlp_layers
import sys as _sys, os as _os
_sys.path.insert(0, _os.path.dirname(_os.path.abspath(__file__)))
from fake_quant import q_cols, q_rows
for run in sys.argv[1:]:
    pol = load_trained_policy(run)
    rt = make_policy_runtime("xla"); rt.load(pol.package("fp32"))
    cal = calibration_observations(pol, rt, 0)
    rec=[]; _rollouts(pol, rt, episode_seeds(0, 3), rec); ev=np.stack(rec)[:3000]
    W = np.asarray(mlp_layers(pol.params)[0][0], np.float32)
    ref = cal @ W
    errs = {}
    for name, f in (("smooth", smoothing_factors(cal, W)), ("none", np.ones(W.shape[0], np.float32))):
        out = q_rows(cal / f) @ q_cols(W * f[:, None])
        errs[name] = np.linalg.norm(out-ref)/np.linalg.norm(ref)
    ref_a = np.asarray(rt(ev)); ref_c = np.asarray(rt(cal))
    act = {}
    for spec in ("int8", "nosmooth_int8"):
        r2 = make_policy_runtime("xla"); r2.load(pol.package(spec, cal))
        act[spec] = (np.linalg.norm(np.asarray(r2(ev)) - ref_a, axis=1).mean(), np.linalg.norm(np.asarray(r2(cal)) - ref_c, axis=1).mean())
    pick = "smooth" if errs["smooth"] < errs["none"] else "none"
    best = "smooth" if act["int8"][0] < act["nosmooth_int8"][0] else "none"
    print(f"{run}: L0 err smooth {errs['smooth']:.4f} none {errs['none']:.4f} -> {pick} | action L2 held-out int8 {act['int8'][0]:.4f} nosmooth {act['nosmooth_int8'][0]:.4f} (cal {act['int8'][1]:.4f} / {act['nosmooth_int8'][1]:.4f}) -> best {best} {'AGREE' if pick==best else 'DISAGREE'}", flush=True)
