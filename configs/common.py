"""Fields shared by every experiment config (run, launch, replay, evaluation, energy)."""

from __future__ import annotations

import dataclasses
from typing import Any

import ml_collections

from actorq.bounds import (
    FRACTION,
    NON_NEGATIVE,
    NON_NEGATIVE_INT,
    POSITIVE,
    POSITIVE_INT,
    Bounds,
)

# What each numeric experiment field admits (the agents' learner fields have their own tables);
# launchpad_programs.launch.check_config applies it before anything runs.
EXPERIMENT_BOUNDS: dict[str, Bounds] = {
    "seed": NON_NEGATIVE_INT,  # numpy's SeedSequence takes no negative seeds
    "num_actors": POSITIVE_INT,
    "envs_per_actor": POSITIVE_INT,
    "publish_period": NON_NEGATIVE_INT,  # 0: whenever stale
    "chunk_size": POSITIVE_INT,
    "shutdown_timeout_s": NON_NEGATIVE,
    "max_actor_steps": POSITIVE_INT,
    "pull_period": POSITIVE_INT,
    "replay.max_size": POSITIVE_INT,
    "replay.min_size": POSITIVE_INT,
    "replay.samples_per_insert": POSITIVE,
    "replay.samples_per_insert_tolerance": NON_NEGATIVE,
    "replay.max_times_sampled": NON_NEGATIVE_INT,  # 0: no cap
    "replay.priority_exponent": FRACTION,
    "eval_every_steps": POSITIVE_INT,
    "eval_episodes": POSITIVE_INT,
    "checkpoint_every_steps": POSITIVE_INT,
    "keep_checkpoints": POSITIVE_INT,
    "log_every_seconds": POSITIVE,
}


def base_config(
    agent: str, task: str, max_actor_steps: int, pull_period: int
) -> ml_collections.ConfigDict:
    """The experiment fields common to all agents; every one is overridable from the CLI."""
    config = ml_collections.ConfigDict()
    config.agent = agent
    config.task = task
    config.seed = 0
    # Actors' policy precision: fp32, fp16, bf16, int8, int2..int8, or any registered quantizer.
    config.quantizer = "int8"
    # A mixed-precision fleet: one precision per actor (e.g. "fp32,int8,int8,int4"); empty: every
    # actor runs `quantizer`. The learner publishes one package per precision in use.
    config.actor_quantizers = ""
    # How actors run the package. onnxruntime is the fastest measured path for every precision on
    # x86 CPUs (benchmarks/policy_inference.py); xla is the pure-JAX fallback.
    config.actor_runtime = "onnxruntime"
    # With learner.qat_bits: what the actors run before the QAT delay ends. quantized: the
    # `quantizer` package from the start (ActorQ: actors are low precision throughout); fp32:
    # the learner's fp32 policy until fake quantization switches on (QuaRL's QAT protocol).
    config.qat_actors = "quantized"
    # local: one process per node on this machine (the paper's topology: 4 actors); ray: the same
    # nodes as Ray actors; single: one actor interleaved with the learner in one process
    # (debugging and quick runs; the _small presets use it).
    config.launcher = "local"
    config.num_actors = 4
    # Environments per actor, stepped together with one batched policy call (the paper: 1).
    # More environments raise each actor's env steps/s for both precisions but shrink the
    # int8/fp32 ratio (benchmarks/envs_per_actor.py); pull_period and budgets count env steps.
    config.envs_per_actor = 1
    # Ray: the cluster to join ("" starts a local instance bound to 127.0.0.1); how actors are
    # placed over its nodes (spread: one node after another; pack: Ray's default, filling a node
    # first); custom resources each actor needs ("actor_host=1": only nodes started with
    # --resources='{"actor_host": N}' take actors, N per node).
    config.ray_address = ""
    config.ray_actor_placement = "spread"
    config.ray_actor_resources = ""
    # Resources the learner needs on the node the experiment is launched from ("GPU=1"): the
    # learner runs in the launching process, so the launch fails at once on a node without them.
    config.ray_learner_resources = ""
    # Where the learner runs: auto (a GPU when JAX sees one, else the CPU), cpu or gpu. Actors
    # are CPU processes either way.
    config.learner_device = "auto"
    # Distributed runs: the learner publishes a new package every publish_period learner steps
    # (0 = whenever it is stale, spending at most ~10% of learner time quantizing); actors send
    # experience in chunks of chunk_size transitions; shutdown waits this long for children.
    config.publish_period = 0
    config.chunk_size = 64
    config.shutdown_timeout_s = 5.0
    config.max_actor_steps = max_actor_steps
    # Actors pull the newest published policy every pull_period of their own steps.
    config.pull_period = pull_period

    config.replay = ml_collections.ConfigDict()
    config.replay.max_size = 1_000_000
    config.replay.min_size = 1_000
    # The one pacing rule of every launcher (launchpad_programs/pacing.py):
    #   ratio: Reverb's SampleToInsertRatio, as Acme's D4PG builds it. The learner waits when it
    #     is ahead and actors wait when it falls behind, keeping samples_per_insert within an error
    #     buffer of min_size * tolerance * samples_per_insert. A CPU learner sharing cores with
    #     its actors learns only this way (without it the paper preset's walker_stand took 40k
    #     actor steps with 45 learner steps).
    #   none: MinSize: actors are never blocked (the paper's setting, for a learner on an
    #     accelerator; pair it with max_times_sampled=16 as the paper did).
    config.replay.rate_limiter = "ratio"
    config.replay.samples_per_insert = 32.0
    config.replay.samples_per_insert_tolerance = 0.1
    # 0: items stay until evicted (FIFO). The ratio limiter decides how often they are sampled;
    # the paper's cap of 16 belongs with rate_limiter=none.
    config.replay.max_times_sampled = 0
    config.replay.priority_exponent = 0.6

    config.eval_every_steps = 5_000
    config.eval_episodes = 5
    # Also score the learner's own fp32 policy at each evaluation (eval_return_fp32 beside
    # eval_return): tells a quantized policy that was deployed badly from data that was bad.
    config.eval_fp32 = True
    config.checkpoint_every_steps = 20_000
    # Checkpoints (learner + counters + replay) kept on disk, newest first; >= 1. A resume takes
    # the newest intact one, so 2 lets it fall back past a damaged (e.g. half-written) newest.
    config.keep_checkpoints = 2
    # Keep replay contents in checkpoints so --resume continues with the same data.
    config.checkpoint_replay = True
    config.log_every_seconds = 10.0
    # Where the run writes; empty -> runs/<agent>_<task>_<quantizer>_seed<seed>.
    config.run_dir = ""

    config.track_energy = True
    config.country_iso_code = "USA"
    return config


def learner_fields(config_cls: type, **overrides: Any) -> ml_collections.ConfigDict:
    """The ``learner`` section of a preset: every field of the agent's config dataclass at its
    default (defaults live in the dataclass only), with the preset's ``overrides``. Optional
    fields (default None) keep their type, so ``--config.learner.qat_bits=6`` parses."""
    fields = {f.name: f for f in dataclasses.fields(config_cls)}
    unknown = sorted(set(overrides) - set(fields))
    if unknown:
        raise ValueError(f"{config_cls.__name__} has no fields {unknown}")
    section = ml_collections.ConfigDict()
    for name, field in fields.items():
        value = overrides.get(name, field.default)
        if field.default is None and not isinstance(value, ml_collections.FieldReference):
            kind = float if "float" in str(field.type) else int
            value = ml_collections.FieldReference(value, field_type=kind)
        section[name] = value
    return section


def on_policy_config(agent: str, task: str, max_actor_steps: int, envs: int,
                     learner: ml_collections.ConfigDict,
                     decay_learning_rate: bool = False) -> ml_collections.ConfigDict:
    """An on-policy preset: one actor stepping ``envs`` environments, interleaved with the
    learner (launcher ``single``), its unrolls in a queue that holds two batches.

    Actors pull after every unroll (``pull_period = unroll_length``): the behaviour policy is at
    most a version or two behind the learner. ``decay_learning_rate``: a linear decay to 0 that
    spans ``max_actor_steps`` (and follows a ``--config.max_actor_steps`` change).
    """
    config = base_config(agent, task, max_actor_steps, pull_period=int(learner.unroll_length))
    config.launcher = "single"
    config.num_actors = 1
    config.envs_per_actor = int(envs)
    config.learner = learner
    steps_per_batch = int(learner.unroll_length) * int(learner.unrolls_per_batch)
    if decay_learning_rate:
        # References: the decay follows --config.max_actor_steps and batch-shape overrides.
        learner.learning_rate_decay_updates = config.get_ref("max_actor_steps") // (
            learner.get_ref("unroll_length") * learner.get_ref("unrolls_per_batch"))
    # The queue: FIFO, each unroll sampled once, inserts block when two batches wait.
    config.replay.rate_limiter = "queue"
    config.replay.max_size = 2 * int(learner.unrolls_per_batch)
    config.replay.min_size = int(learner.unrolls_per_batch)
    config.replay.samples_per_insert = 1.0
    config.replay.max_times_sampled = 1
    # Every unroll is one item; a chunk is one unroll (chunk_size counts env steps).
    config.chunk_size = int(learner.unroll_length)
    config.eval_every_steps = max(max_actor_steps // 50, steps_per_batch)
    config.eval_episodes = 10
    return config
