"""The GPU catalog covers the cards people train on (issue 10, section 2): their device names resolve,
every entry carries memory, bf16 support and a sourced dense rate, published figures match the
datasheets, and descriptors and `hardware detect` accept them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.facts import topology
from advisor.sources.hardware import gpu_catalog, load_hardware, resolve_gpu
from advisor.sources.nvidia_smi import machine_from_smi
from advisor.sources.schema.hardware import validate_gpu

REPO = Path(__file__).resolve().parents[2]

# (name as the vendor tool prints it, memory.total MiB in the same public log or None, catalog id).
# The names are nvidia-smi's `name` column (torch.cuda.get_device_name() prints the same), or on ROCm
# torch's / rocm-smi's device name; each was seen verbatim in public logs and issue threads.
DEVICE_NAMES = [
    ("NVIDIA GeForce RTX 2060", 6144, "RTX-2060"),
    ("NVIDIA GeForce RTX 2060", 12288, "RTX-2060-12GB"),
    ("NVIDIA GeForce RTX 2060 SUPER", 8192, "RTX-2060-SUPER"),
    ("NVIDIA GeForce RTX 2070", 8192, "RTX-2070"),
    ("NVIDIA GeForce RTX 2070 SUPER", 8192, "RTX-2070-SUPER"),
    ("NVIDIA GeForce RTX 2080", 8192, "RTX-2080"),
    ("NVIDIA GeForce RTX 2080 SUPER", 8192, "RTX-2080-SUPER"),
    ("NVIDIA GeForce RTX 2080 Ti", 11264, "RTX-2080-Ti"),
    ("GeForce RTX 2080 Ti", 11264, "RTX-2080-Ti"),  # drivers before 470 had no "NVIDIA " prefix
    ("NVIDIA GeForce RTX 3060", 12288, "RTX-3060"),
    ("NVIDIA GeForce RTX 3060 Ti", 8192, "RTX-3060-Ti"),
    ("NVIDIA GeForce RTX 3070", 8192, "RTX-3070"),
    ("NVIDIA GeForce RTX 3070 Ti", 8192, "RTX-3070-Ti"),
    ("NVIDIA GeForce RTX 3080", 10240, "RTX-3080"),
    ("NVIDIA GeForce RTX 3080", 12288, "RTX-3080-12GB"),
    ("NVIDIA GeForce RTX 3080 Ti", 12288, "RTX-3080-Ti"),
    ("NVIDIA GeForce RTX 3090", 24576, "RTX-3090"),
    ("NVIDIA GeForce RTX 3090 Ti", 24564, "RTX-3090-Ti"),
    ("NVIDIA GeForce RTX 4060", 8188, "RTX-4060"),
    ("NVIDIA GeForce RTX 4060 Ti", 8188, "RTX-4060-Ti"),
    ("NVIDIA GeForce RTX 4060 Ti", 16380, "RTX-4060-Ti-16GB"),
    ("NVIDIA GeForce RTX 4070", 12282, "RTX-4070"),
    ("NVIDIA GeForce RTX 4070 SUPER", None, "RTX-4070-SUPER"),
    ("NVIDIA GeForce RTX 4070 Ti", None, "RTX-4070-Ti"),
    ("NVIDIA GeForce RTX 4070 Ti SUPER", 16376, "RTX-4070-Ti-SUPER"),
    ("NVIDIA GeForce RTX 4080", 16376, "RTX-4080"),
    ("NVIDIA GeForce RTX 4080 SUPER", 16376, "RTX-4080-SUPER"),
    ("NVIDIA GeForce RTX 4090", 24564, "RTX-4090"),
    ("NVIDIA GeForce RTX 4090 D", 24564, "RTX-4090-D"),
    ("NVIDIA GeForce RTX 5070", 12227, "RTX-5070"),
    ("NVIDIA GeForce RTX 5070 Ti", 16303, "RTX-5070-Ti"),
    ("NVIDIA GeForce RTX 5080", 16303, "RTX-5080"),
    ("NVIDIA GeForce RTX 5090", 32607, "RTX-5090"),
    ("NVIDIA TITAN RTX", 24576, "TITAN-RTX"),
    ("TITAN RTX", 24576, "TITAN-RTX"),
    ("NVIDIA TITAN V", 12066, "TITAN-V"),
    ("Quadro RTX 6000", 24576, "Quadro-RTX-6000"),
    ("Quadro RTX 8000", 49152, "Quadro-RTX-8000"),
    ("NVIDIA RTX A2000", None, "RTX-A2000"),
    ("NVIDIA RTX A2000 12GB", 12282, "RTX-A2000-12GB"),
    ("NVIDIA RTX A4000", 16376, "RTX-A4000"),
    ("NVIDIA RTX A4500", 20470, "RTX-A4500"),
    ("NVIDIA RTX A5000", 24564, "RTX-A5000"),
    ("NVIDIA RTX A6000", 49140, "RTX-A6000"),
    ("NVIDIA RTX 4000 Ada Generation", 20475, "RTX-4000-Ada"),
    ("NVIDIA RTX 4500 Ada Generation", 24570, "RTX-4500-Ada"),
    ("NVIDIA RTX 5000 Ada Generation", 32760, "RTX-5000-Ada"),
    ("NVIDIA RTX 6000 Ada Generation", 49140, "RTX-6000-Ada"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 97887, "RTX-PRO-6000"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", 97887, "RTX-PRO-6000"),
    ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", 97887, "RTX-PRO-6000-Max-Q"),
    ("Tesla T4", 15360, "T4"),
    ("Tesla V100-SXM2-16GB", 16384, "V100-SXM2-16GB"),
    ("Tesla V100-SXM2-32GB", 32768, "V100-SXM2-32GB"),
    ("Tesla V100-PCIE-16GB", 16160, "V100-PCIe-16GB"),
    ("Tesla V100-PCIE-32GB", 32510, "V100-PCIe-32GB"),
    ("Tesla V100S-PCIE-32GB", 32768, "V100S-PCIe-32GB"),
    ("NVIDIA A10", 23028, "A10"),
    ("NVIDIA A10G", 23028, "A10G"),
    ("NVIDIA A16", 15356, "A16"),
    ("NVIDIA A30", 24576, "A30"),
    ("NVIDIA A40", 46068, "A40"),
    ("NVIDIA A100-SXM4-40GB", 40960, "A100-SXM-40GB"),
    ("NVIDIA A100-SXM4-80GB", 81920, "A100-SXM-80GB"),
    ("NVIDIA A100-PCIE-40GB", 40960, "A100-PCIe-40GB"),
    ("NVIDIA A100 80GB PCIe", 81920, "A100-PCIe-80GB"),
    ("NVIDIA A800-SXM4-80GB", 81920, "A800-SXM-80GB"),
    ("NVIDIA A800 80GB PCIe", None, "A800-PCIe-80GB"),
    ("NVIDIA L4", 23034, "L4"),
    ("NVIDIA L40", 46068, "L40"),
    ("NVIDIA L40S", 46068, "L40S"),
    ("NVIDIA H100 80GB HBM3", 81559, "H100-SXM"),
    ("NVIDIA H100 PCIe", 81559, "H100-PCIe"),
    ("NVIDIA H100 NVL", 95830, "H100-NVL"),
    ("NVIDIA H20", 97871, "H20"),
    ("NVIDIA H800", 81559, "H800"),
    ("NVIDIA H200", 143771, "H200"),
    ("NVIDIA H200 NVL", 143771, "H200-NVL"),
    ("NVIDIA GH200 480GB", 97871, "GH200"),
    ("NVIDIA GH200 144G HBM3e", 146831, "GH200-144GB"),
    ("NVIDIA B100", None, "B100"),
    ("NVIDIA B200", 183359, "B200"),
    ("NVIDIA GB200", 189471, "GB200"),
    ("AMD Instinct MI210", None, "MI210"),
    ("AMD Instinct MI250", None, "MI250"),
    ("AMD Instinct MI250X", None, "MI250X"),
    ("AMD Instinct MI250X / MI250", None, "MI250X"),  # PCI id 740C is shared: the X is the default
    ("AMD Instinct MI300X", None, "MI300X"),
    ("AMD Instinct MI300X OAM", None, "MI300X"),  # amd-smi / rocm-smi card series
    ("AMD Instinct MI300X VF", None, "MI300X"),  # SR-IOV cloud VMs
    ("AMD Instinct MI325X", None, "MI325X"),
]

NEW_IDS = sorted({gpu_id for _, _, gpu_id in DEVICE_NAMES})


@pytest.mark.parametrize(("name", "mib", "gpu_id"), DEVICE_NAMES)
def test_device_name_resolves_to_its_entry(name, mib, gpu_id):
    spec = resolve_gpu(name, memory_mib=mib)
    assert spec is not None, name
    assert spec.id == gpu_id
    if mib is not None and spec.memory_total_mib is not None:
        assert spec.memory_total_mib == pytest.approx(mib, rel=0.01)


def test_names_shared_by_memory_variants_default_to_the_first():
    # nvidia-smi prints one name for both cards; without memory.total the common one is meant
    assert resolve_gpu("NVIDIA GeForce RTX 3080").id == "RTX-3080"
    assert resolve_gpu("NVIDIA GeForce RTX 4060 Ti").id == "RTX-4060-Ti"
    assert resolve_gpu("NVIDIA GeForce RTX 4060 Ti", memory_mib=16380).id == "RTX-4060-Ti-16GB"
    # memory never moves a name to a card that prints a different name
    assert resolve_gpu("NVIDIA GeForce RTX 4090", memory_mib=8188).id == "RTX-4090"


@pytest.mark.parametrize(
    ("typed", "gpu_id"),
    [
        ("A5000", "RTX-A5000"),
        ("rtx a5000", "RTX-A5000"),
        ("RTX-3080-12GB", "RTX-3080-12GB"),
        ("4080", "RTX-4080"),
        ("titan rtx", "TITAN-RTX"),
        ("MI300X", "MI300X"),
        ("mi250x", "MI250X"),
        ("h20", "H20"),
        ("RTX 6000 Ada", "RTX-6000-Ada"),
        ("gh200", "GH200"),
    ],
)
def test_short_names_users_type(typed, gpu_id):
    assert resolve_gpu(typed).id == gpu_id


@pytest.mark.parametrize("gpu_id", sorted(gpu_catalog()))
def test_every_entry_has_memory_bf16_and_a_sourced_dense_rate(gpu_id):
    gpu = gpu_catalog()[gpu_id]
    assert gpu.device_names, "a vendor tool's name to look the card up by"
    assert gpu.usable_gib >= 5.5
    if gpu.memory_total_mib is not None:  # usable_gib = memory.total / 1024
        assert gpu.usable_gib == pytest.approx(gpu.memory_total_mib / 1024, abs=0.1)
    assert isinstance(gpu.bf16_native, bool)
    dense = gpu.bf16_dense_tflops if gpu.bf16_native else gpu.fp16_dense_tflops
    assert dense is not None and dense > 0
    assert (gpu.bf16_dense_tflops is None) == (not gpu.bf16_native)
    assert gpu.fp16_dense_tflops is not None and gpu.fp16_dense_tflops >= (gpu.bf16_dense_tflops or 0)
    if gpu.tf32_dense_tflops is not None:  # TF32 runs at half the 16-bit tensor rate on every part here
        assert gpu.tf32_dense_tflops == pytest.approx(gpu.fp16_dense_tflops / 2, rel=0.02)
    if gpu.fp8_dense_tflops is not None:
        assert gpu.fp8_dense_tflops == pytest.approx(2 * gpu.fp16_dense_tflops, rel=0.02)
    assert gpu.memory_bandwidth_gbs > 150
    assert gpu.source and all(s.strip() for s in gpu.source)
    link = gpu.peer_link
    if link is not None:
        assert gpu.pcie.busbw_gbs < link.busbw_gbs < link.per_gpu_unidir_gbs
        assert link.busbw_source
    if gpu.vendor == "nvidia":
        # NVIDIA: bf16 and TF32 from Ampere (sm_80), FP8 from Ada/Hopper (sm_89)
        assert gpu.bf16_native == (gpu.cc >= (8, 0))
        assert gpu.tf32_supported == (gpu.cc >= (8, 0))
        assert (gpu.fp8_dense_tflops is not None) == (gpu.cc >= (8, 9))
        assert gpu.infinity_fabric is None and gpu.nvidia_smi_name
    else:
        assert gpu.vendor == "amd" and gpu.nvlink is None and gpu.gfx_target and gpu.rocm_smi_name


def test_published_figures():
    c = gpu_catalog()
    # NVIDIA RTX A5000 datasheet: tensor 222.2 TFLOPS with sparsity, 768 GB/s, 24 GB
    assert c["RTX-A5000"].bf16_dense_tflops == pytest.approx(111.1)
    assert c["RTX-A5000"].memory_bandwidth_gbs == 768
    # GA102 whitepaper Appendix A: RTX 3080 119 TFLOPS FP16 accumulate, 59.5 FP32 accumulate
    assert c["RTX-3080"].bf16_dense_tflops == pytest.approx(59.5)
    # Ada whitepaper appendix: RTX 4080 194.9 FP16 accumulate, 97.5 FP32 accumulate
    assert c["RTX-4080"].bf16_dense_tflops == pytest.approx(97.5)
    # Turing whitepaper Appendix A: RTX 2080 Ti (reference) 107.6 FP16 acc, 53.8 FP32 acc; no bf16
    assert c["RTX-2080-Ti"].fp16_dense_tflops == pytest.approx(53.8)
    assert c["RTX-2080-Ti"].bf16_dense_tflops is None
    # TITAN RTX product page: 130 tensor TFLOPS (full-rate FP32 accumulate, unlike GeForce)
    assert c["TITAN-RTX"].fp16_dense_tflops == pytest.approx(130.5)
    # A40 datasheet: BF16 149.7 | 299.4 sparse; A30 datasheet: BF16 165 | 330, 933 GB/s
    assert c["A40"].bf16_dense_tflops == pytest.approx(149.7)
    assert c["A30"].bf16_dense_tflops == 165 and c["A30"].memory_bandwidth_gbs == 933
    # L40 datasheet: BF16 181.05 | 362.1 sparse, half the L40S's 362 dense
    assert c["L40"].bf16_dense_tflops == pytest.approx(c["L40S"].bf16_dense_tflops / 2, rel=0.01)
    # H200 NVL (nvidia.com/h200 table): BF16 1671 TFLOPS with sparsity
    assert c["H200-NVL"].bf16_dense_tflops == pytest.approx(1671 / 2)
    # GB200 NVL72 datasheet, per GPU: BF16 5 PFLOPS with sparsity, 186 GB HBM3e
    assert c["GB200"].bf16_dense_tflops == 2500
    # AMD: MI300X BF16 1307.4 dense, FP8 2614.9; MI250X 383 per package = 191.5 per GCD device
    assert c["MI300X"].bf16_dense_tflops == pytest.approx(1307.4)
    assert c["MI300X"].fp8_dense_tflops == pytest.approx(2614.9)
    assert c["MI250X"].bf16_dense_tflops == pytest.approx(383 / 2)
    # memory: nvidia-smi 'NVIDIA GH200 480GB, 97871 MiB' (96 GB HBM3), rocm-smi MI300X 205822885888 B
    assert c["GH200"].usable_gib == pytest.approx(97871 / 1024, abs=0.1)
    assert c["MI300X"].usable_gib == pytest.approx(205822885888 / 2**30, abs=0.1)


def test_which_cards_have_a_peer_link():
    c = gpu_catalog()
    bridged = ["RTX-2080-Ti", "TITAN-RTX", "Quadro-RTX-8000", "RTX-3090-Ti", "RTX-A5000", "A40", "A30"]
    assert all(c[g].nvlink is not None for g in bridged)
    no_link = ["RTX-3080", "RTX-4080", "RTX-5080", "RTX-A4000", "RTX-4000-Ada", "L40", "TITAN-V"]
    assert all(c[g].peer_link is None for g in no_link)
    assert c["H800"].nvlink.per_gpu_unidir_gbs < c["H100-SXM"].nvlink.per_gpu_unidir_gbs  # export cut
    assert c["MI300X"].infinity_fabric is not None and c["MI300X"].nvlink is None


def test_capabilities_come_from_the_catalog_not_the_rocm_capability():
    c = gpu_catalog()
    # torch on ROCm reports gfx90a as capability 9.0; CDNA2 still has no TF32 and no FP8
    mi250x = c["MI250X"]
    assert mi250x.cc == (9, 0)
    assert topology.bf16_supported(mi250x) and not topology.tf32_supported(mi250x)
    assert not topology.fp8_supported(mi250x)
    assert topology.fp8_supported(c["MI300X"]) and topology.tf32_supported(c["MI300X"])
    assert not topology.bf16_supported(c["TITAN-RTX"]) and topology.bf16_supported(c["RTX-3060"])


@pytest.mark.parametrize("gpu_id", NEW_IDS)
def test_descriptor_naming_each_card_loads(gpu_id, tmp_path):
    spec = gpu_catalog()[gpu_id]
    nvlink = "[[0, 1]]" if spec.peer_link is not None else "[]"
    shared = sum(spec.device_names[0] in g.device_names for g in gpu_catalog().values()) > 1
    # a name several cards print (RTX 3080 10/12 GB) needs the memory to say which one
    memory = f", memory_gib: {spec.usable_gib}" if shared else ""
    for i, model in enumerate((spec.id, spec.device_names[0])):
        path = tmp_path / f"box{i}.yaml"
        path.write_text(f"gpus: {{model: {model!r}, count: 2{memory}}}\nnvlink: {nvlink}\ncpu_cores: 16\n")
        machine = load_hardware(path)
        assert machine.gpu.id == gpu_id
        assert machine.memory_gib == spec.usable_gib


def test_nvlink_on_a_card_without_a_peer_link_is_an_error(tmp_path):
    from advisor.sources.hardware import HardwareError

    path = tmp_path / "box.yaml"
    path.write_text("gpus: {model: RTX-4080, count: 2}\nnvlink: [[0, 1]]\n")
    with pytest.raises(HardwareError) as err:
        load_hardware(path)
    assert (err.value.file, err.value.line) == (str(path), 2)


def test_amd_entries_refuse_nvidia_fields():
    pcie = {"generation": 5, "unidir_gbs": 63, "busbw_gbs": 28, "busbw_measured": True, "busbw_source": "-"}
    entry = {
        "id": "X",
        "display_name": "X",
        "vendor": "amd",
        "architecture": "cdna3",
        "compute_capability": "9.4",
        "gfx_target": "gfx942",
        "rocm_smi_name": ["AMD Instinct X"],
        "usable_gib": 1,
        "memory_bandwidth_gbs": 1,
        "tf32_supported": True,
        "bf16_native": True,
        "pcie": pcie,
    }
    validate_gpu(entry)
    with pytest.raises(ValueError):
        validate_gpu({**entry, "nvidia_smi_name": ["NVIDIA X"]})
    with pytest.raises(ValueError):
        validate_gpu({**entry, "vendor": "nvidia"})  # rocm names on an NVIDIA entry


def test_detect_picks_the_memory_variant():
    machine = machine_from_smi("NVIDIA GeForce RTX 3080, 12288 MiB\nNVIDIA GeForce RTX 3080, 12288 MiB\n")
    assert machine.gpu.id == "RTX-3080-12GB" and machine.gpus.count == 2
    assert machine.gpus.memory_gib is None  # the catalog's own memory, no override needed
    single = machine_from_smi("name, memory.total [MiB]\nNVIDIA RTX A5000, 24564 MiB\n")
    assert single.gpu.id == "RTX-A5000" and single.memory_gib == 24.0


def test_mi300x_subsets_get_the_measured_mesh_bandwidth():
    box = load_hardware("8xMI300X")
    # stas00 network/README.md: 2 of 8 MI300X all-reduce 47.7 GB/s busbw, all 8 312.9
    assert topology.slowest_link_busbw_gbs(box, [0, 1]) == pytest.approx(47.7)
    assert topology.slowest_link_busbw_gbs(box, range(8)) == pytest.approx(313)
    assert 47.7 < topology.slowest_link_busbw_gbs(box, range(4)) < 313
    assert topology.link_kind(box, 0, 7) == "nvlink"
    pairs = load_hardware("4xRTX-A6000-NVL-pairs")
    assert topology.slowest_link_busbw_gbs(pairs, [0, 1]) == 45
    assert topology.slowest_link_busbw_gbs(pairs, [0, 1, 2]) == pairs.gpu.pcie.busbw_gbs
    assert math.isinf(topology.slowest_link_busbw_gbs(pairs, [3]))


def test_check_with_an_rtx_a5000_descriptor_runs(tmp_path, monkeypatch):
    # issue 10: `NVIDIA RTX A5000` was "unknown GPU model" (exit 2)
    hw = tmp_path / "a5000.yaml"
    hw.write_text("name: ws\ngpus: {model: NVIDIA RTX A5000, count: 2}\nnvlink: [[0, 1]]\ncpu_cores: 32\n")
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(REPO)
    result = CliRunner().invoke(app, ["check", "fixtures/example", "-H", str(hw), "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    runs = json.loads(result.output)["runs"]
    assert runs and all(run["gpu_memory_gib"] == 24.0 for run in runs)
    unknown = CliRunner().invoke(app, ["check", "fixtures/example", "-H", "NVIDIA RTX A9999"])
    assert unknown.exit_code == 2


def test_cached_catalog_decodes_entries_on_use_and_survives_a_corrupt_entry():
    from advisor.core.datacodec import DataError, encode
    from advisor.sources.hardware import _build_catalog_and_index, _catalog_from_data

    catalog, index = _build_catalog_and_index()
    data = encode((catalog, index))
    data[0]["RTX-A5000"]["usable_gib"] = "lots"  # a tampered or corrupt cache entry
    lazy, lazy_index = _catalog_from_data(data)
    assert lazy_index == index and list(lazy) == list(catalog)
    assert lazy["H100-NVL"] == catalog["H100-NVL"]
    assert lazy["RTX-A5000"] == catalog["RTX-A5000"]  # re-read from the YAML, not the bad entry
    with pytest.raises(DataError):
        _catalog_from_data([data[0], {**index, "potato": "NO-SUCH-GPU"}])
    with pytest.raises(DataError):
        _catalog_from_data({"not": "a pair"})


def test_gb200_tray_from_its_public_topology(corpus):
    # NVIDIA/k8s-test-infra#371: 4x GB200, NV18 between every pair, CPU affinity 0-143
    topo = (corpus / "topo" / "NVIDIA__k8s-test-infra__issues__371_gb200x4_nv18.txt").read_text()
    machine = machine_from_smi("NVIDIA GB200, 189471 MiB\n" * 4, topo)
    builtin = load_hardware("4xGB200")
    assert machine.gpu.id == builtin.gpu.id == "GB200"
    assert machine.nvlink == builtin.nvlink == "all"
    assert machine.cpu_cores == builtin.cpu_cores == 144
    assert machine.gpus.memory_gib is None


def test_hardware_list_names_the_amd_fabric():
    listed = CliRunner().invoke(app, ["hardware", "list"])
    assert listed.exit_code == 0
    rows = {line.split()[0]: line for line in listed.stdout.splitlines() if line.strip()}
    assert "NVSwitch" not in rows["8xMI300X"] and "xGMI" in rows["8xMI300X"]
    assert "NVSwitch" in rows["8xH20"]


def test_modded_memory_is_an_override_not_another_card():
    # '8 x NVIDIA GeForce RTX 4090 D, 49140 MiB each' (public log): 48 GB boards the catalog has no entry for
    machine = machine_from_smi("NVIDIA GeForce RTX 4090 D, 49140 MiB\n" * 8)
    assert machine.gpu.id == "RTX-4090-D" and machine.gpus.memory_gib == 48.0
    assert machine.memory_gib == 48.0


def test_form_factor_sorts_consumer_and_workstation_cards():
    # the time model picks its MFU class from form_factor (advisor/estimate/timing.py gpu_class_of)
    import re

    for gpu in gpu_catalog().values():
        if re.fullmatch(r"RTX-A\d+.*|RTX-\d+-Ada|RTX-PRO-.*|Quadro-.*", gpu.id):
            assert gpu.form_factor == "pcie_workstation", gpu.id
        elif re.fullmatch(r"RTX-\d{4}.*|TITAN-.*", gpu.id):
            assert gpu.form_factor == "pcie_consumer", gpu.id


def test_only_known_memory_variants_share_a_device_name():
    # a name two entries list is allowed only for cards nvidia-smi really cannot tell apart by name
    from collections import Counter

    from advisor.sources.hardware import normalize_gpu_name

    keys_per_gpu = [{normalize_gpu_name(n) for n in g.device_names} for g in gpu_catalog().values()]
    counts = Counter(k for keys in keys_per_gpu for k in keys)
    assert {k for k, c in counts.items() if c > 1} == {"rtx2060", "rtx3080", "rtx4060ti"}


@pytest.mark.parametrize(
    ("machine", "flagged_lines"),
    [
        ("8xMI300X", [4]),  # ROCm: TrainingArguments refuses tf32=True; bf16 is fine
        ("8xH100-SXM", []),
        ("2xRTX4090", []),
        ("1xT4", [3, 4]),  # Turing: neither bf16 nor tf32
    ],
)
def test_bf16_and_tf32_requests_judged_per_card(machine, flagged_lines, tmp_path, monkeypatch):
    args = "output_dir: out\nper_device_train_batch_size: 2\nbf16: true\ntf32: true\n"
    (tmp_path / "args.yaml").write_text(args)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["check", ".", "-H", machine, "--format", "json"])
    found = json.loads(result.output)["findings"]
    lines = sorted(f["line"] for f in found if f["rule"] == "GA501" and f["file"] == "args.yaml")
    assert lines == flagged_lines


def test_split_placement_on_an_amd_mesh_reports_the_fabric_bandwidth(tmp_path, monkeypatch):
    # GA301 quotes the peer-link bus bandwidth; on AMD it comes from the Infinity Fabric record
    launch = "#!/bin/bash\nCUDA_VISIBLE_DEVICES=0,2 torchrun --nproc_per_node 2 train.py --output_dir out\n"
    (tmp_path / "launch.sh").write_text(launch)
    (tmp_path / "train.py").write_text("print(1)\n")
    hardware = "gpus: {model: MI210, count: 4}\nnvlink: [[0, 1], [2, 3]]\ncpu_cores: 32\n"
    (tmp_path / "hw.yaml").write_text(hardware)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["check", ".", "-H", "hw.yaml", "--format", "json"])
    ga301 = [f for f in json.loads(result.output)["findings"] if f["rule"] == "GA301"]
    assert [(f["file"], f["line"], f["column"]) for f in ga301] == [("launch.sh", 2, 22)]
    assert "None" not in ga301[0]["message"]
