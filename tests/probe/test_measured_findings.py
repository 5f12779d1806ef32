"""Measurements as facts: GA701 over `measured`, GA101 confirmed / refuted / added by measured batch facts,
GA401 from an out-of-memory, GA402 quoting the scaling efficiency; recorded measurements and their digest.
No process is started here: measurements come from recorded reports or are built by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.core import datacodec
from advisor.core.findings import Finding
from advisor.engine.rule_engine import Context, Engine, load_catalog
from advisor.facts import run_names
from advisor.pipeline.check import CheckOptions, build_plans, resolve_settings, run_check
from advisor.pipeline.probe.results import aggregate, status_of
from advisor.pipeline.probe.spec import ProbeOptions, ProbeSpec, Skip, build_spec, run_digest
from advisor.pipeline.probe.stage import RECORDED_FILE
from tests.probe.conftest import SEQ, TINY_CONFIG, tiny_project

LAUNCH = "torchrun --nproc_per_node 2 train.py train.yaml"
TRAIN = (
    "model_name_or_path: ./tiny\noutput_dir: out\nper_device_train_batch_size: 2\n"
    "gradient_accumulation_steps: 2\n"
)


def _run_digest(root: Path) -> str:
    """The digest --verify-report records for the project's one run: an entry applies only with it."""
    options = CheckOptions()
    plans, _ = build_plans([root], options, resolve_settings([root], options))
    return run_digest(plans[0])


def _record(root: Path, measured: dict, status: str = "ok", **extra) -> None:
    entry = {"name": "launch.sh", "status": status, "measured": measured, "digest": _run_digest(root)}
    entry.update(extra)
    (root / RECORDED_FILE).write_text(json.dumps({"version": 1, "runs": [entry]}), encoding="utf-8")


def _check(root: Path, monkeypatch: pytest.MonkeyPatch, settings: str | None = None):
    if settings:
        (root / ".gpu-advise.toml").write_text(settings, encoding="utf-8")
    monkeypatch.chdir(root)
    result = run_check([Path(".")], CheckOptions())
    assert not result.errors, result.errors
    return result


def _at(f: Finding) -> str:
    return f"{f.location.file.name}:{f.location.line}:{f.location.col}"


def test_ga701_reports_a_world_size_the_configs_do_not_say(tmp_path, monkeypatch) -> None:
    tiny_project(tmp_path, LAUNCH, TRAIN)
    _record(tmp_path, {"world_size": 4, "effective_batch": 16})
    result = _check(tmp_path, monkeypatch)
    hits = {f.message.split(":")[0]: f for f in result.findings if f.rule == "GA701"}
    assert set(hits) == {"world size", "effective batch"}
    assert _at(hits["world size"]) == "launch.sh:2:27"
    assert _at(hits["effective batch"]) == "train.yaml:3:30"
    assert all(f.evidence == "measured" and f.severity == "warning" for f in hits.values())
    assert result.runs[0].measured["effective_batch"] == 16


def test_ga701_is_silent_when_measurement_matches(tmp_path, monkeypatch) -> None:
    tiny_project(tmp_path, LAUNCH, TRAIN)
    _record(tmp_path, {"world_size": 2, "effective_batch": 8})
    assert not [f for f in _check(tmp_path, monkeypatch).findings if f.rule == "GA701"]


def test_tolerance_for_estimates_comes_from_the_settings(tmp_path, monkeypatch) -> None:
    tiny_project(tmp_path, LAUNCH, TRAIN)
    spec = ProbeSpec(
        run="launch.sh",
        launcher="torchrun",
        nproc=2,
        device="cuda",
        model_name="./tiny",
        model_source="path",
        hf_config=TINY_CONFIG,
        seq_len=SEQ,
        strategy="ddp",
        training_args={"per_device_train_batch_size": 2, "gradient_accumulation_steps": 2},
    )
    measured = {
        "world_size": 2,
        "effective_batch": 8,
        "device": "cuda",
        "peak_allocated_gib": 10.0,
        "peak_reserved_gib": 10.0,
    }
    _record(tmp_path, measured, spec=datacodec.encode(spec))
    hits = [f for f in _check(tmp_path, monkeypatch).findings if f.rule == "GA701"]
    assert any(f.message.startswith("peak allocated memory") for f in hits)
    assert all(f.severity == "info" for f in hits if "memory" in f.message)
    loose = [
        f
        for f in _check(tmp_path, monkeypatch, "[thresholds]\nprediction-tolerance = 1000.0\n").findings
        if f.rule == "GA701"
    ]
    assert not [f for f in loose if "memory" in f.message]


def test_ga101_added_when_only_the_measured_batch_differs_from_the_baseline(tmp_path, monkeypatch) -> None:
    tiny_project(tmp_path, LAUNCH, TRAIN)
    _record(tmp_path, {"world_size": 4, "effective_batch": 16, "per_device": 2, "accumulation": 2})
    result = _check(tmp_path, monkeypatch, '[[runs]]\npath = "launch.sh"\neffective-batch = 8\n')
    ga101 = [f for f in result.findings if f.rule == "GA101"]
    assert len(ga101) == 1 and ga101[0].evidence == "measured"
    assert "effective batch is 16" in ga101[0].message and "4 processes" in ga101[0].message


def test_ga101_confirmed_by_a_matching_measurement(tmp_path, monkeypatch) -> None:
    tiny_project(tmp_path, LAUNCH, TRAIN)
    _record(tmp_path, {"world_size": 2, "effective_batch": 8})
    result = _check(tmp_path, monkeypatch, '[[runs]]\npath = "launch.sh"\neffective-batch = 16\n')
    ga101 = [f for f in result.findings if f.rule == "GA101"]
    assert len(ga101) == 1 and ga101[0].evidence == "measured"
    assert "confirmed by the --verify measurement" in ga101[0].message
    assert result.verification.runs[0].confirmed == ["GA101 train.yaml:3:30"]


def test_ga101_refuted_when_the_measured_batch_is_the_baseline(tmp_path, monkeypatch) -> None:
    tiny_project(tmp_path, LAUNCH, TRAIN)
    _record(tmp_path, {"world_size": 4, "effective_batch": 16})
    result = _check(tmp_path, monkeypatch, '[[runs]]\npath = "launch.sh"\neffective-batch = 16\n')
    assert not [f for f in result.findings if f.rule == "GA101"]
    assert any("GA101" in n and "not confirmed" in n for n in result.runs[0].notes)


def test_a_stale_recorded_measurement_is_not_used(tmp_path, monkeypatch) -> None:
    tiny_project(tmp_path, LAUNCH, TRAIN)
    _record(tmp_path, {"world_size": 4, "effective_batch": 16}, digest="0000000000000000")
    result = _check(tmp_path, monkeypatch)
    assert not [f for f in result.findings if f.rule == "GA701"]
    assert result.verification.runs[0].status == "stale"
    assert any("verify: stale" in n for n in result.runs[0].notes)


def test_out_of_memory_in_the_probe_is_ga401_measured(tmp_path, monkeypatch) -> None:
    tiny_project(tmp_path, LAUNCH, TRAIN)
    _record(
        tmp_path,
        {
            "device": "cuda",
            "oom": True,
            "oom_rank": 1,
            "oom_at_step": 1,
            "world_size": 2,
            "error": "CUDA out of memory. Tried to allocate 2.00 GiB",
            "device_name": "NVIDIA H100",
        },
        status="oom",
    )
    result = _check(tmp_path, monkeypatch)
    ga401 = [f for f in result.findings if f.rule == "GA401"]
    assert len(ga401) == 1
    f = ga401[0]
    assert (f.name, f.evidence, f.severity) == ("does-not-fit", "measured", "error")
    assert "ran out of memory on rank 1" in f.message
    assert _at(f) == "train.yaml:3:30"


@pytest.mark.parametrize(
    ("settings", "expect"),
    [('[severity]\nGA401 = "warning"\n', "warning"), ('ignore = ["GA401"]\n', None)],
)
def test_ga401_from_an_out_of_memory_comes_from_the_rule_file(
    tmp_path, monkeypatch, settings, expect
) -> None:
    tiny_project(tmp_path, LAUNCH, TRAIN)
    _record(tmp_path, {"device": "cuda", "oom": True, "oom_rank": 0, "oom_at_step": 1}, status="oom")
    result = _check(tmp_path, monkeypatch, settings)
    ga401 = [f for f in result.findings if f.rule == "GA401"]
    assert [f.severity for f in ga401] == ([expect] if expect else [])


def _context(root: Path):
    options = CheckOptions()
    settings = resolve_settings([root], options)
    plans, _ = build_plans([root], options, settings)
    plan = plans[0]
    names = run_names(plan)
    names["thresholds"] = settings.thresholds
    catalog = load_catalog()
    return (
        plan,
        names,
        Context(names, plan.root_location, plan.name, {}),
        Engine(catalog, {}),
        catalog,
        settings,
    )


def test_ga402_quotes_the_measured_scaling_efficiency(tmp_path, monkeypatch) -> None:
    (tmp_path / "launch.sh").write_text(
        "#!/bin/bash\naccelerate launch --num_processes 2 train.py sft.yaml\n"
    )
    (tmp_path / "sft.yaml").write_text(
        "model_name_or_path: Qwen/Qwen2.5-1.5B\nuse_peft: true\nbf16: true\nper_device_train_batch_size: 4\n"
        "gradient_accumulation_steps: 4\nmax_length: 1024\nnum_train_epochs: 1\n"
    )
    (tmp_path / "train.py").write_text("print('train')\n")
    (tmp_path / ".gpu-advise.toml").write_text('[[runs]]\npath = "launch.sh"\ndataset-samples = 20000\n')
    monkeypatch.chdir(tmp_path)
    before = run_check([Path(".")], CheckOptions(hardware="2xH100-PCIe"))
    static = [f for f in before.findings if f.rule == "GA402"]
    assert len(static) == 1 and static[0].evidence is None
    _record(tmp_path, {"world_size": 2, "cpu_timings": True}, scaling={"efficiency": 0.62, "processes": 2})
    result = run_check([Path(".")], CheckOptions(hardware="2xH100-PCIe"))
    ga402 = [f for f in result.findings if f.rule == "GA402"]
    assert len(ga402) == 1 and ga402[0].evidence == "measured"
    assert (
        ga402[0].message
        == static[0].message + " Measured: scaling efficiency 62% at 2 processes (CPU timings)."
    )


def test_aggregate_sums_samples_over_ranks_and_takes_the_slowest_rank() -> None:
    spec = ProbeSpec(
        run="r",
        launcher="torchrun",
        nproc=2,
        device="cpu",
        model_name="m",
        model_source="path",
        hf_config=TINY_CONFIG,
        seq_len=SEQ,
    )
    ranks = [
        {
            "rank": r,
            "world_size": 2,
            "status": "ok",
            "samples_per_optimizer_step": 4,
            "seconds_per_step": s,
            "step_seconds": [s],
            "resolved": {"per_device_train_batch_size": 2, "gradient_accumulation_steps": 2},
            "terms": {"param_bytes": 10, "grad_bytes": 10, "optimizer_bytes": 20},
        }
        for r, s in ((0, 0.5), (1, 1.0))
    ]
    m = aggregate(ranks, spec)
    assert (m["effective_batch"], m["seconds_per_step"], m["tokens_per_s"]) == (8, 1.0, 8 * SEQ / 1.0)
    assert status_of(ranks, 0, False, False, 2) == "ok"
    assert status_of(ranks[:1], 0, False, False, 2) == "failed"  # a rank never reported
    assert status_of([dict(ranks[0], status="oom"), ranks[1]], 3, False, False, 2) == "oom"
    assert status_of(ranks, None, True, False, 2) == "timeout"


CPU = {"cuda_available": False, "device_count": 0, "cpu_count": 2, "cpu_bf16": False, "libraries": {}}


def test_cpu_probe_substitutes_what_a_cpu_cannot_run(tmp_path: Path) -> None:
    tiny_project(
        tmp_path,
        "accelerate launch --config_file acc.yaml train.py train.yaml",
        "model_name_or_path: ./tiny\noutput_dir: out\nper_device_train_batch_size: 2\nbf16: true\n"
        "optim: paged_adamw_8bit\ndeepspeed: ds.json\n",
        extra={
            "acc.yaml": "distributed_type: DEEPSPEED\nnum_processes: 2\nmixed_precision: bf16\n",
            "ds.json": '{"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": "auto"}',
        },
    )
    plan, names, *_ = _context(tmp_path)
    spec = build_spec(plan, names, CPU, ProbeOptions())
    assert (spec.launcher, spec.nproc, spec.device) == ("accelerate", 2, "cpu")
    assert (spec.weights_dtype, spec.mixed_precision, spec.strategy) == ("fp32", None, "ddp")
    assert spec.training_args["optim"] == "adamw_torch" and "deepspeed" not in spec.training_args
    assert spec.training_args["bf16"] is False
    text = " ".join(spec.notes)
    assert "no bf16 support" in text and "probed as DDP" in text and "bitsandbytes" in text


def test_qlora_needs_a_gpu(tmp_path: Path) -> None:
    tiny_project(tmp_path, LAUNCH, TRAIN + "adapter: qlora\nload_in_4bit: true\n")
    plan, names, *_ = _context(tmp_path)
    with pytest.raises(Skip) as info:
        build_spec(plan, names, CPU, ProbeOptions())
    assert info.value.status == "unsupported" and "QLoRA needs a CUDA GPU" in info.value.reason
