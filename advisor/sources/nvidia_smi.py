"""Reading `nvidia-smi` output: the `topo -m` matrix and `--query-gpu` CSV, and `hardware detect`
(which reads `rocm-smi` instead on AMD machines, see machine_from_rocm_smi).

`nvidia-smi topo -m` prints a matrix (tab-separated raw, runs of spaces once copy-pasted)::

    \tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
    GPU0\t X \tNV18\tPIX\t0-55,112-167\t0\t\tN/A
    NIC0\tPIX\tSYS\t X
    Legend: ...   NIC Legend: ...

Cells: `X` self, `NV#` (a bonded set of # NVLinks), `PIX`, `PXB`, `PHB`, `NODE`, `SYS` and
the older `SOC`. Header labels with spaces are matched as phrases; the device cells are parsed
positionally, the affinity cells after them by shape. On a TTY the header carries ANSI escapes.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import re
import shutil
import subprocess

from advisor.core import records
from advisor.core.records import field, record
from advisor.sources.hardware import (
    GpuSpec,
    HardwareError,
    Machine,
    gpu_catalog,
    resolve_gpu,
    suggest_gpu,
    validate_machine,
)

__all__ = [
    "RocmGpu",
    "SmiGpu",
    "Topology",
    "detect",
    "looks_like_rocm_smi",
    "machine_from_rocm_smi",
    "machine_from_smi",
    "parse_cpulist",
    "parse_query_gpu",
    "parse_rocm_smi",
    "parse_topo",
]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_GPU_LABEL = re.compile(r"^GPU(\d+)$")
_NV = re.compile(r"^NV(\d+)$")
_CPULIST = re.compile(r"^\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*$")
_PHRASES = (
    (re.compile(r"CPU\s+Affinity", re.IGNORECASE), "CPU_Affinity"),
    (re.compile(r"NUMA\s+Affinity", re.IGNORECASE), "NUMA_Affinity"),
    (re.compile(r"GPU\s+NUMA\s+ID", re.IGNORECASE), "GPU_NUMA_ID"),
)
_AFFINITY_LABELS = {"CPU_Affinity", "NUMA_Affinity", "GPU_NUMA_ID"}
PCIE_CELLS = ("PIX", "PXB", "PHB", "NODE", "SYS", "SOC")


def parse_cpulist(text: str | None) -> frozenset[int] | None:
    """'0-55,112-167' -> the set of CPU ids; None for 'N/A', blanks and anything else."""
    if text is None:
        return None
    text = text.strip()
    if not _CPULIST.match(text):
        return None
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return frozenset(out)


@record(frozen=True)
class Topology:
    """The GPU part of `nvidia-smi topo -m`."""

    gpu_count: int
    links: tuple[tuple[str, ...], ...]  # links[a][b]: 'X', 'NV12', 'PIX', 'SYS', ...
    cpu_affinity: tuple[str | None, ...]  # raw cpulist per GPU ('0-55,112-167'), None when absent
    numa_affinity: tuple[str | None, ...]  # raw NUMA affinity per GPU ('0', '0-7'), None for N/A
    nics: tuple[str, ...] = ()  # NIC column labels (NIC0.. or mlx5_0..)
    nic_names: dict[str, str] = field(default_factory=dict, hash=False)  # NIC0 -> mlx5_0
    legend: dict[str, str] = field(default_factory=dict, hash=False)  # 'PHB' -> its legend text

    def nvlinks(self, a: int, b: int) -> int:
        """Number of bonded NVLinks between GPUs a and b (0: none)."""
        m = _NV.match(self.links[a][b])
        return int(m.group(1)) if m else 0

    def cpus(self, gpu: int) -> frozenset[int] | None:
        """The CPU ids local to a GPU (its CPU affinity), None when not printed."""
        return parse_cpulist(self.cpu_affinity[gpu])

    def numa_node(self, gpu: int) -> int | None:
        """The single NUMA node of a GPU, None when N/A or a range."""
        text = self.numa_affinity[gpu]
        return int(text) if text is not None and text.isdigit() else None

    def all_cpus(self) -> frozenset[int] | None:
        """Every CPU id named in any GPU's affinity (None when no affinity was printed)."""
        sets = [s for s in (self.cpus(i) for i in range(self.gpu_count)) if s is not None]
        return frozenset().union(*sets) if sets else None

    def nvlink_groups(self) -> list[frozenset[int]]:
        """Connected components of the NV# graph with at least two GPUs, by lowest index."""
        parent = list(range(self.gpu_count))

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for a in range(self.gpu_count):
            for b in range(a + 1, self.gpu_count):
                if self.nvlinks(a, b) or self.nvlinks(b, a):
                    parent[find(a)] = find(b)
        comps: dict[int, set[int]] = {}
        for i in range(self.gpu_count):
            comps.setdefault(find(i), set()).add(i)
        return sorted((frozenset(c) for c in comps.values() if len(c) > 1), key=min)

    def all_pairs_nvlink(self) -> bool:
        """True when every pair of GPUs shows NV# (NVSwitch boxes); False for a single GPU."""
        n = self.gpu_count
        return n > 1 and all(self.nvlinks(a, b) for a in range(n) for b in range(n) if a != b)

    def nvlink_descriptor(self) -> list[list[int]] | str:
        """The descriptor's `nvlink` value: 'all' (every pair NV#, more than two GPUs), the groups
        (a two-GPU NVLink box is the pair [[0, 1]]), or [] for none."""
        if self.gpu_count > 2 and self.all_pairs_nvlink():
            return "all"
        return [sorted(g) for g in self.nvlink_groups()]


def _header_tokens(line: str) -> list[str]:
    for pattern, token in _PHRASES:
        line = pattern.sub(token, line)
    return line.split()


def parse_topo(text: str, source: str = "nvidia-smi topo -m") -> Topology:
    """Parse `nvidia-smi topo -m` output. Raises HardwareError when there is no GPU matrix."""
    lines = [_ANSI.sub("", raw).rstrip("\r\n") for raw in text.splitlines()]
    header_at = None
    for i, line in enumerate(lines):
        tokens = line.split()
        if tokens and tokens[0] == "GPU0" and "X" not in tokens:
            header_at = i
            break
    if header_at is None:
        raise HardwareError(f"{source}: no `nvidia-smi topo -m` GPU matrix found (no header row naming GPU0)")
    labels = _header_tokens(lines[header_at])
    devices: list[str] = []
    for label in labels:
        if label in _AFFINITY_LABELS:
            break
        devices.append(label)
    extras = [label for label in labels[len(devices) :] if label in _AFFINITY_LABELS]
    gpu_cols = [j for j, label in enumerate(devices) if _GPU_LABEL.match(label)]
    if [int(_GPU_LABEL.match(devices[j]).group(1)) for j in gpu_cols] != list(range(len(gpu_cols))):  # type: ignore[union-attr]
        raise HardwareError(f"{source}:{header_at + 1}: GPU columns are not GPU0..GPU{len(gpu_cols) - 1}")
    n = len(gpu_cols)

    rows: dict[int, list[str]] = {}
    affinity: dict[int, dict[str, str]] = {}
    legend: dict[str, str] = {}
    nic_names: dict[str, str] = {}
    section = "matrix"
    for lineno, line in enumerate(lines[header_at + 1 :], start=header_at + 2):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("NIC Legend"):
            section = "nic_legend"
            continue
        if stripped.startswith("Legend"):
            section = "legend"
            continue
        if section == "legend":
            key, sep, desc = stripped.partition("=")
            if sep:
                legend[key.strip()] = desc.strip()
            continue
        if section == "nic_legend":
            key, sep, name = stripped.partition(":")
            if sep:
                nic_names[key.strip()] = name.strip()
            continue
        tokens = stripped.split()
        m = _GPU_LABEL.match(tokens[0])
        if not m:
            continue  # a NIC row (or noise around a copy-paste)
        idx = int(m.group(1))
        if idx >= n:
            raise HardwareError(f"{source}:{lineno}: row {tokens[0]} but the header names {n} GPU(s)")
        cells = tokens[1:]
        if len(cells) < len(devices):
            raise HardwareError(
                f"{source}:{lineno}: row {tokens[0]} has {len(cells)} cells, "
                f"the header names {len(devices)} devices"
            )
        rows[idx] = [cells[j] for j in gpu_cols]
        if rows[idx][idx] != "X":
            raise HardwareError(
                f"{source}:{lineno}: row {tokens[0]} has {rows[idx][idx]!r} where 'X' (self) belongs"
            )
        rest = cells[len(devices) :]
        found: dict[str, str] = {}
        # by shape, in header order: CPU affinity is a cpulist, NUMA a number/range or N/A
        for label in extras:
            if not rest:
                break
            if label == "CPU_Affinity" and not _CPULIST.match(rest[0]):
                continue  # blank CPU affinity (single-GPU boxes, VMs)
            if label == "NUMA_Affinity" and not (_CPULIST.match(rest[0]) or rest[0] == "N/A"):
                continue
            found[label] = rest.pop(0)
        affinity[idx] = found
    missing = [i for i in range(n) if i not in rows]
    if missing:
        raise HardwareError(f"{source}: the matrix has no row for GPU{missing[0]}")

    def cell(i: int, label: str) -> str | None:
        value = affinity[i].get(label)
        return None if value in (None, "N/A") else value

    return Topology(
        gpu_count=n,
        links=tuple(tuple(rows[i]) for i in range(n)),
        cpu_affinity=tuple(cell(i, "CPU_Affinity") for i in range(n)),
        numa_affinity=tuple(cell(i, "NUMA_Affinity") for i in range(n)),
        nics=tuple(label for label in devices if not _GPU_LABEL.match(label)),
        nic_names=nic_names,
        legend=legend,
    )


@record(frozen=True)
class SmiGpu:
    """One row of `nvidia-smi --query-gpu=name,memory.total`."""

    name: str
    memory_mib: int | None


_MEM = re.compile(r"^(\d+(?:\.\d+)?)\s*(MiB|GiB)?$", re.IGNORECASE)


def _mem_mib(text: str) -> int | None:
    m = _MEM.match(text.strip())
    if not m:
        return None
    value = float(m.group(1))
    return round(value * 1024) if (m.group(2) or "").lower() == "gib" else round(value)


def parse_query_gpu(text: str, source: str = "nvidia-smi --query-gpu") -> list[SmiGpu]:
    """Parse `--query-gpu=name,memory.total --format=csv[,noheader][,nounits]` (extra columns ok)."""
    reader = csv.reader(io.StringIO(_ANSI.sub("", text)), skipinitialspace=True)
    try:
        rows = [[c.strip() for c in row] for row in reader if any(c.strip() for c in row)]
    except csv.Error as exc:  # a field over csv's 128 KB limit, a NUL byte: not nvidia-smi's output
        why = "a field longer than 128 KB" if "field limit" in str(exc) else "not CSV"
        raise HardwareError(f"{source}:{reader.line_num}: {why}; not nvidia-smi output") from None
    if not rows:
        raise HardwareError(f"{source}: no GPU listed")
    name_col = mem_col = None
    header = [c.lower() for c in rows[0]]
    if any(h == "name" or h.startswith("memory.total") for h in header):
        for j, h in enumerate(header):
            if h == "name":
                name_col = j
            elif h.startswith("memory.total"):
                mem_col = j
        rows = rows[1:]
        if name_col is None:
            raise HardwareError(f"{source}: the CSV header has no `name` column")
    out: list[SmiGpu] = []
    for row in rows:
        if name_col is not None:
            name = row[name_col] if name_col < len(row) else ""
            mem = _mem_mib(row[mem_col]) if mem_col is not None and mem_col < len(row) else None
        else:  # no header: the name is the first non-numeric field, memory the next number
            first = next((k for k, c in enumerate(row) if not re.fullmatch(r"[\d.]+", c)), None)
            if first is None:
                continue
            name = row[first]
            mem = next((v for v in (_mem_mib(c) for c in row[first + 1 :]) if v is not None), None)
        if name:
            out.append(SmiGpu(name=name, memory_mib=mem))
    if not out:
        raise HardwareError(f"{source}: no GPU listed")
    return out


def machine_from_smi(
    query_text: str | None,
    topo_text: str | None = None,
    cpu_cores: int | None = None,
    ram_gib: float | None = None,
    *,
    name: str | None = None,
    query_source: str = "nvidia-smi --query-gpu",
) -> Machine:
    """A Machine from saved `nvidia-smi --query-gpu=name,memory.total` (and `topo -m`) output.
    ``query_source`` names the query output in errors (its file).

    NVLink groups come from the topo matrix (connected components of NV# cells; `all` when every
    pair is NV#). Without a matrix, SXM parts whose catalog topology is NVSwitch are taken as
    `all` and everything else as no NVLink. cpu_cores defaults to the CPUs named in the matrix's
    CPU affinity column (the GPU-local CPUs: the whole box on most servers, a lower bound where
    some NUMA nodes have no GPU).
    """
    if query_text is None:
        raise HardwareError(
            "the GPU model comes from `nvidia-smi --query-gpu=name,memory.total --format=csv`: "
            "pass its saved output too (a topo -m matrix does not name the GPUs)"
        )
    if looks_like_rocm_smi(query_text):
        return machine_from_rocm_smi(query_text, cpu_cores, ram_gib, name=name)
    gpus = parse_query_gpu(query_text, query_source)
    names = sorted({g.name for g in gpus})
    if len(names) > 1:
        raise HardwareError(
            f"nvidia-smi lists different GPU models ({', '.join(names)}); a machine has one model"
        )
    mems = [g.memory_mib for g in gpus if g.memory_mib]
    # memory.total tells apart cards that print one name (RTX 3080 10/12 GB, RTX 4060 Ti 8/16 GB)
    spec = resolve_gpu(names[0], memory_mib=min(mems) if mems else None)
    if spec is None:
        hint = suggest_gpu(names[0])
        raise HardwareError(
            f"nvidia-smi reports {names[0]!r}, which is not in the GPU catalog"
            + (f" (closest: {', '.join(hint)})" if hint else "")
            + "; write a hardware descriptor with the nearest model and memory_gib"
        )
    count = len(gpus)
    gpus_block: dict[str, object] = {"model": spec.id, "count": count}
    if mems:
        gib = round(min(mems) / 1024, 1)
        if abs(gib - spec.usable_gib) > 0.01 * spec.usable_gib:
            gpus_block["memory_gib"] = gib
    nvlink: list[list[int]] | str = []
    if topo_text is not None:
        topo = parse_topo(topo_text)
        if topo.gpu_count != count:
            raise HardwareError(
                f"nvidia-smi topo -m shows {topo.gpu_count} GPUs but --query-gpu lists {count}"
            )
        nvlink = topo.nvlink_descriptor()
        if cpu_cores is None:
            cpus = topo.all_cpus()
            cpu_cores = len(cpus) if cpus else None
    elif count > 1 and spec.nvlink is not None and spec.nvlink.typical_topology == "nvswitch_all_to_all":
        nvlink = "all"
    if nvlink and spec.nvlink is None:
        nvlink = []  # e.g. a matrix from another box; the catalog says this GPU has no NVLink
    data = {
        "name": name or f"{count}x{spec.id}",
        "gpus": gpus_block,
        "nvlink": nvlink,
        "cpu_cores": cpu_cores,
        "ram_gib": ram_gib,
    }
    return validate_machine(data)


# --------------------------------------------------------------------------------------------
# AMD GPUs under ROCm: `rocm-smi --showproductname --showmeminfo vram` prints, per GPU,
#   GPU[0]          : Card Series:          AMD Instinct MI300X OAM
#   GPU[0]          : GFX Version:          gfx942
#   GPU[0]          : VRAM Total Memory (B): 205822885888
# (as in public logs). The card series is not always a product name (HPE MI250X boards print
# "AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2"), so the gfx target and memory are the fallback.

_ROCM_LINE = re.compile(r"^GPU\[(\d+)\]\s*:\s*([^:]+?)\s*:\s*(.*?)\s*$")
_BYTES = re.compile(r"^(\d+)")


@record(frozen=True)
class RocmGpu:
    """One GPU of `rocm-smi --showproductname --showmeminfo vram`."""

    index: int
    series: str | None
    gfx: str | None
    vram_bytes: int | None


def looks_like_rocm_smi(text: str) -> bool:
    """True for rocm-smi's per-GPU `GPU[n] : key: value` output."""
    return any(_ROCM_LINE.match(line.strip()) for line in _ANSI.sub("", text).splitlines())


def parse_rocm_smi(text: str, source: str = "rocm-smi") -> list[RocmGpu]:
    """The GPUs of rocm-smi's product-name and VRAM output, by index. Raises HardwareError when none."""
    fields: dict[int, dict[str, str]] = {}
    for line in _ANSI.sub("", text).splitlines():
        m = _ROCM_LINE.match(line.strip())
        if m:
            fields.setdefault(int(m.group(1)), {})[m.group(2).casefold()] = m.group(3)
    gpus = []
    for index in sorted(fields):
        f = fields[index]
        vram = _BYTES.match(f.get("vram total memory (b)", ""))
        gpu = RocmGpu(index, f.get("card series") or None, f.get("gfx version") or None, None)
        gpus.append(records.replace(gpu, vram_bytes=int(vram.group(1)) if vram else None))
    gpus = [g for g in gpus if g.series or g.gfx or g.vram_bytes]
    if not gpus:
        raise HardwareError(f"{source}: no GPU listed (expected `GPU[0] : Card Series: ...` lines)")
    return gpus


def _resolve_rocm(gpu: RocmGpu) -> tuple[GpuSpec | None, str | None]:
    """The catalog GPU for one rocm-smi GPU, and a note when it was inferred from gfx target and memory."""
    vram_mib = gpu.vram_bytes / 2**20 if gpu.vram_bytes else None
    if gpu.series:
        # resolve the series as a device name: prefix it so the driver-spelling heuristics apply
        series = gpu.series if gpu.series.lower().startswith("amd") else f"AMD {gpu.series}"
        spec = resolve_gpu(series, memory_mib=vram_mib)
        if spec is not None:
            return spec, None
    if gpu.gfx is None:
        return None, None
    gfx = gpu.gfx.split(":")[0].lower()
    same = [g for g in gpu_catalog().values() if g.gfx_target == gfx]
    if not same:
        return None, None
    if vram_mib is not None:
        same.sort(key=lambda g: abs((g.memory_total_mib or g.usable_gib * 1024) - vram_mib))
    note = (
        f"GPU model inferred from {gfx}"
        + (f" and {vram_mib / 1024:.0f} GiB" if vram_mib else "")
        + f" (rocm-smi card series {gpu.series!r}); check it"
    )
    return same[0], note


def machine_from_rocm_smi(
    text: str, cpu_cores: int | None = None, ram_gib: float | None = None, *, name: str | None = None
) -> Machine:
    """A Machine from saved `rocm-smi --showproductname --showmeminfo vram` output (AMD under ROCm).

    Without a topology, OAM parts on an xGMI fabric (MI300X, MI325X, MI250X) are taken as one mesh
    (`nvlink: all`), PCIe cards (MI210, whose bridge is optional) as unlinked.
    """
    gpus = parse_rocm_smi(text)
    resolved = [_resolve_rocm(g) for g in gpus]
    missing = [g for g, (spec, _) in zip(gpus, resolved, strict=True) if spec is None]
    if missing:
        g = missing[0]
        raise HardwareError(
            f"rocm-smi reports GPU[{g.index}] as {g.series or g.gfx!r}, which is not in the GPU catalog; "
            "write a hardware descriptor with the nearest model and memory_gib"
        )
    ids = sorted({spec.id for spec, _ in resolved if spec is not None})
    if len(ids) > 1:
        raise HardwareError(
            f"rocm-smi lists different GPU models ({', '.join(ids)}); a machine has one model"
        )
    spec, note = resolved[0]
    assert spec is not None
    count = len(gpus)
    gpus_block: dict[str, object] = {"model": spec.id, "count": count}
    vram = [g.vram_bytes for g in gpus if g.vram_bytes]
    if vram:
        gib = round(min(vram) / 2**30, 1)
        if abs(gib - spec.usable_gib) > 0.01 * spec.usable_gib:
            gpus_block["memory_gib"] = gib
    link = spec.peer_link
    mesh = link is not None and link.typical_topology in ("xgmi_full_mesh", "xgmi_mixed")
    nvlink: list[list[int]] | str = []
    if count > 1 and mesh and spec.form_factor == "oam":
        nvlink = "all" if count > 2 else [[0, 1]]  # as topo -m gives a two-GPU box: the pair
    data = {
        "name": name or f"{count}x{spec.id}",
        "gpus": gpus_block,
        "nvlink": nvlink,
        "cpu_cores": cpu_cores,
        "ram_gib": ram_gib,
        "notes": note,
    }
    return validate_machine(data)


def _run_smi(exe: str, args: list[str], timeout: float, tool: str = "nvidia-smi") -> str:
    try:
        proc = subprocess.run([exe, *args], capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise HardwareError(f"`{tool} {' '.join(args)}` did not answer within {timeout:g} s") from None
    except OSError as exc:
        raise HardwareError(f"cannot run {tool}: {exc}") from None
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise HardwareError(
            f"`{tool} {' '.join(args)}` failed (exit {proc.returncode})"
            + (f": {detail[0]}" if detail else "")
        )
    return proc.stdout


def _ram_gib() -> float | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024**2, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cpu_cores() -> int | None:
    with contextlib.suppress(AttributeError, OSError):
        return len(os.sched_getaffinity(0))  # what DataLoader's worker check counts
    return os.cpu_count()


def detect(timeout: float = 15.0) -> Machine:
    """Describe this machine by running nvidia-smi (query and topo -m), or rocm-smi where there is no
    nvidia-smi, and reading os and /proc/meminfo."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        rocm = shutil.which("rocm-smi")
        if rocm is not None:
            text = _run_smi(rocm, ["--showproductname", "--showmeminfo", "vram"], timeout, tool="rocm-smi")
            return machine_from_rocm_smi(text, cpu_cores=_cpu_cores(), ram_gib=_ram_gib())
        raise HardwareError(
            "nvidia-smi was not found on PATH (nor rocm-smi), so this machine's GPUs cannot be detected "
            "(no GPU driver here?). Name a machine instead: --hardware NAME|FILE "
            "(`gpu-advise hardware list` shows the built-in ones)."
        )
    query = _run_smi(exe, ["--query-gpu=name,memory.total", "--format=csv,noheader,nounits"], timeout)
    try:
        topo: str | None = _run_smi(exe, ["topo", "-m"], timeout)
    except HardwareError:
        topo = None
    if topo is not None and "GPU0" not in topo:
        topo = None
    return machine_from_smi(query, topo, cpu_cores=_cpu_cores(), ram_gib=_ram_gib())
