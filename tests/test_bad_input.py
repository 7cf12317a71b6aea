"""Bad input, everywhere, ends in one ``error:`` line and a non-zero exit: no traceback.

Two parts: every entry point run as a user runs it, on a table of bad inputs; and a
schema-driven sweep that sets every numeric field of the presets to a negative, zero, NaN or
wrong-typed value and asserts a clean error, or an acceptance that the field's bounds document.
"""

from __future__ import annotations

import concurrent.futures
import math
import subprocess
import sys
from pathlib import Path

import ml_collections
import pytest

from actorq.agents.d4pg.config import D4PGConfig
from actorq.agents.dqn.config import DQNConfig
from actorq.agents.sac.config import SACConfig
from actorq.analysis.runs import config_to_dict, flatten_config
from actorq.bounds import Bounds, numeric_fields
from configs import d4pg_actorq, dqn_actorq, sac_actorq
from configs.common import EXPERIMENT_BOUNDS
from launchpad_programs.launch import check_config

REPO = Path(__file__).resolve().parents[1]
DQN = "--config=configs/dqn_actorq.py:cartpole_small"
SAC = "--config=configs/sac_actorq.py:cartpole_balance_small"
D4PG = "--config=configs/d4pg_actorq.py:cartpole_balance_small"

# (entry point, arguments, a word the error line must contain). The first three rows are the
# inputs that used to end in a traceback.
BAD_INPUTS: list[tuple[str, list[str], str]] = [
    ("experiments.dqn_actorq", [DQN, "--config.max_actor_steps=-5"], "max_actor_steps"),
    ("experiments.dqn_actorq", [DQN, "--config.run_dir=/proc/forbidden"], "/proc/forbidden"),
    ("experiments.ptq_study", ["--run_dir=/tmp/nonexistent_actorq_run"], "nonexistent"),
    ("experiments.dqn_actorq", [DQN, "--config.max_actor_steps=abc"], "max_actor_steps"),
    ("experiments.dqn_actorq", ["--config=configs/dqn_actorq.py:nope"], "nope"),
    ("experiments.dqn_actorq", [DQN, "--config.no_such_field=1"], "no_such_field"),
    ("experiments.dqn_actorq", [DQN, "--config.learner.learning_rate=nan"], "learning_rate"),
    ("experiments.dqn_actorq", [DQN, "--config.replay.min_size=0"], "min_size"),
    ("experiments.dqn_actorq", [DQN, "--config.quantizer=int12"], "int12"),
    ("experiments.dqn_actorq", [DQN, "--config.run_dir=/tmp/actorq_no_such_run", "--resume"],
     "resume"),
    ("experiments.d4pg_actorq", [D4PG, "--config.learner.batch_size=0"], "batch_size"),
    ("experiments.sac_actorq", [SAC, "--config.learner.discount=1.5"], "discount"),
    ("experiments.ptq_study", ["--run_dir=/tmp", "--episodes=0"], "episodes"),
    ("experiments.ptq_study", ["--episodes=x", "--run_dir=/tmp"], "episodes"),
    ("experiments.eval_protocols", ["--run_dir=/tmp/nonexistent_actorq_run"], "nonexistent"),
    ("experiments.eval_protocols", ["--run_dir=/tmp", "--episodes=0"], "episodes"),
    ("experiments.eval_protocols", ["--run_dir=/tmp", "--reference=nan"], "reference"),
    ("experiments.learning_check", [DQN, "--threshold=475", "--out_dir=/proc/forbidden"],
     "/proc/forbidden"),
    ("experiments.learning_check", [DQN, "--threshold=475", "--out_dir=/tmp/x", "--seeds=a"],
     "seeds"),
    ("experiments.learning_check", [DQN, "--out_dir=/tmp/x"], "threshold"),
    ("experiments.learning_check", [DQN, "--threshold=475", "--out_dir=/tmp/x",
                                    "--keep_records=/proc/records"], "--keep_records"),
    ("experiments.speedup_report", ["--runs_root=/tmp/nonexistent_actorq_runs"], "runs_root"),
    ("experiments.speedup_report", [DQN, "--out_dir=/tmp/x", "--quantizers=int12"], "int12"),
    ("experiments.qat_sweep", ["--bits=9", "--out_dir=/tmp/x"], "bits"),
    ("experiments.qat_sweep", ["--out_dir=/proc/forbidden"], "/proc/forbidden"),
    ("experiments.qat_sweep", ["--out_dir=/tmp/x", "--keep_records=/proc/records"],
     "--keep_records"),
    ("experiments.lowp_study", [SAC, "--out_dir=/tmp/x", "--seeds=-1"], "seeds"),
    ("experiments.lowp_study", [SAC, "--out_dir=/tmp/x", "--variants=fp12"], "fp12"),
    ("experiments.lowp_study", [SAC, "--out_dir=/tmp/x", "--keep_records=/proc/records"],
     "--keep_records"),
    ("experiments.pull_period_ablation", [DQN, "--out_dir=/tmp/x", "--pull_periods=0"],
     "pull_periods"),
    ("experiments.pixel_pipeline", ["--tasks=cartpole", "--out_dir=/tmp/x"], "cartpole"),
    ("experiments.pixel_pipeline", ["--agents=ddpg", "--out_dir=/tmp/x"], "ddpg"),
    ("experiments.dqn_actorq", ["--config=configs/dqn_actorq.py:minatar_breakout",
                                "--config.learner.torso=mlp"], "torso"),
    ("benchmarks.policy_inference", ["--batch_sizes=0"], "batch_sizes"),
    ("benchmarks.policy_inference", ["--no_such_flag=1"], "no_such_flag"),
    ("benchmarks.actor_throughput", ["--steps=-5"], "steps"),
    ("benchmarks.actor_throughput", ["--task=nope"], "nope"),
    ("benchmarks.envs_per_actor", ["--envs=0"], "envs"),
    ("benchmarks.device_speedup", ["--num_actors=0"], "num_actors"),
    ("benchmarks.device_speedup", ["--actor_counts=1,x"], "actor_counts"),
    ("experiments.weight_distributions", ["--run_dirs=/tmp/nonexistent_actorq_run"],
     "nonexistent"),
    ("benchmarks.frame_replay", ["--steps=0"], "steps"),
    ("benchmarks.learner_throughput", ["--calls=0"], "calls"),
    ("benchmarks.conv_learner_loop", ["--presets=dqn:cartpole"], "no conv torso"),
    ("benchmarks.quantization_error", ["--quantizers=int12"], "int12"),
]


def _run(module: str, args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], cwd=REPO, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def bad_input_results() -> dict[int, subprocess.CompletedProcess]:
    # Each run imports JAX; a few at a time keeps the table to a minute or two.
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        futures = {i: pool.submit(_run, module, args)
                   for i, (module, args, _) in enumerate(BAD_INPUTS)}
        return {i: f.result() for i, f in futures.items()}


@pytest.mark.parametrize("index", range(len(BAD_INPUTS)),
                         ids=[f"{m}:{' '.join(a[-1:])}" for m, a, _ in BAD_INPUTS])
def test_bad_input_ends_in_one_error_line(bad_input_results, index):
    module, args, word = BAD_INPUTS[index]
    result = bad_input_results[index]
    output = result.stdout + result.stderr
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert result.returncode != 0, output
    assert "Traceback" not in output, output
    assert len(errors) == 1, output
    assert word in errors[0], errors[0]


def test_bad_input_leaves_no_run_behind(tmp_path):
    run_dir = tmp_path / "run"
    result = _run("experiments.dqn_actorq",
                  [DQN, f"--config.run_dir={run_dir}", "--config.learner.batch_size=-1"])
    assert result.returncode != 0 and not run_dir.exists()


# ----------------------------------------------------------------------------- the schema sweep

PRESETS = [(dqn_actorq, "cartpole_small", DQNConfig), (dqn_actorq, "cartpole", DQNConfig),
           (d4pg_actorq, "cheetah_run_cpu", D4PGConfig), (d4pg_actorq, "walker_stand", D4PGConfig),
           (sac_actorq, "cartpole_balance_small", SACConfig)]


def _bounds_of(key: str, learner_cls: type) -> Bounds | None:
    if key.startswith("learner."):
        return learner_cls.BOUNDS.get(key.removeprefix("learner."))
    return EXPERIMENT_BOUNDS.get(key)


def _numeric_keys(config: ml_collections.ConfigDict) -> list[str]:
    out = []
    for key, value in flatten_config(config_to_dict(config)).items():
        if isinstance(value, (bool, str)):
            continue
        if value is None or isinstance(value, (int, float, list, tuple)):
            out.append(key)
    return out


def _set(config: ml_collections.ConfigDict, key: str, value) -> None:
    *parents, leaf = key.split(".")
    node = config
    for name in parents:
        node = node[name]
    node[leaf] = value


@pytest.mark.parametrize("module, preset, learner_cls", PRESETS,
                         ids=[f"{m.__name__.split('.')[-1]}:{p}" for m, p, _ in PRESETS])
def test_every_numeric_field_has_bounds(module, preset, learner_cls):
    config = module.get_config(preset)
    unbounded = [k for k in _numeric_keys(config) if _bounds_of(k, learner_cls) is None]
    assert unbounded == []
    assert set(numeric_fields(learner_cls)) == set(learner_cls.BOUNDS)


@pytest.mark.parametrize("module, preset, learner_cls", PRESETS,
                         ids=[f"{m.__name__.split('.')[-1]}:{p}" for m, p, _ in PRESETS])
def test_every_numeric_field_refuses_what_its_bounds_refuse(module, preset, learner_cls):
    base = module.get_config(preset)
    check_config(base)
    accepted, refused = 0, 0
    for key in _numeric_keys(base):
        bounds = _bounds_of(key, learner_cls)
        current = flatten_config(config_to_dict(base))[key]
        is_list = isinstance(current, (list, tuple))
        for bad in ([-5], [0], []) if is_list else (-5, 0, math.nan, "abc"):
            config = base.copy_and_resolve_references()
            try:
                _set(config, key, bad)
            except TypeError:
                # ml_collections keeps a field's type: a string (or NaN) for an int field is
                # refused where it is set, on the command line as here.
                assert isinstance(bad, str) or isinstance(current, int), (key, bad)
                refused += 1
                continue
            value = flatten_config(config_to_dict(config))[key]
            if bounds.admits(list(value) if is_list else value):
                # Documented acceptance: the bounds admit it, so may the whole config (a
                # cross-field rule may still refuse it, with a clean ValueError).
                try:
                    check_config(config)
                    accepted += 1
                except ValueError:
                    refused += 1
                continue
            with pytest.raises(ValueError, match=key.split(".")[-1]):
                check_config(config)
            refused += 1
    assert refused > accepted > 0


def test_an_unknown_qat_actors_is_refused_before_anything_runs():
    from configs import dqn_actorq

    config = dqn_actorq.get_config("cartpole_small")
    config.qat_actors = "int8"
    with pytest.raises(ValueError, match="unknown qat_actors 'int8'; valid: quantized, fp32"):
        check_config(config)
