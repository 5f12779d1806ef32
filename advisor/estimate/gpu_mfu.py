"""The single-GPU full fine-tune MFU of a card: its class (consumer, workstation, pre-ampere, datacenter,
hopper), the class's measured value, and the card's own achievable-matmul fraction and compute/HBM
balance against the class reference (advisor/estimate/timing.py uses it)."""

from __future__ import annotations

from typing import Any

# ---- calibration: MFU by GPU class ---------------------------------------------------------------
# Model FLOPs utilisation per GPU class against the catalog's dense peak (FP32-accumulate rate on GeForce) for
# a full fine-tune on one GPU, with the FLOP count and the fixed per-layer overhead of this module. Each value
# is the median implied MFU (the MFU at which this model meets the measurement, divided by the method and
# compile factors below) over the published rows of that class in benchmarks/data, with the weight streaming
# and per-layer overhead below in place; no row sets a value alone.
# - datacenter (Ampere/Ada: A100, A10, A40, L4, L40S; AMD Instinct): 27 rows (1x A100: torchtune
#   README.md@1814feb1 GT19-GT27, Qwen README@2df8e8ac Q01-Q09; 1x L40S: huggingface/peft method_comparison
#   @5d602fdb P01-P04; 8x A100 FSDP: torchtune GT15-GT17, GT33, GT34): median 0.58 (llm-foundry FSDP on 8x
#   A100: 55-64 %, hardware.md 3.2). The Answer.AI fsdp_qlora rows (AQ01-AQ19) are kept out of every fit
#   and serve as a check.
# - hopper (compute capability 9.0+ datacenter: H100, H200, GH200, B200): torchtitan Llama 3.1 8B FSDP2 on
#   8x H100 (benchmarks/llama3_h100_202412_torchtitan.md@b5bcd76c, T24/T25): 0.41-0.43; llm-foundry's H100 vs
#   A100 MFU (40-46 % vs 55-64 %, hardware.md 3.2) gives 0.72 x 0.58 = 0.42: 0.42.
# - consumer (GeForce RTX 30/40/50): torchtune on 1x and 2x RTX 4090 (README.md@30b8519e GT10/GT12/GT14,
#   README.md@34d70b41 GT28-GT32): median 0.66 of the 165 TFLOPS FP32-accumulate peak.
# - workstation (RTX A6000, RTX 6000 Ada, A5000): the only rows (torchtune 8B on 1x A6000, GT11/GT13) imply
#   more than the dense peak (hardware.md 3.2 cautions them): the consumer value.
# - pre-ampere (V100, T4, TITAN RTX; fp16 AMP, no FlashAttention): HF docs BERT-large on 1x V100 (transformers
#   perf_train_gpu_one.mdx@0016acf7, GT04/GT05/GT07/GT09): median 0.42 of the 125 TFLOPS fp16 peak (0.29-0.74:
#   the small-batch rows lean on the fixed terms).
MFU_BY_CLASS: dict[str, float] = {
    "datacenter": 0.58,
    "hopper": 0.42,
    "consumer": 0.66,
    "workstation": 0.66,
    "pre-ampere": 0.42,
}
# The GPU each class value was measured on. A GPU whose achievable matmul rate (catalog mamf_bf16_tflops:
# stas00/ml-engineering compute/accelerator/README.md "Maximum Achievable Matmul FLOPS", a measured bf16
# GEMM sweep) is a smaller fraction of its peak than the reference's gets the class value scaled by the ratio
# of the two fractions: MI300X reaches 668 of 1307 TFLOPS (0.51) where the A100 reaches 271 of 312 (0.87), so
# an Instinct card trains at a much smaller fraction of its datasheet peak (issue 21 section 2); the A100 PCIe
# (0.81) a little below the SXM part. A card without a figure takes the first measured card of its vendor and
# architecture in catalog order (MI325X: the MI300X's CDNA3 die), else keeps the class value.
MAMF_REFERENCE: dict[str, str] = {"datacenter": "A100-SXM-80GB", "hopper": "H100-SXM"}
# Substring keys of GPU ids/names -> class for GPUs not in the catalog, longest first (the catalog's
# form_factor, vendor and compute capability decide otherwise).
_CLASS_KEYS: dict[str, str] = {
    "4090": "consumer",
    "3090": "consumer",
    "5090": "consumer",
    "4080": "consumer",
    "3080": "consumer",
    "a6000": "workstation",
    "6000ada": "workstation",
    "a5000": "workstation",
    "a4000": "workstation",
    "v100": "pre-ampere",
    "t4": "pre-ampere",
    "titanrtx": "pre-ampere",
    "a100": "datacenter",
    "h100": "hopper",
    "h200": "hopper",
    "gh200": "hopper",
    "h800": "hopper",
    "h20": "hopper",
    "b200": "hopper",
    "b100": "hopper",
    "l40s": "datacenter",
    "l40": "datacenter",
    "l4": "datacenter",
    "a10": "datacenter",
    "a40": "datacenter",
    "mi300": "datacenter",
    "mi250": "datacenter",
}


def _norm(name: str) -> str:
    return name.lower().replace(" ", "").replace("-", "").replace("_", "")


def catalog_gpu(name: str) -> Any:
    """The GPU catalog entry for an id or name, None when unknown (or the catalog is unavailable)."""
    try:
        from advisor.sources.hardware import resolve_gpu

        return resolve_gpu(name)
    except Exception:  # the time model must still answer from the name alone
        return None


def gpu_class_of(gpu: str) -> str | None:
    """consumer | workstation | pre-ampere | datacenter | hopper for a GPU id or name; None when unknown."""
    spec = catalog_gpu(gpu)
    if spec is not None:
        ff = str(getattr(spec, "form_factor", "") or "")
        cc = str(getattr(spec, "compute_capability", "") or "")
        if getattr(spec, "vendor", "nvidia") == "nvidia" and cc and int(cc.split(".")[0]) < 8:
            return "pre-ampere"
        if ff == "pcie_consumer":
            return "consumer"
        if ff == "pcie_workstation":
            return "workstation"
        if ff:
            major = int(cc.split(".")[0]) if cc else 0
            return "hopper" if getattr(spec, "vendor", "nvidia") == "nvidia" and major >= 9 else "datacenter"
    key = _norm(gpu)
    for k in sorted(_CLASS_KEYS, key=len, reverse=True):
        if k in key:
            return _CLASS_KEYS[k]
    return None


def _mamf_fraction(g: Any) -> float | None:
    """A card's achievable bf16 matmul rate (catalog mamf_bf16_tflops) as a fraction of its dense peak."""
    mamf, peak = getattr(g, "mamf_bf16_tflops", None), getattr(g, "bf16_dense_tflops", None)
    return float(mamf) / float(peak) if mamf and peak else None


def mamf_factor(gpu: str, cls: str | None) -> float:
    """This GPU's achievable-matmul fraction of peak over its class reference's (1.0 when one is unknown)."""
    ref_id = MAMF_REFERENCE.get(cls or "")
    spec, ref = catalog_gpu(gpu), catalog_gpu(ref_id) if ref_id else None
    if spec is None or ref is None or getattr(spec, "id", None) == ref.id:
        return 1.0
    mine, theirs = _mamf_fraction(spec), _mamf_fraction(ref)
    if (
        mine is None
    ):  # a sibling of the same vendor and architecture that was measured (MI325X: the MI300X die)
        mine = _sibling_fraction(spec, _mamf_fraction)
    return mine / theirs if mine and theirs else 1.0


def _flops_per_hbm_byte(g: Any) -> float | None:
    peak, hbm = getattr(g, "bf16_dense_tflops", None), getattr(g, "memory_bandwidth_gbs", None)
    return float(peak) * 1e12 / (float(hbm) * 1e9) if peak and hbm else None


def class_mfu(gpu: str, cls: str) -> tuple[float, str | None]:
    """The single-GPU full fine-tune MFU of this card from its class value, and the assumption line when it
    is not the class value itself.

    A step is matmuls at the card's achievable matmul rate plus memory-bound kernels (norms, activations,
    rotary, softmax, loss, casts) at its HBM bandwidth, so 1 / MFU = peak / MAMF + beta * peak / HBM, beta the
    memory-bound bytes per model FLOP. The two class references give nearly one beta: A100 SXM 80GB
    (MFU 0.58, MAMF 271.2 of 312 TFLOPS, 2039 GB/s) 3.75e-3 B/FLOP, H100 SXM (0.42, 794.5 of 989, 3350 GB/s)
    3.85e-3 B/FLOP: the H100's lower MFU is its higher FLOPs per HBM byte. A card of the reference's
    architecture (A100 40GB and PCIe, A800; H200, H800, H20, GH200, H100 PCIe/NVL) takes its own balance with
    the reference's beta: the H20, 148 TFLOPS on 4 TB/s, waits far less on memory-bound kernels than an H100.
    Other architectures keep the class value scaled by the achievable matmul fraction (mamf_factor): their
    caches differ (Ada's 96 MB L2 against the A100's 40 MB; the L40S rows, huggingface/peft method_comparison
    P01-P04, imply more than this balance would give its 419 FLOPs per byte).
    """
    base = MFU_BY_CLASS[cls]
    ref_id = MAMF_REFERENCE.get(cls)
    spec, ref = catalog_gpu(gpu), catalog_gpu(ref_id) if ref_id else None
    same_arch = (
        spec is not None
        and ref is not None
        and getattr(spec, "id", None) != ref.id
        and (getattr(spec, "vendor", None), getattr(spec, "architecture", None))
        == (ref.vendor, ref.architecture)
    )
    if same_arch:
        mine = _mamf_fraction(spec) or _sibling_fraction(spec, _mamf_fraction)
        theirs = _mamf_fraction(ref)
        r_mine, r_ref = _flops_per_hbm_byte(spec), _flops_per_hbm_byte(ref)
        if mine and theirs and r_mine and r_ref and 1.0 / base > 1.0 / theirs:
            beta = (1.0 / base - 1.0 / theirs) / r_ref
            value = 1.0 / (1.0 / mine + beta * r_mine)
            if abs(value / base - 1.0) <= 0.01:
                return base, None
            name = getattr(spec, "display_name", gpu)
            share = "less" if r_mine < r_ref else "more"
            return value, (
                f"MFU {value:.2f} for {name} (class {base:.2f} on the {ref_id}): {r_mine:.0f} peak FLOPs per "
                f"HBM byte against the reference's {r_ref:.0f}, so its memory-bound kernels take {share} of "
                f"the step (beta {beta * 1e3:.2f} B per 1000 FLOPs from the reference's class MFU)"
            )
    factor = mamf_factor(gpu, cls)
    if abs(factor - 1.0) <= 0.01:
        return base * factor, None
    return base * factor, (
        f"MFU x{factor:.2f}: {gpu} reaches {factor:.2f} of the {ref_id}'s achievable matmul fraction of peak "
        "(catalog mamf_bf16_tflops)"
    )


def _sibling_fraction(spec: Any, fraction: Any) -> float | None:
    try:
        from advisor.sources.gpu_catalog import gpu_catalog

        for g in gpu_catalog().values():
            same = (g.vendor, g.architecture) == (
                getattr(spec, "vendor", ""),
                getattr(spec, "architecture", ""),
            )
            if same and (f := fraction(g)) is not None:
                return float(f)
    except Exception:  # the time model must still answer without the catalog
        return None
    return None


def default_mfu(gpu: str) -> float | None:
    """MFU of a single-GPU full fine-tune for a GPU id or name; None if its class is unknown."""
    cls = gpu_class_of(gpu)
    return class_mfu(gpu, cls)[0] if cls else None
