"""#24: the PPO Pong curve of one session (runs/ppo_pong/seed0): training-episode returns (the sampled
policy, a moving mean over 20 episodes) and the evaluations (the int8 package's greedy policy), with
the run's records copied to docs/results/learning_ppo_pong/seed0.
    PYTHONPATH=. python runs/s25/pong_curve.py runs/ppo_pong/seed0 docs/results/learning_ppo_pong
"""
import sys
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from actorq.analysis.runs import copy_run_records
from actorq.metrics.loggers import read_jsonl

run, out = Path(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
copy_run_records([run], out, files=("config.json", "eval.jsonl", "summary.json", "energy.json",
                                    "learner.jsonl", "actor_0.jsonl", "breakdown.json",
                                    "breakdown.md"), finished_only=False)
# read_jsonl drops a line torn by a stop, as a resumed run can leave one.
episodes = read_jsonl(run / "actor_0.jsonl")
evals = read_jsonl(run / "eval.jsonl")
steps = np.array([e["actor_steps"] for e in episodes])
returns = np.array([e["episode_return"] for e in episodes], float)
window = 20
smooth = np.convolve(returns, np.ones(window) / window, mode="valid")
fig = Figure(figsize=(7, 4))
FigureCanvasAgg(fig)
ax = fig.add_subplot()
ax.plot(steps, returns, ".", alpha=0.25, label="training episodes (sampled, int8 actors)")
ax.plot(steps[window - 1:], smooth, label=f"moving mean of {window} episodes")
ax.plot([e["actor_steps"] for e in evals], [e["eval_return"] for e in evals], "o-",
        label="evaluation (int8 package, greedy)")
ax.set_xlabel("env steps (agent steps, frame skip 4)")
ax.set_ylabel("return")
ax.set_title("PPO Pong, CleanRL settings, one Genoa core")
ax.legend(loc="upper left", fontsize=8)
fig.tight_layout()
fig.savefig(out / "pong_curve.png", dpi=100)
print(f"{len(episodes)} episodes to {steps[-1]} steps; last 50 mean {returns[-50:].mean():.2f}")
