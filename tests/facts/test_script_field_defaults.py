"""Issue 20 items 9 and 10, through the real CLI (`python -m advisor`), on hand-written copies of the
upstream forms:

9. a dataclass field's default flowing into a from_pretrained keyword (TRL's example scripts take
   device_map / dtype / quantization options from ScriptArguments or ModelConfig): `device_map=
   script_args.device_map` whose default is "auto" under a 4-process launch is GA603 as the literal is;
   `torch_dtype=getattr(torch, script_args.torch_dtype)` and `BitsAndBytesConfig(load_in_4bit=
   script_args.load_in_4bit)` are the dtypes the estimate uses; the run's own flag overrides the default.
10. the repository's own config subclasses: `SimPOConfig(CPOConfig)` / `SimPOConfig(TrainingArguments)`
   (princeton-nlp/SimPO scripts/simpo_config.py) adding gamma_beta_ratio makes the key known (no GA002);
   CPOTrainer / ORPOTrainer / a SimPOTrainer(Trainer) load no reference model (trl 0.19.1
   trainer/cpo_trainer.py:74, orpo_trainer.py:78), DPOTrainer does (trl 0.19.1 dpo_trainer.py:321-327)
   unless its reference log-probs are precomputed; reference_free only changes the loss.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import write_files

DM_SCRIPT = """\
from dataclasses import dataclass, field

from transformers import AutoModelForCausalLM, HfArgumentParser, TrainingArguments


@dataclass
class ScriptArguments:
    model_name: str = field(default="Qwen/Qwen2.5-0.5B")
    device_map: str = {default}


parser = HfArgumentParser((ScriptArguments, TrainingArguments))
script_args, training_args = parser.parse_args_into_dataclasses()
model = AutoModelForCausalLM.from_pretrained(script_args.model_name, device_map=script_args.device_map)
"""

QLORA_SCRIPT = """\
from dataclasses import dataclass, field

import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, BitsAndBytesConfig, HfArgumentParser, TrainingArguments


@dataclass
class ScriptArguments:
    model_name: str = "Qwen/Qwen2.5-0.5B"
    torch_dtype: str = field(default="float32", metadata={"help": "the load dtype"})
    load_in_4bit: bool = True


parser = HfArgumentParser((ScriptArguments, TrainingArguments))
script_args, training_args = parser.parse_args_into_dataclasses()
bnb = BitsAndBytesConfig(load_in_4bit=script_args.load_in_4bit, bnb_4bit_compute_dtype=torch.bfloat16)
model = AutoModelForCausalLM.from_pretrained(
    script_args.model_name,
    torch_dtype=getattr(torch, script_args.torch_dtype),
    quantization_config=bnb,
    device_map={"": 0},
)
model = get_peft_model(model, LoraConfig(r=16, target_modules="all-linear"))
"""

# TRL's examples/scripts form: TrlParser over the script's own config subclass
TRL_SCRIPT = """\
from dataclasses import dataclass, field

from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import {config}, {trainer}, ModelConfig, ScriptArguments, TrlParser


@dataclass
class SimPOConfig({config}):
    gamma_beta_ratio: float = field(default=0.5, metadata={{"help": "the SimPO target margin over beta"}})


if __name__ == "__main__":
    parser = TrlParser((ScriptArguments, SimPOConfig, ModelConfig))
    script_args, training_args, model_args = parser.parse_args_and_config()
    model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path)
    tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path)
    trainer = {trainer}(model, args=training_args, processing_class=tokenizer)
    trainer.train()
"""

TRL_LAUNCH = "#!/bin/bash\naccelerate launch --num_processes 4 simpo.py --config simpo.yaml\n"
TRL_RECIPE = """\
model_name_or_path: Qwen/Qwen2.5-0.5B
output_dir: out
per_device_train_batch_size: 2
beta: 0.1
gamma_beta_ratio: 0.5
bf16: true
"""

# princeton-nlp/SimPO: the alignment-handbook parser over its own SimPOConfig(TrainingArguments) and its
# own SimPOTrainer(Trainer), launched as scripts/run_simpo.py training_configs/<recipe>.yaml
SIMPO_FILES = {
    "launch.sh": "#!/bin/bash\naccelerate launch --num_processes 4 scripts/run_simpo.py "
    "training_configs/llama-3-8b-base-simpo.yaml\n",
    "training_configs/llama-3-8b-base-simpo.yaml": (
        "model_name_or_path: Qwen/Qwen2.5-0.5B\noutput_dir: out\nper_device_train_batch_size: 2\n"
        "learning_rate: 6.0e-7\nbeta: 2.0\ngamma_beta_ratio: 0.5\n{extra}bf16: true\n"
    ),
    "scripts/simpo_config.py": (
        "from dataclasses import dataclass\n\nfrom transformers import TrainingArguments\n\n\n@dataclass\n"
        "class SimPOConfig(TrainingArguments):\n    beta: float = 2.0\n    gamma_beta_ratio: float = 0.25\n"
        "    sft_weight: float = 0.0\n"
    ),
    "scripts/simpo_trainer.py": (
        "from transformers import Trainer\n\n\nclass SimPOTrainer(Trainer):\n    pass\n"
    ),
    "scripts/run_simpo.py": (
        "from alignment import DataArguments, H4ArgumentParser, ModelArguments\n"
        "from simpo_config import SimPOConfig\nfrom simpo_trainer import SimPOTrainer\n"
        "from transformers import AutoModelForCausalLM\n\n\ndef main():\n"
        "    parser = H4ArgumentParser((ModelArguments, DataArguments, SimPOConfig))\n"
        "    model_args, data_args, training_args = parser.parse()\n"
        "    model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path)\n"
        "    trainer = SimPOTrainer(model=model, args=training_args)\n    trainer.train()\n\n\n"
        'if __name__ == "__main__":\n    main()\n'
    ),
}


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "advisor", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _project(root: Path, files: dict[str, str]) -> Path:
    (root / ".git").mkdir(parents=True)
    write_files(root, files)
    return root


def _findings(root: Path, *extra: str) -> tuple[int, list[dict[str, Any]]]:
    proc = _cli(root, "check", "-H", "4xH100-NVL", "--format", "json", *extra)
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.returncode, json.loads(proc.stdout)["findings"]


def _estimate(root: Path) -> dict[str, Any]:
    proc = _cli(root, "estimate", "-H", "4xH100-NVL", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    (run,) = json.loads(proc.stdout)["runs"]
    return run


def _at(findings: list[dict[str, Any]], rule: str) -> list[tuple[str, int, int]]:
    return [(f["file"], f["line"], f["column"]) for f in findings if f["rule"] == rule]


# item 9: device_map


def test_a_dataclass_default_auto_into_device_map_under_four_processes_is_ga603(tmp_path):
    root = _project(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\naccelerate launch --num_processes 4 train.py --output_dir out\n",
            "train.py": DM_SCRIPT.format(default='"auto"'),
        },
    )
    code, findings = _findings(root)
    # at the keyword of the load, as the literal device_map="auto" is
    assert _at(findings, "GA603") == [("train.py", 14, 81)]
    (ga603,) = [f for f in findings if f["rule"] == "GA603"]
    assert 'device_map="auto" with 4 training processes' in ga603["message"]
    assert code == 1
    assert _at(findings, "GA602") == []  # GA603 says it; GA602 (one process spreading) stays quiet


def test_the_runs_flag_decides_over_the_field_default(tmp_path):
    root = _project(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --output_dir out "
            "--device_map balanced\n",
            "train.py": DM_SCRIPT.format(default="None"),
        },
    )
    _code, findings = _findings(root)
    assert _at(findings, "GA603") == [("train.py", 14, 81)]
    assert 'device_map="balanced" with 2 training processes' in next(
        f["message"] for f in findings if f["rule"] == "GA603"
    )


def test_a_field_default_none_or_one_process_is_no_ga603(tmp_path):
    one = _project(
        tmp_path / "one",
        {
            "launch.sh": "#!/bin/bash\npython train.py --output_dir out\n",
            "train.py": DM_SCRIPT.format(default='"auto"'),
        },
    )
    none = _project(
        tmp_path / "none",
        {
            "launch.sh": "#!/bin/bash\naccelerate launch --num_processes 4 train.py --output_dir out\n",
            "train.py": DM_SCRIPT.format(default="None"),
        },
    )
    assert _at(_findings(one)[1], "GA603") == []
    assert _at(_findings(none)[1], "GA603") == []


# item 9: dtype and quantization


def test_dtype_and_4bit_defaults_of_the_dataclass_are_the_estimates_dtypes(tmp_path):
    root = _project(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --output_dir out "
            "--per_device_train_batch_size 2\n",
            "train.py": QLORA_SCRIPT,
        },
    )
    run = _estimate(root)
    weights = next(d for d in run["dtypes"] if d["what"] == "weights")
    # float32 from the field default (the checkpoint is bf16), nf4 from load_in_4bit's default True
    assert weights["dtype"] == "fp32 (Linear weights nf4)"
    assert "ScriptArguments.torch_dtype" in weights["source"]
    assert "ScriptArguments.load_in_4bit" in weights["source"]
    assert run["setup"]["method"] == "qlora"


def test_the_runs_flag_turns_the_4bit_default_off(tmp_path):
    root = _project(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --output_dir out "
            "--per_device_train_batch_size 2 --load_in_4bit False --torch_dtype bfloat16\n",
            "train.py": QLORA_SCRIPT,
        },
    )
    run = _estimate(root)
    weights = next(d for d in run["dtypes"] if d["what"] == "weights")
    assert weights["dtype"] == "bf16"
    assert "--torch_dtype" in weights["source"]
    assert run["setup"]["method"] == "lora"


# item 10: the repository's own config subclasses


def test_the_scripts_own_simpo_config_makes_its_keys_known(tmp_path):
    root = _project(
        tmp_path,
        {
            **SIMPO_FILES,
            "training_configs/llama-3-8b-base-simpo.yaml": SIMPO_FILES[
                "training_configs/llama-3-8b-base-simpo.yaml"
            ].format(extra="sft_weight: 0.0\ngama_beta_ratio: 0.5\n"),
        },
    )
    code, findings = _findings(root, "--fail-on", "error")
    unknown = sorted((f["file"], f["line"]) for f in findings if f["rule"] == "GA002")
    # gamma_beta_ratio (line 6) and sft_weight (line 7) are SimPOConfig's; the typo on line 8 is no one's
    assert unknown == [("training_configs/llama-3-8b-base-simpo.yaml", 8)]
    assert code == 1


def test_a_trl_config_subclass_with_its_own_field_is_no_unknown_key(tmp_path):
    root = _project(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\naccelerate launch --num_processes 4 simpo.py --config simpo.yaml\n",
            "simpo.yaml": TRL_RECIPE,
            "simpo.py": TRL_SCRIPT.format(config="CPOConfig", trainer="CPOTrainer"),
        },
    )
    _code, findings = _findings(root)
    assert _at(findings, "GA002") == []


def _reference_model(run: dict[str, Any]) -> bool:
    return any(item["name"] == "reference model" for item in run["breakdown"])


def test_cpo_orpo_and_simpo_trainers_are_estimated_without_a_reference_model(tmp_path):
    for trainer, config in (("CPOTrainer", "CPOConfig"), ("ORPOTrainer", "ORPOConfig")):
        root = _project(
            tmp_path / trainer,
            {
                "launch.sh": TRL_LAUNCH,
                "simpo.yaml": TRL_RECIPE,
                "simpo.py": TRL_SCRIPT.format(config=config, trainer=trainer),
            },
        )
        run = _estimate(root)
        assert not _reference_model(run), trainer
        assert f"{trainer} loads no reference model" in run["assumptions"]
    simpo = _project(
        tmp_path / "simpo",
        {
            **SIMPO_FILES,
            "training_configs/llama-3-8b-base-simpo.yaml": SIMPO_FILES[
                "training_configs/llama-3-8b-base-simpo.yaml"
            ].format(extra=""),
        },
    )
    assert not _reference_model(_estimate(simpo))


def test_dpo_is_estimated_with_a_reference_model_unless_its_log_probs_are_precomputed(tmp_path):
    def dpo(name: str, extra: str) -> dict[str, Any]:
        root = _project(
            tmp_path / name,
            {
                "launch.sh": "#!/bin/bash\naccelerate launch --num_processes 4 dpo.py --config dpo.yaml\n",
                "dpo.yaml": TRL_RECIPE + extra,
                "dpo.py": TRL_SCRIPT.format(config="DPOConfig", trainer="DPOTrainer"),
            },
        )
        return _estimate(root)

    assert _reference_model(dpo("plain", ""))
    # reference_free changes the loss only: DPOTrainer still builds the copy (trl 0.19.1 dpo_trainer.py:327)
    assert _reference_model(dpo("reference_free", "reference_free: true\n"))
    assert not _reference_model(dpo("precomputed", "precompute_ref_log_probs: true\n"))


def test_a_dpo_script_with_no_preference_key_written_still_has_its_reference_model(tmp_path):
    root = _project(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\naccelerate launch --num_processes 4 dpo.py --config dpo.yaml\n",
            "dpo.yaml": "model_name_or_path: Qwen/Qwen2.5-0.5B\noutput_dir: out\n"
            "per_device_train_batch_size: 2\n",
            "dpo.py": TRL_SCRIPT.format(config="DPOConfig", trainer="DPOTrainer"),
        },
    )
    run = _estimate(root)
    assert _reference_model(run)
    assert any("chosen and rejected" in a for a in run["assumptions"])


def test_a_field_the_script_rewrites_before_the_load_is_not_read_as_its_default(tmp_path):
    script = DM_SCRIPT.format(default='"auto"').replace(
        "model = AutoModel",
        'if training_args.local_rank != -1:\n    script_args.device_map = {"": training_args.local_rank}\n'
        "model = AutoModel",
    )
    root = _project(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\naccelerate launch --num_processes 4 train.py --output_dir out\n",
            "train.py": script,
        },
    )
    assert _at(_findings(root)[1], "GA603") == []
