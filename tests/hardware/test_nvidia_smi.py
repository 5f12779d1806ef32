"""`nvidia-smi topo -m` / `--query-gpu` parsing, machine_from_smi and detect()."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.facts.topology import all_nvlinked, link_kind, nvlink_group_for
from advisor.sources.hardware import HardwareError, load_hardware
from advisor.sources.nvidia_smi import (
    detect,
    machine_from_smi,
    parse_cpulist,
    parse_query_gpu,
    parse_topo,
)

TOPO = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "topo"

# file-name fragment -> (GPU count, NVLink groups, descriptor value)
CORPUS_EXPECTED = {
    "1264_hgx_h100x8_nv18_nics_tabs": (8, [set(range(8))], "all"),
    "L385-393_h100x8_nv18": (8, [set(range(8))], "all"),
    "L757-765_h100x8_nv18_ht": (8, [set(range(8))], "all"),
    "L370-378_a100x8_nv12": (8, [set(range(8))], "all"),
    "1617_h100x4_nv6_nics": (4, [{0, 1, 2, 3}], "all"),
    "371_gb200x4_nv18": (4, [{0, 1, 2, 3}], "all"),
    "1439_pcie8_pix_phb_sys": (8, [], []),
    "topo_rtx6000ada_x4_pcie": (4, [], []),
    "L333-335_dual_nv2": (2, [{0, 1}], [[0, 1]]),
    "L340-342_dual_phb": (2, [], []),
    "1229_rtx5090x2_phb_tabs": (2, [], []),
}
NOT_A_MATRIX = ("p2pBandwidthLatencyTest", "L348-354_legend")


def _corpus_files() -> list[Path]:
    if not TOPO.is_dir():
        return []
    return sorted(TOPO.glob("*.txt"))


def _corpus(fragment: str) -> str:
    if not TOPO.is_dir():
        pytest.skip("../shared/corpus/topo is not here")
    matches = [p for p in TOPO.glob("*.txt") if fragment in p.name]
    if not matches:
        pytest.skip(f"no corpus file matching {fragment}")
    return matches[0].read_text()


def test_every_corpus_topo_file_is_handled():
    files = _corpus_files()
    if not files:
        pytest.skip("../shared/corpus/topo is not here")
    for path in files:
        text = path.read_text()
        if any(f in path.name for f in NOT_A_MATRIX):
            with pytest.raises(HardwareError, match="no `nvidia-smi topo -m` GPU matrix"):
                parse_topo(text, str(path))
            continue
        topo = parse_topo(text, str(path))
        assert topo.gpu_count >= 2, path.name
        for i in range(topo.gpu_count):
            assert topo.links[i][i] == "X"
            for j in range(topo.gpu_count):
                assert topo.links[i][j] == topo.links[j][i], path.name
        expected = [v for k, v in CORPUS_EXPECTED.items() if k in path.name]
        assert expected, f"add {path.name} to CORPUS_EXPECTED"


@pytest.mark.parametrize("fragment", sorted(CORPUS_EXPECTED))
def test_corpus_topo(fragment):
    count, groups, descriptor = CORPUS_EXPECTED[fragment]
    topo = parse_topo(_corpus(fragment))
    assert topo.gpu_count == count
    assert [set(g) for g in topo.nvlink_groups()] == groups
    assert topo.nvlink_descriptor() == descriptor


def test_hgx_h100_tabs_details():
    topo = parse_topo(_corpus("1264_hgx_h100x8_nv18_nics_tabs"))
    assert topo.links[0][1] == "NV18" and topo.nvlinks(3, 7) == 18
    assert len(topo.nics) == 10
    assert topo.cpu_affinity[0] == "0-55,112-167"
    assert topo.cpus(7) == frozenset(range(56, 112)) | frozenset(range(168, 224))
    assert [topo.numa_node(i) for i in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert len(topo.all_cpus()) == 224


def test_h100x4_nv6_numa_per_gpu():
    topo = parse_topo(_corpus("1617_h100x4_nv6_nics"))
    assert [topo.numa_node(i) for i in range(4)] == [3, 1, 7, 5]
    assert topo.cpus(0) == {6, 14, 22, 30}
    assert topo.nics == ("NIC0", "NIC1", "NIC2", "NIC3")


def test_pcie_box_links_and_legend():
    topo = parse_topo(_corpus("topo_rtx6000ada_x4_pcie"))
    assert topo.links[0][1] == "NODE" and topo.links[0][2] == "SYS"
    assert topo.nic_names == {"NIC0": "mlx5_0", "NIC1": "mlx5_1", "NIC2": "mlx5_2", "NIC3": "mlx5_3"}
    assert topo.legend["PIX"].startswith("Connection traversing at most a single PCIe bridge")
    pix = parse_topo(_corpus("1439_pcie8_pix_phb_sys"))
    assert pix.links[0][1] == "PIX" and pix.links[0][2] == "PHB" and pix.links[0][4] == "SYS"


def test_dual_gpu_numa_na():
    topo = parse_topo(_corpus("L333-335_dual_nv2"))
    assert topo.numa_affinity == (None, None)
    assert topo.cpus(1) == frozenset(range(24))


def test_machine_from_corpus_hgx():
    query = "name, memory.total [MiB]\n" + "NVIDIA H100 80GB HBM3, 81559 MiB\n" * 8
    m = machine_from_smi(query, _corpus("1264_hgx_h100x8_nv18_nics_tabs"))
    assert m.gpu.id == "H100-SXM" and m.gpus.count == 8
    assert m.nvlink == "all"
    assert m.cpu_cores == 224  # from the CPU affinity column
    assert m.gpus.memory_gib is None  # matches the catalog


def test_machine_from_corpus_pcie8():
    m = machine_from_smi("NVIDIA A100 80GB PCIe, 81920\n" * 8, _corpus("1439_pcie8_pix_phb_sys"), 56, 512)
    assert m.nvlink == [] and m.cpu_cores == 56 and m.ram_gib == 512


# ---------------------------------------------------------------------------------------------
# Synthetic matrices (shapes described in config-formats.md section 5, not stored as corpus files)


def render_topo(
    links: list[list[str]],
    cpu: list[str] | None = None,
    numa: list[str] | None = None,
    *,
    tabs: bool = True,
    ansi: bool = False,
    nics: int = 0,
) -> str:
    n = len(links)
    cols = [f"GPU{i}" for i in range(n)] + [f"NIC{k}" for k in range(nics)]
    extra = (["CPU Affinity"] if cpu else []) + (["NUMA Affinity", "GPU NUMA ID"] if numa else [])
    sep = "\t" if tabs else "    "
    header = sep + sep.join(cols + extra)
    if ansi:
        header = "\x1b[4m" + header + "\x1b[0m"
    out = [header]
    for i in range(n):
        nic_cells = ["PIX" if k == i else "SYS" for k in range(nics)]
        cells = [" X " if i == j else links[i][j] for j in range(n)] + nic_cells
        tail = ([cpu[i]] if cpu else []) + ([numa[i], "", "N/A"] if numa else [])
        out.append(f"GPU{i}" + sep + sep.join(cells + tail))
    for k in range(nics):
        gpu_cells = ["PIX" if k == i else "SYS" for i in range(n)]
        cells = gpu_cells + [" X " if k == m else "SYS" for m in range(nics)]
        out.append(f"NIC{k}" + sep + sep.join(cells))
    out += ["", "Legend:", "", "  X    = Self", "  NV#  = Connection traversing a bonded set of # NVLinks"]
    if nics:
        out += ["", "NIC Legend:", ""] + [f"  NIC{k}: mlx5_{k}" for k in range(nics)]
    return "\n".join(out) + "\n"


def h100_pcie_bridged_pairs() -> list[list[str]]:
    """8x H100 PCIe, NV12 bridges on (0,5), (1,2), (3,4), (6,7); NODE in a socket, SYS across."""
    pairs = {frozenset(p) for p in [(0, 5), (1, 2), (3, 4), (6, 7)]}
    return [
        [
            "X" if i == j else "NV12" if frozenset((i, j)) in pairs else "NODE" if i // 4 == j // 4 else "SYS"
            for j in range(8)
        ]
        for i in range(8)
    ]


@pytest.mark.parametrize("tabs", [True, False])
def test_synthetic_h100_pcie_bridged_pairs(tabs):
    text = render_topo(
        h100_pcie_bridged_pairs(),
        cpu=["0-31"] * 4 + ["32-63"] * 4,
        numa=["0"] * 4 + ["1"] * 4,
        tabs=tabs,
        ansi=True,
        nics=2,
    )
    topo = parse_topo(text)
    assert topo.gpu_count == 8
    assert [sorted(g) for g in topo.nvlink_groups()] == [[0, 5], [1, 2], [3, 4], [6, 7]]
    assert topo.nvlink_descriptor() == [[0, 5], [1, 2], [3, 4], [6, 7]]
    assert topo.links[0][1] == "NODE"
    m = machine_from_smi("NVIDIA H100 PCIe, 81559 MiB\n" * 8, text)
    assert m.gpu.id == "H100-PCIe"
    assert m.nvlink == [[0, 5], [1, 2], [3, 4], [6, 7]]
    assert m.cpu_cores == 64
    # the "obvious" pair 0,1 is PCIe; GPU0's NVLink partner is GPU5
    assert link_kind(m, 0, 1) == "pcie"
    assert link_kind(m, 0, 5) == "nvlink"
    assert not all_nvlinked(m, [0, 1])
    assert nvlink_group_for(m, 2) == [0, 5]
    assert nvlink_group_for(m, 3) is None


def test_synthetic_azure_a100_pairs():
    # Azure NC96ads_A100_v4: NV12 on (0,1) and (2,3), SYS otherwise, one NUMA node per GPU
    links = [
        ["X", "NV12", "SYS", "SYS"],
        ["NV12", "X", "SYS", "SYS"],
        ["SYS", "SYS", "X", "NV12"],
        ["SYS", "SYS", "NV12", "X"],
    ]
    text = render_topo(links, cpu=["0-23", "24-47", "48-71", "72-95"], numa=["0", "1", "2", "3"], tabs=False)
    topo = parse_topo(text)
    assert [topo.numa_node(i) for i in range(4)] == [0, 1, 2, 3]
    assert topo.cpus(2) == frozenset(range(48, 72))
    m = machine_from_smi("name, memory.total [MiB]\n" + "NVIDIA A100 80GB PCIe, 81920 MiB\n" * 4, text)
    builtin = load_hardware("4xA100-80GB-NVL-pairs")
    assert m.nvlink == builtin.nvlink == [[0, 1], [2, 3]]
    assert m.gpu.id == builtin.gpu.id
    assert m.cpu_cores == builtin.cpu_cores == 96


def test_single_gpu_box():
    text = (
        "\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t\t\t\tN/A\n\nLegend:\n\n  X    = Self\n"
    )
    topo = parse_topo(text)
    assert topo.gpu_count == 1
    assert topo.nvlink_groups() == [] and topo.nvlink_descriptor() == []
    assert topo.cpu_affinity == (None,) and topo.numa_affinity == (None,)
    m = machine_from_smi("NVIDIA L4, 23034 MiB", text, cpu_cores=8, ram_gib=32)
    assert m.name == "1xL4" and m.nvlink == []


def test_old_driver_soc_and_mlx_columns():
    text = (
        "\tGPU0\tGPU1\tmlx5_0\tCPU Affinity\n"
        "GPU0\t X \tSOC\tPHB\t0-11\n"
        "GPU1\tSOC\t X \tSOC\t12-23\n"
        "mlx5_0\tPHB\tSOC\t X \t\n"
        "\nLegend:\n\n  X   = Self\n"
        "  SOC  = Connection traversing PCIe as well as the SMP link between CPU sockets(e.g. QPI)\n"
    )
    topo = parse_topo(text)
    assert topo.gpu_count == 2 and topo.nics == ("mlx5_0",)
    assert topo.links[0][1] == "SOC" and topo.nvlink_groups() == []
    assert topo.cpus(1) == frozenset(range(12, 24))
    assert "SMP link" in topo.legend["SOC"]


def test_partial_mesh_is_one_component():
    # hybrid cube-mesh style: not every pair NV#, but all connected -> one group, not "all"
    links = [["X" if i == j else ("NV1" if abs(i - j) == 1 else "SYS") for j in range(4)] for i in range(4)]
    topo = parse_topo(render_topo(links))
    assert [sorted(g) for g in topo.nvlink_groups()] == [[0, 1, 2, 3]]
    assert topo.nvlink_descriptor() == [[0, 1, 2, 3]]
    assert not topo.all_pairs_nvlink()


def test_topo_errors():
    with pytest.raises(HardwareError, match="no `nvidia-smi topo -m` GPU matrix"):
        parse_topo("")
    with pytest.raises(HardwareError, match=r":3: row GPU1 has 1 cells"):
        parse_topo("\tGPU0\tGPU1\nGPU0\t X \tNV1\nGPU1\tNV1\n")
    with pytest.raises(HardwareError, match="no row for GPU1"):
        parse_topo("\tGPU0\tGPU1\nGPU0\t X \tNV1\n")
    with pytest.raises(HardwareError, match="'X'"):
        parse_topo("\tGPU0\tGPU1\nGPU0\tNV1\t X \nGPU1\tNV1\t X \n")


LINK = st.sampled_from(["NV1", "NV2", "NV4", "NV12", "NV18", "PIX", "PXB", "PHB", "NODE", "SYS"])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 8).flatmap(lambda n: st.lists(LINK, min_size=n * n, max_size=n * n)), st.booleans())
def test_topo_roundtrip(cells, tabs):
    n = int(len(cells) ** 0.5)
    links = [["X"] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            links[i][j] = links[j][i] = cells[i * n + j]
    topo = parse_topo(render_topo(links, cpu=[f"{i * 4}-{i * 4 + 3}" for i in range(n)], tabs=tabs))
    assert topo.gpu_count == n
    assert [list(r) for r in topo.links] == links
    # groups are the connected components of the NV# graph
    for group in topo.nvlink_groups():
        for a in group:
            assert any(topo.nvlinks(a, b) for b in group if b != a)
    grouped = set().union(*topo.nvlink_groups()) if topo.nvlink_groups() else set()
    for a in range(n):
        if a not in grouped:
            assert not any(topo.nvlinks(a, b) for b in range(n) if b != a)
    assert topo.cpus(n - 1) == frozenset(range((n - 1) * 4, n * 4))


# ---------------------------------------------------------------------------------------------
# --query-gpu


@pytest.mark.parametrize(
    "text",
    [
        "name, memory.total [MiB]\nNVIDIA H100 NVL, 95830 MiB\nNVIDIA H100 NVL, 95830 MiB\n",
        "name, memory.total [MiB]\nNVIDIA H100 NVL, 95830\nNVIDIA H100 NVL, 95830\n",
        "NVIDIA H100 NVL, 95830 MiB\nNVIDIA H100 NVL, 95830 MiB\n",
        "NVIDIA H100 NVL, 95830\r\nNVIDIA H100 NVL, 95830\r\n\r\n",
        "0, NVIDIA H100 NVL, 95830, 550.54\n1, NVIDIA H100 NVL, 95830, 550.54\n",
        "index, name, memory.total [MiB], driver_version\n"
        "0, NVIDIA H100 NVL, 95830 MiB, 550\n1, NVIDIA H100 NVL, 95830 MiB, 550\n",
    ],
)
def test_parse_query_gpu(text):
    gpus = parse_query_gpu(text)
    assert [(g.name, g.memory_mib) for g in gpus] == [("NVIDIA H100 NVL", 95830)] * 2


def test_parse_query_gpu_errors():
    with pytest.raises(HardwareError):
        parse_query_gpu("")
    with pytest.raises(HardwareError):
        parse_query_gpu("index, memory.total [MiB]\n0, 100\n")


def test_machine_from_query_without_topo():
    m = machine_from_smi("NVIDIA H100 80GB HBM3, 81559 MiB\n" * 8)
    assert m.nvlink == "all"  # SXM boards are NVSwitch boxes
    m = machine_from_smi("NVIDIA H100 NVL, 95830 MiB\n" * 4)
    assert m.nvlink == []  # bridges unknown without a matrix
    assert m.cpu_cores is None and m.ram_gib is None


def test_machine_from_smi_memory_override():
    m = machine_from_smi("Tesla V100-SXM2-16GB, 16160 MiB\n")
    assert m.gpu.id == "V100-SXM2-16GB"
    assert m.gpus.memory_gib == pytest.approx(15.8)
    assert m.gpu.usable_gib == pytest.approx(15.8)


def test_machine_from_smi_errors():
    with pytest.raises(HardwareError, match="different GPU models"):
        machine_from_smi("NVIDIA L4, 23034\nNVIDIA A10G, 23028\n")
    with pytest.raises(HardwareError, match="not in the GPU catalog"):
        machine_from_smi("NVIDIA Quantum Widget, 1024\n")
    with pytest.raises(HardwareError, match="--query-gpu"):
        machine_from_smi(None, render_topo([["X", "PHB"], ["PHB", "X"]]))
    with pytest.raises(HardwareError, match="shows 2 GPUs but --query-gpu lists 1"):
        machine_from_smi("NVIDIA L4, 23034\n", render_topo([["X", "PHB"], ["PHB", "X"]]))


def test_parse_cpulist():
    assert parse_cpulist("0-3,8,10-11") == {0, 1, 2, 3, 8, 10, 11}
    assert parse_cpulist("N/A") is None
    assert parse_cpulist("") is None
    assert parse_cpulist(None) is None


# ---------------------------------------------------------------------------------------------
# detect()


def _fake_smi(tmp_path: Path, body: str) -> None:
    exe = tmp_path / "nvidia-smi"
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)


@pytest.mark.skipif(os.name != "posix", reason="shell-script stand-in for nvidia-smi")
def test_detect_with_fake_nvidia_smi(tmp_path, monkeypatch):
    topo = render_topo([["X", "NV4"], ["NV4", "X"]], cpu=["0-15", "0-15"])
    (tmp_path / "topo.txt").write_text(topo)
    _fake_smi(
        tmp_path,
        f'if [ "$1" = "topo" ]; then /bin/cat "{tmp_path}/topo.txt"; exit 0; fi\n'
        'printf "NVIDIA GeForce RTX 3090, 24576\\nNVIDIA GeForce RTX 3090, 24576\\n"\n',
    )
    monkeypatch.setenv("PATH", str(tmp_path))
    m = detect()
    assert m.gpu.id == "RTX-3090" and m.gpus.count == 2
    assert m.nvlink == [[0, 1]]
    assert m.cpu_cores and m.cpu_cores >= 1  # from this process's affinity, not the matrix


def test_detect_without_nvidia_smi(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(HardwareError, match="nvidia-smi was not found"):
        detect()


@pytest.mark.skipif(os.name != "posix", reason="shell-script stand-in for nvidia-smi")
def test_detect_driver_failure(tmp_path, monkeypatch):
    _fake_smi(
        tmp_path,
        'echo "NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver." >&2\nexit 9\n',
    )
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(HardwareError, match=r"failed \(exit 9\): NVIDIA-SMI has failed"):
        detect()


@pytest.mark.skipif(os.name != "posix", reason="shell-script stand-in for nvidia-smi")
def test_detect_timeout(tmp_path, monkeypatch):
    _fake_smi(tmp_path, "exec /bin/sleep 5\n")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(HardwareError, match="did not answer"):
        detect(timeout=0.3)


# ---------------------------------------------------------------------------------------------
# AMD under ROCm: rocm-smi --showproductname --showmeminfo vram (layout as in public logs)

ROCM_MI300X = (
    "============================ ROCm System Management Interface ============================\n"
    "====================================== Product Info ======================================\n"
    + "".join(
        f"GPU[{i}]\t\t: Card Series: \t\tAMD Instinct MI300X OAM\n"
        f"GPU[{i}]\t\t: Card Model: \t\t0x74a1\n"
        f"GPU[{i}]\t\t: GFX Version: \t\tgfx942\n"
        for i in range(8)
    )
    + "================================== Memory Info ========================================\n"
    + "".join(
        f"GPU[{i}]\t\t: VRAM Total Memory (B): 205822885888\n"
        f"GPU[{i}]\t\t: VRAM Total Used Memory (B): 299687936\n"
        for i in range(8)
    )
)

# HPE MI250X boards print a board name as the card series (public log)
ROCM_HPE_MI250X = (
    "GPU[0]\t\t: VRAM Total Memory (B): 68702699520\n"
    "GPU[0]\t\t: Card Series: \t\tAMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2\n"
    "GPU[0]\t\t: Card Model: \t\t0x7408\n"
    "GPU[0]          : GFX Version:          gfx90a\n"
    "GPU[1]\t\t: VRAM Total Memory (B): 68702699520\n"
    "GPU[1]\t\t: Card Series: \t\tAMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2\n"
    "GPU[1]          : GFX Version:          gfx90a:sramecc+:xnack-\n"
)


def test_rocm_smi_mi300x_box():
    m = machine_from_smi(ROCM_MI300X, cpu_cores=96)
    assert m.gpu.id == "MI300X" and m.gpus.count == 8
    assert m.gpus.memory_gib is None  # 205822885888 B is the catalog's memory
    assert m.nvlink == "all"  # one xGMI mesh
    assert m.cpu_cores == 96 and m.notes is None


def test_rocm_smi_board_name_falls_back_to_gfx_and_memory():
    m = machine_from_smi(ROCM_HPE_MI250X)
    assert m.gpu.id == "MI250X" and m.gpus.count == 2
    assert m.nvlink == [[0, 1]]
    assert m.notes and "gfx90a" in m.notes  # the inference is stated, not hidden


def test_rocm_smi_errors():
    with pytest.raises(HardwareError, match="not in the GPU catalog"):
        machine_from_smi("GPU[0] : Card Series: AMD Radeon RX 7900 XTX\nGPU[0] : GFX Version: gfx1100\n")
    mixed = "GPU[0] : Card Series: AMD Instinct MI300X\nGPU[1] : Card Series: AMD Instinct MI210\n"
    with pytest.raises(HardwareError, match="different GPU models"):
        machine_from_smi(mixed)


@pytest.mark.skipif(os.name != "posix", reason="shell-script stand-in for rocm-smi")
def test_detect_with_fake_rocm_smi(tmp_path, monkeypatch):
    (tmp_path / "out.txt").write_text(ROCM_MI300X)
    exe = tmp_path / "rocm-smi"
    exe.write_text(f'#!/bin/sh\n/bin/cat "{tmp_path}/out.txt"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi here
    m = detect()
    assert m.gpu.id == "MI300X" and m.gpus.count == 8 and m.nvlink == "all"
