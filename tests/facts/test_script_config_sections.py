"""A config the training script loads itself, in its own nested layout (issue 20 item 7).

The upstream form is THUDM/ChatGLM3 finetune_demo (commit 732294f42e2625509000daa87a9c3748d0bbb957,
Apache-2.0): finetune_hf.py loads configs/lora.yaml with `ruamel.yaml.YAML(typ='safe', pure=True)`
(:122-127, :205-208, YAML 1.2: `5e-5` is a float) and hands its sections on, `training_args` to
`Seq2SeqTrainingArguments(**training_args)` (:194), `data_config` to its own `DataConfig(**data_config)`
(:198), `peft_config` to `get_peft_config` (:202), the whole mapping to `cls(**kwargs)` (:203). Below is a
hand-written copy of those lines (the rest of the script trimmed), run as the README's launch does
(README.md:194, `torchrun --standalone --nnodes=1 --nproc_per_node=8 finetune_hf.py ... configs/lora.yaml`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, build_plans, run_check
from advisor.sources.settings import Settings
from tests.conftest import write_files

CHATGLM3_SCRIPT = """\
import dataclasses as dc
import functools
from pathlib import Path
from typing import Annotated, Optional, Union

import ruamel.yaml as yaml
import typer
from peft import PeftConfig, get_peft_config, get_peft_model
from transformers import AutoModelForCausalLM, GenerationConfig, Seq2SeqTrainingArguments

app = typer.Typer(pretty_exceptions_show_locals=False)


def _resolve_path(path: Union[str, Path]) -> Path:
    return Path(path).expanduser().resolve()


@functools.cache
def _get_yaml_parser() -> yaml.YAML:
    parser = yaml.YAML(typ='safe', pure=True)
    parser.indent(mapping=2, offset=2, sequence=4)
    parser.default_flow_style = False
    return parser


@dc.dataclass
class DataConfig(object):
    train_file: str
    val_file: Optional[str] = None
    test_file: Optional[str] = None

    num_proc: Optional[int] = None


@dc.dataclass
class FinetuningConfig(object):
    data_config: DataConfig

    max_input_length: int
    max_output_length: int

    training_args: Seq2SeqTrainingArguments = dc.field(
        default_factory=lambda: Seq2SeqTrainingArguments(output_dir='./output')
    )
    peft_config: Optional[PeftConfig] = None

    @classmethod
    def from_dict(cls, **kwargs) -> 'FinetuningConfig':
        training_args = kwargs.get('training_args', None)
        if training_args is not None and not isinstance(
                training_args, Seq2SeqTrainingArguments
        ):
            gen_config = training_args.get('generation_config')
            # TODO: a bit hacky
            if not isinstance(gen_config, GenerationConfig):
                training_args['generation_config'] = GenerationConfig(
                    **gen_config
                )
            kwargs['training_args'] = Seq2SeqTrainingArguments(**training_args)

        data_config = kwargs.get('data_config')
        if not isinstance(data_config, DataConfig):
            kwargs['data_config'] = DataConfig(**data_config)

        peft_config = kwargs.get('peft_config', None)
        if peft_config is not None and not isinstance(peft_config, PeftConfig):
            kwargs['peft_config'] = get_peft_config(peft_config)
        return cls(**kwargs)

    @classmethod
    def from_file(cls, path: Union[str, Path]) -> 'FinetuningConfig':
        path = _resolve_path(path)
        kwargs = _get_yaml_parser().load(path)
        return cls.from_dict(**kwargs)


@app.command()
def main(
        data_dir: Annotated[str, typer.Argument(help='')],
        model_dir: Annotated[str, typer.Argument(help='')],
        config_file: Annotated[str, typer.Argument(help='')],
):
    ft_config = FinetuningConfig.from_file(config_file)
    model = AutoModelForCausalLM.from_pretrained(model_dir, trust_remote_code=True)
    if ft_config.peft_config is not None:
        model = get_peft_model(model, ft_config.peft_config)


if __name__ == '__main__':
    app()
"""

# configs/lora.yaml at the same commit (comments trimmed)
LORA_YAML = """\
data_config:
  train_file: train.json
  val_file: dev.json
  test_file: dev.json
  num_proc: 16
max_input_length: 256
max_output_length: 512
training_args:
  output_dir: ./output
  max_steps: 3000
  learning_rate: 5e-5
  per_device_train_batch_size: 4
  dataloader_num_workers: 16
  remove_unused_columns: false
  save_strategy: steps
  save_steps: 500
  log_level: info
  logging_strategy: steps
  logging_steps: 10
  per_device_eval_batch_size: 16
  evaluation_strategy: steps
  eval_steps: 500
  predict_with_generate: true
  generation_config:
    max_new_tokens: 512
  use_cpu: false
peft_config:
  peft_type: LORA
  task_type: CAUSAL_LM
  r: 8
  lora_alpha: 32
  lora_dropout: 0.1
"""

LAUNCH = (
    "OMP_NUM_THREADS=1 torchrun --standalone --nnodes=1 --nproc_per_node=8 "
    "finetune_hf.py data/AdvertiseGen/ THUDM/chatglm3-6b configs/lora.yaml\n"
)
# the repository root's requirements.txt:3 pins transformers==4.40.0 (evaluation_strategy is a field there)
PINS = "transformers==4.40.0\npeft>=0.10.0\nruamel_yaml>=0.18.6\n"


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> None:
    (tmp_path / ".git").mkdir()
    write_files(tmp_path, files)
    monkeypatch.chdir(tmp_path)


def _chatglm3(yaml_text: str = LORA_YAML, pins: str = PINS) -> dict[str, str]:
    return {
        "finetune_hf.py": CHATGLM3_SCRIPT,
        "configs/lora.yaml": yaml_text,
        "train.sh": LAUNCH,
        "requirements.txt": pins,
    }


def _findings(rules: set[str]) -> list[tuple[str, str, int, int, str]]:
    result = run_check([Path(".")], CheckOptions())
    assert not result.errors, result.errors
    return sorted(
        (f.rule, str(f.location.file), f.location.line, f.location.col, f.severity)
        for f in result.findings
        if f.rule in rules
    )


def test_chatglm3_layout_feeds_the_run_and_is_accepted(tmp_path, monkeypatch):
    _project(tmp_path, monkeypatch, _chatglm3())
    plans, _ = build_plans([Path(".")], CheckOptions(), Settings())
    (plan,) = plans
    t = plan.training
    # the training_args section is the run's TrainingArguments: 4 per device, not the default 8
    assert t.entry("per_device_train_batch_size").value == 4
    assert t.entry("dataloader_num_workers").value == 16
    # ruamel.yaml (YAML 1.2) reads 5e-5 as a float, where PyYAML would give the string '5e-5'
    assert t.entry("learning_rate").value == pytest.approx(5e-5)
    assert t.entry("max_steps").value == 3000
    assert plan.model.entry("method").value == "lora"
    assert t.entry("lora_r").value == 8
    # every key is a field of its consumer at the pinned transformers 4.40: no key finding, and no
    # YAML 1.1 surprise for a file ruamel reads
    assert _findings({"GA001", "GA002", "GA003", "GA005", "GA007"}) == []
    # 16 workers x 8 processes: the rule the flat config gets (corpus3 THUDM__ChatGLM3__lora's label)
    assert ("GA202", "configs/lora.yaml", 13, 27, "info") in _findings({"GA202"})


def test_chatglm3_layout_keys_judged_against_each_consumer(tmp_path, monkeypatch):
    broken = (
        LORA_YAML.replace("  num_proc: 16", "  num_procs: 16")  # not a DataConfig field
        .replace("  per_device_train_batch_size: 4", "  per_device_train_batchsize: 4")
        .replace("  lora_dropout: 0.1", "  lora_dropout: 0.1\n  lora_alpah: 16")  # not a LoraConfig key
        .replace("max_output_length: 512", "max_output_length: 512\nmax_target_length: 64")
    )
    _project(tmp_path, monkeypatch, _chatglm3(broken))
    assert _findings({"GA002", "GA005", "GA007"}) == [
        ("GA002", "configs/lora.yaml", 5, 3, "error"),  # data_config.num_procs -> DataConfig(**)
        ("GA002", "configs/lora.yaml", 8, 1, "error"),  # top-level max_target_length -> cls(**kwargs)
        ("GA002", "configs/lora.yaml", 13, 3, "error"),  # -> Seq2SeqTrainingArguments(**)
        ("GA002", "configs/lora.yaml", 34, 3, "error"),  # peft_type LORA -> LoraConfig
    ]
    messages = {f.location.line: f.message for f in run_check([Path(".")], CheckOptions()).findings}
    assert "per_device_train_batch_size" in messages[13]  # the did-you-mean
    assert "num_proc'" in messages[5]
    assert "finetune_hf.py:63" in messages[5]  # the call that refuses it


def test_removed_key_judged_at_the_pinned_release(tmp_path, monkeypatch):
    _project(tmp_path, monkeypatch, _chatglm3(pins="transformers==4.57.1\n"))
    found = _findings({"GA002", "GA005", "GA007"})
    assert found == [("GA005", "configs/lora.yaml", 21, 3, "warning")]  # evaluation_strategy: gone in 4.57


PYYAML_SCRIPT = """\
import argparse

import yaml
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments


def load_config(path):
    with open(path) as f:
        return yaml.safe_load(f)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True)
    args = parser.parse_args()
    cfg = load_config(args.config)
    model = AutoModelForCausalLM.from_pretrained(cfg["model"]["name"])
    lora = cfg["lora"]
    lora.pop("enabled")
    model = get_peft_model(model, LoraConfig(**lora))
    training_args = TrainingArguments(**cfg["training"])
    Trainer(model=model, args=training_args).train()


if __name__ == "__main__":
    main()
"""

PYYAML_CFG = """\
model:
  name: Qwen/Qwen2.5-0.5B
lora:
  enabled: true
  r: 16
  lora_alpha: 32
training:
  output_dir: out
  per_device_train_batch_size: 2
  gradient_accumulation_steps: 8
  learning_rate: 2e-4
  bf16: true
"""


def test_pyyaml_section_keeps_yaml11_strings(tmp_path, monkeypatch):
    """yaml.safe_load is YAML 1.1: `2e-4` reaches TrainingArguments as the string '2e-4' (a dataclass's
    __init__ converts nothing), which GA003 says; the popped `enabled` never reaches LoraConfig."""
    _project(
        tmp_path,
        monkeypatch,
        {
            "train.py": PYYAML_SCRIPT,
            "cfg.yaml": PYYAML_CFG,
            "run.sh": "torchrun --nproc_per_node 4 train.py --config cfg.yaml\n",
        },
    )
    assert _findings({"GA002", "GA003", "GA005"}) == [("GA003", "cfg.yaml", 11, 18, "warning")]
    plans, _ = build_plans([Path(".")], CheckOptions(), Settings())
    (plan,) = plans
    assert plan.training.entry("learning_rate").value == "2e-4"
    assert plan.training.entry("per_device_train_batch_size").value == 2
    assert plan.training.entry("gradient_accumulation_steps").value == 8
    assert plan.training.entry("bf16").value is True


def test_omegaconf_attribute_sections(tmp_path, monkeypatch):
    script = (
        PYYAML_SCRIPT.replace("import yaml\n", "from omegaconf import OmegaConf\n")
        .replace(
            "    with open(path) as f:\n        return yaml.safe_load(f)\n",
            "    return OmegaConf.load(path)\n",
        )
        .replace('cfg["training"]', "cfg.training")
    )
    _project(
        tmp_path,
        monkeypatch,
        {
            "train.py": script,
            "cfg.yaml": PYYAML_CFG.replace("  bf16: true", "  bf16: true\n  gradient_acumulation_steps: 2"),
            "run.sh": "torchrun --nproc_per_node 4 train.py --config cfg.yaml\n",
        },
    )
    # OmegaConf's loader reads 2e-4 as a float (no GA003); the misspelt key goes to TrainingArguments
    assert _findings({"GA002", "GA003"}) == [("GA002", "cfg.yaml", 13, 3, "error")]
    plans, _ = build_plans([Path(".")], CheckOptions(), Settings())
    assert plans[0].training.entry("learning_rate").value == pytest.approx(2e-4)


FLAT_RUAMEL_SCRIPT = """\
import sys

from ruamel.yaml import YAML
from transformers import Trainer, TrainingArguments

cfg = YAML(typ="safe").load(open(sys.argv[1]))
args = TrainingArguments(**cfg)
Trainer(model=None, args=args).train()
"""


def test_flat_file_handed_whole_to_training_arguments(tmp_path, monkeypatch):
    """`TrainingArguments(**YAML().load(...))`: the whole file is the consumer's, read as YAML 1.2."""
    _project(
        tmp_path,
        monkeypatch,
        {
            "train.py": FLAT_RUAMEL_SCRIPT,
            "args.yaml": "output_dir: out\nper_device_train_batch_size: 2\nlearning_rate: 1e-5\n"
            "warmup_ratio: 0.03\ngradient_acumulation_steps: 4\n",
            "run.sh": "torchrun --nproc_per_node 2 train.py args.yaml\n",
        },
    )
    assert _findings({"GA002", "GA003"}) == [("GA002", "args.yaml", 5, 1, "error")]
    plans, _ = build_plans([Path(".")], CheckOptions(), Settings())
    assert plans[0].training.entry("learning_rate").value == pytest.approx(1e-5)
    assert plans[0].training.entry("per_device_train_batch_size").value == 2


def test_the_load_of_the_flag_the_run_uses_reads_it(tmp_path, monkeypatch):
    """Two loads: `--config cfg.yaml` is read by the one whose path is `args.config`, not `args.extra`."""
    script = PYYAML_SCRIPT.replace(
        "    cfg = load_config(args.config)\n",
        "    cfg = load_config(args.config)\n    extra = yaml.safe_load(open(args.extra))\n"
        '    LoraConfig(**extra["training"])\n',
    )
    files = {
        "train.py": script,
        "cfg.yaml": PYYAML_CFG.replace("  bf16: true", "  bf16: true\n  gradient_acumulation_steps: 2"),
        "run.sh": "torchrun --nproc_per_node 4 train.py --config cfg.yaml --extra extra.yaml\n",
    }
    _project(tmp_path, monkeypatch, files)
    assert _findings({"GA002", "GA005"}) == [("GA002", "cfg.yaml", 13, 3, "error")]


def test_two_loads_that_could_read_it_judge_nothing(tmp_path, monkeypatch):
    """Which of two loads of a path from the command line reads the file is not known: nothing is judged."""
    script = FLAT_RUAMEL_SCRIPT.replace(
        "args = TrainingArguments(**cfg)\n",
        "other = YAML(typ='safe').load(open(sys.argv[2]))\nargs = TrainingArguments(**cfg)\n"
        "TrainingArguments(**other)\n",
    )
    files = {
        "train.py": script,
        "args.yaml": "output_dir: out\nper_device_train_batch_size: 2\nwarmup_ratio: 0.1\n"
        "gradient_acumulation_steps: 4\n",
        "run.sh": "torchrun --nproc_per_node 2 train.py args.yaml other.yaml\n",
    }
    _project(tmp_path, monkeypatch, files)
    # the file keeps its per-file judgement (advisor.facts.keys): only the near miss of a TrainingArguments
    # key, not the judgement of every key against the script's consumer
    assert _findings({"GA002"}) == [("GA002", "args.yaml", 4, 1, "error")]


TRL_SCRIPT = """\
import sys

import yaml
from trl import SFTConfig, SFTTrainer

with open(sys.argv[1]) as f:
    cfg = yaml.safe_load(f)
args = SFTConfig(**cfg["sft"])
SFTTrainer(model=cfg["model"], args=args).train()
"""


def test_trl_config_section_takes_training_arguments_fields(tmp_path, monkeypatch):
    """SFTConfig subclasses TrainingArguments: output_dir and the batch are its keys, max_length its own."""
    _project(
        tmp_path,
        monkeypatch,
        {
            "train.py": TRL_SCRIPT,
            "cfg.yaml": "model: Qwen/Qwen2.5-0.5B\nsft:\n  output_dir: out\n"
            "  per_device_train_batch_size: 2\n  max_length: 1024\n  packing: true\n  max_seq_lenght: 1024\n",
            "run.sh": "accelerate launch --num_processes 2 train.py cfg.yaml\n",
        },
    )
    assert _findings({"GA002", "GA003", "GA005"}) == [("GA002", "cfg.yaml", 7, 3, "error")]
    plans, _ = build_plans([Path(".")], CheckOptions(), Settings())
    assert plans[0].training.entry("per_device_train_batch_size").value == 2


SUBCLASS_SCRIPT = """\
import argparse
from dataclasses import dataclass, field

import yaml
from transformers import Trainer, TrainingArguments


@dataclass
class MyTrainingArguments(TrainingArguments):
    model_max_length: int = field(default=512)
    use_lora: bool = False


parser = argparse.ArgumentParser()
parser.add_argument("config")
cfg = yaml.safe_load(open(parser.parse_args().config))
args = MyTrainingArguments(**cfg["train"])
Trainer(model=None, args=args).train()
"""


def test_the_scripts_subclass_of_training_arguments(tmp_path, monkeypatch):
    """`MyTrainingArguments(TrainingArguments)` takes its own fields and TrainingArguments' keys."""
    _project(
        tmp_path,
        monkeypatch,
        {
            "train.py": SUBCLASS_SCRIPT,
            "cfg.yaml": "train:\n  output_dir: out\n  per_device_train_batch_size: 4\n"
            "  model_max_length: 2048\n  use_lora: true\n  use_lroa: true\n",
            "run.sh": "torchrun --nproc_per_node 2 train.py cfg.yaml\n",
        },
    )
    assert _findings({"GA002", "GA005"}) == [("GA002", "cfg.yaml", 6, 3, "error")]
    plans, _ = build_plans([Path(".")], CheckOptions(), Settings())
    assert plans[0].training.entry("per_device_train_batch_size").value == 4


def test_a_section_the_script_filters_is_not_judged(tmp_path, monkeypatch):
    """`training = {k: v for k, v in training.items() if k in allowed}` rebinds the section: which keys
    reach TrainingArguments is not known, so none is an error."""
    script = PYYAML_SCRIPT.replace(
        '    training_args = TrainingArguments(**cfg["training"])\n',
        '    training = cfg["training"]\n'
        '    training = {k: v for k, v in training.items() if k != "gradient_acumulation_steps"}\n'
        "    training_args = TrainingArguments(**training)\n",
    )
    _project(
        tmp_path,
        monkeypatch,
        {
            "train.py": script,
            "cfg.yaml": PYYAML_CFG.replace("  bf16: true", "  bf16: true\n  gradient_acumulation_steps: 2"),
            "run.sh": "torchrun --nproc_per_node 4 train.py --config cfg.yaml\n",
        },
    )
    assert _findings({"GA002"}) == []


def test_keys_the_script_removes_by_name_it_computes_are_not_judged(tmp_path, monkeypatch):
    """`for key in ("enabled", "note"): lora.pop(key)`: which keys reach LoraConfig is not known."""
    script = PYYAML_SCRIPT.replace(
        '    lora.pop("enabled")\n', '    for key in ("enabled", "note"):\n        lora.pop(key, None)\n'
    )
    cfg = PYYAML_CFG.replace("  enabled: true\n", "  enabled: true\n  note: rank 16 works\n")
    _project(
        tmp_path,
        monkeypatch,
        {
            "train.py": script,
            "cfg.yaml": cfg,
            "run.sh": "torchrun --nproc_per_node 4 train.py --config cfg.yaml\n",
        },
    )
    assert _findings({"GA002"}) == []
