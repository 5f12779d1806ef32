"""Time model: hardware.md section 6 worked example and communication behaviour."""

import pytest

from advisor.estimate import TrainingSetup, default_mfu, estimate_time, flops_per_token, resolve_model


def setup(**kw):
    fields = dict(
        micro_batch=1,
        seq_len=2048,
        precision="bf16",
        amp=False,
        optimizer="adamw_torch_fused",
        gradient_checkpointing=False,
        attn_implementation="sdpa",
    )
    fields.update(kw)
    return TrainingSetup(model=resolve_model("meta-llama/Meta-Llama-3-8B").count(), **fields)


def test_hardware_md_worked_example():
    # hardware.md section 6: Llama-3-8B full FT, 100M tokens, seq 2048: 6*Psi + attention ~ 51.4 GFLOP/token;
    # 1x H100 SXM (989 TFLOPS) at MFU 0.35 ~ 4.1 h; 1x A100 (312) at MFU 0.40 ~ 11.4 h;
    # LoRA on 1x A100 (k=4, MFU x 0.8) ~ 9.5 h.
    s = setup()
    assert flops_per_token(s) == pytest.approx(51.4e9, rel=0.001)
    t = estimate_time(s, 989, 365, "h100_sxm5_80gb", 1, total_tokens=100e6, mfu=0.35)
    assert t.hours_single_gpu == pytest.approx(4.12, abs=0.02)
    a100 = estimate_time(s, 312, 230, "a100_sxm4_80gb", 1, total_tokens=100e6)
    assert a100.mfu == 0.40 and a100.hours_single_gpu == pytest.approx(11.44, abs=0.02)
    lora = estimate_time(
        setup(method="lora", lora_r=16, lora_targets=["q_proj", "v_proj"]),
        312,
        230,
        "a100",
        1,
        total_tokens=100e6,
    )
    assert lora.hours_single_gpu == pytest.approx(9.5, abs=0.1)


def test_checkpointing_adds_a_forward():
    assert flops_per_token(setup(gradient_checkpointing=True)) / flops_per_token(setup()) == pytest.approx(
        8 / 6, rel=0.01
    )


def test_zero3_over_pcie_small_batch_is_comm_bound():
    s = setup(strategy="zero3", world_size=8)
    pcie = estimate_time(s, 312, 20, "a100 pcie", 8, total_tokens=1e8)
    nvsw = estimate_time(s, 312, 230, "a100 sxm", 8, total_tokens=1e8)
    assert pcie.comm_bound and pcie.scaling_efficiency < 0.6
    assert nvsw.scaling_efficiency > 0.95 and not nvsw.comm_bound
    # 3(n-1)/n * Psi * 2 bytes per micro-batch
    assert pcie.comm_s == pytest.approx(3 * 7 / 8 * 8_030_261_248 * 2 / 20e9, rel=1e-6)
    assert pcie.hours_n_gpus == pytest.approx(pcie.hours_single_gpu / (8 * pcie.scaling_efficiency))


def test_ddp_lora_comm_is_negligible_and_steps_to_tokens():
    s = setup(method="lora", lora_r=16, lora_targets=["all-linear"], strategy="ddp", world_size=4)
    t = estimate_time(s, 165, 20, "rtx_4090", 4, max_steps=1000, grad_accum=4)
    assert t.grad_accum == 4 and t.tokens_per_step == 4 * 4 * 2048
    assert t.total_tokens == 1000 * 4 * 4 * 2048 and t.steps == pytest.approx(1000)
    assert t.scaling_efficiency > 0.99


def test_default_mfu_lookup():
    assert default_mfu("NVIDIA A100-SXM4-80GB") == 0.40
    assert default_mfu("h100_nvl_94gb") == 0.32
    assert default_mfu("NVIDIA GeForce RTX 4090") == 0.35
    assert default_mfu("a10g") == 0.35 and default_mfu("Tesla V100-SXM2-16GB") == 0.25
    assert default_mfu("mystery accelerator") is None
    t = estimate_time(setup(), 100, 10, "mystery accelerator", 1)
    assert t.mfu == 0.30 and any("no MFU default" in a for a in t.assumptions)
