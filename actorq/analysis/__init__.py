"""Analysis of ActorQ runs: time-to-target speedup, final returns, energy, tables and plots.

The PTQ study (``actorq.analysis.ptq``) and trained-policy loading
(``actorq.analysis.trained_policy``) are exported lazily: they import JAX, the quantizers and
Orbax, which reading run directories does not need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actorq.analysis.plots import BREAKDOWN_SECTIONS, plot_breakdown, plot_curves
from actorq.analysis.report import (
    find_run_dirs,
    group_runs,
    markdown_table,
    speedup_table,
    write_report,
)
from actorq.analysis.speedup import (
    Curve,
    EnergyComparison,
    FinalReturn,
    MeanCurve,
    PrecisionTimes,
    RunFormatError,
    RunRecord,
    SpeedupResult,
    energy_comparison,
    final_return,
    final_returns,
    load_run,
    mean_curve,
    mean_energy,
    smooth,
    smoothed_mean_curve,
    speedup,
    target_return,
    threshold_from_curve,
    time_to_threshold,
)
from actorq.lazy_exports import lazy_getattr

if TYPE_CHECKING:  # static checkers see the lazy names as ordinary imports
    from actorq.analysis.ptq import (
        PrecisionResult,
        PTQStudy,
        action_agreement,
        action_distances,
        kl_divergence,
        parse_quantizers,
        plot_action_distributions,
        ptq_markdown_table,
        relative_error,
        run_ptq_study,
        write_ptq_report,
    )
    from actorq.analysis.trained_policy import TrainedPolicy, load_trained_policy

_LAZY: dict[str, str] = {
    "PTQStudy": "actorq.analysis.ptq",
    "PrecisionResult": "actorq.analysis.ptq",
    "action_agreement": "actorq.analysis.ptq",
    "action_distances": "actorq.analysis.ptq",
    "kl_divergence": "actorq.analysis.ptq",
    "parse_quantizers": "actorq.analysis.ptq",
    "plot_action_distributions": "actorq.analysis.ptq",
    "ptq_markdown_table": "actorq.analysis.ptq",
    "relative_error": "actorq.analysis.ptq",
    "run_ptq_study": "actorq.analysis.ptq",
    "write_ptq_report": "actorq.analysis.ptq",
    "TrainedPolicy": "actorq.analysis.trained_policy",
    "load_trained_policy": "actorq.analysis.trained_policy",
}


__getattr__ = lazy_getattr(__name__, _LAZY)

__all__ = [
    "BREAKDOWN_SECTIONS",
    "Curve",
    "EnergyComparison",
    "FinalReturn",
    "MeanCurve",
    "PrecisionTimes",
    "RunFormatError",
    "RunRecord",
    "SpeedupResult",
    "energy_comparison",
    "final_return",
    "final_returns",
    "find_run_dirs",
    "group_runs",
    "load_run",
    "markdown_table",
    "mean_curve",
    "mean_energy",
    "plot_breakdown",
    "plot_curves",
    "smooth",
    "smoothed_mean_curve",
    "speedup",
    "speedup_table",
    "target_return",
    "threshold_from_curve",
    "time_to_threshold",
    "write_report",
    # Lazy (see _LAZY).
    "PTQStudy",
    "PrecisionResult",
    "TrainedPolicy",
    "action_agreement",
    "action_distances",
    "kl_divergence",
    "load_trained_policy",
    "parse_quantizers",
    "plot_action_distributions",
    "ptq_markdown_table",
    "relative_error",
    "run_ptq_study",
    "write_ptq_report",
]
