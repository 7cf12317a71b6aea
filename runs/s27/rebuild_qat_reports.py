"""s27: rebuild every kept QAT report with the seed-matched relative error.

Reports whose run records are kept under docs/results are rebuilt from the records
(``write_qat_report``). The older reports kept only ``qat.json``; there the rows are recomputed
from its per-seed final returns (the same statistic ``qat_rows`` computes), the table in
``qat.md`` is rewritten and ``qat.png`` (no relative errors in it) is left as it was.
"""
import json
from pathlib import Path

from experiments import qat_sweep

for report in sorted(Path("docs/results").rglob("qat.json")):
    out = report.parent
    runs = qat_sweep.finished_sweep_runs(out)
    if runs:
        qat_sweep.write_qat_report(runs, out)
        print(f"{out}: rebuilt from {len(runs)} run records")
        continue
    payload = json.loads(report.read_text())
    rows = payload["rows"]
    fp32 = next(r for r in rows if r["bits"] is None)
    baseline = dict(zip(fp32["seeds"], fp32["final_returns"]))
    for r in rows:
        matched, base = qat_sweep.seed_matched_baseline(baseline, r["seeds"])
        r["baseline_seeds"], r["baseline_return"] = matched, base
        r["relative_error"] = qat_sweep.relative_error(base, r["final_return_mean"])
    report.write_text(json.dumps(payload, indent=2) + "\n")
    md = out / "qat.md"
    text = md.read_text()
    start = text.index("| precision |")
    end = text.index("\n\n", start)
    text = text[:start] + qat_sweep.qat_markdown(rows).rstrip("\n") + text[end:]
    text = text.replace("Relative error = (fp32 − quantized) / |fp32|.",
                        "Relative error = (fp32 − quantized) / |fp32|, with fp32 over the row's own seeds.")
    md.write_text(text)
    print(f"{out}: recomputed from qat.json")
