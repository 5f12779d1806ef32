"""Run facts at their edges: which accelerate section is in force, one strategy, DataParallel, strict counts,
native DeepSpeed batches, model-parallel dimensions, --exclude, TrainingArguments defaults, Slurm
node counts, messages, and the assumed sequence length."""

from __future__ import annotations

from pathlib import Path

from advisor.core.provenance import Value
from advisor.facts.counts import count, count_value

TRAIN = {"train.py": "print('train')\n"}
MODEL = "--model_name_or_path meta-llama/Llama-3.2-1B --bf16 True --per_device_train_batch_size 4"


def launch(cmd: str, **extra: str) -> dict[str, str]:
    return {"launch.sh": "#!/bin/bash\n" + cmd + "\n", **TRAIN, **extra}


ZERO3 = (
    "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\nnum_processes: 8\n"
    "deepspeed_config:\n  zero_stage: 3\n  offload_optimizer_device: none\n"
)


# 1. the accelerate section that is in force
def test_multi_gpu_flag_turns_off_the_zero3_section(run_facts_of) -> None:
    run = run_facts_of(
        launch(
            f"accelerate launch --config_file acc.yaml --multi_gpu train.py {MODEL}", **{"acc.yaml": ZERO3}
        ),
        run="launch.sh",
    )["run"]
    assert run.strategy == "ddp" and run.zero_stage is None


def test_fsdp_offload_flag_on_a_deepspeed_config_is_not_offload(run_facts_of) -> None:
    run = run_facts_of(
        launch(
            f"accelerate launch --config_file acc.yaml --fsdp_offload_params true train.py {MODEL}",
            **{"acc.yaml": ZERO3},
        ),
        run="launch.sh",
    )["run"]
    assert run.strategy == "zero3" and run.offload is False


# 2. one source of truth for the strategy
def test_script_zero_stage_flag_is_the_run_strategy(run_facts_of) -> None:
    names = run_facts_of(
        launch(f"deepspeed main.py --zero_stage 2 {MODEL} --max_seq_len 512", **{"main.py": "print(1)\n"}),
        hardware="8xH100-SXM",
        run="launch.sh",
    )
    assert names["run"].strategy == "zero2"
    assert names["estimates"].strategy == "zero2"


def test_llamafactory_v1_dist_config_fsdp_is_the_run_strategy(run_facts_of) -> None:
    cfg = "model: meta-llama/Llama-3.2-1B\ncutoff_len: 1024\ndist_config:\n  name: fsdp2\n"
    names = run_facts_of(launch("llamafactory-cli train cfg.yaml", **{"cfg.yaml": cfg}), run="launch.sh")
    assert names["run"].strategy == "fsdp"


def test_deepspeed_launcher_without_config_has_an_unknown_strategy(run_facts_of) -> None:
    run = run_facts_of(launch(f"deepspeed train.py {MODEL}"), hardware="8xH100-SXM", run="launch.sh")["run"]
    assert run.strategy is None and "ZeRO stage is unknown" in run.entry("strategy").unknown


# 3. plain python with the HF Trainer on several GPUs: nn.DataParallel
def test_plain_python_dataparallel_multiplies_the_batch(run_facts_of) -> None:
    batch = run_facts_of(
        launch(f"python train.py {MODEL} --gradient_accumulation_steps 2"), hardware="8xH100-SXM"
    )["batch"]
    assert batch.world_size == 1 and batch.dataparallel_gpus == 8
    assert batch.effective_batch == 4 * 8 * 2 and batch.pinned is False
    assert "nn.DataParallel" in batch.follows


def test_plain_python_masked_to_two_gpus_is_pinned(run_facts_of) -> None:
    batch = run_facts_of(launch(f"CUDA_VISIBLE_DEVICES=0,1 python train.py {MODEL}"), hardware="8xH100-SXM")[
        "batch"
    ]
    assert batch.effective_batch == 8 and batch.pinned is True


# 4. strict counts
def test_counts_are_whole_numbers_of_at_least_one() -> None:
    assert [count(Value(x, None, "launch")) for x in (1, "8", 1.5, "1e3", 0, -2, True, 8.0)] == [
        1,
        8,
        None,
        None,
        None,
        None,
        None,
        None,
    ]
    bad = count_value(Value(0, None, "accelerate"), "num_machines")
    assert bad.unknown == "num_machines 0 is not a positive whole number"


def test_zero_machines_makes_the_world_size_unknown(run_facts_of) -> None:
    acc = "distributed_type: MULTI_GPU\nnum_machines: 0\nnum_processes: 8\n"
    batch = run_facts_of(
        launch(f"accelerate launch --config_file acc.yaml train.py {MODEL}", **{"acc.yaml": acc})
    )["batch"]
    assert batch.world_size is None
    assert "num_machines 0 is not a positive whole number" in batch.entry("world_size").unknown


def test_fractional_accumulation_is_unknown(run_facts_of) -> None:
    batch = run_facts_of(
        launch(f"torchrun --nproc_per_node 8 train.py {MODEL} --gradient_accumulation_steps 1e3")
    )["batch"]
    assert batch.accumulation is None and batch.effective_batch is None
    assert "1000.0" in batch.entry("effective_batch").unknown


# 5. native DeepSpeed batch
def test_native_deepspeed_batch_from_the_derivation(run_facts_of) -> None:
    ds = '{"train_batch_size": 256, "gradient_accumulation_steps": 1, "zero_optimization": {"stage": 2}}\n'
    batch = run_facts_of(
        launch(
            "deepspeed --num_gpus 8 main.py --deepspeed_config ds.json", **{"ds.json": ds, "main.py": "x\n"}
        ),
        run="launch.sh",
    )["batch"]
    assert batch.deepspeed_consumer == "native"
    assert batch.per_device == 32 and batch.accumulation == 1 and batch.effective_batch == 256


# 6. the same model-parallel dimension written twice counts once
def test_sequence_parallel_written_twice_counts_once(run_facts_of) -> None:
    acc = (
        "distributed_type: DEEPSPEED\nnum_processes: 8\n"
        "parallelism_config:\n  parallelism_config_sp_size: 4\n"
        "deepspeed_config:\n  deepspeed_config_file: ds.json\n"
    )
    ds = '{"sequence_parallel_size": 4, "zero_optimization": {"stage": 3}}\n'
    batch = run_facts_of(
        launch(
            f"accelerate launch --config_file acc.yaml train.py {MODEL}", **{"acc.yaml": acc, "ds.json": ds}
        ),
        run="launch.sh",
    )["batch"]
    assert batch.model_parallel_size == 4 and batch.dp_size == 2


# 7. deepspeed --exclude
def test_deepspeed_exclude_takes_gpus_away(run_facts_of) -> None:
    ds = '{"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2}}\n'
    batch = run_facts_of(
        launch(f"deepspeed --exclude localhost:0,1 train.py --deepspeed ds.json {MODEL}", **{"ds.json": ds}),
        hardware="8xH100-SXM",
        run="launch.sh",
    )["batch"]
    assert batch.world_size == 6 and batch.pinned is False
    assert "except GPU 0,1" in batch.follows and "takes every GPU" not in batch.follows


# 8. no invented batch
def test_bare_accelerate_config_gets_no_training_defaults(run_facts_of) -> None:
    names = run_facts_of({"acc.yaml": "distributed_type: MULTI_GPU\nnum_processes: 8\n"})
    batch = names["batch"]
    assert names["training"].reads_training_arguments is False
    assert batch.per_device is None and batch.effective_batch is None
    assert "reads no TrainingArguments" in batch.entry("effective_batch").unknown


# 9. Slurm node counts from #SBATCH
def test_accelerate_slurm_example_takes_nodes_from_sbatch(run_facts_of, corpus: Path) -> None:
    text = (corpus / "launch" / "huggingface__accelerate__examples__slurm__submit_multinode.sh").read_text()
    batch = run_facts_of({"launch.sh": text})["batch"]
    assert batch.nodes == 4 and batch.world_size == 16
    assert batch.entry("nodes").origin.line == 7  # the #SBATCH --nodes=4 line
    assert "#SBATCH --nodes 4" in batch.entry("nodes").note


def test_torchrun_nnodes_from_sbatch(run_facts_of) -> None:
    script = (
        "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=8\n"
        "srun torchrun --nnodes $SLURM_NNODES --nproc_per_node $SLURM_GPUS_ON_NODE train.py " + MODEL + "\n"
    )
    batch = run_facts_of({"launch.sh": script, **TRAIN})["batch"]
    assert batch.nodes == 2 and batch.processes_per_node == 8 and batch.world_size == 16


def test_handbook_slurm_without_sbatch_nodes_stays_unknown(facts_of, corpus: Path) -> None:
    text = (corpus / "launch" / "huggingface__alignment-handbook__recipes__launch.slurm").read_text()
    batch = facts_of({"launch.slurm": text}, run="launch.slurm:168")["batch"]
    # no #SBATCH --nodes: the count is given to sbatch at submission, so it stays unknown
    assert batch.world_size is None and "SLURM_NNODES" in batch.entry("world_size").unknown


# 10. messages
def test_num_processes_list_is_invalid_not_missing(run_facts_of) -> None:
    acc = "distributed_type: MULTI_GPU\nnum_processes: [1]\n"
    batch = run_facts_of(
        launch(f"accelerate launch --config_file acc.yaml train.py {MODEL}", **{"acc.yaml": acc})
    )["batch"]
    why = batch.entry("processes_per_node").unknown
    assert "num_processes [1] is not a positive whole number" in why and "sets no" not in why


def test_empty_gpu_ids_selects_no_zero_gpus(run_facts_of) -> None:
    acc = 'distributed_type: MULTI_GPU\nnum_processes: 2\ngpu_ids: ""\n'
    batch = run_facts_of(
        launch(f"accelerate launch --config_file acc.yaml train.py {MODEL}", **{"acc.yaml": acc}),
        hardware="8xH100-SXM",
    )["batch"]
    assert batch.visible_gpus is None and batch.world_size == 2


# 11. the assumed sequence length
def test_missing_sequence_length_is_a_stated_assumption(run_facts_of) -> None:
    est = run_facts_of(launch(f"torchrun --nproc_per_node 8 train.py {MODEL}"), hardware="8xH100-SXM")[
        "estimates"
    ]
    assert est.known is True and est.seq_len == 2048
    assert any("assumed 2048 tokens" in a for a in est.input_assumptions)
