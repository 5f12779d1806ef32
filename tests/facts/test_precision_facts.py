"""Which precision each file asks for, what is in force, and how the consumers react to disagreement."""

from __future__ import annotations

TRAIN = {"train.py": "print('train')\n"}


def launch(cmd: str, **extra: str) -> dict[str, str]:
    return {"launch.sh": "#!/bin/bash\n" + cmd + "\n", **TRAIN, **extra}


def test_training_arguments_replace_accelerate(run_facts_of) -> None:
    acc = "distributed_type: FSDP\nnum_processes: 2\nmixed_precision: 'no'\n"
    names = run_facts_of(
        launch("accelerate launch --config_file acc.yaml train.py --bf16 True", **{"acc.yaml": acc})
    )
    p = names["precision"]
    assert p.training == "bf16" and p.accelerate == "fp32" and p.mode == "bf16"
    [c] = p.conflicts
    assert c["kind"] == "accelerate_vs_ta" and c["severity"] == "warning" and "'no'" in c["detail"]


def test_accelerate_is_in_force_when_training_arguments_say_nothing(run_facts_of) -> None:
    acc = "distributed_type: MULTI_GPU\nnum_processes: 2\nmixed_precision: bf16\n"
    p = run_facts_of(
        launch("accelerate launch --config_file acc.yaml train.py --output_dir out", **{"acc.yaml": acc})
    )["precision"]
    assert p.mode == "bf16" and p.conflicts == []


def test_false_flags_keep_accelerates_setting(run_facts_of) -> None:
    acc = "distributed_type: MULTI_GPU\nnum_processes: 2\nmixed_precision: bf16\n"
    p = run_facts_of(
        launch("accelerate launch --config_file acc.yaml train.py --bf16 False", **{"acc.yaml": acc})
    )["precision"]
    assert p.training == "fp32" and p.mode == "bf16"  # ACCELERATE_MIXED_PRECISION stays when both are false


def test_deepspeed_auto_follows_training_arguments(run_facts_of) -> None:
    ds = '{"fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"}, "zero_optimization": {"stage": 2}}\n'
    p = run_facts_of(
        launch("torchrun --nproc_per_node 2 train.py --deepspeed ds.json --bf16 True", **{"ds.json": ds}),
        run="launch.sh",
    )["precision"]
    assert p.deepspeed == "auto" and p.mode == "bf16" and p.conflicts == []


def test_deepspeed_fp16_against_training_arguments_bf16(run_facts_of) -> None:
    ds = '{"fp16": {"enabled": true}, "zero_optimization": {"stage": 2}}\n'
    p = run_facts_of(
        launch("torchrun --nproc_per_node 2 train.py --deepspeed ds.json --bf16 True", **{"ds.json": ds}),
        run="launch.sh",
    )["precision"]
    [c] = p.conflicts
    assert c["kind"] == "ds_vs_ta" and c["severity"] == "error"
    assert c["detail"].startswith("ds fp16.enabled=True vs hf fp16=False (the default)")


def test_deepspeed_fp16_with_trainer_fp16_is_fine(run_facts_of) -> None:
    ds = '{"fp16": {"enabled": true}, "zero_optimization": {"stage": 2}}\n'
    p = run_facts_of(
        launch("torchrun --nproc_per_node 2 train.py --deepspeed ds.json --fp16 True", **{"ds.json": ds}),
        run="launch.sh",
    )["precision"]
    assert p.conflicts == [] and p.mode == "fp16"


def test_accelerate_mixed_precision_against_deepspeed_dtype(run_facts_of) -> None:
    acc = (
        "distributed_type: DEEPSPEED\nnum_processes: 2\nmixed_precision: "
        "bf16\ndeepspeed_config:\n  deepspeed_config_file: ds.json\n"
    )
    ds = '{"fp16": {"enabled": true}, "zero_optimization": {"stage": 2}}\n'
    p = run_facts_of(
        launch("accelerate launch --config_file acc.yaml train.py", **{"acc.yaml": acc, "ds.json": ds}),
        run="launch.sh",
    )["precision"]
    kinds = {c["kind"] for c in p.conflicts}
    assert "accelerate_vs_ds" in kinds


def test_both_on_in_one_file(run_facts_of) -> None:
    p = run_facts_of({"args.yaml": "output_dir: out\nbf16: true\nfp16: true\n"}, run="args.yaml")["precision"]
    assert [c["kind"] for c in p.conflicts] == ["ta_both"]
    p = run_facts_of({"ds.json": '{"bf16": {"enabled": true}, "fp16": {"enabled": true}}\n'}, run="ds.json")[
        "precision"
    ]
    assert [c["kind"] for c in p.conflicts] == ["ds_both"]


def test_axolotl_bf16_auto_is_not_a_request(run_facts_of) -> None:
    cfg = "base_model: NousResearch/Llama-3.2-1B\nmicro_batch_size: 2\nbf16: auto\ntf32: false\n"
    p = run_facts_of({"axolotl.yml": cfg}, hardware="8xV100-32GB")["precision"]
    assert p.bf16_requests == [] and p.mode is None


def test_bf16_requests_from_every_file(run_facts_of) -> None:
    acc = (
        "distributed_type: DEEPSPEED\nnum_processes: 2\nmixed_precision: "
        "bf16\ndeepspeed_config:\n  deepspeed_config_file: ds.json\n"
    )
    ds = '{"bf16": {"enabled": true}, "zero_optimization": {"stage": 2}}\n'
    p = run_facts_of(
        launch(
            "accelerate launch --config_file acc.yaml train.py --bf16 True --tf32 True",
            **{"acc.yaml": acc, "ds.json": ds},
        ),
        run="launch.sh",
    )["precision"]
    assert sorted((r["source"], r["what"]) for r in p.bf16_requests) == [
        ("DeepSpeed", "bf16"),
        ("TrainingArguments", "bf16"),
        ("TrainingArguments", "tf32"),
        ("accelerate", "bf16"),
    ]


def test_native_deepspeed_precision(run_facts_of) -> None:
    p = run_facts_of({"ds.json": '{"train_batch_size": 8, "fp16": {"enabled": false}}\n'})["precision"]
    assert p.mode == "fp32"
    p = run_facts_of({"ds.json": '{"train_batch_size": 8, "fp16": {"enabled": true}}\n'})["precision"]
    assert p.mode == "fp16"
    p = run_facts_of({"ds.json": '{"train_batch_size": 8}\n'})["precision"]
    assert p.mode is None  # nothing written: no claim


# ---- the dtype facts the memory model reads (advisor.facts.dtypes.run_dtypes) -------------------
def test_dtype_names_are_read_like_torch_and_transformers() -> None:
    from advisor.facts.dtypes import dtype_name

    assert [dtype_name(x) for x in ("torch.bfloat16", "bfloat16", "'float16'", "half", "float", "auto")] == [
        "bf16",
        "bf16",
        "fp16",
        "fp16",
        "fp32",
        "auto",
    ]
    assert dtype_name("int8") is None and dtype_name(None) is None and dtype_name(16) is None


def test_a_literal_in_the_script_beats_the_recipe(run_facts_of) -> None:
    from advisor.facts.dtypes import load_dtype

    script = (
        "import torch\nfrom transformers import AutoModelForCausalLM\n"
        "m = AutoModelForCausalLM.from_pretrained('x', dtype=torch.float16)\n"
    )
    names = run_facts_of(
        launch("python train.py sft.yaml", **{"train.py": script, "sft.yaml": "dtype: bfloat16\n"})
    )
    fact = load_dtype(names["plan"], names, None)
    assert fact.dtype == "fp16" and (fact.origin.file.name, fact.origin.line) == ("train.py", 3)


def test_a_script_argument_defers_to_the_recipe(run_facts_of) -> None:
    from advisor.facts.dtypes import load_dtype

    script = "from transformers import AutoModelForCausalLM\n"
    script += "m = AutoModelForCausalLM.from_pretrained('x', dtype=a.dtype)\n"
    names = run_facts_of(
        launch("python train.py sft.yaml", **{"train.py": script, "sft.yaml": "torch_dtype: bfloat16\n"})
    )
    fact = load_dtype(names["plan"], names, None)
    assert fact.dtype == "bf16" and (fact.origin.file.name, fact.origin.line) == ("sft.yaml", 1)


def test_trl_defaults_bf16_on_when_fp16_is_unset(run_facts_of) -> None:
    from advisor.facts.dtypes import autocast_fact, mode_fact

    # trl 1.16 trainer/base_config.py:108: bf16 = not fp16 when unset
    names = run_facts_of({"sft.yaml": "model_name_or_path: m\nmax_length: 512\n"})
    assert mode_fact(names["plan"], names).dtype == "bf16"
    assert autocast_fact(names["plan"], names, deepspeed=True).dtype == "off"  # DeepSpeed never autocasts
    names = run_facts_of({"sft.yaml": "model_name_or_path: m\nmax_length: 512\nfp16: true\n"})
    assert mode_fact(names["plan"], names).dtype == "fp16"


def test_kbit_preparation_follows_the_trainer(run_facts_of) -> None:
    from advisor.facts.dtypes import kbit_preparation

    names = run_facts_of({"sft.yaml": "model_name_or_path: m\nload_in_4bit: true\nuse_peft: true\n"})
    assert kbit_preparation(names["plan"]).dtype == "no"  # TRL's SFTTrainer (sft_trainer.py:870)
    script = "from peft import prepare_model_for_kbit_training\nm = prepare_model_for_kbit_training(m)\n"
    names = run_facts_of(launch("python train.py", **{"train.py": script}), run="launch.sh")
    assert kbit_preparation(names["plan"]).dtype == "yes"
