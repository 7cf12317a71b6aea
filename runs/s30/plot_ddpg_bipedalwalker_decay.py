"""#23: DDPG BipedalWalker seed 0, the DI-engine preset against the same with learning-rate decay and a 1M
replay: every evaluation of the int8 package and of the learner's fp32 policy, from the kept records."""
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from actorq.metrics.loggers import read_jsonl, surviving_rows  # noqa: E402

root = Path("docs/results/learning_ddpg_bipedalwalker")
runs = {"preset (Adam 3e-4)": root / "dieng_seed0",
        "+ LR decay to 0 over 1M, 1M replay": root / "lr_decay_1m_replay/int8_seed0"}
fig, ax = plt.subplots(figsize=(7.0, 4.2))
for (label, run), color in zip(runs.items(), ("tab:blue", "tab:orange")):
    rows = surviving_rows(read_jsonl(run / "eval.jsonl"))
    x = [r["actor_steps"] for r in rows]
    ax.plot(x, [r["eval_return"] for r in rows], color=color, label=f"{label}: int8 package")
    ax.plot(x, [r["eval_return_fp32"] for r in rows], color=color, linestyle=":",
            label=f"{label}: fp32 policy")
ax.axhline(100, color="black", linestyle="--", linewidth=1.0, label="target 100")
ax.set_xlabel("actor steps")
ax.set_ylabel("eval return (10 episodes)")
ax.set_title("DDPG BipedalWalker-v3, seed 0, int8 actors")
ax.grid(alpha=0.3)
ax.legend(loc="lower right", fontsize="x-small")
fig.tight_layout()
fig.savefig(root / "ddpg_bipedalwalker_decay_seed0.png", dpi=120)
