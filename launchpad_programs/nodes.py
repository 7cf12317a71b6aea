"""Node building blocks shared by the ActorQ program's nodes, whichever launcher runs them.

Each function builds one node's pieces from the experiment config through the agent registry,
so launchers never know which agent they run. Importing this module, building a builder, an
actor or an evaluator does not import JAX: actor processes on the ONNX Runtime runtimes stay
small and start fast (only the learner side and the ``xla`` runtime import it).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import ml_collections
import numpy as np

from actorq.agents.registry import builder_for_config
from actorq.core import Builder, Learner, VariableSource
from actorq.envs import make_environment
from actorq.quantization.package import PolicyPackage, first_layer_inputs
from actorq.replay import Prioritized, Table, Uniform, queue_table
from actorq.runtime.actor import FeedForwardActor
from actorq.runtime.breakdown import RuntimeBreakdown
from actorq.runtime.environment_loop import evaluate
from actorq.runtime.policy_runtime import make_policy_runtime
from actorq.runtime.variable_client import VariableClient

EVAL_SEED_OFFSET = 10_000
ACTOR_SEED_STRIDE = 1_000
ENV_SEED_STRIDE = 104_729  # a prime: an actor's environments j > 0 stay off other actors' seeds


def make_builder_for(config: ml_collections.ConfigDict) -> Builder:
    """The agent builder for the config's agent and task (validates both early)."""
    return builder_for_config(config)


def make_table(config: ml_collections.ConfigDict, builder: Builder) -> Table:
    """The learner's table: for the replay data path FIFO eviction, the configured rate limiter
    (``pacing``), the agent's sampler and its frame-stack fields stored once; for the queue data
    path a queue of unrolls."""
    if builder.data_path == "queue":
        return queue_table("queue", int(config.replay.max_size), builder.replay_signature(),
                           seed=config.seed)
    from launchpad_programs.pacing import make_rate_limiter

    sampler = (
        Prioritized(config.replay.priority_exponent) if builder.uses_priorities else Uniform()
    )
    return Table(
        name="replay",
        max_size=config.replay.max_size,
        signature=builder.replay_signature(),
        sampler=sampler,
        rate_limiter=make_rate_limiter(config, builder),
        max_times_sampled=config.replay.max_times_sampled,
        seed=config.seed,
        frame_stacks=builder.frame_stack_fields,
    )


def make_learner(config: ml_collections.ConfigDict, builder: Builder, table: Table,
                 sample_timeout: float | None = None) -> Learner:
    """The agent's learner reading its batches from ``table``."""
    return builder.make_learner(
        builder.learner_batches(table, timeout=sample_timeout), config.seed,
        update_priorities=table.update_priorities, replay_size=lambda: table.size,
    )


def actor_quantizers(config: ml_collections.ConfigDict) -> list[str]:
    """Each actor's policy precision: ``config.actor_quantizers`` (comma-separated, one per
    actor: a mixed-precision fleet) or ``config.quantizer`` for every actor."""
    spec = str(config.actor_quantizers)
    num_actors = max(int(config.num_actors), 1)
    if not spec.strip():
        return [str(config.quantizer)] * num_actors
    names = [name.strip() for name in spec.split(",") if name.strip()]
    if len(names) != num_actors:
        raise ValueError(
            f"actor_quantizers names {len(names)} precisions ({', '.join(names)}) for "
            f"num_actors={num_actors}: give one per actor")
    return names


def evaluates_fp32(config: ml_collections.ConfigDict) -> bool:
    """Whether evaluations also score the learner's own fp32 policy (``eval_return_fp32``)."""
    return bool(config.eval_fp32) and str(config.quantizer) != "fp32"


QAT_ACTORS = ("quantized", "fp32")


def fp32_package_versions(config: ml_collections.ConfigDict) -> int:
    """Learner versions below which every quantized package is published as the fp32 policy:
    the QAT delay with ``qat_actors=fp32`` (QuaRL's QAT, where acting is fp32 until fake
    quantization switches on), else 0 (``quantized``: the actors' precision from the start)."""
    mode = str(config.qat_actors)
    if mode not in QAT_ACTORS:
        raise ValueError(f"unknown qat_actors {mode!r}; valid: {', '.join(QAT_ACTORS)}")
    if mode == "fp32" and config.learner.get("qat_bits") is not None:
        return int(config.learner.qat_delay_steps)
    return 0


def published_precisions(config: ml_collections.ConfigDict) -> list[str]:
    """Every precision the learner publishes: the actors' and the evaluated ones (the deployed
    ``config.quantizer`` and, with ``eval_fp32``, fp32), each once, in a stable order."""
    names = [str(config.quantizer), *actor_quantizers(config)]
    if evaluates_fp32(config):
        names.append("fp32")
    return list(dict.fromkeys(names))


class LearnerVariableSource:
    """Serves the learner's policy, quantized on demand once per new learner version.

    Quantizing the paper policy costs tens of milliseconds, so it happens only when an actor asks
    and the learner has moved on since the last package.
    """

    def __init__(self, learner: Any, builder: Builder, quantizer_spec: str,
                 fp32_before_version: int = 0) -> None:
        # Imported here: actor and evaluator processes import this module but never quantize,
        # and the quantizers bring JAX and AQT.
        from actorq.quantization import make_policy_quantizer

        self._learner = learner
        self._builder = builder
        self._network = builder.policy_network
        self._quantizer = make_policy_quantizer(quantizer_spec, builder.action_value_head)
        # Versions below this one are published as the fp32 policy (fp32_package_versions).
        self._fp32_before_version = int(fp32_before_version)
        self._fp32_quantizer = (make_policy_quantizer("fp32", builder.action_value_head)
                                if self._fp32_before_version > 0 else None)
        self._calibration: np.ndarray | None = None
        self._latest: tuple[int, bytes] | None = None
        self.latest_package: PolicyPackage | None = None
        self.quantize_seconds = 0.0
        self.num_packages = 0
        self.calibrated = False

    def calibrate(self, observations: np.ndarray) -> bool:
        """Keeps raw ``observations`` for a quantizer that calibrates on them (GPTQ, the int8
        recipe); every later version is quantized with them, normalized as that version's
        package. Whether this quantizer takes them."""
        if not hasattr(self._quantizer, "with_calibration"):
            return False
        self._calibration = np.asarray(observations, np.float32)
        self._latest = None
        self.calibrated = True
        return True

    def latest(self) -> tuple[int, bytes]:
        version = self._learner.steps
        if self._latest is None or self._latest[0] != version:
            start = time.perf_counter()
            # The head and the observation normalizer travel in fp32 beside the layers.
            extras = self._builder.policy_extras(self._learner)
            quantizer = self._quantizer
            if version < self._fp32_before_version:
                quantizer = self._fp32_quantizer
            elif self._calibration is not None:
                quantizer = quantizer.with_calibration(
                    first_layer_inputs(self._calibration, extras))
            package = quantizer.quantize(self._learner.policy_params(), self._network, version)
            if extras:
                package = dataclasses.replace(package, **extras)
            self._latest = (version, package.to_bytes())
            self.latest_package = package
            self.quantize_seconds += time.perf_counter() - start
            self.num_packages += 1
        return self._latest


class LearnerPackages:
    """The learner's policy at every precision the program uses, quantized once per version.

    ``sources[precision]`` is that precision's :class:`LearnerVariableSource`; ``latest()``
    returns ``(version, {precision: bytes})`` for the weights channel.
    """

    def __init__(self, learner: Any, builder: Builder, precisions: list[str],
                 fp32_before_version: int = 0) -> None:
        if not precisions:
            raise ValueError("a program publishes at least one precision")
        self.sources = {p: LearnerVariableSource(learner, builder, p, fp32_before_version)
                        for p in precisions}

    def calibrate(self, observations: np.ndarray) -> list[str]:
        """Calibrates every quantizer that takes observations; the precisions that did."""
        return [p for p, source in self.sources.items() if source.calibrate(observations)]

    def latest(self) -> tuple[int, dict[str, bytes]]:
        packages = {p: source.latest() for p, source in self.sources.items()}
        versions = {version for version, _ in packages.values()}
        assert len(versions) == 1, versions  # one learner, one version
        return versions.pop(), {p: data for p, (_, data) in packages.items()}

    @property
    def num_packages(self) -> int:
        """Versions published (each at every precision)."""
        return max(source.num_packages for source in self.sources.values())

    @property
    def quantize_seconds(self) -> float:
        return sum(source.quantize_seconds for source in self.sources.values())


def make_actor(
    config: ml_collections.ConfigDict,
    builder: Builder,
    source: VariableSource,
    actor_index: int,
    num_actors: int,
    emit: Callable[[dict[str, np.ndarray]], None],
    breakdown: RuntimeBreakdown,
    step_offset: int = 0,
    exploration_steps_done: int = 0,
) -> tuple[FeedForwardActor, VariableClient]:
    """Actor ``actor_index``: its own runtime, variable client, exploration (or the package's
    stochastic head) and one adder per environment (``envs_per_actor``).

    ``exploration_steps_done``: steps this actor already took (a restarted actor process)
    so its exploration schedule (e.g. epsilon decay) continues instead of starting over.
    """
    runtime = make_policy_runtime(config.actor_runtime)
    client = VariableClient(
        source, runtime, config.pull_period, breakdown,
        expected_shape=(builder.observation_size, builder.policy_output_size),
    )
    # Offsetting the exploration seed by the resumed step count keeps a resumed run from
    # replaying the same noise sequence.
    seed = config.seed * 7919 + actor_index * ACTOR_SEED_STRIDE + step_offset
    exploration = builder.make_exploration(actor_index, num_actors, seed)
    if exploration is not None and exploration_steps_done:
        base_exploration, done = exploration, int(exploration_steps_done)

        def exploration(outputs: np.ndarray, step: int) -> np.ndarray:
            return base_exploration(outputs, step + done)

    adders = [builder.make_adder(emit) for _ in range(envs_per_actor(config))]
    actor = FeedForwardActor(runtime, client, exploration, adders, breakdown, seed=seed,
                             head_noise_period=builder.head_noise_period)
    return actor, client


def envs_per_actor(config: ml_collections.ConfigDict) -> int:
    """``config.envs_per_actor``, validated."""
    k = config.envs_per_actor
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"envs_per_actor must be an integer >= 1, got {k!r}")
    return k


def actor_environments(config: ml_collections.ConfigDict, actor_index: int,
                       step_offset: int = 0) -> list[Any]:
    """Actor ``i``'s ``envs_per_actor`` environments, seeded apart from each other, from the
    other actors and from evaluation."""
    base = config.seed * 7919 + actor_index * ACTOR_SEED_STRIDE + step_offset + 1
    return [make_environment(config.task, seed=base + j * ENV_SEED_STRIDE)
            for j in range(envs_per_actor(config))]


class Evaluator:
    """Noise-free evaluation of a policy package over ``episodes`` episodes.

    It runs the same quantized package the actors run (that is the policy being deployed).
    """

    def __init__(self, config: ml_collections.ConfigDict, builder: Builder) -> None:
        self._env = make_environment(
            config.task, seed=config.seed + EVAL_SEED_OFFSET, evaluation=True
        )
        self._runtime = make_policy_runtime(config.actor_runtime)
        self._builder = builder
        self._episodes = config.eval_episodes
        self._loaded_version = -1

    def run(self, source: VariableSource) -> tuple[int, list[float]]:
        """Evaluates the newest package; returns (policy version, episode returns)."""
        latest = source.latest()
        if latest is None:
            raise RuntimeError("no policy published yet")
        version, data = latest
        if version != self._loaded_version:
            self._runtime.load(PolicyPackage.from_bytes(data))
            self._loaded_version = version

        def policy(observation: np.ndarray) -> np.ndarray:
            outputs = self._runtime(observation[None])  # the runtime prepares it
            return self._builder.evaluation_action(outputs)[0]

        return version, evaluate(self._env, policy, self._episodes)


class DriftMonitor:
    """The published packages' drift from the learner's fp32 policy
    (:mod:`actorq.analysis.drift`), on one fixed batch of replay observations taken once replay
    holds ``min_size`` items. That batch also calibrates the quantizers that take observations,
    and a fresh batch recalibrates them each time the table's inserts have doubled since: the
    first batch holds the states of the untrained (often uniform-random) policy, and a
    trained policy's states lie elsewhere (measured: docs/algorithms.md, DDPG HalfCheetah).

    Called after each publish; it measures that version unless it would take more than ~10% of
    the learner's time (then it skips versions until 9x its own cost has passed). The first
    measurement compiles and is not counted.
    """

    BATCH = 256

    def __init__(self, builder: Builder, table: Table, min_size: int, seed: int = 0) -> None:
        self._builder = builder
        self._table = table
        self._min_size = int(min_size)
        self._seed = seed
        self._drift: Any = None
        self._cost = 0.0
        self._last_end = 0.0
        self.measurements = 0
        self.calibrations = 0
        self._calibrated_at_inserts = 0

    def _peek(self) -> np.ndarray:
        peeked = self._table.peek(self.BATCH, self._seed + self.calibrations)["observation"]
        # Unroll items hold [T, *obs] observations: any BATCH of their steps will do.
        shape = self._builder.observation_spec.shape
        return peeked.reshape(-1, *shape)[: self.BATCH]  # uint8 frames stay uint8 for drift

    def capture(self, packages: LearnerPackages) -> None:
        """Takes the fixed batch, once, when the table first holds ``min_size`` items, and
        calibrates ``packages`` with it; later recalibrates them on a fresh batch whenever the
        table's inserts have doubled since the last calibration. The learner node calls it
        before each learner step, while the batch that step will consume is still in the
        table: a queue is empty again by the time the step's version is published."""
        if self._table.size < self._min_size:
            return
        inserts = self._table.num_inserts
        if self._drift is not None and inserts < 2 * self._calibrated_at_inserts:
            return
        observations = self._peek()
        if self._drift is None:
            from actorq.analysis.drift import PolicyDrift

            self._drift = PolicyDrift(self._builder.policy_network,
                                      self._builder.evaluation_action, observations)
        # Quantizers that need data (GPTQ, the recipe) are fitted to states the actors
        # visit from this version on.
        packages.calibrate(observations)  # each source takes an fp32 copy
        self.calibrations += 1
        self._calibrated_at_inserts = max(inserts, 1)

    def measure(self, learner: Any, packages: LearnerPackages) -> dict[str, float]:
        """``{"policy_drift_<metric>/<precision>": value}``; empty until the fixed batch is
        taken (:meth:`capture`) or while throttled."""
        start = time.perf_counter()
        self.capture(packages)
        # Never throttled before the first measurement: the cost and its end start at 0.
        if self._drift is None or start - self._last_end < 9.0 * self._cost:
            return {}
        packages.latest()  # every precision at the learner's current version
        published = {p: source.latest_package for p, source in packages.sources.items()}
        row = self._drift.measure(learner.policy_params(), published)
        self._last_end = time.perf_counter()
        if self.measurements:
            self._cost = self._last_end - start
        self.measurements += 1
        return row


class DualEvaluator:
    """Scores the deployed package and, when given, the learner's fp32 policy of the same
    version, on the same episode seeds: a user can then tell whether quantization hurt the data
    the actors collected (both low) or only the policy they deployed (fp32 high, deployed low).
    """

    def __init__(self, config: ml_collections.ConfigDict, builder: Builder) -> None:
        self._deployed = Evaluator(config, builder)
        self._fp32 = Evaluator(config, builder) if evaluates_fp32(config) else None

    def run(self, source: VariableSource,
            fp32_source: VariableSource | None = None) -> dict[str, Any]:
        """``{"version", "returns"}`` of the deployed package, plus ``"fp32_version"`` and
        ``"fp32_returns"`` when fp32 is evaluated too (the versions can differ by one publish
        when a new pair lands in between)."""
        version, returns = self._deployed.run(source)
        result: dict[str, Any] = {"version": version, "returns": returns}
        if self._fp32 is not None and fp32_source is not None:
            result["fp32_version"], result["fp32_returns"] = self._fp32.run(fp32_source)
        return result


class WarmupTable:
    """The replay table as the learner sees it, plus one all-zeros warm-up batch.

    ``warm_up(learner)`` runs one learner call on that batch (compiling its update) and then
    restores the learner's state, so the warm-up leaves no trace; afterwards every call goes
    to the real table.
    """

    def __init__(self, table: Any) -> None:
        self._table = table
        self._serve_warmup = False

    def warm_up(self, learner: Any) -> None:
        snapshot = learner.state()  # immutable jax arrays: safe to keep across a step
        self._serve_warmup = True
        try:
            learner.step()
        finally:
            self._serve_warmup = False
        learner.restore(snapshot)

    def sample(self, batch_size: int, timeout: float | None = None) -> Any:
        if not self._serve_warmup:
            return self._table.sample(batch_size, timeout=timeout)
        from actorq.replay.table import SampleBatch

        return SampleBatch(
            keys=-1 - np.arange(batch_size, dtype=np.int64),  # unknown keys: ignored
            probabilities=np.full(batch_size, 1.0 / batch_size),
            data={field: np.zeros((batch_size, *spec.shape), spec.dtype)
                  for field, spec in self._table.signature.items()},
            priorities=np.ones(batch_size),
            table_size=batch_size,
        )

    def update_priorities(self, keys: Any, priorities: Any) -> None:
        self._table.update_priorities(keys, priorities)

    @property
    def size(self) -> int:
        return self._table.size
