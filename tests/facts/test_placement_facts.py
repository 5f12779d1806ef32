"""Where ranks land (rank r on visible GPU r), NVLink groups, tensor-parallel blocks, count checks."""

from __future__ import annotations

TRAIN = {"train.py": "print('train')\n"}


def launch(cmd: str, **extra: str) -> dict[str, str]:
    return {"launch.sh": "#!/bin/bash\n" + cmd + "\n", **TRAIN, **extra}


def test_pair_across_bridges(run_facts_of) -> None:
    p = run_facts_of(
        launch("CUDA_VISIBLE_DEVICES=1,2 torchrun --nproc_per_node 2 train.py"), hardware="4xH100-NVL"
    )["placement"]
    assert p.gpu_ids == [1, 2] and p.in_one_nvlink_group is False
    assert p.nvlink_group_for_job == [0, 1] and p.nvlink_groups == [[0, 1], [2, 3]]
    assert p.slowest_link == "pcie" and p.slow_interconnect is True
    assert p.partial_nvlink is True and p.proper_subset is True


def test_default_placement_takes_the_first_gpus(run_facts_of) -> None:
    p = run_facts_of(launch("torchrun --nproc_per_node 2 train.py"), hardware="4xH100-NVL")["placement"]
    assert p.gpu_ids == [0, 1] and p.in_one_nvlink_group is True and p.selected_by_index is False


def test_nvswitch_machine_is_all_one_group(run_facts_of) -> None:
    p = run_facts_of(
        launch("CUDA_VISIBLE_DEVICES=3,6 torchrun --nproc_per_node 2 train.py"), hardware="8xH100-SXM"
    )["placement"]
    assert p.in_one_nvlink_group is True and p.partial_nvlink is False and p.slow_interconnect is False


def test_four_gpus_on_pairs_cross_pcie(run_facts_of) -> None:
    p = run_facts_of(launch("torchrun --nproc_per_node 4 train.py"), hardware="4xH100-NVL")["placement"]
    assert p.slowest_link == "pcie" and p.nvlink_group_for_job is None


def test_multi_node_over_a_slow_network(run_facts_of, tmp_path) -> None:
    hw = (
        "name: 2x8xV100\ngpus: {model: V100-SXM2-32GB, count: 8}\nnvlink: all\ncpu_cores: 96\nram_gib: 768\n"
        "nodes: 2\nnetwork: eth-100g\n"
    )
    (tmp_path / "hw.yaml").write_text(hw)
    p = run_facts_of(
        launch("torchrun --nnodes 2 --nproc_per_node 8 train.py"), hardware=str(tmp_path / "hw.yaml")
    )["placement"]
    assert p.slowest_link == "network" and p.slow_interconnect is True and p.busbw_gbs < 50


def test_tensor_parallel_blocks(run_facts_of) -> None:
    acc = (
        "distributed_type: FSDP\nnum_processes: 4\nparallelism_config:\n  "
        "parallelism_config_dp_shard_size: 2\n"
        "  parallelism_config_tp_size: 2\n"
    )
    p = run_facts_of(
        launch("accelerate launch --config_file acc.yaml train.py", **{"acc.yaml": acc}),
        hardware="4xH100-NVL",
        run="launch.sh",
    )["placement"]
    assert p.tp_size == 2 and p.tp_groups == [[0, 1], [2, 3]] and p.tp_groups_over_pcie == []
    p = run_facts_of(
        launch("accelerate launch --config_file acc.yaml train.py", **{"acc.yaml": acc}),
        hardware="4xL40S",
        run="launch.sh",
    )["placement"]
    assert p.tp_groups_over_pcie == [[0, 1], [2, 3]]


def test_more_ranks_than_visible_gpus(run_facts_of) -> None:
    p = run_facts_of(launch("CUDA_VISIBLE_DEVICES=2,3 torchrun --nproc_per_node 4 train.py"))["placement"]
    [item] = p.count_problems
    assert item["kind"] == "too_many" and item["processes"] == 4 and item["visible"] == 2
    assert p.consistent is False


def test_more_ranks_than_the_machine(run_facts_of) -> None:
    p = run_facts_of(launch("torchrun --nproc_per_node 8 train.py"), hardware="4xH100-NVL")["placement"]
    assert [i["kind"] for i in p.count_problems] == ["too_many"]


def test_selected_gpus_left_idle(run_facts_of) -> None:
    p = run_facts_of(launch("CUDA_VISIBLE_DEVICES=0,1,2,3 torchrun --nproc_per_node 2 train.py"))["placement"]
    [item] = p.count_problems
    assert item["kind"] == "idle" and item["idle"] == [2, 3] and item["severity"] == "warning"
    assert p.consistent is True


def test_python_may_use_several_gpus(run_facts_of) -> None:
    p = run_facts_of(launch("CUDA_VISIBLE_DEVICES=0,1 python train.py"))["placement"]
    assert p.count_problems == []


def test_index_beyond_the_machine(run_facts_of) -> None:
    p = run_facts_of(
        launch("CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 torchrun --nproc_per_node 8 train.py"),
        hardware="4xH100-NVL",
    )["placement"]
    [item] = p.count_problems
    assert item["kind"] == "out_of_range" and item["gpus"] == [4, 5, 6, 7]
