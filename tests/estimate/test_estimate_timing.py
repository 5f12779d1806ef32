"""Time model (advisor/estimate/timing.py): FLOP counting, tokens from the data, GPU classes, communication.

FLOP formulas: hardware.md 3.1 (6N per token for full FT, 4N for a frozen base, +2N with checkpointing;
attention 12*L*h*s per token, halved for a causal mask). Bandwidth formulas: hardware.md 2.3.
"""

import pytest

from advisor.estimate import TrainingSetup, default_mfu, estimate_time, flops_per_token, resolve_model
from advisor.estimate import timing as T
from advisor.estimate.gpu_mfu import MFU_BY_CLASS
from advisor.estimate.timing import DataLength, gpu_class_of, tokens_per_micro_batch

LLAMA3_8B = "meta-llama/Meta-Llama-3-8B"
# Llama-3-8B: 8,030,261,248 parameters, untied 128256 x 4096 input embedding (config.json of the model)
EMBEDDING = 128256 * 4096
MATMUL = 8_030_261_248 - EMBEDDING
ATTN_FWD_PER_SEQ_TOKEN = 4 * 32 * 4096  # QK^T and AV: 2 * q_dim flops each per attended token, 32 layers


def setup(model: str = LLAMA3_8B, **kw) -> TrainingSetup:
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
    return TrainingSetup(model=resolve_model(model).count(), **fields)


def test_full_fine_tune_flops_are_six_per_matmul_parameter_plus_causal_attention():
    # the input embedding is a lookup (no matmul); causal attention computes half of the s x s scores
    want = 6 * MATMUL + 3 * ATTN_FWD_PER_SEQ_TOKEN * 2048 * 0.5
    assert flops_per_token(setup()) == pytest.approx(want, rel=1e-6)


def test_checkpointing_recomputes_the_forward():
    want = 8 * MATMUL + 4 * ATTN_FWD_PER_SEQ_TOKEN * 2048 * 0.5
    assert flops_per_token(setup(gradient_checkpointing=True)) == pytest.approx(want, rel=1e-6)


def test_lora_skips_weight_gradients_but_not_the_attention_backward():
    lora = setup(method="lora", lora_r=16, lora_targets=["q_proj", "v_proj"])
    adapters = 32 * 16 * ((4096 + 4096) + (4096 + 1024))  # r * (d_in + d_out) for q_proj and v_proj
    want = 4 * MATMUL + 3 * ATTN_FWD_PER_SEQ_TOKEN * 2048 * 0.5 + 6 * adapters
    assert flops_per_token(lora) == pytest.approx(want, rel=1e-6)


def test_max_length_is_a_cap_the_data_average_and_padding_decide_the_tokens():
    # no data information: every sample at the cap (an upper bound), and the basis says so
    real, computed, basis = tokens_per_micro_batch(4, 768, None)
    assert real == computed == 4 * 768 and "upper bound" in basis
    # PEFT's MetaMathQA run: 4,198,051 tokens in 20,000 samples (~210 each) under a 768 cap, batch 4:
    # padded to the longest of 4 ~ 2 * 210 * 4/5 = 336
    mean = 4_198_051 / 20_000
    real, computed, _ = tokens_per_micro_batch(4, 768, DataLength(tokens_per_sample=mean))
    assert real == pytest.approx(4 * mean)
    assert computed == pytest.approx(4 * 2 * mean * 4 / 5)
    # packing fills every row
    assert tokens_per_micro_batch(2, 4096, DataLength(tokens_per_sample=300, packed=True))[:2] == (8192, 8192)
    # the average never exceeds the cap
    assert tokens_per_micro_batch(1, 512, DataLength(tokens_per_sample=2000))[:2] == (512, 512)


def test_short_samples_lower_the_step_time_and_the_run_counts_real_tokens():
    s = setup(
        model="meta-llama/Llama-3.2-3B",
        method="lora",
        lora_r=32,
        lora_targets=["q_proj", "v_proj"],
        micro_batch=4,
        seq_len=768,
    )
    capped = estimate_time(s, 362, 20, "L40S", 1, max_steps=5000)
    data = DataLength(tokens_per_sample=210, source="test")
    short = estimate_time(s, 362, 20, "L40S", 1, max_steps=5000, data=data)
    assert short.step_time_s < 0.6 * capped.step_time_s  # 4 x 336 computed tokens instead of 4 x 768
    assert short.tokens_per_step == 4 * 210 and short.total_tokens == 5000 * 4 * 210
    assert short.computed_tokens_per_step > short.tokens_per_step  # padding is computed, not counted
    assert any("210 tokens per sample" in a for a in short.assumptions)
    # the fixed per-layer overhead weighs more on short micro-batches: lower utilisation of the GPU
    assert short.tokens_per_s < capped.tokens_per_s


@pytest.mark.parametrize(
    ("gpu", "cls"),
    [
        ("RTX-4090", "consumer"),
        ("NVIDIA GeForce RTX 3090", "consumer"),
        ("RTX-A6000", "workstation"),
        ("A100-SXM-80GB", "datacenter"),
        ("L40S", "datacenter"),
        ("H100-SXM", "hopper"),
        ("B200", "hopper"),
        ("Tesla V100-SXM2-16GB", "pre-ampere"),
        ("mystery accelerator", None),
    ],
)
def test_gpu_class(gpu, cls):
    assert gpu_class_of(gpu) == cls


def test_mfu_follows_the_class_and_the_method():
    assert default_mfu("A100-SXM-80GB") == MFU_BY_CLASS["datacenter"]
    assert default_mfu("RTX-4090") == MFU_BY_CLASS["consumer"]
    assert default_mfu("mystery accelerator") is None
    full = estimate_time(setup(), 312, 230, "A100-SXM-80GB", 1)
    lora = estimate_time(
        setup(method="lora", lora_r=16, lora_targets=["q_proj"]), 312, 230, "A100-SXM-80GB", 1
    )
    assert full.mfu == MFU_BY_CLASS["datacenter"]
    assert lora.mfu == pytest.approx(MFU_BY_CLASS["datacenter"] * T.MFU_LORA_FACTOR)
    compiled = estimate_time(setup(torch_compile=True), 312, 230, "A100-SXM-80GB", 1)
    assert compiled.mfu == pytest.approx(full.mfu * T.COMPILE_SPEEDUP)
    unknown = estimate_time(setup(), 100, 10, "mystery accelerator", 1)
    assert any("no MFU default" in a for a in unknown.assumptions)


def test_step_time_is_compute_plus_overhead_plus_optimizer():
    t = estimate_time(setup(), 312, 230, "A100-SXM-80GB", 1)
    achieved = 312e12 * MFU_BY_CLASS["datacenter"]
    overhead = 32 * 3 * T.LAYER_PASS_OVERHEAD_S
    # the matmuls stream the bf16 weights twice (forward, input-gradient backward), write the bf16 gradients
    weights = (2 * MATMUL * 2 + MATMUL * 2) / (2039e9 * T.ELEMENTWISE_HBM_EFFICIENCY)
    flops = 2048 * flops_per_token(setup()) / achieved
    assert t.compute_s == pytest.approx(flops + overhead + weights, rel=1e-6)
    # torch AdamW on bf16 parameters: read+write params (2+2) and both states (4+4), read the bf16 grads (2)
    assert t.optimizer_s == pytest.approx(
        8_030_261_248 * 14 / (2039e9 * T.ELEMENTWISE_HBM_EFFICIENCY), rel=0.01
    )
    assert t.step_time_s == pytest.approx(t.compute_s + t.optimizer_s)


def test_qlora_dequantisation_costs_most_on_short_micro_batches():
    def ratio(seq: int) -> float:
        kw = dict(lora_r=16, lora_targets=["q_proj", "v_proj"], seq_len=seq)
        q = estimate_time(setup(method="qlora", **kw), 165.2, 20, "RTX-4090", 1)
        lo = estimate_time(setup(method="lora", **kw), 165.2, 20, "RTX-4090", 1)
        return q.step_time_s / lo.step_time_s

    assert ratio(256) > ratio(8192) > 1.0


def test_zero3_over_pcie_small_batch_is_comm_bound():
    s = setup(strategy="zero3", world_size=8)
    pcie = estimate_time(s, 312, 20, "A100-PCIe-80GB", 8, total_tokens=1e8)
    nvsw = estimate_time(s, 312, 230, "A100-SXM-80GB", 8, total_tokens=1e8)
    assert pcie.comm_bound and pcie.scaling_efficiency < 0.6
    assert nvsw.scaling_efficiency > 0.95 and not nvsw.comm_bound
    # 2 all-gathers of the bf16 weights + a reduce-scatter of the bf16 gradients: 3(n-1)/n * Psi * 2 bytes
    assert pcie.comm_s == pytest.approx(3 * 7 / 8 * 8_030_261_248 * 2 / 20e9, rel=1e-6)
    assert pcie.hours_n_gpus == pytest.approx(pcie.hours_single_gpu / (8 * pcie.scaling_efficiency))


def test_sharded_runs_say_the_bus_bandwidth_below_which_collectives_show():
    # a multi-node fabric the source did not state is an assumption of the descriptor: the estimate says
    # where the step stops being compute-bound, so the user can hold it against the real network
    s = setup(strategy="zero3", world_size=32, seq_len=8192, gradient_checkpointing=True)
    fast = estimate_time(s, 312, 90, "A100-SXM-80GB", 32)
    (line,) = [a for a in fast.assumptions if a.startswith("zero3 collectives")]
    edge = float(line.rsplit("below ~", 1)[1].split(" GB/s")[0])
    assert fast.exposed_comm_s == 0 and "hidden" in line
    above = estimate_time(s, 312, edge * 1.05, "A100-SXM-80GB", 32)
    below = estimate_time(s, 312, edge * 0.9, "A100-SXM-80GB", 32)
    assert above.exposed_comm_s == 0 and below.exposed_comm_s > 0
    assert any(a.startswith("zero3 collectives") and "s not hidden" in a for a in below.assumptions)
    assert not any("collectives" in a for a in estimate_time(s, 312, 90, "A100-SXM-80GB", 1).assumptions)
    # DDP's derated small-bucket bandwidth makes its time no simple function of the fabric's: no edge said
    ddp = estimate_time(setup(strategy="ddp", world_size=8), 312, 230, "A100-SXM-80GB", 8)
    assert ddp.comm_s > 0 and not any("collectives" in a for a in ddp.assumptions)


def test_geforce_without_peer_to_peer_halves_the_bus_bandwidth():
    s = setup(method="lora", lora_r=8, lora_targets=["q_proj", "v_proj"], strategy="fsdp", world_size=2)
    t = estimate_time(s, 165.2, 20, "RTX-4090", 2)
    # FSDP all-gathers the frozen bf16 base twice per micro-batch even for LoRA
    base = 2 * 0.5 * 8_030_261_248 * 2
    assert t.comm_s == pytest.approx(base / (20e9 * T.NO_P2P_BUSBW_FACTOR), rel=0.01)
    assert any("peer-to-peer" in a for a in t.assumptions)


def test_ddp_lora_comm_is_negligible_and_steps_to_tokens():
    s = setup(method="lora", lora_r=16, lora_targets=["all-linear"], strategy="ddp", world_size=4)
    t = estimate_time(s, 165, 20, "RTX-4090", 4, max_steps=1000, grad_accum=4)
    assert t.grad_accum == 4 and t.tokens_per_step == 4 * 4 * 2048
    assert t.total_tokens == 1000 * 4 * 4 * 2048 and t.steps == pytest.approx(1000)
    assert t.scaling_efficiency > 0.99


def test_padding_free_batches_compute_only_their_tokens():
    data = DataLength(tokens_per_sample=210, padding_free=True)
    assert tokens_per_micro_batch(4, 768, data)[:2] == (840, 840)
