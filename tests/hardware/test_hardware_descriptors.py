"""Built-in machines and hardware descriptor files."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.sources.hardware import (
    MACHINES_DIR,
    HardwareError,
    builtin_machines,
    hardware_schema,
    load_hardware,
    machine_yaml,
    validate_machine,
)

EXPECTED_MACHINES = {
    # name: (gpu id, count, nvlink)
    "1xH100": ("H100-NVL", 1, []),
    "2xH100-PCIe": ("H100-PCIe", 2, []),
    "4xH100-NVL": ("H100-NVL", 4, [[0, 1], [2, 3]]),
    "8xH100-SXM": ("H100-SXM", 8, "all"),
    "8xH200": ("H200", 8, "all"),
    "8xA100-SXM-80GB": ("A100-SXM-80GB", 8, "all"),
    "1xA100-80GB": ("A100-PCIe-80GB", 1, []),
    "4xA100-80GB-NVL-pairs": ("A100-PCIe-80GB", 4, [[0, 1], [2, 3]]),
    "4xL40S": ("L40S", 4, []),
    "1xL4": ("L4", 1, []),
    "1xA10G": ("A10G", 1, []),
    "1xRTX4090": ("RTX-4090", 1, []),
    "2xRTX3090": ("RTX-3090", 2, []),
    "8xV100-32GB": ("V100-SXM2-32GB", 8, "all"),
    "1xT4": ("T4", 1, []),
    "2xRTX4090": ("RTX-4090", 2, []),
    "1xRTX3090": ("RTX-3090", 1, []),
    "1xRTX-A5000": ("RTX-A5000", 1, []),
    "1xRTX-A6000": ("RTX-A6000", 1, []),
    "4xRTX-A6000-NVL-pairs": ("RTX-A6000", 4, [[0, 1], [2, 3]]),
    "8xH20": ("H20", 8, "all"),
    "1xGH200": ("GH200", 1, []),
    "1xMI300X": ("MI300X", 1, []),
    "8xMI300X": ("MI300X", 8, "all"),
}


@pytest.mark.parametrize("name", sorted(EXPECTED_MACHINES))
def test_builtin_machine(name):
    gpu_id, count, nvlink = EXPECTED_MACHINES[name]
    machine = load_hardware(name)
    assert machine.name == name
    assert machine.gpu.id == gpu_id
    assert machine.gpus.count == count
    assert machine.nvlink == nvlink
    assert machine.nodes == 1
    assert machine.cpu_cores and machine.cpu_cores >= 4
    assert machine.ram_gib and machine.ram_gib >= 16


def test_every_builtin_file_loads_and_is_named_after_its_file():
    files = sorted(MACHINES_DIR.glob("*.yaml"))
    machines = builtin_machines()
    assert len(files) == len(machines) >= len(EXPECTED_MACHINES)
    for path in files:
        assert path.stem in machines
        assert machines[path.stem].name == path.stem


def test_builtin_names_are_case_insensitive():
    machines = builtin_machines()
    assert machines["4xh100-nvl"] is machines["4xH100-NVL"]
    assert "1XH100" in machines
    assert machines.get("8XH200").gpu.id == "H200"
    assert load_hardware("4XH100-NVL").name == "4xH100-NVL"
    assert "4xH100-NVL" in list(machines)  # iteration keeps the canonical spelling


def test_seed_machines():
    # the three machines from the seed documents (docs/design.md)
    one = load_hardware("1xH100")
    assert one.gpu.usable_gib == pytest.approx(93.6)  # "one H100 card has 94 GB"
    two = load_hardware("2xH100-PCIe")
    assert two.gpu.nvlink is not None and two.nvlink == []  # the card could be bridged; this box is not
    four = load_hardware("4xH100-NVL")
    assert four.cpu_cores == 64 and four.ram_gib == 512


def test_v100_machine_notes_the_cube_mesh():
    assert "cube-mesh" in (load_hardware("8xV100-32GB").notes or "")


def test_builtin_machines_match_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    import yaml

    schema = hardware_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    for path in MACHINES_DIR.glob("*.yaml"):
        jsonschema.validate(yaml.safe_load(path.read_text()), schema)
    assert set(schema["required"]) == {"gpus"}
    assert "gpu" not in schema["properties"]  # computed, not written


def test_load_from_file_defaults_name_to_stem(tmp_path):
    path = tmp_path / "lab-box.yaml"
    path.write_text("gpus: {model: 4090, count: 2}\ncpu_cores: 24\nram_gib: 64\n")
    machine = load_hardware(str(path))
    assert machine.name == "lab-box"
    assert machine.gpu.id == "RTX-4090"
    assert machine.nvlink == []
    assert load_hardware(path) == machine  # a Path works too


def test_memory_override(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("gpus: {model: A100-PCIe-80GB, count: 1, memory_gib: 79.2}\n")
    machine = load_hardware(str(path))
    assert machine.gpu.usable_gib == pytest.approx(79.2)
    assert machine.gpu.id == "A100-PCIe-80GB"


def test_nvlink_spellings(tmp_path):
    for text, expected in [("none", []), ("[]", []), ("all", "all"), ("ALL", "all"), ("null", [])]:
        path = tmp_path / "n.yaml"
        path.write_text(f"gpus: {{model: H100-SXM, count: 8}}\nnvlink: {text}\n")
        assert load_hardware(str(path)).nvlink == expected, text


def test_multinode(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text("gpus: {model: H100, count: 8}\nnvlink: all\nnodes: 4\nnetwork: IB-400G\n")
    machine = load_hardware(str(path))
    assert machine.total_gpus == 32
    assert machine.network == "ib-400g"


def _error(tmp_path: Path, text: str, name: str = "hw.yaml") -> HardwareError:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(HardwareError) as info:
        load_hardware(str(path))
    err = info.value
    assert err.file == str(path)
    assert str(err).startswith(f"{path}:{err.line}:")
    return err


def test_error_unknown_gpu_with_did_you_mean(tmp_path):
    err = _error(tmp_path, "name: box\ngpus:\n  model: H100-NVLX\n  count: 4\n")
    assert err.line == 3
    assert "H100-NVLX" in str(err) and "did you mean 'H100-NVL'" in str(err)


def test_error_wrong_type(tmp_path):
    err = _error(tmp_path, "gpus: {model: L4, count: 1}\ncpu_cores: sixty-four\n")
    assert err.line == 2
    assert "cpu_cores" in str(err)


def test_error_count_is_not_a_bool(tmp_path):
    err = _error(tmp_path, "gpus:\n  model: L4\n  count: yes\n")
    assert err.line == 3


def test_error_nvlink_index_out_of_range(tmp_path):
    err = _error(tmp_path, "gpus: {model: H100-NVL, count: 4}\nnvlink:\n  - [0, 1]\n  - [2, 4]\n")
    assert err.line == 4
    assert "out of range" in str(err) and "0..3" in str(err)


def test_error_nvlink_overlapping_groups(tmp_path):
    err = _error(tmp_path, "gpus: {model: H100-NVL, count: 4}\nnvlink: [[0, 1], [1, 2]]\n")
    assert err.line == 2
    assert "overlap" in str(err)


def test_error_nvlink_on_gpu_without_nvlink(tmp_path):
    err = _error(tmp_path, "gpus: {model: L40S, count: 4}\nnvlink: all\n")
    assert err.line == 2
    assert "no NVLink" in str(err)


def test_error_nvlink_bad_shape(tmp_path):
    err = _error(tmp_path, "gpus: {model: H100, count: 8}\nnvlink:\n  - [0, 1]\n  - 3\n")
    assert err.line == 4


def test_error_unknown_key(tmp_path):
    err = _error(tmp_path, "gpus: {model: L4, count: 1}\ncpu_cores: 8\nram_gb: 32\n")
    assert err.line == 3 and err.col == 1
    assert "unknown key 'ram_gb'" in str(err) and "ram_gib" in str(err)


def test_error_unknown_nested_key(tmp_path):
    err = _error(tmp_path, "gpus:\n  model: L4\n  count: 1\n  memory: 22\n")
    assert err.line == 4
    assert "memory" in str(err)


def test_error_missing_key(tmp_path):
    err = _error(tmp_path, "cpu_cores: 8\n")
    assert "gpus" in str(err)


def test_error_multinode_without_network(tmp_path):
    err = _error(tmp_path, "gpus: {model: H100, count: 8}\nnodes: 2\n")
    assert err.line == 2
    assert "network" in str(err)


def test_error_bad_network(tmp_path):
    err = _error(tmp_path, "gpus: {model: H100, count: 8}\nnodes: 2\nnetwork: infiniband\n")
    assert err.line == 3


def test_error_duplicate_key(tmp_path):
    err = _error(tmp_path, "gpus: {model: H100, count: 8}\ncpu_cores: 8\ncpu_cores: 16\n")
    assert err.line == 3
    assert "duplicate" in str(err)


def test_error_invalid_yaml(tmp_path):
    err = _error(tmp_path, "gpus: {model: H100, count: 8\nnvlink: all\n")
    assert "invalid YAML" in str(err)


def test_error_not_a_mapping(tmp_path):
    err = _error(tmp_path, "- H100\n")
    assert err.line == 1
    err = _error(tmp_path, "")
    assert "empty" in str(err)


def test_several_errors_are_all_reported(tmp_path):
    err = _error(tmp_path, "gpus: {model: L4, count: 1}\ncpu_cores: many\nram_gib: lots\n")
    lines = str(err).splitlines()
    assert len(lines) == 2
    assert lines[0].split(":")[1] == "2" and lines[1].split(":")[1] == "3"


def test_unknown_builtin_name():
    with pytest.raises(HardwareError) as info:
        load_hardware("8xH100")
    assert "did you mean" in str(info.value) and "8xH100-SXM" in str(info.value)


def test_missing_file():
    with pytest.raises(HardwareError) as info:
        load_hardware("no/such/hardware.yaml")
    assert "not found" in str(info.value)


def test_machine_model_validates_directly():
    m = validate_machine({"name": "x", "gpus": {"model": "A100-80GB", "count": 2}, "nvlink": [[0, 1]]})
    assert m.gpu.id == "A100-SXM-80GB"
    assert m.to_descriptor()["gpus"] == {"model": "A100-80GB", "count": 2}
    with pytest.raises(ValueError):
        validate_machine({"gpus": {"model": "A100-80GB", "count": 2}, "nvlink": [[0, 2]]})


def test_machine_yaml_round_trips(tmp_path):
    machines = list(builtin_machines().values())
    machines.append(
        validate_machine(
            {
                "name": "yes",  # YAML 1.1 would read a plain `yes` as True
                "gpus": {"model": "H100", "count": 8, "memory_gib": 79.2},
                "nvlink": "all",
                "nodes": 2,
                "network": "ib-400gx8",
                "notes": "quoted: # not a comment",
            }
        )
    )
    for m in machines:
        path = tmp_path / "rt.yaml"
        path.write_text(machine_yaml(m))
        assert load_hardware(str(path)) == m, machine_yaml(m)
    assert load_hardware("8xV100-32GB").memory_gib == 32.0
