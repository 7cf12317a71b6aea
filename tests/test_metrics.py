"""Tests for actorq.metrics: loggers, carbon tracking, progress bars."""

from __future__ import annotations

import csv
import io
import json
import logging
import struct
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from actorq.metrics import carbon as carbon_lib
from actorq.metrics.carbon import CarbonTracker, EnergyReport, classify_cpu_power_source
from actorq.metrics.loggers import (
    CSVLogger,
    JSONLLogger,
    Logger,
    MultiLogger,
    TensorBoardLogger,
    TerminalLogger,
    make_logger,
    read_jsonl,
    surviving_rows,
    to_python_scalar,
)
from actorq.metrics.progress import Progress


def _read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
        return list(reader.fieldnames or []), rows


def _read_tb_scalars(logdir: Path) -> dict[str, list[tuple[int, float]]]:
    """Parse TFRecord event files directly (no tensorboard dependency needed)."""
    from tensorboardX.proto import event_pb2

    scalars: dict[str, list[tuple[int, float]]] = {}
    for path in sorted(logdir.glob("events.out.tfevents.*")):
        data = path.read_bytes()
        offset = 0
        while offset < len(data):
            (length,) = struct.unpack("<Q", data[offset : offset + 8])
            record = data[offset + 12 : offset + 12 + length]
            offset += 12 + length + 4  # length, crc(length), payload, crc(payload)
            event = event_pb2.Event.FromString(record)
            for value in event.summary.value:
                scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    return scalars


# Loggers.


def test_jsonl_logger_writes_one_object_per_line_and_converts_numpy(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "log.jsonl"
    logger = JSONLLogger(path)
    logger.write({"step": np.int64(1), "ret": np.float32(1.5), "tag": "a", "ok": np.bool_(True)})
    # Visible before close: flushed on every write.
    assert json.loads(path.read_text().splitlines()[0]) == {
        "step": 1,
        "ret": 1.5,
        "tag": "a",
        "ok": True,
    }
    logger.write({"step": 2, "ret": np.array(2.25)})
    logger.close()
    logger.close()  # idempotent
    rows = read_jsonl(path)
    assert rows == [{"step": 1, "ret": 1.5, "tag": "a", "ok": True}, {"step": 2, "ret": 2.25}]
    assert type(rows[0]["step"]) is int


def test_to_python_scalar_rejects_arrays() -> None:
    assert to_python_scalar(np.float64(0.5)) == 0.5
    with pytest.raises(TypeError):
        to_python_scalar(np.zeros(3))


def test_read_jsonl_tolerates_truncated_final_line(tmp_path: Path) -> None:
    path = tmp_path / "crashed.jsonl"
    path.write_text('{"step": 1}\n{"step": 2}\n{"step": 3, "ret')
    assert read_jsonl(path) == [{"step": 1}, {"step": 2}]


def test_jsonl_resume_after_crash_isolates_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "resumed.jsonl"
    path.write_text('{"step": 1}\n{"step": 2, "re')
    with JSONLLogger(path) as logger:
        logger.write({"step": 3})
    assert read_jsonl(path) == [{"step": 1}, {"step": 3}]


def test_surviving_rows_drops_the_branch_a_resume_replaced() -> None:
    steps = [0, 10, 20, 30, 40, 20, 30, 50, 30, 40]  # resumed from 10, then again from 20
    rows = [{"actor_steps": s, "i": i} for i, s in enumerate(steps)]
    kept = surviving_rows(rows)
    assert [r["actor_steps"] for r in kept] == [0, 10, 20, 30, 40]
    assert [r["i"] for r in kept] == [0, 1, 5, 8, 9]
    assert surviving_rows([]) == []


def test_csv_logger_widens_header_when_new_keys_appear(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    logger = CSVLogger(path)
    logger.write({"step": 1, "loss": 0.5})
    logger.write({"step": 2, "loss": 0.25})
    logger.write({"step": 3, "loss": 0.125, "ret": 10.0, "note": "a,b"})
    logger.write({"step": 4, "ret": 11.0})
    assert logger.fieldnames == ("step", "loss", "ret", "note")
    logger.close()
    header, rows = _read_csv(path)
    assert header == ["step", "loss", "ret", "note"]
    assert rows == [
        {"step": "1", "loss": "0.5", "ret": "", "note": ""},
        {"step": "2", "loss": "0.25", "ret": "", "note": ""},
        {"step": "3", "loss": "0.125", "ret": "10.0", "note": "a,b"},
        {"step": "4", "loss": "", "ret": "11.0", "note": ""},
    ]
    assert not path.with_name("log.csv.tmp").exists()


def test_csv_logger_appends_to_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    with CSVLogger(path) as logger:
        logger.write({"step": 1, "loss": 0.5})
    with CSVLogger(path) as logger:
        assert logger.fieldnames == ("step", "loss")
        logger.write({"step": 2, "loss": 0.25})
    header, rows = _read_csv(path)
    assert header == ["step", "loss"]
    assert [row["step"] for row in rows] == ["1", "2"]


def test_tensorboard_logger_writes_numeric_scalars(tmp_path: Path) -> None:
    logdir = tmp_path / "tb"
    logger = TensorBoardLogger(logdir, step_key="step")
    logger.write({"step": 10, "loss": 0.5, "name": "x", "flag": True})
    logger.write({"step": 20, "loss": np.float32(0.25)})
    with pytest.raises(KeyError, match="step"):
        logger.write({"loss": 1.0})
    logger.close()
    assert list(logdir.glob("events.out.tfevents.*"))
    scalars = _read_tb_scalars(logdir)
    assert scalars == {"loss": [(10, 0.5), (20, 0.25)]}


def test_terminal_logger_rate_limits(caplog: pytest.LogCaptureFixture) -> None:
    logger = TerminalLogger("actor_0", every_seconds=60.0)
    assert logger.format({"step": 3, "ret": 1.23456789}) == "[actor_0] step=3 ret=1.235"
    with caplog.at_level(logging.INFO):
        logger.write({"step": 1})
        logger.write({"step": 2})  # within 60 s: dropped
    messages = [r.getMessage() for r in caplog.records if "actor_0" in r.getMessage()]
    assert messages == ["[actor_0] step=1"]


def test_multi_logger_closes_all_even_if_one_fails(tmp_path: Path) -> None:
    class Failing:
        def write(self, values: Any) -> None:
            pass

        def close(self) -> None:
            raise OSError("disk gone")

    jsonl = JSONLLogger(tmp_path / "a.jsonl")
    multi = MultiLogger([Failing(), jsonl])
    multi.write({"step": 1})
    with pytest.raises(OSError, match="disk gone"):
        multi.close()
    assert jsonl._file.closed


def test_make_logger_writes_all_outputs(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    logger = make_logger(run_dir, "actor_0")
    assert isinstance(logger, Logger)
    logger.write({"step": 1, "episode_return": 3.0})
    logger.write({"step": 2, "episode_return": 4.0, "pulls": 1})
    logger.close()
    assert read_jsonl(run_dir / "actor_0.jsonl")[1] == {
        "step": 2,
        "episode_return": 4.0,
        "pulls": 1,
    }
    header, rows = _read_csv(run_dir / "actor_0.csv")
    assert header == ["step", "episode_return", "pulls"] and len(rows) == 2
    assert _read_tb_scalars(run_dir / "tb" / "actor_0")["episode_return"] == [(1, 3.0), (2, 4.0)]

    no_tb = make_logger(run_dir, "learner", tensorboard=False)
    no_tb.write({"loss": 1.0})  # no step key needed without TensorBoard
    no_tb.close()
    assert not (run_dir / "tb" / "learner").exists()


# Carbon.


def _busy(seconds: float) -> int:
    deadline = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < deadline:
        x += 1
    return x


def test_carbon_tracker_real_run(tmp_path: Path) -> None:
    with CarbonTracker(
        tmp_path / "carbon", country_iso_code="fra", measure_power_secs=1
    ) as tracker:
        _busy(2.0)
    report = tracker.report
    assert report is not None
    assert report.energy_kwh > 0 and report.emissions_kg > 0
    assert report.duration_s == pytest.approx(2.0, abs=0.5)
    assert report.country_iso_code == "FRA"
    assert report.grid_intensity_g_per_kwh == pytest.approx(
        report.emissions_kg * 1000 / report.energy_kwh
    )
    assert report.grid_intensity_g_per_kwh == pytest.approx(
        carbon_lib.country_grid_intensity_g_per_kwh("FRA"), rel=1e-6
    )
    assert report.cpu_power_source in ("measured", "estimated")
    rapl = Path("/sys/class/powercap/intel-rapl/subsystem")
    if sys.platform.startswith("linux") and not rapl.exists():
        assert report.cpu_power_source == "estimated"  # these VMs: TDP x load model
    assert report.cpu_model
    assert report.energy_kwh == pytest.approx(
        report.cpu_energy_kwh + report.gpu_energy_kwh + report.ram_energy_kwh
    )
    on_disk = json.loads((tmp_path / "carbon" / "energy.json").read_text())
    assert on_disk == report.to_dict()
    assert EnergyReport.load(tmp_path / "carbon" / "energy.json") == report
    assert (tmp_path / "carbon" / "emissions.csv").exists()
    # Our log-level juggling leaves codecarbon at 'error'.
    assert logging.getLogger("codecarbon").level == logging.ERROR


def test_carbon_tracker_unknown_country_fails_at_construction(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="XYZ"):
        CarbonTracker(tmp_path, country_iso_code="XYZ")
    with pytest.raises(ValueError, match="XYZ"):
        CarbonTracker(tmp_path, country_iso_code="XYZ", enabled=False)


def test_carbon_tracker_disabled(tmp_path: Path) -> None:
    tracker = CarbonTracker(tmp_path / "off", enabled=False)
    tracker.start()
    report = tracker.stop()
    assert report.cpu_power_source == "disabled"
    assert report.energy_kwh == 0 and report.emissions_kg == 0
    assert report.grid_intensity_g_per_kwh == 0
    assert json.loads((tmp_path / "off" / "energy.json").read_text())["cpu_power_source"] == (
        "disabled"
    )


def test_carbon_tracker_misuse(tmp_path: Path) -> None:
    tracker = CarbonTracker(tmp_path, enabled=False)
    with pytest.raises(RuntimeError, match="before start"):
        tracker.stop()
    tracker.start()
    with pytest.raises(RuntimeError, match="already started"):
        tracker.start()


def test_carbon_tracker_surfaces_swallowed_constructor_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codecarbon.emissions_tracker import BaseEmissionsTracker

    def boom(self: object, **kwargs: object) -> None:
        raise OSError("simulated output failure")

    monkeypatch.setattr(BaseEmissionsTracker, "_init_output_methods", boom)
    with pytest.raises(RuntimeError, match="simulated output failure"):
        CarbonTracker(tmp_path)


def test_carbon_tracker_surfaces_swallowed_start_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codecarbon.emissions_tracker import BaseEmissionsTracker

    tracker = CarbonTracker(tmp_path)

    def boom(self: object) -> None:
        raise RuntimeError("simulated probe failure")

    monkeypatch.setattr(BaseEmissionsTracker, "_ensure_hardware_ready", boom)
    with pytest.raises(RuntimeError, match="failed to start.*simulated probe failure"):
        tracker.start()


def test_classify_cpu_power_source() -> None:
    def fake(kind: str, **attrs: object) -> object:
        return type(kind, (), attrs)()

    assert classify_cpu_power_source([fake("RAM"), fake("CPU", _mode="intel_rapl")]) == (
        "measured",
        "intel_rapl",
    )
    source, method = classify_cpu_power_source(
        [fake("CPU", _mode="constant", _tdp=85, _is_generic_tdp=True)]
    )
    assert source == "estimated" and "85 W" in method and "generic" in method
    assert classify_cpu_power_source([fake("AppleSiliconChip", chip_part="CPU")])[0] == "measured"
    assert classify_cpu_power_source([fake("RAM")])[0] == "unknown"


# Progress.


def test_progress_updates_and_postfix() -> None:
    stream = io.StringIO()
    with Progress(total=10, description="train", disable=False, file=stream) as bar:
        bar.update(4, episode_return=12.5)
        bar.update(6, episode_return=20.0)
        assert bar.n == 10 and bar.total == 10
    text = stream.getvalue()
    assert "train" in text and "10/10" in text and "episode_return=20" in text
    assert "step" in text


def test_progress_disabled_counts_silently() -> None:
    stream = io.StringIO()
    bar = Progress(total=5, description="quiet", disable=True, file=stream)
    bar.update(2)
    bar.close()
    assert bar.n == 2 and stream.getvalue() == ""
    with pytest.raises(ValueError):
        Progress(total=-1, description="bad")
