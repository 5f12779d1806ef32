"""advisor.facts.topology over built-in and hand-written machines."""

from __future__ import annotations

import math

import pytest

from advisor.facts.topology import (
    all_nvlinked,
    bf16_supported,
    fp8_supported,
    link_kind,
    network_busbw_gbs,
    nvlink_group_for,
    nvlink_groups,
    slowest_link_busbw_gbs,
    tf32_supported,
)
from advisor.sources.hardware import Machine, gpu_catalog, load_hardware, validate_machine


def machine(**kw) -> Machine:
    return validate_machine({"name": "t", **kw})


def test_4xh100_nvl_pairs():
    m = load_hardware("4xH100-NVL")
    assert nvlink_groups(m) == [frozenset({0, 1}), frozenset({2, 3})]
    assert link_kind(m, 0, 1) == "nvlink"
    assert link_kind(m, 2, 3) == "nvlink"
    assert link_kind(m, 1, 2) == "pcie"
    assert link_kind(m, 0, 3) == "pcie"
    assert all_nvlinked(m, [0, 1])
    assert all_nvlinked(m, [3, 2])
    assert not all_nvlinked(m, [1, 2])
    assert not all_nvlinked(m, [0, 1, 2, 3])
    assert nvlink_group_for(m, 2) == [0, 1]
    assert nvlink_group_for(m, 3) is None
    assert nvlink_group_for(m, 1) == [0]


def test_4xh100_nvl_busbw():
    m = load_hardware("4xH100-NVL")
    pair = slowest_link_busbw_gbs(m, [0, 1])
    cross = slowest_link_busbw_gbs(m, [1, 2])
    everything = slowest_link_busbw_gbs(m, range(4))
    assert pair == m.gpu.nvlink.busbw_gbs == 116  # NVIDIA/nccl#1161
    assert cross == everything == m.gpu.pcie.busbw_gbs == 28  # ring at its slowest hop
    assert slowest_link_busbw_gbs(m, [2]) == math.inf
    assert slowest_link_busbw_gbs(m, []) == math.inf


def test_2xh100_pcie_has_no_nvlink():
    m = load_hardware("2xH100-PCIe")
    assert nvlink_groups(m) == []
    assert link_kind(m, 0, 1) == "pcie"
    assert nvlink_group_for(m, 2) is None
    assert slowest_link_busbw_gbs(m, [0, 1]) == 28


def test_nvswitch_box():
    m = load_hardware("8xH100-SXM")
    assert nvlink_groups(m) == [frozenset(range(8))]
    assert all_nvlinked(m, range(8))
    assert nvlink_group_for(m, 8) == list(range(8))
    assert nvlink_group_for(m, 4) == [0, 1, 2, 3]
    assert nvlink_group_for(m, 9) is None
    assert slowest_link_busbw_gbs(m, range(8)) == 365
    a100 = load_hardware("8xA100-SXM-80GB")
    assert slowest_link_busbw_gbs(a100, range(8)) == 232  # stas00 / nccl-tests#175


def test_azure_a100_pairs():
    m = load_hardware("4xA100-80GB-NVL-pairs")
    assert slowest_link_busbw_gbs(m, [0, 1]) == 208  # nccl-tests#178 (NV12 pair)
    assert slowest_link_busbw_gbs(m, [0, 1, 2]) == 20  # ... and ~20 once the ring leaves it


def test_single_gpu_machine():
    m = load_hardware("1xH100")
    assert nvlink_groups(m) == []
    assert nvlink_group_for(m, 1) == [0]
    assert nvlink_group_for(m, 2) is None
    assert all_nvlinked(m, [0])
    assert link_kind(m, 0, 0) == "nvlink"


def test_multinode_indices_and_network():
    m = machine(gpus={"model": "H100", "count": 8}, nvlink="all", nodes=2, network="ib-400g")
    assert m.total_gpus == 16
    assert nvlink_groups(m) == [frozenset(range(8)), frozenset(range(8, 16))]
    assert link_kind(m, 0, 7) == "nvlink"
    assert link_kind(m, 7, 8) == "network"
    assert link_kind(m, 8, 15) == "nvlink"
    assert not all_nvlinked(m, [0, 8])
    # ib-400g without xN: one 400 Gb/s NIC per GPU -> 8 x 50 GB/s x 0.9 = 360 GB/s
    assert network_busbw_gbs(m) == pytest.approx(360)
    assert slowest_link_busbw_gbs(m, range(16)) == pytest.approx(360)
    assert slowest_link_busbw_gbs(m, [0, 8]) == pytest.approx(360)
    assert slowest_link_busbw_gbs(m, range(8)) == 365


def test_network_busbw_calibration():
    # nccl-tests#175: 2 nodes x 8 A100, 4x 200 Gb/s IB -> 86 GB/s measured
    a100 = machine(gpus={"model": "A100-80GB", "count": 8}, nvlink="all", nodes=2, network="ib-200gx4")
    assert network_busbw_gbs(a100) == pytest.approx(86, rel=0.1)
    # stas00: 4 nodes x 8 B200, 8x 400 Gb/s EFA -> 377-382 GB/s measured
    b200 = machine(gpus={"model": "B200", "count": 8}, nvlink="all", nodes=4, network="efa-400gx8")
    assert network_busbw_gbs(b200) == pytest.approx(380, rel=0.1)
    # 100 GbE TCP: <= ~10 GB/s (derived)
    eth = machine(gpus={"model": "L40S", "count": 4}, nodes=2, network="eth-100g")
    assert network_busbw_gbs(eth) == pytest.approx(10)
    assert slowest_link_busbw_gbs(eth, [0, 4]) == pytest.approx(10)
    assert network_busbw_gbs(load_hardware("1xT4")) is None


def test_index_checks():
    m = load_hardware("4xH100-NVL")
    with pytest.raises(ValueError):
        link_kind(m, 0, 4)
    with pytest.raises(ValueError):
        all_nvlinked(m, [-1, 0])
    with pytest.raises(ValueError):
        nvlink_group_for(m, 0)


@pytest.mark.parametrize(
    ("gpu_id", "bf16", "tf32", "fp8"),
    [
        ("V100-SXM2-32GB", False, False, False),
        ("T4", False, False, False),
        ("A100-SXM-80GB", True, True, False),
        ("A10G", True, True, False),
        ("RTX-3090", True, True, False),
        ("L4", True, True, True),
        ("RTX-4090", True, True, True),
        ("H100-NVL", True, True, True),
        ("B200", True, True, True),
        ("RTX-5090", True, True, True),
    ],
)
def test_precision_support(gpu_id, bf16, tf32, fp8):
    gpu = gpu_catalog()[gpu_id]
    assert bf16_supported(gpu) is bf16
    assert tf32_supported(gpu) is tf32
    assert fp8_supported(gpu) is fp8


def test_precision_support_accepts_a_machine():
    assert not bf16_supported(load_hardware("8xV100-32GB"))
    assert bf16_supported(load_hardware("1xA10G"))
