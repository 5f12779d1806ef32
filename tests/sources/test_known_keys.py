"""Key data for GA001 (wrong type), GA002 (unknown key) and GA005 (removed key).

The corpus sweep reads every training_args / accelerate / deepspeed / axolotl file of ../shared/corpus the
way its consumer reads it and checks that the keys our data calls unknown are exactly the real unknowns
listed below (each one was looked at: a typo, a misplaced or dropped key, not missing data).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from advisor.sources import known_keys as kk

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "corpus"
DATA = REPO / "advisor" / "data" / "keys"


# ------------------------------------------------------------------------------------------------
# API
# ------------------------------------------------------------------------------------------------


def test_every_data_file_records_its_source_package_and_version():
    files = sorted(DATA.glob("*.json"))
    assert {f.stem for f in files} >= {*kk.DIALECTS, "removed"}
    for f in files:
        if f.stem == "versions":
            continue  # per-release history, checked below
        data = json.loads(f.read_text(encoding="utf-8"))
        source = data["source"]
        assert source["package"] and re.match(r"\d+\.\d+", source["version"]), f.name


def test_release_history_covers_the_minors_people_pin():
    """tools/gen_known_keys.py --versions: every minor from transformers 4.40, TRL 0.9, accelerate 0.30,
    DeepSpeed 0.14 and peft 0.10 on, oldest first, each key as [first, last] release-index pairs."""
    data = json.loads((DATA / "versions.json").read_text(encoding="utf-8"))["packages"]
    floors = {"transformers": "4.40", "trl": "0.9", "accelerate": "0.30", "deepspeed": "0.14", "peft": "0.10"}
    for package, floor in floors.items():
        releases = data[package]["versions"]
        minors = [".".join(v.split(".")[:2]) for v in releases]
        assert minors[0] == floor, package
        assert len(set(minors)) == len(minors), package
        for cls in data[package]["classes"].values():
            for ranges in cls["keys"].values():
                assert len(ranges) % 2 == 0 and all(0 <= i < len(releases) for i in ranges)
    minors = {".".join(v.split(".")[:2]) for v in data["transformers"]["versions"]}
    assert {"4.57", "5.0", "5.6", "5.24"} <= minors


def test_import_is_cheap_and_never_imports_the_consumers():
    code = (
        "import sys; import advisor.sources.known_keys as k; "
        "assert 'learning_rate' in k.known_keys('trl'); "
        "assert 'stage' in k.known_keys('deepspeed', ('zero_optimization',)); "
        "bad = [m for m in ('transformers', 'accelerate', 'trl', 'deepspeed', 'torch') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_versions_read():
    assert kk.dialect_info("training_args")["source"]["version"] == "5.24.0"
    assert kk.dialect_info("accelerate")["source"]["version"] == "1.15.0"
    assert kk.dialect_info("deepspeed")["source"]["version"] == "0.19.8"
    assert kk.dialect_info("llamafactory")["source"]["version"]
    assert kk.dialect_info("axolotl")["source"]["version"]
    assert kk.dialect_info("trl")["source"]["version"]


def test_unknown_dialect_is_an_error():
    with pytest.raises(ValueError):
        kk.known_keys("kubernetes")


def test_evaluation_strategy_is_removed_with_replacement():
    for dialect in ("training_args", "trl", "llamafactory"):
        r = kk.removed_key(dialect, "evaluation_strategy")
        assert r is not None, dialect
        assert r.replacement == "eval_strategy"
        assert r.version == "4.51.0"
        assert r.status == "removed"
        assert r.package == "transformers"
        assert "evaluation_strategy" not in kk.known_keys(dialect)
    # axolotl still accepts it, with a deprecation warning
    r = kk.removed_key("axolotl", "evaluation_strategy")
    assert r is not None and r.status == "deprecated" and r.replacement == "eval_strategy"


@pytest.mark.parametrize(
    ("key", "replacement", "version"),
    [
        ("warmup_ratio", "warmup_steps", "5.15.0"),
        ("no_cuda", "use_cpu", "5.0.0"),
        ("per_gpu_train_batch_size", "per_device_train_batch_size", "5.0.0"),
        ("fsdp_transformer_layer_cls_to_wrap", "fsdp_config.transformer_layer_cls_to_wrap", "5.0.0"),
        ("fsdp_min_num_params", "fsdp_config.min_num_params", "5.0.0"),
        ("overwrite_output_dir", None, "5.0.0"),
        ("group_by_length", "train_sampling_strategy", "5.2.0"),
    ],
)
def test_transformers_removals(key, replacement, version):
    r = kk.removed_key("training_args", key)
    assert r is not None and r.status == "removed"
    assert (r.replacement, r.version) == (replacement, version)


def test_deprecated_alias_still_known():
    assert "gradient_checkpointing" in kk.known_keys("training_args")
    r = kk.removed_key("training_args", "gradient_checkpointing")
    assert r is not None and r.status == "deprecated" and r.replacement == "activation_checkpointing"
    assert kk.field_type("training_args", "gradient_checkpointing").deprecated


def test_trl_removals():
    assert kk.removed_key("trl", "max_seq_length").replacement == "max_length"
    assert kk.removed_key("trl", "torch_dtype").replacement == "dtype"
    assert kk.removed_key("trl", "vllm_device").version == "0.18.0"
    # the TrainingArguments removals apply to TRL recipes too
    assert kk.removed_key("trl", "overwrite_output_dir").package == "transformers"
    # extras that alignment-handbook / open-r1 define in their own dataclasses
    for key in ("dataset_mixture", "chat_template", "reward_funcs", "system_prompt", "dataset_mixer"):
        assert key in kk.known_keys("trl"), key
    # TRL configs are TrainingArguments subclasses
    assert kk.known_keys("training_args") <= kk.known_keys("trl")


def test_llamafactory_follows_its_transformers_pin():
    info = kk.dialect_info("llamafactory")["source"]
    assert info["transformers_max"]
    # warmup_ratio left transformers after the newest version LLaMA-Factory allows: still a key there
    assert "warmup_ratio" in kk.known_keys("llamafactory")
    assert kk.removed_key("llamafactory", "warmup_ratio") is None
    # LLaMA-Factory re-adds overwrite_output_dir in its own TrainingArguments
    assert "overwrite_output_dir" in kk.known_keys("llamafactory")
    assert kk.removed_key("llamafactory", "overwrite_output_dir") is None
    assert kk.removed_key("llamafactory", "fsdp_transformer_layer_cls_to_wrap").version == "5.0.0"
    for key in ("stage", "finetuning_type", "lora_rank", "cutoff_len", "template", "predict_with_generate"):
        assert key in kk.known_keys("llamafactory"), key
    assert {"micro_batch_size", "dist_config", "model"} <= kk.known_keys("llamafactory_v1")


def test_every_replacement_is_a_known_key():
    for name in (*kk.DIALECTS, "removed"):
        data = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
        dialect = "training_args" if name == "removed" else name
        for sec, entries in data.get("removed", {}).items():
            section = tuple(sec.split("/")) if sec else ()
            for key, entry in entries.items():
                rep = entry.get("replacement")
                if rep and " " not in rep:
                    assert rep.split(".")[0] in kk.known_keys(dialect, section), (name, key, rep)


def test_suggest():
    assert kk.suggest("training_args", "gradient_accumulation_step") == "gradient_accumulation_steps"
    assert kk.suggest("trl", "per_device_train_batchsize") == "per_device_train_batch_size"
    assert kk.suggest("deepspeed", "gradient_accumulation_steps ") == "gradient_accumulation_steps"
    assert kk.suggest("deepspeed", "zero_optimisation") == "zero_optimization"
    assert kk.suggest("deepspeed", "overlap_com", ("zero_optimization",)) == "overlap_comm"
    assert kk.suggest("training_args", "learning_rate") is None  # known: nothing to suggest
    assert kk.suggest("deepspeed", "cuda_visible_devices") is None


def test_deepspeed_keys():
    top = kk.known_keys("deepspeed")
    assert "gradient_accumulation_steps" in top
    assert "gradient_accumulation_steps " not in top
    assert "cuda_visible_devices" not in top
    assert kk.removed_key("deepspeed", "cuda_visible_devices") is None
    assert not kk.is_strict("deepspeed")  # DeepSpeed ignores unknown top-level keys
    zero = kk.known_keys("deepspeed", ("zero_optimization",))
    assert {"stage", "overlap_comm", "offload_optimizer", "offload_param", "sub_group_size"} <= zero
    # stage3_ aliases and the plain names, plus the deprecated legacy names
    assert {
        "stage3_prefetch_bucket_size",
        "prefetch_bucket_size",
        "stage3_gather_16bit_weights_on_model_save",
    } <= zero
    assert {"cpu_offload", "stage3_gather_fp16_weights_on_model_save"} <= zero
    assert kk.is_strict("deepspeed", ("zero_optimization",))  # extra=forbid
    r = kk.removed_key("deepspeed", "cpu_offload", ("zero_optimization",))
    assert r is not None and r.status == "deprecated" and r.replacement == "offload_optimizer"
    assert {"device", "nvme_path", "pin_memory", "buffer_count", "ratio"} <= kk.known_keys(
        "deepspeed", ("zero_optimization", "offload_optimizer")
    )
    assert {"device", "max_in_cpu", "buffer_size"} <= kk.known_keys(
        "deepspeed", ("zero_optimization", "offload_param")
    )
    assert {"enabled", "loss_scale", "initial_scale_power", "hysteresis"} <= kk.known_keys(
        "deepspeed", ("fp16",)
    )
    assert "enabled" in kk.known_keys("deepspeed", ("bf16",))
    r = kk.removed_key("deepspeed", "sparse_attention")
    assert r is not None and r.status == "removed" and r.version == "0.19.7"
    assert not kk.is_described("deepspeed", ("optimizer", "params"))  # optimizer-specific: not checked


def test_accelerate_keys():
    top = kk.known_keys("accelerate")
    assert {"distributed_type", "num_processes", "gpu_ids", "deepspeed_config", "fsdp_config"} <= top
    assert kk.is_strict("accelerate")  # accelerate rejects unknown top-level keys
    fsdp = kk.known_keys("accelerate", ("fsdp_config",))
    assert "fsdp_sharding_strategy" in fsdp
    assert "sharding_strategy" in fsdp  # the fsdp_ prefix is added by accelerate launch
    # not deprecated in a config file: FSDP1 reads it from FSDP_SHARDING_STRATEGY without a warning
    # (accelerate 1.15 utils/launch.py:313, utils/dataclasses.py:1845-1846); only a plugin built in code warns
    assert kk.removed_key("accelerate", "fsdp_sharding_strategy", ("fsdp_config",)) is None
    assert {
        "zero_stage",
        "offload_optimizer_device",
        "zero3_init_flag",
        "deepspeed_config_file",
    } <= kk.known_keys("accelerate", ("deepspeed_config",))
    assert "parallelism_config_sp_size" in kk.known_keys("accelerate", ("parallelism_config",))
    assert kk.removed_key("accelerate", "dynamo_backend").replacement == "dynamo_config.dynamo_backend"


def test_axolotl_keys():
    keys = kk.known_keys("axolotl")
    assert {"micro_batch_size", "gradient_accumulation_steps", "deepspeed", "fsdp_config", "datasets"} <= keys
    assert "liger_rope" in keys  # plugin args (axolotl.integrations.liger)
    assert "offload_params" in kk.known_keys("axolotl", ("fsdp_config",))
    r = kk.removed_key("axolotl", "fsdp_offload_params", ("fsdp_config",))
    assert r is not None and r.replacement == "offload_params"
    assert kk.removed_key("axolotl", "fsdp_version", ("fsdp_config",)) is None
    assert kk.removed_key("axolotl", "dpo_beta").replacement == "rl_beta"


# ------------------------------------------------------------------------------------------------
# check_type
# ------------------------------------------------------------------------------------------------


def ft(dialect, key, section=()):
    t = kk.field_type(dialect, key, section)
    assert t is not None, key
    return t


def test_field_type_shape():
    t = ft("training_args", "learning_rate")
    assert t.kind == "float" and not t.optional and t.default == 5e-05
    t = ft("training_args", "optim")
    assert "adamw_torch_fused" in t.choices
    assert set(ft("training_args", "eval_strategy").choices) == {"no", "steps", "epoch"}
    assert "cosine" in ft("training_args", "lr_scheduler_type").choices
    assert ft("training_args", "tf32").optional
    assert ft("training_args", "deepspeed").kinds == ("dict", "str")
    assert kk.field_type("training_args", "no_such_key") is None


def test_check_type_no_coercion_hf_argparser():
    lr = ft("training_args", "learning_rate")
    msg = kk.check_type(lr, "1e-5", coerces=False)
    assert msg and "1.0e-5" in msg
    assert kk.check_type(lr, 1e-5) is None
    assert kk.check_type(lr, 1) is None  # an int is a fine float
    assert kk.check_type(lr, None) is not None
    assert kk.check_type(lr, True) is not None
    steps = ft("training_args", "gradient_accumulation_steps")
    assert kk.check_type(steps, 4) is None
    assert kk.check_type(steps, 2.0) is not None
    assert kk.check_type(steps, "8") is not None


def test_check_type_trl_coerces_strings():
    lr = ft("trl", "learning_rate")
    assert kk.check_type(lr, "1e-5", coerces=True) is None
    assert kk.check_type(lr, "fast", coerces=True) is not None
    assert kk.check_type(ft("trl", "bf16"), "true", coerces=True) is None
    assert kk.check_type(ft("trl", "per_device_train_batch_size"), "8", coerces=True) is None
    assert kk.check_type(ft("trl", "per_device_train_batch_size"), "8.5", coerces=True) is not None


def test_check_type_choices():
    save = ft("training_args", "save_strategy")
    assert kk.check_type(save, "steps") is None
    assert kk.check_type(save, "sometimes") is not None
    msg = kk.check_type(save, False)  # YAML 1.1: `save_strategy: no`
    assert msg and "quote" in msg
    dist = ft("accelerate", "distributed_type")
    assert kk.check_type(dist, "MULTI_GPU") is None
    assert kk.check_type(dist, False) is not None  # `distributed_type: NO` unquoted
    dyn = ft("accelerate", "dynamo_backend", ("dynamo_config",))
    assert kk.check_type(dyn, "INDUCTOR") is None and kk.check_type(dyn, "inductor") is None
    assert kk.check_type(ft("accelerate", "fsdp_version", ("fsdp_config",)), 2) is None
    assert kk.check_type(ft("deepspeed", "stage", ("zero_optimization",)), 4) is not None
    # axolotl: Literal["auto"] | bool
    assert kk.check_type(ft("axolotl", "bf16"), "auto", coerces=True) is None
    assert kk.check_type(ft("axolotl", "bf16"), True, coerces=True) is None
    assert kk.check_type(ft("axolotl", "gradient_checkpointing"), "offload", coerces=True) is None


def test_check_type_deepspeed_auto():
    mb = ft("deepspeed", "train_micro_batch_size_per_gpu")
    assert mb.auto and kk.check_type(mb, "auto") is None
    assert kk.check_type(mb, "8") is not None  # DeepSpeed reads the top level with dict.get
    rb = ft("deepspeed", "reduce_bucket_size", ("zero_optimization",))
    assert kk.check_type(rb, "auto", coerces=True) is None
    assert kk.check_type(rb, 5e8, coerces=True) is None  # pydantic lax: 5e8 is a whole float
    assert kk.check_type(ft("deepspeed", "enabled", ("fp16",)), "auto", coerces=True) is None


def test_removed_choice():
    assert kk.removed_choice("training_args", "optim", "adamw_hf")
    assert kk.removed_choice("trl", "optim", "adamw_hf")
    assert kk.removed_choice("training_args", "optim", "adamw_torch") is None


# ------------------------------------------------------------------------------------------------
# corpus sweep
# ------------------------------------------------------------------------------------------------

# Every key the data calls unknown in the corpus, and why it really is unknown to the consumer.
REAL_UNKNOWNS: dict[str, dict[tuple[tuple[str, ...], str], str]] = {
    "deepspeed": {
        ((), "cuda_visible_devices"): "DeepSpeedExamples imagenet: not a DeepSpeed key, ignored",
        ((), "_comment"): "LLaMA-Factory autotp example: a comment written as a key, ignored",
        ((), "comms_config"): "LLaMA-Factory fp8 example: DeepSpeed reads comms_logger, this is ignored",
        ((), "monitor_config"): "LLaMA-Factory fp8 example: DeepSpeed reads tensorboard/wandb/... blocks",
        (("compile",), "disable"): "axolotl zero1_torch_compile: not a CompileConfig field (extra=forbid)",
        (("compile",), "backend"): "axolotl zero1_torch_compile: not a CompileConfig field (extra=forbid)",
        (("autotuning", "arg_mappings"), "gradient_accumulation_steps "): "trailing space in the key",
    },
    "accelerate": {
        (("deepspeed_config",), "seq_parallel_communication_data_type"): (
            "TRL ALST example: a top-level DeepSpeed JSON key; no accelerate launch option reads it"
        ),
    },
    "axolotl": {
        ((), "gptq_model_v1"): "archived openllama example: no longer in the schema, dropped silently",
        ((), "gptq_groupsize"): "archived openllama example: no longer in the schema, dropped silently",
        (("fsdp_config",), "sharding_strategy"): "FSDP1 key the axolotl FSDPConfig does not define",
        (("fsdp_config",), "fsdp_sharding_strategy"): "FSDP1 key the axolotl FSDPConfig does not define",
        (("fsdp_config",), "fsdp_limit_all_gathers"): "FSDP1 key the axolotl FSDPConfig does not define",
        (("fsdp_config",), "fsdp_backward_prefetch"): "FSDP1 key the axolotl FSDPConfig does not define",
    },
    "llamafactory": {
        ((), key): "megatron example: a key of mcore_adapter's TrainingArguments (USE_MCA=1), not modelled"
        for key in (
            "tensor_model_parallel_size",
            "sequence_parallel",
            "pipeline_model_parallel_size",
            "bias_activation_fusion",
            "apply_rope_fusion",
            "use_distributed_optimizer",
            "overlap_param_gather",
            "overlap_grad_reduce",
            "moe_grouped_gemm",
            "moe_token_dispatcher_type",
            "expert_model_parallel_size",
            "recompute_granularity",
        )
    },
    "trl": {},
    "llamafactory_v1": {},
}


class _Yaml12Loader(yaml.SafeLoader):
    """PyYAML with a YAML 1.2 float rule, the way OmegaConf (LLaMA-Factory's reader) reads 3e-6."""


_Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)$|^[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?$"
    ),
    list("-+0123456789."),
)


def _strip_json_comments(text: str) -> str:
    out, i, in_str = [], 0, False
    while i < len(text):
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1 : i + 2])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif text.startswith("//", i):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _dialect_of(path: Path) -> str | None:
    kind, name = path.parent.name, path.name
    if kind != "training_args":
        return kind
    if name.startswith("hiyouga__LLaMA-Factory__examples__v1__"):
        return "llamafactory_v1"
    if name.startswith("hiyouga__LLaMA-Factory"):
        return "llamafactory"
    if name.startswith(("huggingface__alignment-handbook", "huggingface__open-r1", "huggingface__trl")):
        return "trl"
    # open-instruct parses these with its own FlatArguments dataclass, not TrainingArguments: not a
    # dialect we model
    return None


def _load(path: Path, dialect: str):
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".json", ".conf"):
        return json.loads(_strip_json_comments(text))
    if dialect in ("llamafactory", "llamafactory_v1"):
        return yaml.load(text, Loader=_Yaml12Loader)  # a SafeLoader subclass
    return yaml.safe_load(text)


def _walk(dialect, data, section, found, path):
    if not isinstance(data, dict) or not kk.is_described(dialect, section):
        return
    known = kk.known_keys(dialect, section)
    for key, value in data.items():
        if key not in known:
            if kk.removed_key(dialect, key, section) is None:
                found["unknown"].append((section, key, path.name))
            else:
                found["removed"].append((section, key, path.name))
            continue
        msg = kk.check_type(kk.field_type(dialect, key, section), value, kk.coerces(dialect, section))
        if msg:
            found["type"].append((section, key, path.name, msg))
        sub = (*section, key)
        if sub in kk.sections(dialect):
            for item in value if isinstance(value, list) else [value]:
                _walk(dialect, item, sub, found, path)


def _sweep(corpus: Path):
    results: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    skipped = []
    for kind in ("training_args", "accelerate", "deepspeed", "axolotl"):
        for path in sorted((corpus / kind).iterdir()):
            dialect = _dialect_of(path)
            if dialect is None:
                skipped.append(path.name)
                continue
            results[dialect]["files"].append(path.name)
            _walk(dialect, _load(path, dialect), (), results[dialect], path)
    return results, skipped


@pytest.fixture(scope="module")
def sweep():
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is absent")
    return _sweep(CORPUS)


def test_corpus_unknown_keys_are_the_real_ones(sweep):
    results, skipped = sweep
    assert len(skipped) == 5  # open-instruct recipes
    for dialect, expected in REAL_UNKNOWNS.items():
        got = {(section, key) for section, key, _ in results[dialect]["unknown"]}
        assert results[dialect]["files"], dialect
        listing = "\n".join(f"  {s} {k!r} ({f})" for s, k, f in results[dialect]["unknown"])
        assert got == set(expected), f"{dialect} unknown keys:\n{listing}"
        # "small": at most one unknown per file on average
        assert len(results[dialect]["unknown"]) <= len(results[dialect]["files"]), listing


def test_corpus_removed_keys_found(sweep):
    results, _ = sweep
    trl_removed = {key for _, key, _ in results["trl"]["removed"]}
    assert {
        "warmup_ratio",
        "overwrite_output_dir",
        "torch_dtype",
        "max_seq_length",
        "max_prompt_length",
    } <= trl_removed
    assert "vllm_device" in trl_removed
    lf_removed = {key for _, key, _ in results["llamafactory"]["removed"]}
    assert lf_removed == {"fsdp_transformer_layer_cls_to_wrap"}  # warmup_ratio is fine under LF's pin
    ds_removed = {key for _, key, _ in results["deepspeed"]["removed"]}
    assert ds_removed == {"sparse_attention"}


def test_corpus_type_findings(sweep):
    results, _ = sweep
    found = {(d, key, f) for d, r in results.items() for _, key, f, _ in r["type"]}
    assert found == {
        # TRL 1.16 has no 'ffd' packing strategy (renamed bfd)
        ("trl", "packing_strategy", "huggingface__alignment-handbook__recipes__smollm3__sft__sft.yaml"),
        # pydantic int field given 0.1 (axolotl has warmup_ratio for that)
        (
            "axolotl",
            "warmup_steps",
            "axolotl-ai-cloud__axolotl__examples__expert_parallel__qwen3_30ba3b_ep_fsdp_fft_4gpu.yaml",
        ),
    }
