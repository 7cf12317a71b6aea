# #23 (2026-12-05): DDPG HalfCheetah evaluations, int8 actors (seeds 0/1, Xeon) vs fp32 actors (seed 0, Milan).
# python runs/s16/plot_ddpg_halfcheetah_fp32_vs_int8.py
import json
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
d = "docs/results/learning_ddpg_halfcheetah"
runs = {"int8 actors, seed 0 (Xeon)": f"{d}/eval.jsonl", "int8 actors, seed 1 (Xeon)": f"{d}/seed1/eval.jsonl",
        "fp32 actors, seed 0 (Milan)": f"{d}/fp32_seed0/eval_milan.jsonl"}
fig, ax = plt.subplots(figsize=(7, 4))
for label, path in runs.items():
    rows = [json.loads(line) for line in open(path)]
    ax.plot([r["actor_steps"] for r in rows], [r["eval_return"] for r in rows], label=label)
ax.axhline(8000, ls="--", c="gray", lw=1, label="target 8000")
ax.set_xlabel("env steps"); ax.set_ylabel("evaluation return (10 episodes)"); ax.legend(); ax.grid(alpha=0.3)
ax.set_title("DDPG HalfCheetah-v5: int8 vs fp32 actors")
fig.tight_layout(); fig.savefig(f"{d}/ddpg_halfcheetah_fp32_vs_int8.png", dpi=110)
