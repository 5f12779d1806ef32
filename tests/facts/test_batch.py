"""Batch arithmetic across launchers (config-formats.md §2), DeepSpeed's own batch derivation
(§3.1), and accumulation/micro-batch written in two places (HF's "ds X vs hf Y", §2.3 and §3.3)."""

from __future__ import annotations

import pytest

from advisor.facts.deepspeed_batch import deepspeed_batch, deepspeed_valid_world_sizes
from advisor.facts.gpu_visibility import parse_gpu_list
from advisor.facts.world_size import counts_gpus_at_run_time

TRAIN = {"train.py": "print('train')\n"}


def launch(cmd: str, **extra: str) -> dict[str, str]:
    return {"launch.sh": "#!/bin/bash\n" + cmd + "\n", **TRAIN, **extra}


# --- process counts, launcher by launcher -----------------------------------------------------


def test_accelerate_num_processes_is_the_total_over_machines(run_facts_of) -> None:
    acc = "distributed_type: MULTI_GPU\nnum_machines: 2\nnum_processes: 16\n"
    batch = run_facts_of(
        launch(
            "accelerate launch --config_file acc.yaml train.py --per_device_train_batch_size 4",
            **{"acc.yaml": acc},
        )
    )["batch"]
    assert batch.processes_per_node == 8 and batch.nodes == 2 and batch.world_size == 16
    assert batch.effective_batch == 4 * 1 * 16
    assert batch.pinned is True


def test_accelerate_flag_beats_the_config_file(run_facts_of) -> None:
    acc = "distributed_type: MULTI_GPU\nnum_processes: 8\n"
    batch = run_facts_of(
        launch(
            "accelerate launch --config_file acc.yaml --num_processes=1 train.py "
            "--per_device_train_batch_size 4",
            **{"acc.yaml": acc},
        )
    )["batch"]
    assert batch.world_size == 1  # alignment-handbook's QLoRA recipes override the file's 8 this way


def test_accelerate_without_config_takes_every_visible_gpu(run_facts_of) -> None:
    batch = run_facts_of(
        launch("accelerate launch train.py --per_device_train_batch_size 2"), hardware="8xH100-SXM"
    )["batch"]
    assert batch.world_size == 8 and batch.pinned is False
    assert "one process per visible GPU" in batch.follows


def test_accelerate_without_config_and_without_hardware_is_unknown(run_facts_of) -> None:
    batch = run_facts_of(launch("accelerate launch train.py --per_device_train_batch_size 2"))["batch"]
    assert batch.world_size is None and batch.pinned is False


def test_cuda_visible_devices_in_the_script_pins_the_count(run_facts_of) -> None:
    batch = run_facts_of(
        launch("CUDA_VISIBLE_DEVICES=0,1 accelerate launch train.py --per_device_train_batch_size 2"),
        hardware="8xH100-SXM",
    )["batch"]
    assert batch.world_size == 2 and batch.pinned is True
    assert batch.visible_gpus == [0, 1] and batch.selected_via == "CUDA_VISIBLE_DEVICES"


def test_named_but_missing_accelerate_config_is_unknown_not_every_gpu(facts_of) -> None:
    batch = facts_of(
        launch("accelerate launch --config_file configs/missing.yaml train.py"), hardware="8xH100-SXM"
    )["batch"]
    assert batch.world_size is None
    assert batch.pinned is True  # GA004 reports the missing file; GA104 must not guess


def test_torchrun_defaults_to_one_process(run_facts_of) -> None:
    batch = run_facts_of(launch("torchrun train.py --per_device_train_batch_size 4"), hardware="8xH100-SXM")[
        "batch"
    ]
    assert batch.world_size == 1 and batch.pinned is True


@pytest.mark.parametrize("value", ["gpu", "auto"])
def test_torchrun_nproc_gpu_follows_the_machine(run_facts_of, value: str) -> None:
    batch = run_facts_of(launch(f"torchrun --nproc_per_node {value} train.py"), hardware="4xH100-NVL")[
        "batch"
    ]
    assert batch.world_size == 4 and batch.pinned is False


def test_torchrun_nnodes_range_takes_the_maximum(run_facts_of) -> None:
    batch = run_facts_of(launch("torchrun --nnodes 1:4 --nproc_per_node 8 train.py"))["batch"]
    assert batch.nodes == 4 and batch.world_size == 32


def test_nproc_from_device_count_follows_the_machine(run_facts_of) -> None:
    script = (
        "GPUS_PER_NODE=$(python -c 'import torch; print(torch.cuda.device_count())')\n"
        "torchrun --nproc_per_node $GPUS_PER_NODE train.py --per_device_train_batch_size 1"
    )
    names = run_facts_of(launch(script), hardware="8xH100-SXM")
    batch = names["batch"]
    assert batch.world_size == 8 and batch.pinned is False
    assert "device_count" in batch.follows


def test_nproc_from_a_script_argument_is_unknown_and_pinned(run_facts_of) -> None:
    batch = run_facts_of(
        launch("NUM_GPUS=$1\ntorchrun --nproc_per_node $NUM_GPUS train.py"), hardware="8xH100-SXM"
    )["batch"]
    assert batch.world_size is None and batch.pinned is True  # the caller chooses it


def test_deepspeed_launcher_takes_every_gpu(run_facts_of) -> None:
    batch = run_facts_of(
        launch("deepspeed train.py --per_device_train_batch_size 16"), hardware="8xH100-SXM"
    )["batch"]
    assert batch.world_size == 8 and batch.pinned is False


def test_deepspeed_launcher_honours_cuda_visible_devices_without_filters(run_facts_of) -> None:
    batch = run_facts_of(launch("CUDA_VISIBLE_DEVICES=0,1 deepspeed train.py"), hardware="8xH100-SXM")[
        "batch"
    ]
    assert batch.world_size == 2 and batch.visible_gpus == [0, 1]


def test_deepspeed_num_gpus_drops_cuda_visible_devices(run_facts_of) -> None:
    # runner.py: "Detected VISIBLE_DEVICES=0,1 but ignoring it because ... --num_gpus ..."
    batch = run_facts_of(
        launch("CUDA_VISIBLE_DEVICES=0,1 deepspeed --num_gpus 4 train.py"), hardware="8xH100-SXM"
    )["batch"]
    assert batch.world_size == 4 and batch.visible_gpus is None


def test_deepspeed_include_selects_gpus(run_facts_of) -> None:
    batch = run_facts_of(launch("deepspeed --include localhost:2,3 train.py"), hardware="4xH100-NVL")["batch"]
    assert batch.visible_gpus == [2, 3] and batch.world_size == 2 and batch.selected_via == "include"


def test_accelerate_gpu_ids_are_relative_to_the_mask(run_facts_of) -> None:
    acc = "distributed_type: MULTI_GPU\nnum_processes: 2\ngpu_ids: 0,1\n"
    batch = run_facts_of(
        launch(
            "CUDA_VISIBLE_DEVICES=2,3 accelerate launch --config_file acc.yaml train.py", **{"acc.yaml": acc}
        )
    )["batch"]
    assert batch.visible_gpus == [2, 3]


def test_llamafactory_uses_every_visible_gpu_unless_nproc_per_node(run_facts_of) -> None:
    lf = (
        "stage: sft\nfinetuning_type: lora\nper_device_train_batch_size: "
        "1\ngradient_accumulation_steps: 8\noutput_dir: out\n"
    )
    batch = run_facts_of({"sft.yaml": lf}, hardware="8xH100-SXM")["batch"]
    assert batch.effective_batch == 64 and batch.pinned is False
    batch = run_facts_of(
        launch("NPROC_PER_NODE=2 llamafactory-cli train sft.yaml", **{"sft.yaml": lf}),
        hardware="8xH100-SXM",
        run="launch.sh",
    )["batch"]
    assert batch.world_size == 2 and batch.pinned is True


@pytest.mark.parametrize(
    ("parallelism", "dp"),
    [
        ("  parallelism_config_tp_size: 2\n", 4),
        ("  parallelism_config_cp_size: 2\n", 4),
        ("  parallelism_config_sp_size: 4\n", 2),
        ("  parallelism_config_tp_size: 2\n  parallelism_config_cp_size: 2\n", 2),
    ],
)
def test_tp_cp_sp_divide_the_data_parallel_size(run_facts_of, parallelism: str, dp: int) -> None:
    acc = "distributed_type: FSDP\nnum_processes: 8\nparallelism_config:\n" + parallelism
    batch = run_facts_of(
        launch(
            "accelerate launch --config_file acc.yaml train.py --per_device_train_batch_size 2",
            **{"acc.yaml": acc},
        )
    )["batch"]
    assert batch.world_size == 8 and batch.dp_size == dp
    assert batch.effective_batch == 2 * dp


def test_python_is_one_process(run_facts_of) -> None:
    batch = run_facts_of(launch("CUDA_VISIBLE_DEVICES=0,1 python train.py --per_device_train_batch_size 2"))[
        "batch"
    ]
    assert batch.world_size == 1


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("$(nvidia-smi -L | wc -l)", True),
        ("`nvidia-smi --list-gpus | wc -l`", True),
        ("$(python -c 'import torch; print(torch.cuda.device_count())')", True),
        ("$1", False),
        ("8", False),
    ],
)
def test_counts_gpus_at_run_time(raw: str, expected: bool) -> None:
    assert counts_gpus_at_run_time(raw, {}) is expected


def test_counts_gpus_at_run_time_follows_variables() -> None:
    class W:
        def __init__(self, raw: str) -> None:
            self.raw = raw

    variables = {"N": W("$GPUS"), "GPUS": W("$(nvidia-smi -L | wc -l)")}
    assert counts_gpus_at_run_time("$N", variables)
    assert not counts_gpus_at_run_time("$OTHER", variables)


def test_parse_gpu_list() -> None:
    assert parse_gpu_list("0,1, 3") == [0, 1, 3]
    assert parse_gpu_list("all") is None and parse_gpu_list(None) is None
    assert parse_gpu_list("GPU-8932f937") is None
    assert parse_gpu_list(2) == [2]


# --- DeepSpeed's batch derivation (runtime/config.py, config-formats.md §3.1) -----------------


def test_all_three_given_are_checked_as_written() -> None:
    assert deepspeed_batch(32, 4, 2, 4).error is None
    err = deepspeed_batch(32, 4, 2, 2).error
    assert err is not None and "32 != 4 * 2 * 2" in err


def test_train_and_micro_derive_accumulation_by_floor_division() -> None:
    r = deepspeed_batch(24, 3, None, 16)  # DeepSpeedExamples BingBertSquad on 16 GPUs
    assert r.gas == 0 and r.error == "Gradient accumulation steps: 0 has to be greater than 0"
    assert deepspeed_batch(24, 3, None, 8).error is None
    r = deepspeed_batch(24, 3, None, 3)  # 24 // 3 // 3 = 2, 3 * 2 * 3 = 18
    assert r.gas == 2 and "24 != 3 * 2 * 3" in r.error


def test_train_and_accumulation_derive_micro() -> None:
    r = deepspeed_batch(256, None, 1, 3)  # imagenet config: 256 // 3 = 85
    assert r.micro == 85 and "256 != 85 * 1 * 3" in r.error
    assert deepspeed_batch(256, None, 1, 8).micro == 32


def test_micro_and_accumulation_derive_train() -> None:
    r = deepspeed_batch(None, 4, 2, 6)
    assert r.train == 48 and r.error is None


def test_only_train_or_only_micro() -> None:
    assert deepspeed_batch(64, None, None, 4) == deepspeed_batch(64, 16, 1, 4)
    r = deepspeed_batch(None, 8, None, 3)
    assert (r.train, r.gas, r.error) == (24, 1, None)


def test_neither_train_nor_micro_is_an_assertion() -> None:
    assert (
        "Either train_batch_size or train_micro_batch_size_per_gpu" in deepspeed_batch(None, None, 4, 2).error
    )


def test_only_divides_at_some_world_sizes() -> None:
    assert deepspeed_valid_world_sizes(32, 32, None, upto=64) == [1]  # cifar random-LTD
    assert deepspeed_valid_world_sizes(24, 3, None, upto=64) == [1, 2, 4, 8]
    assert deepspeed_valid_world_sizes(256, None, 1, upto=16) == [1, 2, 4, 8, 16]
    assert len(deepspeed_valid_world_sizes(None, 4, 2, upto=64)) == 64  # derives train: any size


def test_deepspeed_problem_for_a_native_run(run_facts_of) -> None:
    names = run_facts_of(
        launch(
            "deepspeed --num_gpus 16 train.py --deepspeed_config ds.json",
            **{"ds.json": '{"train_batch_size": 24, "train_micro_batch_size_per_gpu": 3}\n'},
        )
    )
    [item] = names["batch"].deepspeed_problems
    assert item["kind"] == "fails" and item["severity"] == "error" and item["world"] == 16
    assert "24 // 3 // 16 = 0" in item["detail"] and item["valid_worlds"] == [1, 2, 4, 8]


def test_deepspeed_file_alone_lists_the_world_sizes_it_holds_at(run_facts_of) -> None:
    names = run_facts_of({"ds.json": '{"train_batch_size": 256, "gradient_accumulation_steps": 1}\n'})
    [item] = names["batch"].deepspeed_problems
    assert item["kind"] == "only_at" and item["severity"] == "info"  # every power of two up to 64 works
    names = run_facts_of({"ds.json": '{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 32}\n'})
    [item] = names["batch"].deepspeed_problems
    assert item["valid_worlds"] == [1] and item["severity"] == "warning"


def test_auto_values_are_left_to_the_hf_trainer(run_facts_of) -> None:
    ds = (
        '{"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", '
        '"gradient_accumulation_steps": "auto"}\n'
    )
    names = run_facts_of({"ds.json": ds})
    assert names["batch"].deepspeed_problems == []
    names = run_facts_of(
        launch(
            "torchrun --nproc_per_node 4 train.py --deepspeed ds.json --per_device_train_batch_size 2",
            **{"ds.json": ds},
        ),
        run="launch.sh",
    )
    assert names["batch"].deepspeed_consumer == "hf" and names["batch"].deepspeed_problems == []


def test_fixed_train_batch_against_the_trainer(run_facts_of) -> None:
    ds = (
        '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": "auto", '
        '"gradient_accumulation_steps": "auto"}\n'
    )
    names = run_facts_of(
        launch(
            "torchrun --nproc_per_node 4 train.py --deepspeed ds.json "
            "--per_device_train_batch_size 2 --gradient_accumulation_steps 4",
            **{"ds.json": ds},
        ),
        run="launch.sh",
    )
    [item] = names["batch"].deepspeed_problems
    assert item["kind"] == "hf_mismatch" and item["expected"] == 32
    assert "ds train_batch_size=64 vs hf train_batch_size (calculated)=32" in item["detail"]


# --- accumulation and micro-batch written twice (GA103) ----------------------------------------

ZERO1 = (
    "distributed_type: DEEPSPEED\nnum_processes: 8\ndeepspeed_config:\n  "
    "gradient_accumulation_steps: 1\n  zero_stage: 1\n"
)


def test_accelerate_accumulation_against_training_arguments(run_facts_of) -> None:
    names = run_facts_of(
        launch(
            "accelerate launch --config_file acc.yaml train.py --gradient_accumulation_steps 8",
            **{"acc.yaml": ZERO1},
        )
    )
    [item] = names["batch"].conflicts
    assert item["detail"] == "ds gradient_accumulation_steps=1 vs hf gradient_accumulation_steps=8"
    assert item["kind"] == "accelerate" and item["location"].line == 4


def test_training_arguments_default_counts_against_the_deepspeed_file(run_facts_of) -> None:
    ds = '{"gradient_accumulation_steps": 4, "zero_optimization": {"stage": 2}}\n'
    names = run_facts_of(
        launch(
            "torchrun --nproc_per_node 2 train.py --deepspeed ds.json --output_dir out", **{"ds.json": ds}
        ),
        run="launch.sh",
    )
    [item] = names["batch"].conflicts
    assert item["detail"] == "ds gradient_accumulation_steps=4 vs hf gradient_accumulation_steps=1"
    assert item["hf_default"] is True


def test_string_eight_is_not_the_number_eight(run_facts_of) -> None:
    # hiyouga/LlamaFactory#1116: "ds gradient_accumulation_steps=8 vs hf gradient_accumulation_steps=8"
    ds = '{"gradient_accumulation_steps": "8", "zero_optimization": {"stage": 2}}\n'
    names = run_facts_of(
        launch(
            "torchrun --nproc_per_node 2 train.py --deepspeed ds.json --gradient_accumulation_steps 8",
            **{"ds.json": ds},
        ),
        run="launch.sh",
    )
    [item] = names["batch"].conflicts
    assert item["string"] is True
    assert item["detail"] == "ds gradient_accumulation_steps=8 vs hf gradient_accumulation_steps=8"


def test_micro_batch_against_per_device(run_facts_of) -> None:
    ds = (
        '{"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": "auto", '
        '"zero_optimization": {"stage": 2}}\n'
    )
    names = run_facts_of(
        launch(
            "torchrun --nproc_per_node 2 train.py --deepspeed ds.json --per_device_train_batch_size 2",
            **{"ds.json": ds},
        ),
        run="launch.sh",
    )
    [item] = names["batch"].conflicts
    assert item["detail"] == "ds train_micro_batch_size_per_gpu=4 vs hf per_device_train_batch_size=2"


@pytest.mark.parametrize("value", ['"auto"', "8"])
def test_auto_or_equal_is_no_conflict(run_facts_of, value: str) -> None:
    ds = '{"gradient_accumulation_steps": ' + value + ', "zero_optimization": {"stage": 2}}\n'
    names = run_facts_of(
        launch(
            "torchrun --nproc_per_node 2 train.py --deepspeed ds.json --gradient_accumulation_steps 8",
            **{"ds.json": ds},
        ),
        run="launch.sh",
    )
    assert names["batch"].conflicts == []


def test_native_deepspeed_has_no_trainer_to_disagree_with(run_facts_of) -> None:
    ds = '{"gradient_accumulation_steps": 4, "train_micro_batch_size_per_gpu": 2}\n'
    names = run_facts_of(
        launch("deepspeed --num_gpus 2 train.py --deepspeed_config ds.json", **{"ds.json": ds}),
        run="launch.sh",
    )
    assert names["batch"].deepspeed_consumer == "native" and names["batch"].conflicts == []


def test_accelerate_accumulation_beside_a_deepspeed_file(run_facts_of) -> None:
    acc = (
        "distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  deepspeed_config_file: ds.json\n"
        "  gradient_accumulation_steps: 4\n"
    )
    ds = '{"gradient_accumulation_steps": "auto", "zero_optimization": {"stage": 2}}\n'
    names = run_facts_of(
        launch(
            "accelerate launch --config_file acc.yaml train.py --gradient_accumulation_steps 4",
            **{"acc.yaml": acc, "ds.json": ds},
        ),
        run="launch.sh",
    )
    kinds = [i["kind"] for i in names["batch"].conflicts]
    assert kinds == ["accelerate_with_file"]


# --- start failures: split_batches, online RL generation batches, vLLM's share ------------------


def test_split_batches_divides_the_batch_over_processes(run_facts_of) -> None:
    # accelerate/data_loader.py:1284: each process gets batch_size // num_processes
    args = "output_dir: o\nper_device_train_batch_size: 8\ngradient_accumulation_steps: 2\n"
    args += "accelerator_config:\n  split_batches: true\n"
    batch = run_facts_of(
        launch("accelerate launch --num_processes 4 train.py args.yaml", **{"args.yaml": args})
    )["batch"]
    assert batch.effective_batch == 8 * 2  # not x 4 processes
    assert batch.split_problems == []


def test_split_batches_not_divisible_is_a_start_failure(run_facts_of) -> None:
    args = "output_dir: o\nper_device_train_batch_size: 6\naccelerator_config:\n  split_batches: true\n"
    batch = run_facts_of(
        launch("accelerate launch --num_processes 4 train.py args.yaml", **{"args.yaml": args})
    )["batch"]
    (problem,) = batch.split_problems
    assert (problem["batch"], problem["processes"]) == (6, 4)
    assert (problem["location"].line, problem["location"].col) == (2, 30)


GRPO_SCRIPT = {"grpo.py": "from trl import GRPOConfig, GRPOTrainer\n"}


@pytest.mark.parametrize(
    ("processes", "per_device", "accum", "generations", "fails"),
    [
        (7, 2, 4, 16, True),  # open-r1 on 8 GPUs with one serving vLLM: 56 % 16
        (8, 2, 4, 16, False),
        (7, 16, 4, 14, False),  # 448 % 14 == 0
        (8, 16, 4, 14, True),
    ],
)
def test_grpo_generation_batch_divides_by_num_generations(
    run_facts_of, processes: int, per_device: int, accum: int, generations: int, fails: bool
) -> None:
    cfg = (
        f"output_dir: o\nper_device_train_batch_size: {per_device}\ngradient_accumulation_steps: {accum}\n"
        f"num_generations: {generations}\n"
    )
    cmd = f"accelerate launch --num_processes {processes} grpo.py --config grpo.yaml"
    batch = run_facts_of({**launch(cmd, **{"grpo.yaml": cfg}), **GRPO_SCRIPT})["batch"]
    assert batch.generation["generation_batch_size"] == per_device * processes * accum
    assert [p["kind"] for p in batch.generation_problems] == (["generation_batch"] if fails else [])


def test_grpo_eval_batch_is_checked_only_when_evaluating(run_facts_of) -> None:
    cfg = "output_dir: o\nper_device_train_batch_size: 4\nper_device_eval_batch_size: 3\nnum_generations: 8\n"
    cmd = "accelerate launch --num_processes 2 grpo.py --config grpo.yaml"
    quiet = run_facts_of({**launch(cmd, **{"grpo.yaml": cfg}), **GRPO_SCRIPT})["batch"]
    assert quiet.generation_problems == []
    loud = run_facts_of(
        {**launch(cmd, **{"grpo.yaml": cfg + "do_eval: true\neval_strategy: steps\n"}), **GRPO_SCRIPT}
    )
    assert [p["kind"] for p in loud["batch"].generation_problems] == ["eval_batch"]


def test_lone_grpo_config_lists_the_process_counts_that_work(run_facts_of) -> None:
    cfg = "output_dir: o\nper_device_train_batch_size: 16\ngradient_accumulation_steps: 4\n"
    cfg += "num_generations: 14\n"
    (problem,) = run_facts_of({"grpo.yaml": cfg})["batch"].generation_problems
    assert problem["kind"] == "only_at" and problem["severity"] == "warning"
    assert problem["location"].line == 4


def test_sft_config_has_no_generation_batch(run_facts_of) -> None:
    batch = run_facts_of({"sft.yaml": "output_dir: o\nper_device_train_batch_size: 3\n"})["batch"]
    assert batch.generation == {} and batch.generation_problems == []


@pytest.mark.parametrize(
    ("extra", "usable"),
    [("", 93.6 * 0.7), ("vllm_gpu_memory_utilization: 0.5\n", 93.6 * 0.5), ("vllm_mode: server\n", 93.6)],
)
def test_colocated_vllm_takes_its_share_of_the_gpu(run_facts_of, extra: str, usable: float) -> None:
    cfg = (
        "model_name_or_path: Qwen/Qwen2.5-1.5B-Instruct\nuse_vllm: true\nnum_generations: 8\noutput_dir: o\n"
    )
    est = run_facts_of({"grpo.yaml": cfg + extra}, hardware="1xH100")["estimates"]
    assert est.gpu_memory_gib == pytest.approx(usable, abs=0.1)


@pytest.mark.parametrize(
    ("command", "device_map", "fires"),
    [
        ("torchrun --nproc_per_node 4 train.py", "'auto'", True),
        ("accelerate launch --num_processes 2 train.py", "'balanced'", True),
        ("torchrun --nproc_per_node 4 train.py", "{'': PartialState().local_process_index}", False),
        ("python train.py", "'auto'", False),  # one process: GA602's question, not a refusal
        ("torchrun --nproc_per_node 1 train.py", "'auto'", False),
    ],
)
def test_spreading_device_map_under_a_multi_process_launch(
    run_facts_of, command: str, device_map: str, fires: bool
) -> None:
    script = (
        f"from transformers import AutoModel\nm = AutoModel.from_pretrained('x', device_map={device_map})\n"
    )
    sites = run_facts_of({"launch.sh": f"#!/bin/bash\n{command}\n", "train.py": script})[
        "placement"
    ].device_map_distributed
    assert [(s["location"].line, s["location"].col) for s in sites] == (
        [(2, 47)] if fires else []
    )  # the value's column


def test_spreading_device_map_in_a_kwargs_dict(run_facts_of) -> None:
    script = "kw = {'device_map': 'auto'}\nfrom transformers import AutoModel\n"
    script += "m = AutoModel.from_pretrained('x', **kw)\n"
    files = {"launch.sh": "#!/bin/bash\ntorchrun --nproc_per_node 2 train.py\n", "train.py": script}
    sites = run_facts_of(files)["placement"].device_map_distributed
    assert [(s["location"].line, s["location"].col) for s in sites] == [(1, 21)]


def test_device_map_name_rebound_for_ddp_is_not_judged(run_facts_of) -> None:
    # qlora.py: device_map = "auto", then {"": local_rank} when WORLD_SIZE > 1
    script = (
        "import os\nfrom transformers import AutoModel\ndevice_map = 'auto'\n"
        "if int(os.environ.get('WORLD_SIZE', 1)) > 1:\n    device_map = {'': int(os.environ['LOCAL_RANK'])}\n"
        "m = AutoModel.from_pretrained('x', device_map=device_map)\n"
    )
    files = {"launch.sh": "#!/bin/bash\ntorchrun --nproc_per_node 2 train.py\n", "train.py": script}
    assert run_facts_of(files)["placement"].device_map_distributed == []
