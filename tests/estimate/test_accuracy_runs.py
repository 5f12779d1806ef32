"""The calibration rows of benchmarks/estimate_accuracy.py written as runs: the real path (config files ->
RunPlan -> facts -> `estimates`) must give the number the direct TrainingSetup encoding gives.

A row whose settings no config file can express (a torchtune recipe, the BERT rows' classification head and
torch 1.x zero_grad) cannot match its full direct encoding; its run is compared with the direct encoding of
the settings it can express (the row's HF projection), which checks the plan -> setup mapping all the same.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from advisor.estimate import estimate_memory

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "estimate_accuracy.py"
TOLERANCE = 0.01


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("estimate_accuracy_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ACC = _load()
ROWS = {row["id"]: row for row in ACC.ROWS}

# Representative rows: BERT fp32 / AMP / 8-bit Adam with accumulation and checkpointing, torchtune full
# fine-tunes (paged 8-bit, plain, checkpointed), LoRA, QLoRA, and one FSDP row (grade B: the only
# distributed rows are B) to cover the accelerate config.
REPRESENTATIVE = [
    "GT01",  # fp32 BERT: no bf16/fp16 flag means fp32 under TrainingArguments
    "GT04",
    "GT09",
    "GT10",
    "GT14",
    "GT19",
    "GT22",
    "GT26",
    "GT27",
    "GT16",
]


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= TOLERANCE * abs(b)


@pytest.mark.parametrize("row_id", REPRESENTATIVE)
def test_run_path_equals_the_direct_encoding_of_what_the_run_expresses(row_id: str) -> None:
    row = ROWS[row_id]
    run = ACC.run_estimate(row)
    assert run["known"], run["reason"]
    direct = estimate_memory(ACC.projection(row)).peak_gib
    assert _close(run["estimated"], direct), (
        f"{row_id}: run {run['estimated']:.2f} vs direct {direct:.2f} GiB ({row['metric']}); "
        + "; ".join(ACC._setup_diff(run["setup"], ACC.projection(row)))
    )


@pytest.mark.parametrize("row_id", [p if isinstance(p, str) else p.values[0] for p in REPRESENTATIVE])
def test_run_path_equals_the_full_direct_encoding(row_id: str) -> None:
    row = ROWS[row_id]
    missing = ACC.gaps(row)
    if missing:
        pytest.skip(
            f"{row_id} legitimately differs: no config file expresses "
            + "; ".join(f"{k}={v!r} ({ACC.GAPS[k]})" for k, v in missing.items())
        )
    run = ACC.run_estimate(row)
    assert run["known"], run["reason"]
    direct = estimate_memory(ACC.setup_for(row)).peak_gib
    assert _close(run["estimated"], direct)


def test_every_row_builds_a_run_that_the_pipeline_estimates() -> None:
    for row in ACC.ROWS:
        run = ACC.run_estimate(row)
        assert run["known"], f"{row['id']}: {run['reason']}"
        assert run["estimated"] > 0


def test_the_breakdown_adds_up_to_the_nvidia_smi_peak() -> None:
    """The row metric is read off the namespace's breakdown: its items must sum to the reported peak."""
    row = dict(ROWS["GT19"], metric="nvidia-smi")
    run = ACC.run_estimate(row)
    smi = estimate_memory(ACC.projection(row)).peak_smi_gib
    assert _close(run["estimated"], smi)
