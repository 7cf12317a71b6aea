# #23 (2026-12-05): DDPG HalfCheetah evaluations, int8 vs fp32 actors, every run so far.
# python runs/s17/plot_ddpg_halfcheetah_fp32_vs_int8.py
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

d = "docs/results/learning_ddpg_halfcheetah"
runs = {
    "int8 actors, seed 0 (Xeon 105 MiB L3, 12-03)": (f"{d}/eval.jsonl", "C0", "-"),
    "int8 actors, seed 1 (Xeon 105 MiB L3, 12-03)": (f"{d}/seed1/eval.jsonl", "C0", "--"),
    "int8 actors, seed 1 (Xeon 480 MiB L3, 12-05)": (f"{d}/int8_seed1_xeon480/eval.jsonl", "C0", ":"),
    "int8 actors, seed 1, recalibrated (Xeon 480 MiB L3, 12-06)": (f"{d}/int8_seed1_recal/eval.jsonl", "C2", "--"),
    "fp32 actors, seed 0 (Milan, 12-05)": (f"{d}/fp32_seed0/eval_milan.jsonl", "C3", "-"),
    "fp32 actors, seed 1 (Xeon 480 MiB L3, 12-05)": (f"{d}/fp32_seed1/eval_xeon.jsonl", "C3", "--"),
}
fig, ax = plt.subplots(figsize=(8, 4.5))
for label, (path, color, style) in runs.items():
    try:
        rows = [json.loads(line) for line in open(path)]
    except FileNotFoundError:
        continue
    ax.plot([r["actor_steps"] for r in rows], [r["eval_return"] for r in rows], color=color, ls=style,
            label=label)
ax.axhline(8000, ls="-.", c="gray", lw=1, label="target 8000")
ax.set_xlabel("env steps"); ax.set_ylabel("evaluation return (10 episodes)"); ax.legend(fontsize=8)
ax.grid(alpha=0.3); ax.set_title("DDPG HalfCheetah-v5: int8 vs fp32 actors")
fig.tight_layout(); fig.savefig(f"{d}/ddpg_halfcheetah_fp32_vs_int8.png", dpi=110)
