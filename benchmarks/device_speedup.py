"""QuaRL Table 4 on a GPU machine: time-to-reward of int8 vs fp32 actors, one prepared script.

    python -m benchmarks.device_speedup --out_dir=runs/device_speedup [--num_actors=12]
        [--learner_device=gpu] [--total_minutes=9] [--seed=0] [--evals_per_run=40]
    python -m benchmarks.device_speedup --dry-run --out_dir=/tmp/device_speedup_dry

Runs, in order, DQN ``cartpole`` and ``acrobot``, then D4PG ``walker_stand`` and
``cartpole_balance`` (the paper presets of ``configs/dqn_actorq.py`` and
``configs/d4pg_actorq.py``: paper networks, budgets and pull periods), each with fp32 actors and
then int8 actors, in the paper's setting: the learner on ``--learner_device`` (default gpu),
``--num_actors`` CPU actor processes on the local launcher (default: cores - 4, at least 2),
``replay.rate_limiter=none`` (actors never blocked) with ``replay.max_times_sampled=16``, one seed.
Then it prints one Table 4 row per task (target return = 95% of fp32's best smoothed evaluation
return; time of fp32 and of int8 to reach it; speedup; energy ratio), computed by
``actorq.analysis.report.write_speedup_report``, and writes to
``--out_dir``: ``device_speedup.md`` / ``device_speedup.json`` (this table, the settings and one
record per run), ``speedup.md`` / ``speedup.json`` and plots (the full analysis report), the runs
under ``<agent>_<task>/<quantizer>_seed<seed>/``, and ``device_speedup_logs.tar.gz`` (the runs'
small logs: configs, summaries, eval/learner logs, breakdowns; no checkpoints).

**Wall-clock budget.** No launcher has a wall-clock limit (runs end at ``max_actor_steps``), and
the whole script must fit in one 10-minute device command. So each run keeps its preset's
``max_actor_steps`` and is also stopped at its share of ``--total_minutes``: the script sends
its own process SIGTERM, which the driver handles as its documented clean stop (nodes stopped;
logs, energy, breakdown and ``summary.json`` written, ``interrupted=True``); nothing is added to
the launchers. (A step budget derived from a measured rate was the other option; rates on the
GPU machine are unknown here and differ between fp32 and int8 actors, which is the point.)
Before each task the time left is split between the runs left; of a run's share, the set-up
(building, compiling, starting the nodes) and the stop measured on the previous run of the same
agent are set aside, and the rest is its acting time, counted from the driver's main loop, the
same for fp32 and int8. A run that reaches ``max_actor_steps`` first ends normally, with its
final evaluation, and leaves its time to the later tasks. Time-to-target is measured from each
run's own start (the driver's clock), so set-up does not enter the speedup. With many fast
actors the presets' budgets (40k-100k steps) may be spent in seconds: ``--set
max_actor_steps=100000000`` makes every run end at its time share instead.

Settings that differ from the presets, for both precisions alike: ``eval_fp32=False`` (the
evaluator scores only the deployed package, so an int8 run's evaluator is not slowed by a second
fp32 score), ``eval_every_steps = max_actor_steps // --evals_per_run`` (the evaluator evaluates
as often as it can keep up; the presets' 5000 steps would give 8-12 points for a 10-point
smoothing window), a checkpoint only at the end, without replay contents (``checkpoint_replay=
False``: stops take seconds, not tens), and ``--set key=value`` for anything else.

**Actor scaling (QuaRL Fig. 11).** ``--actor_counts=1,2,4,8,12`` repeats every (task, precision)
at each actor count (runs under ``<agent>_<task>/actors<N>/``, the Table 4 analysis per count) and
adds ``actor_scaling.md`` / ``.json`` / ``.png``: per task and count, each precision's time to a
fixed number of env steps (the most that every run of the task reached) and to the target return,
and int8's speedup on both. On the device, one command for the whole sweep of one task::

    ... python3 -m benchmarks.device_speedup --tasks=dqn_cartpole --actor_counts=1,2,4,8,12 \
        --total_minutes=8 --out_dir=runs/actor_scaling ...

``--dry-run`` takes the same path end to end on a small CPU machine: learner_device auto, tiny
networks and budgets (2000 env steps, 1-2 evaluation episodes), ``--total_minutes=2.5``; its
rows may say "not reached".

On the GPU machine (wheels from ``benchmarks/prepare_device_wheels.sh``, carried as
``device_wheels``), one command of at most 10 minutes (install ~0.5 min, then 8 min)::

    bash benchmarks/device_install.sh device_wheels && export PYTHONPATH=/tmp/actorq_site:$PWD \\
        && PYTHONUNBUFFERED=1 python3 -m benchmarks.device_speedup --total_minutes=8 \\
        --out_dir=runs/device_speedup 2>&1 | tee $OUT/device_speedup.log; \\
        cp runs/device_speedup/device_speedup.md runs/device_speedup/device_speedup.json \\
        runs/device_speedup/speedup.md runs/device_speedup/device_speedup_logs.tar.gz $OUT/
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import math
import os
import shutil
import signal
import sys
import tarfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

# No rendering is needed, and probing GL back-ends in every actor process costs start-up time.
os.environ.setdefault("MUJOCO_GL", "disable")

QUANTIZERS: tuple[str, str] = ("fp32", "int8")
FRACTION = 0.95  # target = FRACTION x fp32's best smoothed evaluation return (the paper's)
WINDOW = 10  # smoothing window (evaluations), as in actorq.analysis
# Seconds kept at the end of --total_minutes for the report (analysis, plots, archive).
REPORT_RESERVE_S = {False: 25.0, True: 10.0}
# Initial guesses, replaced by what the runs measure: seconds from a run's start to its driver's
# main loop (set-up: building, compiling, starting the nodes), and from the stop signal to the
# run's return (nodes, checkpoint, energy, breakdown).
SETUP_S = {False: 20.0, True: 8.0}
STOP_MARGIN_S = {False: 10.0, True: 3.0}
# A run acts for at least this long, whatever is left (the total may then be overrun).
MIN_ACTING_S = {False: 20.0, True: 8.0}
# The paper's cap on how often one replay item is sampled, with never-blocked actors.
MAX_TIMES_SAMPLED = 16
LOG_FILES = ("config.json", "summary.json", "eval.jsonl", "learner.jsonl", "breakdown.json",
             "breakdown.md", "energy.json", "events.jsonl")


@dataclasses.dataclass(frozen=True)
class Task:
    """One paper task: an agent's config file and preset."""

    agent: str  # "dqn" or "d4pg"
    preset: str  # a paper preset of configs/<agent>_actorq.py

    @property
    def name(self) -> str:
        """``<agent>_<preset>``, e.g. ``dqn_cartpole``."""
        return f"{self.agent}_{self.preset}"


TASKS: tuple[Task, ...] = (
    Task("dqn", "cartpole"),
    Task("dqn", "acrobot"),
    Task("d4pg", "walker_stand"),
    Task("d4pg", "cartpole_balance"),
)

# --dry-run: tiny networks and budgets (the same code path, minutes on a 2-core CPU).
DRY_RUN_OVERRIDES: dict[str, dict[str, Any]] = {
    "dqn": {
        "max_actor_steps": 2000, "eval_episodes": 2, "pull_period": 100,
        "replay.min_size": 200, "learner.hidden_sizes": (32, 32), "learner.batch_size": 32,
    },
    "d4pg": {
        "max_actor_steps": 2000, "eval_episodes": 1, "pull_period": 100,
        "replay.min_size": 200, "learner.policy_hidden_sizes": (32, 32),
        "learner.critic_hidden_sizes": (32, 32), "learner.batch_size": 32,
    },
}


def default_num_actors() -> int:
    """Cores this process may use, minus 4 (learner, replay/driver threads, evaluator, slack);
    at least 2."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 2
    return max(2, cores - 4)


def parse_value(text: str) -> Any:
    """A ``--set`` value: a Python literal (``(32, 32)``, ``1e-3``, ``True``) or a string."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_sets(items: Sequence[str]) -> dict[str, Any]:
    """``["learner.batch_size=64", ...]`` -> ``{"learner.batch_size": 64, ...}``."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set expects key=value, got {item!r}")
        out[key.strip()] = parse_value(value.strip())
    return out


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    from actorq.command_line import ArgumentParser

    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out_dir", default="runs/device_speedup",
                   help="report and runs folder (must not hold runs unless --overwrite)")
    p.add_argument("--num_actors", type=int, default=default_num_actors(),
                   help="actor processes per run (default: cores - 4, at least 2)")
    p.add_argument("--actor_counts", default=None,
                   help="comma-separated actor counts: every run repeats at each (actor "
                        "scaling, QuaRL Fig. 11); default: --num_actors alone")
    p.add_argument("--learner_device", choices=("auto", "cpu", "gpu"), default=None,
                   help="where the learner runs (default gpu; --dry-run: auto)")
    p.add_argument("--total_minutes", type=float, default=None,
                   help="wall budget of the whole script, runs and report (default 9; "
                        "--dry-run: 2.5)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--evals_per_run", type=int, default=None,
                   help="eval_every_steps = max_actor_steps // this (default 40; --dry-run: 8)")
    p.add_argument("--tasks", default=",".join(t.name for t in TASKS),
                   help="comma-separated subset of " + ", ".join(t.name for t in TASKS))
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="config override, applied last, e.g. --set learner.batch_size=128 (every "
                        "run) or --set dqn:learner.hidden_sizes=(64,64) (runs of one agent or "
                        "task: dqn:, d4pg:, dqn_cartpole:, ...); repeatable")
    p.add_argument("--overwrite", action="store_true",
                   help="delete runs already in --out_dir instead of refusing")
    p.add_argument("--dry-run", "--dry_run", dest="dry_run", action="store_true",
                   help="tiny networks and budgets, learner_device auto: checks the whole path "
                        "on a CPU")
    args = p.parse_args(argv)
    dry = args.dry_run
    if args.learner_device is None:
        args.learner_device = "auto" if dry else "gpu"
    if args.total_minutes is None:
        args.total_minutes = 2.5 if dry else 9.0
    if args.evals_per_run is None:
        args.evals_per_run = 8 if dry else 40
    if args.num_actors < 1:
        p.error("--num_actors must be >= 1")
    try:
        from actorq.command_line import parse_ints

        args.actor_count_list = (parse_ints(args.actor_counts, "actor_counts")
                                 if args.actor_counts else [args.num_actors])
    except ValueError as e:
        p.error(str(e))
    if min(args.actor_count_list) < 1:
        p.error(f"--actor_counts must all be >= 1, got {args.actor_counts}")
    if not (math.isfinite(args.total_minutes) and args.total_minutes > 0) \
            or args.evals_per_run < 1:
        p.error("--total_minutes and --evals_per_run must be positive")
    if args.seed < 0:
        p.error(f"--seed must be >= 0, got {args.seed}")
    known = {t.name: t for t in TASKS}
    names = [n.strip() for n in args.tasks.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if not names or unknown:
        p.error(f"--tasks: unknown {unknown or names}; valid: {', '.join(known)}")
    args.task_list = [known[n] for n in names]
    try:
        args.overrides = parse_sets(args.sets)
    except ValueError as e:
        p.error(str(e))
    return args


# ----------------------------------------------------------------------------- configs


def set_field(config: Any, dotted: str, value: Any) -> None:
    """Sets an existing (possibly nested) config field; unknown fields fail, listing the valid
    ones, instead of being added silently."""
    *parents, leaf = dotted.split(".")
    node = config
    for part in parents:
        if part not in node:
            raise KeyError(f"unknown config field {dotted!r} ({part!r} not in "
                           f"{sorted(node.keys())})")
        node = node[part]
    if leaf not in node:
        raise KeyError(f"unknown config field {dotted!r}; valid: {sorted(node.keys())}")
    node[leaf] = value


def make_run_config(task: Task, quantizer: str, args: argparse.Namespace, run_dir: Path,
                    num_actors: int | None = None) -> Any:
    """The preset's config with this benchmark's settings (see the module docstring);
    ``num_actors`` defaults to ``--num_actors``."""
    if task.agent == "dqn":
        from configs import dqn_actorq as module
    elif task.agent == "d4pg":
        from configs import d4pg_actorq as module
    else:
        raise ValueError(f"unknown agent {task.agent!r}")
    config = module.get_config(task.preset)
    settings: dict[str, Any] = {
        "launcher": "local",
        "num_actors": args.num_actors if num_actors is None else num_actors,
        "actor_quantizers": "",
        "learner_device": args.learner_device,
        "seed": args.seed,
        "quantizer": quantizer,
        "replay.rate_limiter": "none",
        "replay.max_times_sampled": MAX_TIMES_SAMPLED,
        "eval_fp32": False,
        "checkpoint_replay": False,
    }
    if args.dry_run:
        settings.update(DRY_RUN_OVERRIDES[task.agent])
    for key, value in settings.items():
        set_field(config, key, value)
    steps = int(config.max_actor_steps)
    set_field(config, "eval_every_steps", max(1, steps // args.evals_per_run))
    set_field(config, "checkpoint_every_steps", 10**12)  # the final checkpoint only
    for key, value in args.overrides.items():
        scope, _, dotted = key.rpartition(":")
        if scope in ("", task.agent, task.name):
            set_field(config, dotted, value)
    set_field(config, "run_dir", str(run_dir))
    return config


# ----------------------------------------------------------------------------- wall budget


class Budget:
    """Splits what is left of the script's wall budget between the remaining runs."""

    def __init__(self, total_s: float, report_reserve_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.start = clock()
        self.end = self.start + total_s
        self.report_reserve_s = report_reserve_s

    def run_share(self, runs_left: int) -> float:
        """Seconds for each of the next ``runs_left`` runs, set-up and stop included."""
        left = self.end - self.report_reserve_s - self.clock()
        return max(0.0, left / max(1, runs_left))

    def elapsed(self) -> float:
        """Seconds since the script started."""
        return self.clock() - self.start


def acting_seconds(share_s: float, setup_s: float, stop_s: float, minimum_s: float) -> float:
    """How long a run acts (from its driver's main loop to the stop signal) so that set-up,
    acting and stopping fit in ``share_s``; at least ``minimum_s``."""
    return max(minimum_s, share_s - setup_s - stop_s)


class DeadlineStop:
    """Stops the run in progress after it has acted for ``acting_s``, with the driver's own
    clean stop.

    A thread waits until ``started()`` says the driver's main loop runs (its SIGTERM handler is
    installed and its nodes are up: ``pids.json`` exists), then ``acting_s`` more, then sends
    this process SIGTERM, again every ``resend_s`` until the run returns. The driver turns it into
    the stop that Ctrl-C/SIGTERM give (nodes stopped, logs and ``summary.json`` written with
    ``interrupted=True``). Counting from the loop's start gives fp32 and int8 the same acting
    time whatever their set-up took (the first run of a process also pays one-off costs), and
    no signal is sent during set-up, where it could land outside the driver's ``try``. While
    this object is active, a SIGTERM that it did not send (someone stopping the script) raises
    KeyboardInterrupt.
    """

    def __init__(self, acting_s: float, started: Callable[[], bool], resend_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.acting_s = acting_s
        self.started = started
        self.resend_s = resend_s
        self.clock = clock
        self.started_at: float | None = None
        self.fired_at: float | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="deadline-stop", daemon=True)
        self._previous: Any = None
        self._own = self._handler  # one bound-method object, to recognise it when installed

    def _watch(self) -> None:
        while not self.started():
            if self._done.wait(0.05):
                return
        self.started_at = self.clock()
        if self._done.wait(self.acting_s):
            return
        while not self._done.is_set():
            if signal.getsignal(signal.SIGTERM) is not self._own:  # the driver's handler
                if self.fired_at is None:
                    self.fired_at = self.clock()
                os.kill(os.getpid(), signal.SIGTERM)
                self._done.wait(self.resend_s)
            else:
                self._done.wait(0.05)

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        del signum, frame
        if self.fired_at is None:  # not ours: someone wants the whole script stopped
            raise KeyboardInterrupt("SIGTERM")

    @property
    def fired(self) -> bool:
        """Whether the stop signal was sent."""
        return self.fired_at is not None

    def __enter__(self) -> DeadlineStop:
        self._previous = signal.signal(signal.SIGTERM, self._own)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        signal.signal(signal.SIGTERM, self._previous)


# ----------------------------------------------------------------------------- runs


@dataclasses.dataclass
class RunRecord:
    """What the report says about one run."""

    task: str
    agent: str
    env: str
    quantizer: str
    run_dir: str
    budget_s: float  # the run's share of the total, set-up and stop included
    acting_s: float  # how long it may act once its driver's loop runs
    elapsed_s: float = 0.0
    setup_s: float | None = None  # from the run's start to its driver's main loop
    stop_s: float | None = None  # from the stop signal to the run's return
    stop: str = "not started"  # max_actor_steps | wall budget | failed: ...
    num_evals: int = 0
    summary: dict[str, Any] = dataclasses.field(default_factory=dict)
    num_actors: int = 0

    @property
    def ok(self) -> bool:
        """Whether the run left evaluations to analyse."""
        return self.num_evals > 0


def count_evals(run_dir: Path) -> int:
    """Complete rows in ``eval.jsonl`` (0 when absent)."""
    path = run_dir / "eval.jsonl"
    if not path.is_file():
        return 0
    count = 0
    for line in path.read_text().splitlines():
        try:
            json.loads(line)
            count += 1
        except json.JSONDecodeError:
            pass
    return count


# Modules the driver first imports once its main loop runs (policy drift, analysis, codecarbon's
# first measurement). The stop signal can land in any line of that loop; landing inside a first
# import would leave a half-initialised module in sys.modules for every later run and for the
# report, so they are imported before the first run.
PRELOAD = ("experiments.speedup_report", "actorq.analysis.drift", "actorq.quantization.reference",
           "pandas", "codecarbon.core.emissions", "codecarbon.core.cloud",
           "codecarbon.core.electricitymaps_api", "codecarbon.external.geography")


def preload_modules(names: Sequence[str] = PRELOAD) -> None:
    """Imports ``names`` now; ones this environment lacks are skipped (the run reports them)."""
    import importlib

    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as e:
            print(f"[device_speedup] could not preload {name}: {e}", file=sys.stderr)


def run_one(config: Any, record: RunRecord) -> None:
    """Runs ``config`` until ``max_actor_steps`` or ``record.acting_s`` of acting; fills
    ``record``. KeyboardInterrupt (Ctrl-C, or a SIGTERM from outside) propagates."""
    from launchpad_programs.launch import run_experiment

    start = time.monotonic()
    pids = Path(record.run_dir) / "pids.json"  # written once the driver's nodes are up
    stopper = DeadlineStop(record.acting_s, pids.is_file)
    summary: dict[str, Any] | None = None
    try:
        with stopper:
            summary = run_experiment(config)
    except KeyboardInterrupt:
        raise
    except Exception as error:  # noqa: BLE001 - one failed run must not lose the others
        record.stop = f"failed: {type(error).__name__}: {error}"
        print(f"[device_speedup] {record.task} {record.quantizer} failed: {error!r}",
              file=sys.stderr, flush=True)
    end = time.monotonic()
    record.elapsed_s = end - start
    if stopper.started_at is not None:
        record.setup_s = stopper.started_at - start
    if stopper.fired_at is not None:
        record.stop_s = end - stopper.fired_at
    if summary is not None:
        if summary.get("interrupted"):
            if not stopper.fired:  # Ctrl-C: the user wants everything stopped
                raise KeyboardInterrupt
            record.stop = "wall budget"
        else:
            record.stop = "max_actor_steps"
        keep = ("actor_steps", "learner_steps", "wall_time_s", "final_eval_return",
                "interrupted", "energy_kwh", "emissions_kg", "num_actors", "launcher",
                "learner_device", "num_publishes", "package_bytes", "bytes_pulled",
                "actor_restarts")
        record.summary = {k: summary.get(k) for k in keep}
    record.num_evals = count_evals(Path(record.run_dir))


# ----------------------------------------------------------------------------- report


def _fmt(value: Any, fmt: str = ".1f", missing: str = "—") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return missing
    return format(value, fmt)


def _time_cell(time_s: float | None, reached: int, run_ok: bool) -> str:
    if not run_ok:
        return "no evaluations"
    return "not reached" if not reached or time_s is None else f"{time_s:.1f}"


def _speedup_cell(value: float | None, status: str) -> str:
    return f"{value:.2f}x" if value is not None else status


def table_rows(tasks: Sequence[Task], records: Sequence[RunRecord],
               analysis_rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One Table 4 row per task from ``actorq.analysis``'s rows (``speedup.json``)."""
    rows = []
    for task in tasks:
        runs = {r.quantizer: r for r in records if r.task == task.name}
        base, quant = runs.get("fp32"), runs.get("int8")
        env = base.env if base else (quant.env if quant else task.preset)
        found = {str(r["precision"]): r for r in analysis_rows
                 if r["agent"] == task.agent and r["task"] == env}
        q = found.get("int8", {})
        b = found.get("fp32", {})
        rows.append({
            "task": task.name,
            "agent": task.agent,
            "env": env,
            "fp32_run_ok": bool(base and base.ok),
            "int8_run_ok": bool(quant and quant.ok),
            "fp32_stop": base.stop if base else "not run",
            "int8_stop": quant.stop if quant else "not run",
            "target_return": q.get("threshold", b.get("threshold")),
            "fp32_best_smoothed_return": q.get("baseline_best", b.get("baseline_best")),
            "fp32_time_s": q.get("fp32_time_wall", b.get("quant_time_wall")),
            "fp32_reached": int(q.get("fp32_reached_wall", b.get("quant_reached_wall", 0)) or 0),
            "int8_time_s": q.get("quant_time_wall"),
            "int8_reached": int(q.get("quant_reached_wall", 0) or 0),
            "fp32_steps": q.get("fp32_time_steps"),
            "int8_steps": q.get("quant_time_steps"),
            "speedup_wall": q.get("speedup_wall"),
            "status_wall": q.get("status_wall", "no analysis"),
            "speedup_steps": q.get("speedup_steps"),
            "status_steps": q.get("status_steps", "no analysis"),
            "energy_ratio": q.get("energy_ratio"),
            "co2_ratio": q.get("co2_ratio"),
            "fp32_final_return": b.get("final_return_mean"),
            "int8_final_return": q.get("final_return_mean"),
        })
    return rows


def markdown(rows: Sequence[dict[str, Any]], records: Sequence[RunRecord],
             settings: dict[str, Any]) -> str:
    """The Table 4 rows and a per-run table, as Markdown."""
    lines = [
        "# Time-to-reward of int8 vs fp32 actors (QuaRL Table 4)",
        "",
        f"Learner on {settings['learner_device_used']}, "
        f"{', '.join(map(str, settings.get('actor_counts', [settings['num_actors']])))} CPU actor "
        f"processes (local launcher), replay.rate_limiter=none with max_times_sampled="
        f"{MAX_TIMES_SAMPLED}, seed {settings['seed']}"
        + (", DRY RUN (tiny networks and budgets)" if settings["dry_run"] else "") + ".",
        f"Target: {FRACTION:g} x fp32's best smoothed (window {WINDOW}) eval return; times "
        "from each run's start. Speedup = fp32 time / int8 time. Energy ratio = fp32 / int8 "
        "whole-run energy (energy.json).",
        "",
        "| task | actors | target return | fp32 time (s) | int8 time (s) | speedup (wall) "
        "| speedup (actor steps) | energy ratio fp32/int8 |",
        "|---|---:|---:|---:|---:|---|---|---:|",
    ]
    for row in rows:
        cells = [
            row["task"], str(row.get("num_actors", settings["num_actors"])),
            _fmt(row["target_return"], ".2f"),
            _time_cell(row["fp32_time_s"], row["fp32_reached"], row["fp32_run_ok"]),
            _time_cell(row["int8_time_s"], row["int8_reached"], row["int8_run_ok"]),
            _speedup_cell(row["speedup_wall"], str(row["status_wall"])),
            _speedup_cell(row["speedup_steps"], str(row["status_steps"])),
            _fmt(row["energy_ratio"], ".2f"),
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines += [
        "",
        "| run | actors | stop | share s | acting s | set-up s | elapsed s | run wall s "
        "| actor steps | learner steps | evals | final return | learner device |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in records:
        s = r.summary
        cells = [
            f"{r.task} {r.quantizer}", str(r.num_actors or settings["num_actors"]), r.stop,
            f"{r.budget_s:.0f}", f"{r.acting_s:.0f}",
            _fmt(r.setup_s), f"{r.elapsed_s:.0f}",
            _fmt(s.get("wall_time_s")), _fmt(s.get("actor_steps"), "d"),
            _fmt(s.get("learner_steps"), "d"), str(r.num_evals),
            _fmt(s.get("final_eval_return"), ".1f"), str(s.get("learner_device", "—")),
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def write_archive(out_dir: Path, records: Sequence[RunRecord]) -> Path:
    """``device_speedup_logs.tar.gz``: the reports and each run's small logs (no checkpoints,
    TensorBoard events or per-episode actor logs)."""
    path = out_dir / "device_speedup_logs.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for item in sorted(out_dir.iterdir()):
            if item.is_file() and item.suffix in (".md", ".json", ".png"):
                tar.add(item, arcname=item.name)
        for r in records:
            run_dir = Path(r.run_dir)
            for name in LOG_FILES:
                if (run_dir / name).is_file():
                    tar.add(run_dir / name, arcname=str((run_dir / name).relative_to(out_dir)))
    return path


def analyse(report_dir: Path, records: Sequence[RunRecord]) -> list[dict[str, Any]]:
    """``actorq.analysis``'s speedup report over the runs that have evaluations, written to
    ``report_dir``; its rows (empty when nothing could be analysed)."""
    usable = [Path(r.run_dir) for r in records if r.ok]
    if not usable:
        return []
    try:
        from actorq.analysis.report import write_speedup_report

        write_speedup_report(usable, report_dir, fraction=FRACTION, window=WINDOW)
        return json.loads((report_dir / "speedup.json").read_text())["rows"]
    except Exception as error:  # noqa: BLE001 - still write what the runs say
        print(f"[device_speedup] analysis failed: {error!r}", file=sys.stderr, flush=True)
        return []


def eval_points(run_dir: Path) -> list[tuple[int, float]]:
    """``(actor_steps, wall_time_s)`` of each complete row of a run's ``eval.jsonl``."""
    from actorq.metrics.loggers import read_jsonl

    path = run_dir / "eval.jsonl"
    rows = read_jsonl(path) if path.is_file() else []
    return [(int(r["actor_steps"]), float(r["wall_time_s"])) for r in rows
            if "actor_steps" in r and "wall_time_s" in r]


def time_to_steps(points: Sequence[tuple[int, float]], steps: int) -> float | None:
    """Wall seconds of the first evaluation at or past ``steps`` actor steps (None: never)."""
    return next((t for s, t in points if s >= steps), None)


def _ratio(num: float | None, den: float | None) -> float | None:
    return num / den if num is not None and den else None


def actor_scaling_rows(tasks: Sequence[Task], records: Sequence[RunRecord],
                       table: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per task and actor count: each precision's time to a fixed step count (the most that every
    run of the task reached, so all are compared at the same point) and to the target return
    (``table``: the Table 4 rows per count), with int8's speedup on both."""
    rows = []
    for task in tasks:
        runs = [r for r in records if r.task == task.name]
        points = {(r.num_actors, r.quantizer): eval_points(Path(r.run_dir)) for r in runs}
        reached = [max(s for s, _ in p) for p in points.values() if p]
        steps = min(reached) if reached and len(reached) == len(points) else None
        for count in sorted({r.num_actors for r in runs}):
            to_steps = {q: None if steps is None else time_to_steps(points.get((count, q), []),
                                                                       steps)
                        for q in QUANTIZERS}
            t4 = next((row for row in table
                       if row["task"] == task.name and row["num_actors"] == count), {})
            fp32_target = t4.get("fp32_time_s") if t4.get("fp32_reached") else None
            int8_target = t4.get("int8_time_s") if t4.get("int8_reached") else None
            rows.append({
                "task": task.name, "num_actors": count, "steps": steps,
                "fp32_time_to_steps_s": to_steps["fp32"], "int8_time_to_steps_s": to_steps["int8"],
                "speedup_to_steps": _ratio(to_steps["fp32"], to_steps["int8"]),
                "target_return": t4.get("target_return"),
                "fp32_time_to_target_s": fp32_target, "int8_time_to_target_s": int8_target,
                "speedup_to_target": _ratio(fp32_target, int8_target),
            })
    return rows


def actor_scaling_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The rows of :func:`actor_scaling_rows` as Markdown."""
    lines = [
        "## Actor scaling (QuaRL Fig. 11)",
        "",
        "Time from each run's start to a fixed number of env steps (the most every run of the "
        "task reached) and to the target return (Table 4's, per actor count); speedup = fp32 "
        "time / int8 time.",
        "",
        "| task | actors | env steps | fp32 s | int8 s | speedup | target return | fp32 s to "
        "target | int8 s to target | speedup to target |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        cells = [r["task"], str(r["num_actors"]), _fmt(r["steps"], "d"),
                 _fmt(r["fp32_time_to_steps_s"]), _fmt(r["int8_time_to_steps_s"]),
                 _fmt(r["speedup_to_steps"], ".2f"), _fmt(r["target_return"], ".2f"),
                 _fmt(r["fp32_time_to_target_s"], ".1f", "not reached"),
                 _fmt(r["int8_time_to_target_s"], ".1f", "not reached"),
                 _fmt(r["speedup_to_target"], ".2f")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot_actor_scaling(rows: Sequence[dict[str, Any]], path: Path) -> Path:
    """Time to the fixed step count and to the target against the actor count, per task and
    precision."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10.0, 4.0))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2)
    for task in sorted({r["task"] for r in rows}):
        mine = sorted((r for r in rows if r["task"] == task), key=lambda r: r["num_actors"])
        for ax, what in zip(axes, ("steps", "target"), strict=True):
            for q, style in (("fp32", "o--"), ("int8", "s-")):
                pts = [(r["num_actors"], r[f"{q}_time_to_{what}_s"]) for r in mine
                       if r[f"{q}_time_to_{what}_s"] is not None]
                if pts:
                    ax.plot(*zip(*pts, strict=True), style, label=f"{task} {q}")
    for ax, title in zip(axes, ("time to a fixed env-step count", "time to the target return"),
                         strict=True):
        ax.set_xlabel("actors")
        ax.set_ylabel("seconds from the run's start")
        ax.set_title(title, fontsize="medium")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def write_reports(out_dir: Path, tasks: Sequence[Task], records: Sequence[RunRecord],
                  settings: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """Runs the analysis per actor count (into ``out_dir``, or ``out_dir/actors<N>`` when the
    script sweeps counts) on the runs that have evaluations; writes ``device_speedup.md`` /
    ``.json`` and, for a sweep, ``actor_scaling.md`` / ``.json`` / ``.png``; returns the
    Markdown and the Table 4 rows."""
    counts = sorted({r.num_actors for r in records}) or [settings["num_actors"]]
    sweep = len(settings.get("actor_counts", counts)) > 1
    rows: list[dict[str, Any]] = []
    for count in counts:
        mine = [r for r in records if r.num_actors == count]
        report_dir = out_dir / f"actors{count}" if sweep else out_dir
        report_dir.mkdir(parents=True, exist_ok=True)
        for row in table_rows(tasks, mine, analyse(report_dir, mine)):
            rows.append({**row, "num_actors": count})
    text = markdown(rows, records, settings)
    payload: dict[str, Any] = {
        "settings": settings,
        "table": rows,
        "runs": [dataclasses.asdict(r) for r in records],
        "analysis": [f"actors{c}/speedup.json" if sweep else "speedup.json" for c in counts],
    }
    from actorq.analysis.report import json_safe

    if sweep:
        scaling = actor_scaling_rows(tasks, records, rows)
        scaling_text = actor_scaling_markdown(scaling)
        (out_dir / "actor_scaling.md").write_text(scaling_text)
        (out_dir / "actor_scaling.json").write_text(
            json.dumps(json_safe({"settings": settings, "rows": scaling}), indent=2) + "\n")
        plot_actor_scaling(scaling, out_dir / "actor_scaling.png")
        text += "\n" + scaling_text
        payload["actor_scaling"] = scaling
    (out_dir / "device_speedup.md").write_text(text)
    (out_dir / "device_speedup.json").write_text(
        json.dumps(json_safe(payload), indent=2, allow_nan=False) + "\n")
    return text, rows


# ----------------------------------------------------------------------------- main


def prepare_out_dir(out_dir: Path, tasks: Sequence[Task], overwrite: bool) -> None:
    """Refuses to mix with earlier runs unless ``overwrite`` (then deletes them)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    existing = [out_dir / t.name for t in tasks if (out_dir / t.name).exists()]
    if existing and not overwrite:
        raise SystemExit(f"error: {out_dir} already holds runs ({', '.join(map(str, existing))});"
                         " pass --overwrite or choose another --out_dir")
    for path in existing:
        shutil.rmtree(path)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs every (task, precision), then prints and writes the report; returns an exit code."""
    args = parse_args(argv)
    dry = bool(args.dry_run)
    budget = Budget(60.0 * args.total_minutes, REPORT_RESERVE_S[dry])
    from launchpad_programs.placement import select_learner_device

    try:
        device = select_learner_device(args.learner_device)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out_dir = Path(args.out_dir)
    from launchpad_programs.launch import check_config

    counts = args.actor_count_list
    configs: dict[tuple[str, int, str], Any] = {}
    try:  # every config is checked before anything runs
        for task in args.task_list:
            for count in counts:
                task_dir = out_dir / task.name / (f"actors{count}" if len(counts) > 1 else "")
                for quantizer in QUANTIZERS:
                    config = make_run_config(task, quantizer, args,
                                             task_dir / f"{quantizer}_seed{args.seed}", count)
                    check_config(config)
                    configs[(task.name, count, quantizer)] = config
    except (KeyError, TypeError, ValueError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    prepare_out_dir(out_dir, args.task_list, args.overwrite)
    preload_modules()
    import jax

    # fp32 and int8 runs of a task compile the same learner: the int8 run reads it from disk.
    jax.config.update("jax_compilation_cache_dir", str((out_dir / "jax_cache").resolve()))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)

    settings = {
        "dry_run": dry,
        "num_actors": counts[0],
        "actor_counts": counts,
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        "learner_device": args.learner_device,
        "learner_device_used": f"{device.platform}:{device.id} ({device.device_kind})",
        "jax_devices": [str(d) for d in jax.devices()],
        "rate_limiter": "none",
        "max_times_sampled": MAX_TIMES_SAMPLED,
        "seed": args.seed,
        "total_minutes": args.total_minutes,
        "evals_per_run": args.evals_per_run,
        "eval_fp32": False,
        "fraction": FRACTION,
        "window": WINDOW,
        "tasks": [t.name for t in args.task_list],
        "overrides": {k: repr(v) for k, v in args.overrides.items()},
    }
    print(f"[device_speedup] {len(args.task_list)} tasks x {QUANTIZERS} x actors "
          f"{','.join(map(str, counts))}, learner on {settings['learner_device_used']}, "
          f"{args.total_minutes:g} min in all", flush=True)

    records: list[RunRecord] = []
    # Set-up and stop times per agent: the guesses until a run of that agent measures them.
    # Set-up is taken from fp32 runs, which compile (int8 runs find the learner in the cache).
    setup_s = {t.agent: SETUP_S[dry] for t in args.task_list}
    stop_s = {t.agent: STOP_MARGIN_S[dry] for t in args.task_list}
    pairs = [(task, count) for task in args.task_list for count in counts]
    interrupted = False
    try:
        for p_index, (task, count) in enumerate(pairs):
            # Fixed before the pair's first run: fp32 and int8 get the same share and acting time.
            share = budget.run_share(len(QUANTIZERS) * (len(pairs) - p_index))
            acting = acting_seconds(share, setup_s[task.agent], stop_s[task.agent],
                                    MIN_ACTING_S[dry])
            for quantizer in QUANTIZERS:
                config = configs[(task.name, count, quantizer)]
                record = RunRecord(task=task.name, agent=task.agent, env=str(config.task),
                                   quantizer=quantizer, run_dir=str(config.run_dir),
                                   budget_s=share, acting_s=acting, num_actors=count)
                records.append(record)
                print(f"[device_speedup] {task.name} {quantizer}, {count} actors: up to "
                      f"{config.max_actor_steps} actor steps or {acting:.0f} s of acting "
                      f"({share:.0f} s share, t={budget.elapsed():.0f} s)", flush=True)
                run_one(config, record)
                if record.setup_s is not None and quantizer == QUANTIZERS[0]:
                    setup_s[task.agent] = record.setup_s
                if record.stop_s is not None:
                    stop_s[task.agent] = 1.2 * record.stop_s
                s = record.summary
                print(f"[device_speedup] {task.name} {quantizer}, {count} actors: {record.stop} "
                      f"after {record.elapsed_s:.0f} s (set-up {_fmt(record.setup_s)} s, stop "
                      f"{_fmt(record.stop_s)} s), {s.get('actor_steps')} actor steps, "
                      f"{s.get('learner_steps')} learner steps, {record.num_evals} evals",
                      flush=True)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM from outside: report what has run
        interrupted = True
        if records and records[-1].stop == "not started":
            records[-1].stop = "interrupted"
        print("[device_speedup] interrupted: reporting the runs so far", flush=True)

    text, _ = write_reports(out_dir, args.task_list, records, settings)
    archive = write_archive(out_dir, records)
    print()
    print(text)
    print(f"[device_speedup] wrote {out_dir / 'device_speedup.md'}, "
          f"{out_dir / 'device_speedup.json'}, {archive} in {budget.elapsed():.0f} s "
          f"(budget {60.0 * args.total_minutes:.0f} s)", flush=True)
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
