"""The `estimates` fact namespace: a RunPlan mapped onto the estimator, and what the check report shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.estimate import resolve_model
from advisor.facts import run_names
from advisor.pipeline.check import CheckOptions, build_plans, resolve_settings, run_check
from tests.conftest import write_files

LAUNCH = "#!/bin/bash\naccelerate launch --num_processes 2 train.py sft.yaml\n"


def _estimates(
    tmp_path: Path, files: dict[str, str], hardware: str | None = "2xH100-PCIe", online: bool = False
):
    write_files(tmp_path, {"train.py": "print('train')\n", **files})
    options = CheckOptions(hardware=hardware, online=online)
    settings = resolve_settings([tmp_path], options)
    plans, _ = build_plans([tmp_path], options, settings)
    return {p.name: run_names(p)["estimates"] for p in plans}


@pytest.fixture(autouse=True)
def _cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_a_lora_run_is_mapped_onto_the_estimator(tmp_path: Path) -> None:
    est = _estimates(
        tmp_path,
        {
            "launch.sh": LAUNCH,
            "sft.yaml": "model_name_or_path: Qwen/Qwen2.5-1.5B\nuse_peft: true\nlora_r: 8\n"
            "lora_target_modules: all-linear\nbf16: true\ndtype: bfloat16\nper_device_train_batch_size: 4\n"
            "gradient_accumulation_steps: 2\nmax_length: 1024\ngradient_checkpointing: true\n",
        },
    )["launch.sh"]
    assert est.known is True
    assert (est.model, est.method, est.strategy, est.dp_size, est.micro_batch, est.seq_len) == (
        "Qwen/Qwen2.5-1.5B",
        "lora",
        "ddp",
        2,
        4,
        1024,
    )
    assert est.params == 1_543_714_304
    assert 0 < est.peak_vram_gib < est.gpu_memory_gib == 79.6
    assert est.verdict == "fits" and est.fits_single_gpu is True and est.ddp_fits is True
    assert est.low_gib < est.peak_vram_gib < est.high_gib
    assert len(est.contributors) == 3 and all("GiB" in c for c in est.contributors)
    # the position of the estimate is the model name, with the batch and the sequence length related
    v = est.entry("peak_vram_gib")
    assert v.origin.file.name == "sft.yaml" and v.origin.line == 1
    assert {loc.line for loc in v.related} >= {7, 9}
    assert est.hours_single_gpu is None and "length is unknown" in est.time_reason


@pytest.mark.parametrize(
    ("sft", "reason"),
    [
        ("model_name_or_path: someone/not-a-model\nmax_length: 1024\n", "not found offline"),
        (
            "model_name_or_path: Qwen/Qwen2.5-1.5B\nmax_length: 1024\nload_in_8bit: true\n",
            "8-bit quantized base without LoRA",
        ),
        (
            "model_name_or_path: Qwen/Qwen2.5-1.5B\nmax_length: 1024\noptim: galore_adamw\n",
            "no memory profile",
        ),
        ("model_name_or_path: Qwen/Qwen2.5-1.5B\nmax_length: 1024\nnum_generations: 8\n", "online RL"),
        ("max_length: 1024\n", "no model is named"),
    ],
)
def test_unknown_inputs_give_a_reason_not_a_default(tmp_path: Path, sft: str, reason: str) -> None:
    est = _estimates(tmp_path, {"launch.sh": LAUNCH, "sft.yaml": sft})["launch.sh"]
    assert est.known is False
    assert reason in est.reason
    assert est.peak_vram_gib is None
    assert est.entry("peak_vram_gib").unknown == est.reason


def test_unknown_model_is_noted_in_the_run_summary_and_the_json_report(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            "launch.sh": LAUNCH,
            "sft.yaml": "model_name_or_path: someone/not-a-model\nmax_length: 1024\n",
            "train.py": "print('train')\n",
        },
    )
    result = run_check([Path(".")], CheckOptions(hardware="2xH100-PCIe"))
    (run,) = result.runs
    assert run.peak_vram_gib is None
    assert any("memory estimate unknown" in n and "someone/not-a-model" in n for n in run.notes)
    from advisor.report.json_report import render_json

    data = json.loads(render_json(result))["runs"][0]
    assert {"peak_vram_gib", "gpu_memory_gib", "est_hours_single_gpu"} <= set(data)


def test_json_report_has_the_estimate_per_run(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            "launch.sh": LAUNCH,
            "sft.yaml": "model_name_or_path: Qwen/Qwen2.5-1.5B\nuse_peft: true\nbf16: true\n"
            "per_device_train_batch_size: 4\nmax_length: 1024\nnum_train_epochs: 1\n",
            "train.py": "print('train')\n",
            ".gpu-advise.toml": '[[runs]]\npath = "launch.sh"\ndataset-samples = 20000\n',
        },
    )
    from advisor.report.json_report import render_json

    result = run_check([Path(".")], CheckOptions(hardware="2xH100-PCIe"))
    data = json.loads(render_json(result))["runs"][0]
    assert 0 < data["peak_vram_gib"] < data["gpu_memory_gib"] == 79.6
    assert 0 < data["est_hours"] < data["est_hours_single_gpu"] < 12
    assert any(n.startswith("estimate assumes:") and "20,000 samples" in n for n in data["notes"])


def test_online_is_passed_to_the_model_lookup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []

    def fake(name: str, online: bool = False, **_: object):  # the project boundary rides along
        seen.append((name, online))
        return resolve_model("Qwen/Qwen2.5-0.5B")

    monkeypatch.setattr("advisor.estimate.resolve_model", fake)
    files = {"launch.sh": LAUNCH, "sft.yaml": "model_name_or_path: someone/private\nmax_length: 512\n"}
    assert _estimates(tmp_path, files, online=True)["launch.sh"].known is True
    assert seen[-1] == ("someone/private", True)
    _estimates(tmp_path, files, online=False)
    assert seen[-1] == ("someone/private", False)


def test_an_estimator_bug_costs_the_estimate_not_the_check(tmp_path: Path, monkeypatch) -> None:
    def boom(*a, **k):
        raise ZeroDivisionError("bug")

    monkeypatch.setattr("advisor.facts.estimates.analyse", boom)
    write_files(
        tmp_path,
        {
            "launch.sh": LAUNCH,
            "sft.yaml": "model_name_or_path: Qwen/Qwen2.5-1.5B\nmax_length: 1024\n",
            "train.py": "print('train')\n",
        },
    )
    result = run_check([Path(".")], CheckOptions(hardware="2xH100-PCIe"))
    assert not result.errors
    assert any("estimator failed: ZeroDivisionError" in n for n in result.runs[0].notes)


def test_fit_claims_use_the_pessimistic_reading(tmp_path: Path) -> None:
    # no dtype written: the single-GPU and DDP alternatives are judged with an fp32 load under autocast
    base = "model_name_or_path: meta-llama/Llama-2-7b-hf\nbf16: true\nmax_length: 2048\n"
    acc = "distributed_type: DEEPSPEED\nnum_processes: 4\ndeepspeed_config:\n  zero_stage: 3\n"
    launch = "#!/bin/bash\naccelerate launch --config_file acc.yaml train.py sft.yaml\n"
    est = _estimates(tmp_path, {"launch.sh": launch, "acc.yaml": acc, "sft.yaml": base}, "4xH100-NVL")[
        "launch.sh"
    ]
    assert est.ddp_fits is False and est.ddp_peak > est.gpu_memory_gib
    assert any("fp32" in n for n in est.fit_notes)


def test_llamafactory_max_samples_bounds_the_run(tmp_path: Path) -> None:
    sft = (
        "model_name_or_path: Qwen/Qwen2.5-0.5B\nstage: sft\nfinetuning_type: lora\ndataset: a,b\n"
        "cutoff_len: 1024\nmax_samples: 500\nper_device_train_batch_size: 2\nnum_train_epochs: 2.0\n"
        "bf16: true\n"
    )
    launch = "#!/bin/bash\nFORCE_TORCHRUN=1 NPROC_PER_NODE=2 llamafactory-cli train sft.yaml\n"
    est = _estimates(tmp_path, {"launch.sh": launch, "sft.yaml": sft})["launch.sh"]
    assert est.known and est.method == "lora" and est.seq_len == 1024
    assert est.total_tokens == 500 * 2 * 1024 * 2
    assert any("max_samples 500 x 2 datasets" in a for a in est.assumptions)


@pytest.mark.parametrize(
    ("hub_id", "params"),
    [
        # published totals (model cards): SmolLM2 135M/360M/1.7B, Qwen3 0.6B/4B
        ("HuggingFaceTB/SmolLM2-135M", 134_515_008),
        ("HuggingFaceTB/SmolLM2-360M", 361_821_120),
        ("HuggingFaceTB/SmolLM2-1.7B", 1_711_376_384),
        ("Qwen/Qwen3-0.6B", 596_049_920),
        ("Qwen/Qwen3-4B", 4_022_468_096),
    ],
)
def test_catalog_models_added_for_the_corpus(hub_id: str, params: int) -> None:
    assert resolve_model(hub_id).count().total == params


def _check(tmp_path: Path, files: dict[str, str], hardware: str):
    write_files(tmp_path, files)
    result = run_check([Path(".")], CheckOptions(hardware=hardware))
    assert not result.errors
    return result


def test_a_lone_recipe_is_estimated_per_gpu_and_a_70b_full_fine_tune_does_not_fit(tmp_path: Path) -> None:
    # no launch script: per-GPU memory of one process (the same on every GPU of a DDP run) is still an answer
    sft = "model_name_or_path: meta-llama/Meta-Llama-3-70B\nbf16: true\nper_device_train_batch_size: 1\n"
    result = _check(tmp_path, {"sft.yaml": sft + "max_length: 2048\n"}, "1xH100")
    [f] = [f for f in result.findings if f.rule == "GA401"]
    assert (f.location.file.name, f.location.line, f.location.col) == ("sft.yaml", 1, 21)
    est = _estimates(tmp_path, {}, "1xH100")["sft.yaml"]
    assert est.known and est.strategy == "none" and est.dp_size == 1
    assert any(a.startswith("world size unknown") for a in est.assumptions)


def test_a_sharded_run_with_an_unknown_process_count_says_why(tmp_path: Path) -> None:
    sft = "model_name_or_path: Qwen/Qwen2.5-0.5B\nmax_length: 512\nfsdp: full_shard auto_wrap\n"
    est = _estimates(tmp_path, {"sft.yaml": sft}, "1xH100")["sft.yaml"]
    assert est.known is False and "number of processes" in est.reason


@pytest.mark.parametrize(
    "script",
    [
        "from unsloth import FastLanguageModel\nmodel, tok = FastLanguageModel.from_pretrained('m')\n",
        "import unsloth\nprint('train')\n",
    ],
)
def test_unsloth_is_not_modelled_and_never_gets_an_error(tmp_path: Path, script: str) -> None:
    sft = "model_name_or_path: meta-llama/Meta-Llama-3-70B\nbf16: true\nmax_length: 4096\n"
    launch = "#!/bin/bash\naccelerate launch --num_processes 1 train.py sft.yaml\n"
    files = {"launch.sh": launch, "sft.yaml": sft, "train.py": script}
    result = _check(tmp_path, files, "1xA100-80GB")
    assert not [f for f in result.findings if f.rule.startswith("GA40")]
    est = _estimates(tmp_path, files, "1xA100-80GB")["launch.sh"]
    assert est.known is False and "Unsloth" in est.reason and "train.py:" in est.reason


def test_llamafactory_use_unsloth_is_not_modelled(tmp_path: Path) -> None:
    sft = (
        "model_name_or_path: meta-llama/Meta-Llama-3-8B\nstage: sft\nfinetuning_type: lora\n"
        "cutoff_len: 1024\nuse_unsloth: true\n"
    )
    est = _estimates(tmp_path, {"sft.yaml": sft}, "1xH100")["sft.yaml"]
    assert est.known is False and "use_unsloth at sft.yaml:5" in est.reason


@pytest.mark.parametrize(
    ("extra", "expect_known"),
    [
        ("max_steps: 1e400\n", True),  # a string to PyYAML, inf to float(): the length is unknown
        ("max_steps: .nan\n", True),
        ("max_steps: .inf\n", True),
        ("max_length: 1e400\n", False),
        ("lora_dropout: .nan\nuse_peft: true\n", True),
    ],
)
def test_non_finite_numbers_become_unknown_not_a_crash(
    tmp_path: Path, extra: str, expect_known: bool
) -> None:
    sft = "model_name_or_path: Qwen/Qwen2.5-0.5B\nbf16: true\nper_device_train_batch_size: 1\n" + extra
    if "max_length" not in extra:
        sft += "max_length: 512\n"
    est = _estimates(tmp_path, {"sft.yaml": sft}, "1xH100")["sft.yaml"]
    assert est.known is expect_known
    if not expect_known:
        assert "not a finite number" in est.reason and "sft.yaml:4" in est.reason
    else:
        assert est.hours_single_gpu is None or est.hours_single_gpu < 1e6


def test_a_401_digit_bucket_size_is_an_unknown_bucket(tmp_path: Path) -> None:
    ds = '{"zero_optimization": {"stage": 2, "reduce_bucket_size": ' + "9" * 401 + "}}"
    acc = (
        "distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  deepspeed_config_file: ds.json\n"
    )
    launch = "#!/bin/bash\naccelerate launch --config_file acc.yaml train.py sft.yaml\n"
    sft = "model_name_or_path: Qwen/Qwen2.5-0.5B\nbf16: true\nmax_length: 512\n"
    files = {"launch.sh": launch, "acc.yaml": acc, "ds.json": ds, "sft.yaml": sft}
    est = _estimates(tmp_path, files)["launch.sh"]
    assert est.known is True and est.strategy == "zero2"
    assert any("reduce_bucket_size unknown" in a for a in est.assumptions)


def test_estimate_command_survives_crash_values(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from advisor.cli import app

    ds = '{"train_micro_batch_size_per_gpu": 0, '
    ds += '"zero_optimization": {"stage": 3, "reduce_bucket_size": 1e400}}'
    acc = (
        "distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  deepspeed_config_file: ds.json\n"
    )
    launch = "#!/bin/bash\naccelerate launch --config_file acc.yaml train.py sft.yaml\n"
    sft = "model_name_or_path: Qwen/Qwen2.5-0.5B\nmax_steps: 1e400\nmax_length: 512\n"
    write_files(
        tmp_path,
        {"launch.sh": launch, "acc.yaml": acc, "ds.json": ds, "sft.yaml": sft, "train.py": "x = 1\n"},
    )
    result = CliRunner().invoke(app, ["estimate", "."])
    assert result.exit_code in (0, 1) and "Traceback" not in result.output


def test_an_absurd_batch_is_a_reason_not_an_estimator_failure(tmp_path: Path) -> None:
    sft = "model_name_or_path: Qwen/Qwen2.5-0.5B\nmax_length: 512\n"
    sft += "per_device_train_batch_size: 100000000000000000\n"
    est = _estimates(tmp_path, {"sft.yaml": sft}, "1xH100")["sft.yaml"]
    assert est.known is False and "estimator failed" not in est.reason
