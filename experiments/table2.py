"""QuaRL's Table 2: post-training quantization of trained policies, the paper's numbers beside.

    python -m experiments.table2 --out_dir=runs/table2 --rows=dqn:cartpole,ppo:cartpole --train
    python -m experiments.table2 --out_dir=runs/table2 \\
        --reuse=ppo:halfcheetah=runs/ppo_halfcheetah_default/fp32_seed0

Each row is one (algorithm, task): its preset's policy trained with fp32 actors, seed 0, in
``<out_dir>/<algorithm>_<task>`` (with ``--train``: a finished run is reused, an unfinished one
resumed, a missing one trained; without it only runs that exist are used), or the run that
``--reuse`` names. The policy is then quantized at fp32, fp16, the paper's uniform affine int8
(``affine_int8``) and actorq's default int8 recipe (``int8``), and every precision plays the same
``--episodes`` episode seeds (``actorq.analysis.ptq``). The divergence column is the paper's
KL(fp32‖int8) of the softmax of the outputs where actions are discrete (DQN's Q-values at T=1, the
categorical policies' logits); for continuous actions it is the mean L2 distance between the fp32
and int8 actions on the fp32 rollouts' states (PPO's Gaussian means, DDPG's deterministic
actions). Rows with no run are listed as pending, with the reason and the command that fills
them. Writes ``table2.md`` and ``table2.json`` to ``--out_dir``.

``--keep=<table2.json>`` carries over the cells of an earlier table for the rows that have no run
now (runs do not survive a change of machine); they keep their run and are marked with the
machine that measured them.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from absl import flags

from actorq.analysis.ptq import run_ptq_study
from actorq.analysis.runs import run_status
from actorq.analysis.trained_policy import load_trained_policy
from actorq.command_line import bad_input, check_writable_dir, run_absl
from actorq.metrics.machine import machine_name
from launchpad_programs.study_runs import run_or_load

QUANTIZERS = ("fp32", "fp16", "affine_int8", "int8")


@dataclasses.dataclass(frozen=True)
class PaperCell:
    """The paper's Table 2 cell: reward at fp32 / fp16 / int8, then KL(fp32‖int8); ``label``
    names the paper's task when ours is an analogue (MinAtar for Atari)."""

    fp32: float
    fp16: float
    int8: float
    kl: float
    label: str = ""


@dataclasses.dataclass(frozen=True)
class Row:
    """One (algorithm, task): the preset that trains it and why it may be pending."""

    algorithm: str
    task: str
    config: str  # "configs/<agent>_actorq.py:<preset>"
    paper: PaperCell | None
    pending: str = ""  # why the row cannot run on this project's CPUs ("" = it can)

    @property
    def key(self) -> str:
        return f"{self.algorithm}:{self.task}"


# The paper's groups (docs: shared DESIGN.md, Table 2): group 1 is A2C, group 3 PPO; group 2 is
# labelled DQN, but its Walker2D, HalfCheetah, BipedalWalker and MountainCar returns can only come
# from a continuous-action agent, so they sit beside DDPG here (MountainCar: the continuous task).
_A2C = {"cartpole": PaperCell(500, 500, 500, 0.0011),
        "halfcheetah": PaperCell(2199, 2215, 2208, 0.13),
        "walker2d": PaperCell(399, 422, 442, 0.054),
        "bipedalwalker": PaperCell(230, 240, 226, 0.025)}
_PPO = {"cartpole": PaperCell(500, 500, 500, 0.0057),
        "halfcheetah": PaperCell(2553, 2551, 2473, 0.076),
        "walker2d": PaperCell(1890, 1929, 1866, 0.038),
        "bipedalwalker": PaperCell(98, 90, 83, 0.013)}
_GROUP2 = {"cartpole": PaperCell(500, 500, 500, 0.10),
           "halfcheetah": PaperCell(3026, 3062, 3080, 0.02),
           "walker2d": PaperCell(2274, 2273, 2268, 0.03),
           "bipedalwalker": PaperCell(304, 280, 291, 0.03),
           "mountaincar_continuous": PaperCell(92, 92, 92, 0.07, "MountainCar")}
_ATARI = {  # (group 1, group 2, group 3) per game
    "breakout": ((379, 371, 350, 0.0026), (214, 217, 78, 0.060), (400, 400, 368, 0.089)),
    "space_invaders": ((717, 667, 634, 0.061), (586, 625, 509, 0.014), (698, 662, 684, 0.081)),
    "seaquest": ((782, 756, 753, 0.034), (1709, 1885, 1582, 0.025), (1782, 1784, 1795, 0.030)),
    "pong": ((20, 20, 19, 0.015), (21, 21, 21, 0.13), (20, 20, 20, 0.01)),
}
_GPU = "pending: needs a GPU (the paper's 10M-step Atari budget; days on this CPU)"


def _rows() -> tuple[Row, ...]:
    rows = [
        Row("a2c", "cartpole", "configs/a2c_actorq.py:cartpole", _A2C["cartpole"]),
        Row("dqn", "cartpole", "configs/dqn_actorq.py:cartpole_small", _GROUP2["cartpole"]),
        Row("ppo", "cartpole", "configs/ppo_actorq.py:cartpole", _PPO["cartpole"]),
        Row("ddpg", "mountaincar_continuous", "configs/ddpg_actorq.py:mountaincar_continuous",
            _GROUP2["mountaincar_continuous"]),
        # Discrete MountainCar-v0: the paper has no cell (its MountainCar, 92, is continuous).
        Row("a2c", "mountaincar", "configs/a2c_actorq.py:mountaincar", None),
        Row("dqn", "mountaincar", "configs/dqn_actorq.py:mountaincar_small", None),
        Row("ppo", "mountaincar", "configs/ppo_actorq.py:mountaincar", None),
    ]
    for task in ("halfcheetah", "walker2d", "bipedalwalker"):
        rows += [Row("a2c", task, f"configs/a2c_actorq.py:{task}", _A2C[task]),
                 Row("ppo", task, f"configs/ppo_actorq.py:{task}", _PPO[task]),
                 Row("ddpg", task, f"configs/ddpg_actorq.py:{task}", _GROUP2[task])]
    for game, name in (("breakout", "Breakout"), ("space_invaders", "SpaceInvaders"),
                       ("seaquest", "Seaquest")):
        cells = [PaperCell(*cell, label=f"{name} (Atari)") for cell in _ATARI[game]]
        for algorithm, cell in zip(("a2c", "dqn", "ppo"), cells):
            rows.append(Row(algorithm, f"minatar_{game}",
                            f"configs/{algorithm}_actorq.py:minatar_{game}", cell))
    for game in ("pong", "breakout"):
        for algorithm, cell in zip(("a2c", "dqn", "ppo"), _ATARI[game]):
            rows.append(Row(algorithm, game, f"configs/{algorithm}_actorq.py:{game}",
                            PaperCell(*cell), pending=_GPU))
    return tuple(rows)


ROWS = _rows()


def load_preset(spec: str) -> Any:
    """``configs/<module>.py:<preset>`` -> that preset's ConfigDict."""
    path, _, preset = spec.partition(":")
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    return module.get_config(preset or None)


def select_rows(keys: Sequence[str]) -> list[Row]:
    """The rows named ``algorithm:task`` (all when ``keys`` is empty); unknown keys raise
    ValueError listing the valid ones."""
    by_key = {row.key: row for row in ROWS}
    unknown = [key for key in keys if key not in by_key]
    if unknown:
        raise ValueError(f"unknown --rows {unknown}; valid: {', '.join(by_key)}")
    return [by_key[key] for key in keys] if keys else list(ROWS)


def parse_reuse(entries: Sequence[str]) -> dict[str, Path]:
    """``algorithm:task=run_dir`` entries -> {row key: run dir}; each must be a known row and an
    existing directory."""
    out = {}
    for entry in entries:
        key, sep, path = entry.partition("=")
        if not sep or not path:
            raise ValueError(f"--reuse entries are algorithm:task=run_dir, got {entry!r}")
        select_rows([key])
        if not Path(path).is_dir():
            raise FileNotFoundError(f"--reuse {key}: no run directory {path}")
        out[key] = Path(path)
    return out


def measure_row(row: Row, run_dir: Path, episodes: int) -> dict[str, Any]:
    """PTQ of the row's trained policy at :data:`QUANTIZERS`: the table's cells."""
    policy = load_trained_policy(run_dir)
    study = run_ptq_study(policy, list(QUANTIZERS), episodes)
    cells: dict[str, Any] = {"row": row.key, "run_dir": str(run_dir), "episodes": episodes,
                             "checkpoint_step": study.checkpoint_step,
                             "divergence": "kl" if study.discrete else "l2"}
    for spec in QUANTIZERS:
        result = study.result(spec)
        cells[spec] = {"mean": result.mean_return, "std": result.std_return,
                       "relative_error": result.relative_error,
                       "divergence": result.kl_mean if study.discrete else result.l2_mean}
    return cells


def kept_cells(path: Path, rows: Sequence[Row], measured: dict[str, dict[str, Any]]
               ) -> dict[str, dict[str, Any]]:
    """The cells of the earlier table at ``path`` (``table2.json``) for ``rows`` not in
    ``measured``, each with ``kept_from``: the machine that measured it (that table's, unless
    that table had kept the cell itself), and ``episodes`` where it is known (a cell that table
    measured itself was measured on its ``episodes``; older tables did not record a kept
    cell's count)."""
    try:
        earlier = json.loads(Path(path).read_text())
        machine, cells, episodes = earlier["machine"], earlier["rows"], earlier.get("episodes")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"--keep {path}: not a table2.json ({e})") from e
    kept = {}
    for row in rows:
        if row.key in cells and row.key not in measured:
            cell = cells[row.key]
            own = {} if "kept_from" in cell or episodes is None else {"episodes": episodes}
            kept[row.key] = {"kept_from": machine, **own, **cell}
    return kept


def _cell(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def markdown(rows: Sequence[Row], measured: dict[str, dict[str, Any]], reasons: dict[str, str],
             episodes: int, command: str) -> str:
    """Table 2 in the paper's layout (reward fp32 / fp16 / int8, divergence), with ours first."""
    lines = [
        "# Table 2: post-training quantization", "",
        f"Command: `{command}`", "", f"Machine: {machine_name()}", "",
        f"Reward: mean ± std over {episodes} episodes (the same seeds for every precision; a "
        "kept row names its own count where its table recorded it). "
        "int8 (affine) is the paper's quantizer, simulated; int8 is actorq's recipe. Divergence: "
        "KL(fp32‖int8) for discrete actions, mean L2 action distance for continuous ones "
        "(affine / actorq). Paper: fp32 / fp16 / int8, KL.", "",
        "| algorithm | task | fp32 | fp16 | int8 (affine) | int8 | rel. error fp16 / affine / int8 "
        "| divergence affine / int8 | paper | run |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for row in rows:
        paper = "-" if row.paper is None else (
            f"{row.paper.fp32:g} / {row.paper.fp16:g} / {row.paper.int8:g}, {row.paper.kl:g}"
            + (f" ({row.paper.label})" if row.paper.label else ""))
        cells = measured.get(row.key)
        if cells is None:
            lines.append(f"| {row.algorithm} | {row.task} | {reasons[row.key]} | | | | | | "
                         f"{paper} | - |")
            continue
        rewards = [f"{cells[s]['mean']:.1f} ± {cells[s]['std']:.1f}" for s in QUANTIZERS]
        errors = " / ".join(_cell(None if cells[s]["relative_error"] is None
                                  else 100 * cells[s]["relative_error"], ".1f") + "%"
                            for s in ("fp16", "affine_int8", "int8"))
        divergence = " / ".join(_cell(cells[s]["divergence"], ".3g")
                                for s in ("affine_int8", "int8"))
        kept = ""
        if "kept_from" in cells:
            count = f", {cells['episodes']} episodes" if cells.get("episodes") else ""
            kept = f" (kept: measured on {cells['kept_from']}{count})"
        lines.append(f"| {row.algorithm} | {row.task} | {' | '.join(rewards)} | {errors} | "
                     f"{cells['divergence'].upper()} {divergence} | {paper} | "
                     f"`{cells['run_dir']}`{kept} |")
    return "\n".join(lines) + "\n"


def run_table(rows: Sequence[Row], out_dir: Path, episodes: int, train: bool,
              reuse: dict[str, Path], max_actor_steps: int = 0
              ) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Trains (with ``train``) or finds each row's run and measures it; returns the measured
    cells and, for the rest, why they are pending."""
    measured, reasons = {}, {}
    for row in rows:
        run_dir = reuse.get(row.key, out_dir / f"{row.algorithm}_{row.task}")
        if row.key not in reuse:
            status = run_status(run_dir)
            if row.pending:
                reasons[row.key] = row.pending
                continue
            if status != "finished" and not train:
                reasons[row.key] = (f"pending: not trained (`--rows={row.key} --train`, "
                                    f"{row.config})")
                continue
            if status != "finished":
                config = load_preset(row.config)
                config.quantizer = "fp32"
                config.seed = 0
                if max_actor_steps:
                    config.max_actor_steps = max_actor_steps
                run_or_load(config, run_dir)
        measured[row.key] = measure_row(row, run_dir, episodes)
    return measured, reasons


def main(argv: list[str]) -> None:
    del argv
    with bad_input():
        rows = select_rows([key for key in _ROWS.value if key])
        reuse = parse_reuse(_REUSE.value)
        if _EPISODES.value < 1:
            raise ValueError(f"--episodes must be >= 1, got {_EPISODES.value}")
        if _MAX_STEPS.value < 0:
            raise ValueError(f"--max_actor_steps must be >= 0, got {_MAX_STEPS.value}")
        out_dir = check_writable_dir(_OUT_DIR.value, "--out_dir")
        if _KEEP.value and not Path(_KEEP.value).is_file():
            raise FileNotFoundError(f"--keep {_KEEP.value}: no such file")
    measured, reasons = run_table(rows, out_dir, _EPISODES.value, _TRAIN.value, reuse,
                                  _MAX_STEPS.value)
    if _KEEP.value:
        with bad_input():
            measured.update(kept_cells(Path(_KEEP.value), rows, measured))
        measured = {row.key: measured[row.key] for row in rows if row.key in measured}
    command = "python -m experiments.table2 " + shlex.join(sys.argv[1:])
    text = markdown(rows, measured, reasons, _EPISODES.value, command)
    out_dir.mkdir(parents=True, exist_ok=True)  # reused runs may live elsewhere
    (out_dir / "table2.md").write_text(text)
    (out_dir / "table2.json").write_text(json.dumps(
        {"machine": machine_name(), "episodes": _EPISODES.value, "rows": measured,
         "pending": reasons}, indent=2) + "\n")
    print(text)


if __name__ == "__main__":
    _OUT_DIR = flags.DEFINE_string("out_dir", "runs/table2", "where runs and the table go")
    _ROWS = flags.DEFINE_list("rows", [], "algorithm:task rows (default: all)")
    _REUSE = flags.DEFINE_list("reuse", [], "algorithm:task=run_dir: measure that run")
    _TRAIN = flags.DEFINE_bool("train", False, "train the rows that have no finished run")
    _KEEP = flags.DEFINE_string("keep", "", "an earlier table2.json whose cells fill the rows "
                                "that have no run now")
    _EPISODES = flags.DEFINE_integer("episodes", 20, "evaluation episodes per precision")
    _MAX_STEPS = flags.DEFINE_integer("max_actor_steps", 0,
                                      "override the presets' budgets (0: keep; smoke tests)")
    run_absl(main)
