"""The GPU catalog (advisor/data/gpus.yaml) and GPU name resolution."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from advisor.sources.hardware import gpu_catalog, normalize_gpu_name, resolve_gpu, suggest_gpu

REPO = Path(__file__).resolve().parents[2]

REQUIRED = [
    "H100-SXM",
    "H100-PCIe",
    "H100-NVL",
    "H200",
    "B200",
    "A100-SXM-40GB",
    "A100-SXM-80GB",
    "A100-PCIe-40GB",
    "A100-PCIe-80GB",
    "L40S",
    "L4",
    "A10G",
    "A10",
    "RTX-4090",
    "RTX-3090",
    "RTX-5090",
    "RTX-6000-Ada",
    "V100-SXM2-16GB",
    "V100-SXM2-32GB",
    "T4",
    "RTX-A6000",
]


def test_catalog_has_required_gpus():
    catalog = gpu_catalog()
    missing = [g for g in REQUIRED if g not in catalog]
    assert not missing


@pytest.mark.parametrize("gpu_id", REQUIRED)
def test_catalog_entries_are_sane(gpu_id):
    gpu = gpu_catalog()[gpu_id]
    assert gpu.id == gpu_id
    assert gpu.nvidia_smi_name, "every NVIDIA part lists its nvidia-smi name"
    assert 10 < gpu.usable_gib < 200
    assert gpu.memory_bandwidth_gbs > 200
    assert gpu.pcie.busbw_gbs < gpu.pcie.unidir_gbs
    assert gpu.pcie.busbw_source
    if gpu.nvidia_smi_memory_total_mib:
        # usable_gib = nvidia-smi memory.total / 1024
        assert gpu.usable_gib == pytest.approx(gpu.nvidia_smi_memory_total_mib / 1024, abs=0.1)
    if gpu.nvlink is not None:
        assert gpu.nvlink.busbw_gbs < gpu.nvlink.per_gpu_unidir_gbs
        assert gpu.nvlink.busbw_gbs > gpu.pcie.busbw_gbs
        assert gpu.nvlink.busbw_source
    # bf16 hardware from Ampere (sm_80) on; the ones without have no bf16 figure
    assert gpu.bf16_native == (gpu.cc >= (8, 0))
    assert (gpu.bf16_dense_tflops is None) == (not gpu.bf16_native)
    assert gpu.tf32_supported == (gpu.cc >= (8, 0))
    assert gpu.fp16_dense_tflops and gpu.fp16_dense_tflops > 0
    assert gpu.source


def test_published_figures():
    # Sources: NVIDIA datasheets (dense = sparse / 2), hardware.md section 1.1.
    c = gpu_catalog()
    assert c["H100-SXM"].bf16_dense_tflops == 989
    assert c["H100-SXM"].nvidia_smi_memory_total_mib == 81559
    assert c["H100-NVL"].usable_gib == pytest.approx(93.6)
    assert c["A100-SXM-80GB"].bf16_dense_tflops == 312
    assert c["A100-PCIe-80GB"].nvlink.busbw_gbs == 208  # nccl-tests#178
    assert c["H200"].nvlink.busbw_gbs == 365  # stas00: 367.6 ring
    assert c["B200"].nvlink.busbw_gbs == 740
    assert c["L40S"].nvlink is None
    assert c["RTX-4090"].bf16_dense_tflops == pytest.approx(165.2)  # FP32 accumulate
    assert c["RTX-4090"].p2p_supported is False
    assert c["V100-SXM2-32GB"].bf16_dense_tflops is None
    assert c["T4"].compute_capability == "7.5"
    assert c["RTX-5090"].cc == (12, 0)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # nvidia-smi names, with and without the vendor prefix
        ("A100-SXM4-80GB", "A100-SXM-80GB"),
        ("NVIDIA A100-SXM4-80GB", "A100-SXM-80GB"),
        ("NVIDIA A100-SXM-80GB", "A100-SXM-80GB"),
        ("Tesla V100-SXM2-32GB", "V100-SXM2-32GB"),
        ("V100-SXM2-16GB", "V100-SXM2-16GB"),
        ("NVIDIA H100 80GB HBM3", "H100-SXM"),
        ("NVIDIA H100 PCIe", "H100-PCIe"),
        ("NVIDIA H100 NVL", "H100-NVL"),
        ("NVIDIA H200", "H200"),
        ("NVIDIA B200", "B200"),
        ("NVIDIA A100-PCIE-40GB", "A100-PCIe-40GB"),
        ("NVIDIA A100 80GB PCIe", "A100-PCIe-80GB"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA A10G", "A10G"),
        ("NVIDIA A10", "A10"),
        ("NVIDIA GeForce RTX 4090", "RTX-4090"),
        ("NVIDIA GeForce RTX 3090", "RTX-3090"),
        ("NVIDIA GeForce RTX 5090", "RTX-5090"),
        ("NVIDIA RTX 6000 Ada Generation", "RTX-6000-Ada"),
        ("NVIDIA RTX A6000", "RTX-A6000"),
        ("Tesla T4", "T4"),
        ("T4", "T4"),
        # driver-era variants resolved by the nvidia-smi heuristics
        ("Tesla A100-SXM4-40GB", "A100-SXM-40GB"),
        ("NVIDIA H100 SXM5 80GB", "H100-SXM"),
        # short names users write, any case, spaces/dashes/underscores ignored
        ("H100-NVL", "H100-NVL"),
        ("h100 nvl", "H100-NVL"),
        ("H100_NVL", "H100-NVL"),
        ("A100-80GB", "A100-SXM-80GB"),
        ("a100-40gb", "A100-SXM-40GB"),
        ("H100", "H100-SXM"),
        ("h100-pcie", "H100-PCIe"),
        ("4090", "RTX-4090"),
        ("rtx4090", "RTX-4090"),
        ("RTX 3090", "RTX-3090"),
        ("A6000", "RTX-A6000"),
        ("l40s", "L40S"),
        ("v100-32gb", "V100-SXM2-32GB"),
        # the research draft's ids
        ("h100_nvl_94gb", "H100-NVL"),
        ("a100_sxm4_80gb", "A100-SXM-80GB"),
    ],
)
def test_resolve_gpu(name, expected):
    gpu = resolve_gpu(name)
    assert gpu is not None, name
    assert gpu.id == expected


@pytest.mark.parametrize(
    "name", ["", "   ", "H100-NVLX", "A1000", "MI400X", "NVIDIA GeForce GTX 1080", "potato"]
)
def test_resolve_gpu_unknown(name):
    assert resolve_gpu(name) is None


def test_typed_names_are_not_guessed():
    # a typo without the vendor prefix gets a did-you-mean, not a silent guess
    assert resolve_gpu("H100-SXM5-80GB-HBM3e") is None
    assert "H100-NVL" in suggest_gpu("H100-NVLX")
    assert suggest_gpu("A100-80G")[0].startswith("A100")


def test_normalize_gpu_name():
    assert normalize_gpu_name("NVIDIA GeForce RTX 4090") == "rtx4090"
    assert normalize_gpu_name("Tesla V100-SXM2-32GB") == "v100sxm232gb"
    assert normalize_gpu_name(" H100_NVL ") == "h100nvl"


def test_import_reads_no_data_file():
    # pre-commit cold start: the catalog is read lazily, on first use
    code = (
        "import advisor.sources.hardware as h, advisor.facts.topology, advisor.sources.nvidia_smi;"
        "print(h._catalog_and_index.cache_info().currsize, h.builtin_machines.cache_info().currsize)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "0"]
