"""fp32 matmuls: the CUDA-core rate unless TF32 is on (issue 21 section 2, "Time").

PyTorch's cuBLAS TF32 switch is off by default since 1.12 (torch/backends/cuda/__init__.py:
`torch.backends.cuda.matmul.allow_tf32` reads `allowTF32CuBLAS`, initialised false); HF TrainingArguments
sets it only when `tf32` is not None (transformers training_args.py __post_init__). An fp32 run therefore
runs its matmuls at the non-tensor FP32 peak (advisor/data/gpus.yaml `fp32_tflops`), the V100 included,
which has no TF32 at all and got no time estimate before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.estimate import TrainingSetup, estimate_time, resolve_model
from advisor.estimate.timing import fp32_flops_per_token
from advisor.sources.hardware import resolve_gpu
from tests.conftest import estimate_json_run, git_project

runner = CliRunner()

# the HF docs' fp32 BERT-large recipe (transformers perf_train_gpu_one.mdx@0016acf7) as a user writes it
BERT_FP32 = """model_name_or_path: google-bert/bert-large-uncased
task: sequence-classification
torch_dtype: float32
attn_implementation: eager
max_length: 512
per_device_train_batch_size: 4
optim: adamw_torch
bf16: false
fp16: false
max_steps: 100
output_dir: out
"""


def _estimate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hw: str, args: str, name: str = "p") -> dict:
    files = {"launch.sh": "#!/bin/bash\npython train.py args.yaml\n", "args.yaml": args, "train.py": "pass\n"}
    (tmp_path / name).mkdir()
    git_project(tmp_path / name, files, monkeypatch)
    return estimate_json_run(hw)


def _tps(run: dict) -> float:
    t = run["time"]
    return float(t.get("tokens_per_s") or t["tokens_per_s_per_gpu"])


def test_fp32_on_a_v100_gets_a_time_at_the_cuda_core_rate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _estimate(tmp_path, monkeypatch, _hw(tmp_path, "V100-SXM2-16GB"), BERT_FP32)
    assert run["time"] is not None and _tps(run) > 0
    said = " ".join(run["assumptions"])
    assert "FP32 non-tensor rate, 15.7 TFLOPS" in said and "no TF32 tensor cores" in said
    # HF docs, 1x V100 fp32 bs 4 x 512: 8.85 samples/s (GT01) = 4531 tokens/s; within the model's error
    assert 0.75 * 4531 < _tps(run) < 1.3 * 4531


def _hw(tmp_path: Path, gpu: str) -> str:
    path = tmp_path / "hw.yaml"
    path.write_text(f"name: one\ngpus:\n  model: {gpu}\n  count: 1\n")
    return str(path)


def test_tf32_true_moves_fp32_matmuls_to_the_tensor_cores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hw = _hw(tmp_path, "A100-SXM-80GB")
    off = _estimate(tmp_path, monkeypatch, hw, BERT_FP32)
    on = _estimate(tmp_path, monkeypatch, hw, BERT_FP32 + "tf32: true\n", "q")
    assert "TF32 is off" in " ".join(off["assumptions"])
    assert "TF32 tensor-core rate (tf32: true" in " ".join(on["assumptions"])
    # 156 vs 19.5 TFLOPS peak: the step is matmul-bound, so much faster, though not 8x (fixed terms stay)
    assert _tps(on) > 2.5 * _tps(off)


def test_a_bf16_run_is_not_affected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hw = _hw(tmp_path, "A100-SXM-80GB")
    bf16 = BERT_FP32.replace("torch_dtype: float32", "torch_dtype: bfloat16").replace(
        "bf16: false", "bf16: true"
    )
    a = _estimate(tmp_path, monkeypatch, hw, bf16)
    b = _estimate(tmp_path, monkeypatch, hw, bf16 + "tf32: true\n", "q")
    assert _tps(a) == pytest.approx(_tps(b))
    assert "FP32 non-tensor" not in " ".join(a["assumptions"])


def test_every_catalog_gpu_has_a_sourced_fp32_peak_below_its_tensor_rate() -> None:
    from advisor.sources.gpu_catalog import gpu_catalog

    for gpu in gpu_catalog().values():
        assert gpu.fp32_tflops and gpu.fp32_tflops > 0, gpu.id
        assert any(s.startswith(f"fp32_tflops {gpu.fp32_tflops:g}:") for s in gpu.source), gpu.id
        tensor = gpu.dense_tflops("bf16") or gpu.dense_tflops("fp16")
        assert tensor is None or gpu.fp32_tflops < tensor, gpu.id


@pytest.mark.parametrize(
    ("gpu", "tflops"),
    [  # datasheet FP32 (non-tensor) figures
        ("H100-SXM", 66.9),
        ("A100-SXM-80GB", 19.5),
        ("V100-SXM2-16GB", 15.7),
        ("RTX-4090", 82.6),
        ("L40S", 91.6),
        ("T4", 8.1),
    ],
)
def test_published_fp32_peaks(gpu: str, tflops: float) -> None:
    assert resolve_gpu(gpu).fp32_tflops == pytest.approx(tflops)


def _qlora(**kw: object) -> TrainingSetup:
    fields: dict = dict(
        method="qlora",
        lora_r=16,
        lora_targets=["all-linear"],
        micro_batch=2,
        seq_len=4096,
        precision="bf16",
        amp=False,
        storage_dtype="bf16",
        autocast="off",  # bf16 weights, no autocast (TrainingArguments bf16: false)
        gradient_checkpointing=True,
        optimizer="adamw_torch",
        attn_implementation="sdpa",
        prepare_kbit_training=True,
    )
    fields.update(kw)
    return TrainingSetup(model=resolve_model("meta-llama/Meta-Llama-3-8B").count(), **fields)


def test_prepare_kbit_training_runs_the_lm_head_and_sdpa_attention_in_fp32() -> None:
    # PEFT prepare_model_for_kbit_training upcasts the lm_head (a non-Params4bit weight) and the residual
    # stream; bitsandbytes Linear4bit returns its output in the input's dtype, so SDPA sees fp32 q/k/v
    fp32, parts = fp32_flops_per_token(_qlora())
    lm = 4096 * 128256
    attn = 4 * 4 * 32 * 4096 * 4096 * 0.5  # (fwd + 2 bwd + recompute) x QK^T/AV, causal, span 4096
    assert fp32 == pytest.approx(6 * lm + attn)
    assert parts == ["the lm_head", "sdpa attention"]
    # flash-attention casts fp32 q/k/v back to 16 bits: only the lm_head stays fp32
    fa_fp32, fa_parts = fp32_flops_per_token(_qlora(attn_implementation="flash_attention_2"))
    assert fa_fp32 == pytest.approx(6 * lm) and fa_parts == ["the lm_head"]
    assert fp32_flops_per_token(_qlora(prepare_kbit_training=False))[0] == 0.0
    # under autocast, linear and SDPA run in the autocast dtype whatever the stream's dtype
    assert fp32_flops_per_token(_qlora(autocast="bf16"))[0] == 0.0


def test_fp32_parts_slow_the_step_at_the_cuda_core_rate() -> None:
    h100 = resolve_gpu("H100-SXM")
    fast = estimate_time(_qlora(), 989, 1.0, "H100-SXM", 1)
    slow = estimate_time(_qlora(), 989, 1.0, "H100-SXM", 1, fp32_tflops=h100.fp32_tflops)
    assert slow.step_time_s > 1.3 * fast.step_time_s
    assert any("in fp32 (prepare_model_for_kbit_training" in a for a in slow.assumptions)
    # nothing moves to fp32 without the kbit preparation
    plain = _qlora(prepare_kbit_training=False)
    assert estimate_time(plain, 989, 1.0, "H100-SXM", 1, fp32_tflops=66.9).step_time_s == pytest.approx(
        estimate_time(plain, 989, 1.0, "H100-SXM", 1).step_time_s
    )


def test_torch_compile_turns_tf32_on_when_tf32_is_unset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # transformers 5.24 training_args.py:1664-1672: torch_compile with tf32 None and no fp16 enables TF32
    hw = _hw(tmp_path, "A100-SXM-80GB")
    compiled = _estimate(tmp_path, monkeypatch, hw, BERT_FP32 + "torch_compile: true\n")
    assert "TF32 tensor-core rate" in " ".join(compiled["assumptions"])
    refused = _estimate(tmp_path, monkeypatch, hw, BERT_FP32 + "torch_compile: true\ntf32: false\n", "q")
    assert "TF32 is off" in " ".join(refused["assumptions"])


ACCELERATE_FP8 = """compute_environment: LOCAL_MACHINE
distributed_type: 'NO'
num_processes: 1
mixed_precision: {mp}
"""


def _fp8_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu: str, mp: str, name: str) -> dict:
    args = (
        BERT_FP32.replace("google-bert/bert-large-uncased", "meta-llama/Meta-Llama-3-8B")
        .replace("task: sequence-classification\n", "")
        .replace("max_length: 512", "max_length: 4096\npacking: true")
    )
    args = args.replace("torch_dtype: float32", "torch_dtype: bfloat16").replace("bf16: false", "bf16: true")
    files = {
        "launch.sh": "#!/bin/bash\naccelerate launch --config_file acc.yaml train.py args.yaml\n",
        "args.yaml": args,
        "acc.yaml": ACCELERATE_FP8.format(mp=mp),
        "train.py": "pass\n",
    }
    (tmp_path / name).mkdir()
    git_project(tmp_path / name, files, monkeypatch)
    result = runner.invoke(app, ["estimate", ".", "-H", _hw(tmp_path / name, gpu), "--format", "json"])
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.stdout)["runs"]
    return run


def test_fp8_training_is_timed_faster_where_the_gpu_has_fp8(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # torchtitan Llama 3.1 8B on H100: 6667 -> 8532 tok/s per GPU with Float8 (x1.28)
    bf16 = _fp8_project(tmp_path, monkeypatch, "H100-SXM", "bf16", "a")
    fp8 = _fp8_project(tmp_path, monkeypatch, "H100-SXM", "fp8", "b")
    assert 1.2 * _tps(bf16) < _tps(fp8) < 1.28 * _tps(bf16)
    assert any(a.startswith("fp8 Linears: x1.28") for a in fp8["assumptions"])
    # an A100 has no fp8 tensor cores: the run is timed at its bf16 rate, and the estimate says so
    a100 = _fp8_project(tmp_path, monkeypatch, "A100-SXM-80GB", "fp8", "c")
    a100_bf16 = _fp8_project(tmp_path, monkeypatch, "A100-SXM-80GB", "bf16", "d")
    assert _tps(a100) == pytest.approx(_tps(a100_bf16), rel=1e-3)
    assert any("has no fp8 rate: timed at bf16" in a for a in a100["assumptions"])
