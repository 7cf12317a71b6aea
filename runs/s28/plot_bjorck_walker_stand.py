"""Learning curves of the Björck walker_stand study from its kept records (docs/results/lowp_sac_walker_stand)."""
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

root = Path("docs/results/lowp_sac_walker_stand/main")
colors = {"fp32": "k", "fp16_fixed": "tab:blue", "bf16_fixed": "tab:green", "fp16_amp": "tab:orange"}
fig, ax = plt.subplots(figsize=(7, 4))
for run in sorted(root.iterdir()):
    variant, _, seed = run.name.rpartition("_seed")
    if variant not in colors or not (run / "eval.jsonl").is_file():
        continue
    rows = [json.loads(line) for line in (run / "eval.jsonl").read_text().splitlines() if line]
    ax.plot([r["actor_steps"] for r in rows], [r["eval_return"] for r in rows], color=colors[variant],
            linestyle="-" if seed == "0" else "--", label=f"{variant} seed {seed}")
ax.axhline(939, color="grey", linewidth=0.8, linestyle=":", label="published SAC 939")
ax.set_xlabel("env steps")
ax.set_ylabel("return of the int8 package (5 episodes)")
ax.set_title("SAC walker_stand, int8 actors, by learner precision (naive fp16: NaN at 1.1k steps)", fontsize=9)
ax.legend(fontsize=7, loc="lower right")
fig.tight_layout()
fig.savefig(root.parent / "walker_stand_curves.png", dpi=110)
