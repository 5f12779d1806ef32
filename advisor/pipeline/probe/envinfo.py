"""What this machine offers the probe: devices, driver and library versions.

Run as a child (``python -m advisor.pipeline.probe.envinfo``) so the parent never imports torch or creates
a CUDA context; prints one JSON object.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Any

LIBRARIES = ("torch", "transformers", "accelerate", "peft", "bitsandbytes", "deepspeed", "liger_kernel")
_DISTS = {"liger_kernel": "liger-kernel"}


def _version(name: str) -> str | None:
    try:
        return version(_DISTS.get(name, name))
    except PackageNotFoundError:
        return None


def _driver() -> str | None:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None


def _mem_available() -> int | None:
    """Bytes of memory available for new processes (Linux MemAvailable; else None)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def collect() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "mem_available": _mem_available(),
        "libraries": {name: _version(name) for name in LIBRARIES},
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }
    try:
        import torch
    except ImportError as exc:
        info["error"] = f"torch cannot be imported: {exc}"
        info["cuda_available"] = False
        info["device_count"] = 0
        return info
    info["torch_cuda"] = torch.version.cuda
    info["cuda_available"] = bool(torch.cuda.is_available())
    info["device_count"] = torch.cuda.device_count() if info["cuda_available"] else 0
    info["devices"] = [
        {
            "index": i,
            "name": torch.cuda.get_device_name(i),
            "total_memory": torch.cuda.get_device_properties(i).total_memory,
            "capability": ".".join(map(str, torch.cuda.get_device_capability(i))),
        }
        for i in range(info["device_count"])
    ]
    info["driver"] = _driver() if info["cuda_available"] else None
    try:
        info["cpu_bf16"] = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except Exception:
        info["cpu_bf16"] = False
    info["distributed"] = bool(torch.distributed.is_available())
    info["gloo"] = bool(torch.distributed.is_available() and torch.distributed.is_gloo_available())
    info["nccl"] = bool(torch.distributed.is_available() and torch.distributed.is_nccl_available())
    return info


if __name__ == "__main__":
    json.dump(collect(), sys.stdout)
    sys.stdout.write("\n")
