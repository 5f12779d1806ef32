"""ms-swift's command line: `swift sft|pt|rlhf [CONFIG.yaml] --flags` starts torchrun itself.

Read from ms-swift 4.6.0 (the field trial's checkout was @3602360a), swift/cli/main.py: use_torchrun
(lines 30-35) starts torchrun only when NPROC_PER_NODE or NNODES is set, else plain python on the
route's file (one process, line 96); get_torchrun_args (lines 74-83) passes --nproc_per_node
$NPROC_PER_NODE, --master_port, --nnodes $NNODES, --node_rank, --master_addr; only pt, sft, rlhf
and infer go through torchrun (line 95), and infer starts no training run. parse_yaml_args (lines
38-71) reads a first argument ending in .yaml/.yml/.json as the flags' config file. The flags are
the run's training arguments (HF TrainingArguments names, ms-swift's own defaults). `--deepspeed`
also takes a preset name (zero0-zero3, zero2_offload, zero3_offload: swift/arguments/sft_args.py
lines 259-267, DEEPSPEED_PRESETS below), a file shipped inside ms-swift, not one of the project."""

from __future__ import annotations

from advisor.core.provenance import Value
from advisor.sources.launchers.counting import env_count, env_nodes
from advisor.sources.launchers.protocol import ProcessCount, RunInputs
from advisor.sources.launchers.spec import LauncherSpec, Processes

# `--deepspeed NAME` that ms-swift maps to its own swift/config/NAME.json: (ZeRO stage, offload)
DEEPSPEED_PRESETS: dict[str, tuple[int, bool]] = {
    "zero0": (0, False),
    "zero1": (1, False),
    "zero2": (2, False),
    "zero3": (3, False),
    "zero2_offload": (2, True),
    "zero3_offload": (3, True),
}

# ms-swift's route files (swift/cli/main.py ROUTE_MAPPING, lines 14-27), which scripts also start under
# torchrun or accelerate themselves (`torchrun ... swift/cli/sft.py --deepspeed zero2`)
SCRIPTS = ("swift/cli/sft.py", "swift/cli/pt.py", "swift/cli/rlhf.py")
MODULES = ("swift.cli.sft", "swift.cli.pt", "swift.cli.rlhf")

SPEC = LauncherSpec(
    name="swift",
    summary="ms-swift's command line",
    commands=(("swift",),),
    form="subcommand",
    subcommands=frozenset({"sft", "pt", "rlhf"}),
    env={
        "NPROC_PER_NODE": "torchrun --nproc_per_node; set (or NNODES set), swift starts torchrun",
        "NNODES": "torchrun --nnodes; set (or NPROC_PER_NODE set), swift starts torchrun",
        "NODE_RANK": "torchrun --node_rank",
        "MASTER_ADDR": "torchrun --master_addr",
        "MASTER_PORT": "torchrun --master_port",
    },
    processes=Processes(
        env=("NPROC_PER_NODE",), default="one process unless NPROC_PER_NODE or NNODES is set"
    ),
    source="swift/cli/main.py:30-35,74-98 (ms-swift 4.6.0)",
    own_defaults=True,
    # ms-swift 4.6.0 swift/arguments/base_args/model_args.py:68 `model`, template_args.py:130 `max_length`;
    # tuner_type (train_type before ms-swift 4) names the method as LLaMA-Factory's finetuning_type does
    # (tuner_args.py: 'lora', 'full', 'longlora', 'adalora', ...), lora_rank is the LoRA rank
    own_aliases={
        "model": "model_name_or_path",
        "max_length": "max_seq_length",
        "tuner_type": "finetuning_type",
        "train_type": "finetuning_type",
        "lora_rank": "lora_r",
    },
    route_scripts=SCRIPTS,
    route_modules=MODULES,
    deepspeed_presets=frozenset(DEEPSPEED_PRESETS),
    # compute_loss returns the loss only (the token accuracy read from outputs.logits inside it), and HF
    # Trainer's training_step calls backward after it: 4.6.0.dev0 swift/trainers/seq2seq_trainer.py:125-229
    # @3602360a; 2.1.0.dev0 swift/trainers/trainers.py compute_loss @db07118; 1.6.0.dev0 trainers.py:171-195
    # @4312aeb (Benchmark.md's runs)
    drops_outputs=(
        "ms-swift trains through its HF Trainer subclass: compute_loss returns the loss only, so the logits "
        "are freed before backward (swift/trainers/seq2seq_trainer.py:125-229; trainers.py:171-195 in 1.x)"
    ),
    # Its collator pads a batch to its longest (4.6.0.dev0 swift/template/base.py:1909-1915 _data_collator
    # @3602360a, padding_to is Megatron's only; 1.6.0.dev0 swift/llm/utils/utils.py:301-343 @4312aeb,
    # padding_to for longlora only). Its packing joins a best-fit bin of samples up to max_length into one
    # unpadded row (swift/dataset/packing.py:16-48 binpacking.to_constant_volume; template/base.py:1921-1922
    # packing_row); 2.x's ConstantLengthDataset yields max_length chunks and a shorter tail per buffer
    # (swift/llm/utils/utils.py:241 @db07118), and its use_loss_scale loss gathers only the labelled
    # positions (trainers.py compute_scaled_loss `shift_logits[masks]`), whose count varies per batch.
    varied_shapes="ms-swift pads each batch to its longest and packs bins of up to max_length unpadded",
    # its own arguments that no TrainingArguments, TRL or LLaMA-Factory class has (4.6.0.dev0 @3602360a
    # swift/arguments/base_args/base_args.py:93 tuner_type, data_args.py:79 split_dataset_ratio, :98
    # model_author; train_type before 4.x and sft_type in 1.x name the method the same way)
    config_marks=frozenset({"tuner_type", "train_type", "sft_type", "split_dataset_ratio", "model_author"}),
    attention_key="attn_impl",  # 4.6.0 swift/arguments/base_args/model_args.py:79
    packing_attention=(
        "ms-swift packing: padding_free with per-sample position_ids (template/base.py:750-768)"
    ),
)


def processes(run: RunInputs) -> ProcessCount:
    """torchrun with NPROC_PER_NODE on each of NNODES when either is set (use_torchrun), else one
    process; NNODES alone: torchrun's default of one process per node."""
    nodes = env_nodes(run)
    per_node = env_count(run, "NPROC_PER_NODE")
    if per_node is not None:
        return ProcessCount(per_node, nodes)
    note = (
        "swift starts torchrun with NNODES only: torchrun's default of 1 process per node"
        if run.env("NNODES") is not None
        else "swift starts one process unless NPROC_PER_NODE or NNODES is set"
    )
    return ProcessCount(Value(1, run.root, "launch", note=note), nodes)
