"""#23: DDPG with both learning rates decayed to 0 over the 1M-step budget, against the preset, per seed: every
evaluation of the int8 package (solid) and of the learner's fp32 policy (dotted), from the kept records.

    python runs/s31/plot_ddpg_decay.py bipedalwalker|walker2d
"""
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from actorq.metrics.loggers import read_jsonl, surviving_rows  # noqa: E402

# task -> (records root, target, {label: eval.jsonl folder})
TASKS = {
    "bipedalwalker": ("docs/results/learning_ddpg_bipedalwalker", 100.0, {
        "seed 0, preset": "dieng_seed0",
        "seed 0, LR decay + 1M replay": "lr_decay_1m_replay/int8_seed0",
        "seed 1, LR decay + 1M replay": "lr_decay_1m_replay/int8_seed1"}),
    "walker2d": ("docs/results/learning_ddpg_walker2d", 1250.0, {
        "seed 0, preset": ".",
        "seed 1, preset": "seed1",
        "seed 0, LR decay": "lr_decay/int8_seed0",
        "seed 1, LR decay": "lr_decay/int8_seed1"}),
}
if len(sys.argv) != 2 or sys.argv[1] not in TASKS:
    sys.exit(f"error: usage: plot_ddpg_decay.py {'|'.join(TASKS)}")
task = sys.argv[1]
root, target, runs = TASKS[task]
fig, ax = plt.subplots(figsize=(7.5, 4.4))
for (label, folder), color in zip(runs.items(), ("tab:blue", "tab:orange", "tab:green", "tab:red")):
    path = Path(root) / folder / "eval.jsonl"
    if not path.is_file():
        print(f"skipped {label}: no {path}")
        continue
    rows = surviving_rows(read_jsonl(path))
    x = [r["actor_steps"] for r in rows]
    ax.plot(x, [r["eval_return"] for r in rows], color=color, label=f"{label}: int8 package")
    ax.plot(x, [r["eval_return_fp32"] for r in rows], color=color, linestyle=":", linewidth=1.0,
            label=f"{label}: fp32 policy")
ax.axhline(target, color="black", linestyle="--", linewidth=1.0, label=f"target {target:g}")
ax.set_xlabel("actor steps")
ax.set_ylabel("eval return (10 episodes)")
ax.set_title(f"DDPG {task}, int8 actors: the preset vs learning rates decayed to 0 over 1M steps")
ax.title.set_fontsize("small")
ax.grid(alpha=0.3)
ax.legend(loc="lower right", fontsize="xx-small")
fig.tight_layout()
out = Path(root) / f"ddpg_{task}_decay.png"
fig.savefig(out, dpi=120)
print(f"wrote {out}")
