# #25 (Milan, 2026-12-05): where the recipe's action error on hopper_stand seed 0 comes from (layer by layer,
# activation vs weight rounding, with and without smoothing). PYTHONPATH=. python runs/s16/hopper_smoothing_diagnosis.py
import numpy as np, jax
exec(open("runs/s16/hopper_features.py").read().split("ref = ev @ W")[0].split("print(\"cal\"")[0])
P = pol.params["params"]
Ws = [np.asarray(P[f"layer_{i}"]["kernel"]) for i in range(3)]; bs = [np.asarray(P[f"layer_{i}"]["bias"]) for i in range(3)]
import sys as _sys, os as _os
_sys.path.insert(0, _os.path.dirname(_os.path.abspath(__file__)))
from fake_quant import q_cols, q_rows
def fwd(x, f, qa=(False,)*3, qw=(False,)*3):
    h = x / f
    for i in range(3):
        W = Ws[i] * (f[:, None] if i == 0 else 1)
        a = q_rows(h) if qa[i] else h
        w = q_cols(W) if qw[i] else W
        h = a @ w + bs[i]
        h = np.maximum(h, 0) if i < 2 else np.tanh(h)
    return h
ref_a = np.asarray(rt(ev)); one = np.ones(15, np.float32)
print("numpy fp32 matches runtime:", np.abs(fwd(ev, one) - ref_a).max())
s = smoothing_factors(cal, Ws[0])
for name, f in (("none", one), ("smooth", s)):
    for label, qa, qw in (("act L0 only", (1,0,0), (0,0,0)), ("w L0 only", (0,0,0), (1,0,0)), ("L0 both", (1,0,0), (1,0,0)),
                          ("act all", (1,1,1), (0,0,0)), ("w all", (0,0,0), (1,1,1)), ("all", (1,1,1), (1,1,1))):
        d = fwd(ev, f, qa, qw) - ref_a
        print(f"{name:6s} {label:12s} mean diff dim3 {d[:,3].mean():+.3f}  L2 {np.linalg.norm(d,axis=1).mean():.3f}")

for spec, f in (("nobc_int8", s), ("rtn_int8", one)):
    r2 = make_policy_runtime("xla"); pk = pol.package(spec, cal); r2.load(pk); a = np.asarray(r2(ev))
    sim = fwd(ev, f, (1,1,1), (1,1,1))
    print(spec, "runtime vs fp32 L2", np.linalg.norm(a-ref_a,axis=1).mean().round(3), "runtime vs sim", np.abs(a - sim).max().round(4), np.linalg.norm(a-sim,axis=1).mean().round(4))
    print("  package fields:", [k for k,v in vars(pk).items() if v is not None][:30])
    L0 = pk.layers[0]
    print("  layer0:", {k: (np.asarray(v).shape if hasattr(v,'shape') else v) for k,v in vars(L0).items()})

from actorq.runtime.policy_runtime import available_runtimes
print(available_runtimes())
pk = pol.package("nobc_int8", cal)
outs = {}
for name in available_runtimes():
    try:
        r = make_policy_runtime(name); r.load(pk); outs[name] = np.asarray(r(ev[:2000]))
    except Exception as e:
        print(name, "failed", type(e).__name__, str(e)[:100])
for name, a in outs.items():
    print(name, "vs fp32 L2", np.linalg.norm(a - ref_a[:2000], axis=1).mean().round(3), "vs sim", np.linalg.norm(a - fwd(ev[:2000], s, (1,1,1),(1,1,1)), axis=1).mean().round(3))

print("--- package layers vs float")
for i, L in enumerate(pk.layers):
    deq = np.asarray(L.kernel, np.float32) * np.asarray(L.kernel_scale, np.float32)[None, :]
    target = Ws[i] * (s[:, None] if i == 0 else 1)
    print(i, "kernel rel err", (np.linalg.norm(deq - target) / np.linalg.norm(target)).round(4), "bias maxdiff", np.abs(np.asarray(L.bias) - bs[i]).max().round(4))
print("smoothing equal:", np.abs(np.asarray(pk.input_smoothing) - s).max())

def fwd2(x, f, mode):
    h = x / f if mode == "divide" else (x * f if mode == "multiply" else x)
    for i in range(3):
        W = Ws[i] * (f[:, None] if i == 0 else 1)
        h = q_rows(h) @ q_cols(W) + bs[i]
        h = np.maximum(h, 0) if i < 2 else np.tanh(h)
    return h
a = outs["xla"]
for mode in ("divide", "multiply", "none"):
    print(mode, "vs xla", np.linalg.norm(a - fwd2(ev[:2000], s, mode), axis=1).mean().round(4))

from actorq.quantization.numerics import quantize_rows_np
def exact(pk, x):
    h = pk.normalize(np.asarray(x, np.float32))
    for i, L in enumerate(pk.layers):
        q, sc = quantize_rows_np(h, 8)
        acc = q.astype(np.int32) @ np.asarray(L.kernel).astype(np.int32)
        h = acc.astype(np.float32) * sc * np.asarray(L.kernel_scale, np.float32)[None] + np.asarray(L.bias, np.float32)
        h = np.maximum(h, 0) if i < len(pk.layers) - 1 else np.tanh(h)
    return h
e = exact(pk, ev[:2000])
print("exact sim vs xla", np.abs(e - outs["xla"]).max(), " exact sim vs fp32 L2", np.linalg.norm(e - ref_a[:2000], axis=1).mean().round(4))
print("my sim vs exact sim", np.linalg.norm(fwd2(ev[:2000], s, "divide") - e, axis=1).mean().round(4))
print("pk.activation", pk.activation, "output_activation", pk.output_activation, "head", pk.head)

def q_rows_aqt(x):
    q, sc = quantize_rows_np(np.asarray(x, np.float32), 8); return q.astype(np.float32) * sc
def fwd3(x, f, qa_fn, qw=True, layers_q=(1,1,1)):
    h = np.asarray(x, np.float32) / f
    for i in range(3):
        W = Ws[i] * (f[:, None] if i == 0 else 1)
        a = qa_fn(h) if layers_q[i] else h
        w = q_cols(W) if qw else W
        h = a @ w + bs[i]
        h = np.maximum(h, 0) if i < 2 else np.tanh(h)
    return h
X = ev[:2000]; R = ref_a[:2000]
for name, f in (("none", one), ("smooth", s)):
    for lq in ((1,0,0),(0,1,0),(0,0,1),(1,1,1)):
        d = fwd3(X, f, q_rows_aqt, qw=False, layers_q=lq) - R
        print(name, "AQT act rounding only, layers", lq, "L2", np.linalg.norm(d, axis=1).mean().round(4), "dim3", d[:,3].mean().round(3))

ref_cal = np.asarray(rt(cal))
for spec in ("int8", "nosmooth_int8"):
    p2 = pol.package(spec, cal)
    print(spec, "on calibration states: action L2", np.linalg.norm(exact(p2, cal) - ref_cal, axis=1).mean().round(4), "| on eval states", np.linalg.norm(exact(p2, ev) - ref_a, axis=1).mean().round(4))
h = cal / s; step_in_input_units = (np.abs(h).max(1, keepdims=True) / 127.5) * s
print("median step in input units, smoothed:", np.median(step_in_input_units, 0).round(3))
print("median step, unsmoothed:", np.median(np.abs(cal).max(1) / 127.5).round(3))
print("eval std per feature:", ev.std(0).round(3))
