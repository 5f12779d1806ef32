"""The GPU catalog's entries are validated from GpuSpec's own declaration (advisor.core.datacodec.validate):
each problem names the entry's key, and the shipped catalog validates."""

from __future__ import annotations

import pytest
import yaml

from advisor.core.datacodec import Invalid
from advisor.sources.gpu_catalog import GPUS_FILE, gpu_catalog, validate_gpu


def _entry(gpu_id: str) -> dict:
    raw = yaml.safe_load(GPUS_FILE.read_text(encoding="utf-8"))
    return next(e for e in raw["gpus"] if e["id"] == gpu_id)


def test_every_shipped_entry_validates_to_the_catalogs_record() -> None:
    raw = yaml.safe_load(GPUS_FILE.read_text(encoding="utf-8"))
    catalog = gpu_catalog()
    for entry in raw["gpus"]:
        assert validate_gpu(entry) == catalog[entry["id"]]


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        ({"compute_capability": "9"}, ("compute_capability",), "compute_capability must look like '8.0'"),
        ({"usable_gib": 0}, ("usable_gib",), "Input should be greater than 0"),
        ({"confidence": "sure"}, ("confidence",), "Input should be 'high', 'medium' or 'low'"),
        ({"pcie": {"generation": 5}}, ("pcie", "unidir_gbs"), "Field required"),
        ({"nvlink_gen": 4}, ("nvlink_gen",), "unknown key 'nvlink_gen'"),
        ({"gfx_target": "gfx942"}, (), "infinity_fabric, rocm_smi_name and gfx_target are AMD-only"),
    ],
)
def test_a_bad_entry_names_the_key(change: dict, path: tuple, message: str) -> None:
    with pytest.raises(Invalid) as info:
        validate_gpu({**_entry("H100-SXM"), **change})
    problem = info.value.problems[0]
    assert problem.path == path and message in problem.message
