"""Strategy, sharding, offload (run), DataLoader workers and pinned memory (data), script facts."""

from __future__ import annotations

import pytest

TRAIN = {"train.py": "print('train')\n"}


def launch(cmd: str, **extra: str) -> dict[str, str]:
    return {"launch.sh": "#!/bin/bash\n" + cmd + "\n", **TRAIN, **extra}


@pytest.mark.parametrize(
    ("fsdp_config", "sharding", "shards"),
    [
        ("  fsdp_sharding_strategy: FULL_SHARD\n", "FULL_SHARD", True),
        ("  fsdp_sharding_strategy: SHARD_GRAD_OP\n", "SHARD_GRAD_OP", False),
        ("  fsdp_sharding_strategy: 2\n", "SHARD_GRAD_OP", False),
        ("  fsdp_version: 2\n  fsdp_reshard_after_forward: false\n", "SHARD_GRAD_OP", False),
        ("  fsdp_version: 2\n  fsdp_reshard_after_forward: true\n", "FULL_SHARD", True),
        ("  fsdp_reshard_after_forward: HYBRID_SHARD\n", "HYBRID_SHARD", True),
        ("  fsdp_offload_params: false\n", "FULL_SHARD", True),
    ],
)
def test_fsdp_sharding(run_facts_of, fsdp_config: str, sharding: str, shards: bool) -> None:
    acc = "distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n" + fsdp_config
    run = run_facts_of({"acc.yaml": acc})["run"]
    assert run.strategy == "fsdp" and run.fsdp_sharding == sharding and run.shards_params is shards


def test_training_arguments_fsdp_words(run_facts_of) -> None:
    run = run_facts_of(launch('torchrun --nproc_per_node 8 train.py --fsdp "full_shard auto_wrap offload"'))[
        "run"
    ]
    assert run.strategy == "fsdp" and run.fsdp_sharding == "FULL_SHARD"
    assert run.offload is True and run.offloaded == "optimizer states and parameters"


def test_axolotl_nested_fsdp_version(run_facts_of) -> None:
    cfg = (
        "base_model: Qwen/Qwen3-8B\nmicro_batch_size: 1\nfsdp_config:\n  fsdp_version: 2\n  "
        "offload_params: false\n"
    )
    run = run_facts_of({"cfg.yaml": cfg})["run"]
    assert run.strategy == "fsdp" and run.offload is False


@pytest.mark.parametrize(
    ("zero", "stage", "shards"),
    [('{"stage": 3}', "zero3", True), ('{"stage": 2}', "zero2", False), ('{"stage": 0}', "zero0", False)],
)
def test_zero_stage(run_facts_of, zero: str, stage: str, shards: bool) -> None:
    run = run_facts_of({"ds.json": '{"zero_optimization": ' + zero + "}\n"})["run"]
    assert run.strategy == stage and run.shards_params is shards


def test_accelerate_deepspeed_defaults_to_stage_2(run_facts_of) -> None:
    run = run_facts_of({"acc.yaml": "distributed_type: DEEPSPEED\nnum_processes: 2\n"})["run"]
    assert run.strategy == "zero2"


@pytest.mark.parametrize(
    ("zero", "opt", "param"),
    [
        (
            '{"stage": 3, "offload_optimizer": {"device": "none"}, "offload_param": {"device": "none"}}',
            False,
            False,
        ),
        ('{"stage": 2, "offload_optimizer": {"device": "cpu"}}', True, False),
        ('{"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/nvme"}}', False, True),
        ('{"stage": 2, "cpu_offload": true}', True, False),
        # ZeRO-1/2 have no parameter offload: DeepSpeed hands offload_param to the stage-3 optimizer only
        # (deepspeed 0.19.8 runtime/engine.py:2670-2706 vs :2731/:2773); 01-ai/Yi's ds_utils.py writes both
        (
            '{"stage": 2, "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "cpu"}}',
            True,
            False,
        ),
        ('{"stage": 1, "offload_param": {"device": "cpu"}}', False, False),
    ],
)
def test_deepspeed_offload(run_facts_of, zero: str, opt: bool, param: bool) -> None:
    run = run_facts_of({"ds.json": '{"zero_optimization": ' + zero + "}\n"})["run"]
    assert bool(run.offload_optimizer) is opt and bool(run.offload_params) is param
    assert run.offload is (opt or param)


def test_accelerate_offload_devices_none_are_no_offload(run_facts_of) -> None:
    acc = (
        "distributed_type: DEEPSPEED\nnum_processes: 1\ndeepspeed_config:\n  offload_optimizer_device: none\n"
        "  offload_param_device: none\n  zero_stage: 3\n"
    )
    assert run_facts_of({"acc.yaml": acc})["run"].offload is False


def test_offload_fit_uses_the_estimator(run_facts_of) -> None:
    acc = (
        "distributed_type: FSDP\nnum_processes: 8\nmixed_precision: bf16\nfsdp_config:\n  "
        "fsdp_offload_params: true\n"
    )
    names = run_facts_of(
        launch(
            "accelerate launch --config_file acc.yaml train.py --model_name_or_path "
            "meta-llama/Llama-3.2-1B --per_device_train_batch_size 4 --bf16 True",
            **{"acc.yaml": acc},
        ),
        hardware="8xH100-SXM",
        run="launch.sh",
    )
    est = names["estimates"]
    assert est.model == "meta-llama/Llama-3.2-1B" and names["run"].entry("offload_fit") is None
    assert est.fits_without_offload is True and est.peak_without_offload_gib < est.gpu_memory_gib
    assert any("sequence length not set" in a for a in est.assumptions)


def test_offload_fit_is_none_without_a_model(run_facts_of) -> None:
    ds = '{"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}}\n'
    assert run_facts_of({"ds.json": ds}, hardware="8xH100-SXM")["estimates"].peak_without_offload_gib is None


def test_workers_against_cores(run_facts_of) -> None:
    names = run_facts_of(
        launch("torchrun --nproc_per_node 4 train.py --dataloader_num_workers 16"), hardware="4xL40S"
    )
    d = names["data"]
    assert d.workers == 16 and d.cpu_processes_per_node == 68 and d.cpu_cores == 48
    assert d.max_workers_per_process == 11 and d.workers_total == 64


def test_media_inputs(run_facts_of) -> None:
    d = run_facts_of(
        launch("deepspeed --num_gpus 2 train.py --image_folder imgs --dataloader_num_workers 4")
    )["data"]
    assert d.media is True
    d = run_facts_of(launch("deepspeed --num_gpus 2 train.py --dataloader_num_workers 4"))["data"]
    assert d.media is False


def test_pin_memory_and_cpu(run_facts_of) -> None:
    d = run_facts_of({"args.yaml": "output_dir: out\ndataloader_pin_memory: false\n"})["data"]
    assert d.pin_memory is False and d.on_gpu is True
    d = run_facts_of({"args.yaml": "output_dir: out\nuse_cpu: true\ndataloader_pin_memory: false\n"})["data"]
    assert d.on_gpu is False


def test_script_locations_are_relative_to_the_current_folder(facts_of) -> None:
    script = "import torch\nmodel = torch.nn.Linear(2, 2)\ntorch.save(model.state_dict(), 'm.pt')\n"
    names = facts_of(launch("torchrun --nproc_per_node 2 train.py", **{"train.py": script}))
    [item] = names["script"].unguarded_side_effects
    assert item["location"].file.as_posix() == "train.py" and item["location"].line == 3
    assert item["kind"] == "torch_save" and "each one" in item["consequence"]
