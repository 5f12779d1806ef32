"""Flags checked against the argument dataclasses the training script declares (issue 11, item 1).

Real cases: artidoro/qlora (qlora.py parses with return_remaining_strings=True, its scripts pass
--evaluation_strategy) and haotian-liu/LLaVA (llava/train/train.py: TrainingArguments subclass with
model_max_length, DataArguments with lazy_preprocess). The excerpts in script_arguments/ name their
commit and lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.facts.script_ast import analyse_script
from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import git_project

HERE = Path(__file__).parent / "script_arguments"
QLORA = (HERE / "qlora.py.txt").read_text(encoding="utf-8")
QLORA_SH = (HERE / "finetune_guanaco_7b.sh.txt").read_text(encoding="utf-8")
LLAVA = (HERE / "llava_train.py.txt").read_text(encoding="utf-8")
# train_mem.py only calls train() of train.py, where the parser is: the command names train.py here
LLAVA_SH = (
    (HERE / "llava_finetune_lora.sh.txt").read_text(encoding="utf-8").replace("train_mem.py", "train.py")
)


def _findings(codes: set[str]) -> list[tuple[str, str, int, int]]:
    result = run_check([Path(".")], CheckOptions())
    assert not result.errors, result.errors
    return sorted(
        (f.rule, str(f.location.file), f.location.line, f.location.col)
        for f in result.findings
        if f.rule in codes
    )


def _flag_position(text: str, flag: str) -> tuple[int, int]:
    for number, line in enumerate(text.splitlines(), 1):
        col = line.find(f"--{flag} ")
        if col < 0:
            col = line.find(f"--{flag}\\")
        if col >= 0 and line[col + len(flag) + 2 : col + len(flag) + 3] in (" ", "\\", ""):
            return number, col + 1
    raise AssertionError(flag)


# ------------------------------------------------------------------------------------------------
# the AST facts
# ------------------------------------------------------------------------------------------------


def test_qlora_parser_its_dataclasses_and_the_dropping_call():
    (parser,) = analyse_script(QLORA).argument_parsers
    assert parser.parser == "HfArgumentParser"
    assert [c.name for c in parser.classes] == [
        "ModelArguments",
        "DataArguments",
        "TrainingArguments",
        "GenerationArguments",
    ]
    assert parser.library_bases == ("transformers.Seq2SeqTrainingArguments",)
    assert parser.complete
    assert {"double_quant", "lora_r", "source_max_len", "do_mmlu_eval", "max_new_tokens"} <= parser.fields
    line, col, how = parser.drops_unknown
    assert (line, how) == (185, "return_remaining_strings=True")
    assert QLORA.splitlines()[line - 1][col - 1 :].startswith("True")
    assert "parse_args_into_dataclasses" in parser.methods


def test_llava_parser_refuses_unknown_flags():
    (parser,) = analyse_script(LLAVA).argument_parsers
    assert parser.drops_unknown is None
    assert parser.library_bases == ("transformers.TrainingArguments",)
    assert {"model_max_length", "lazy_preprocess", "mm_projector_lr"} <= parser.fields


def test_fields_of_the_scripts_own_base_dataclass_count():
    text = (
        "from dataclasses import dataclass\nfrom trl import SFTConfig, TrlParser, ModelConfig\n\n"
        "@dataclass\nclass Common:\n    seed_everything: bool = True\n\n"
        "@dataclass\nclass MyArgs(Common):\n    dataset_mix: str = 'a'\n\n"
        "parser = TrlParser((MyArgs, SFTConfig, ModelConfig))\n"
        "args, cfg, model = parser.parse_args_and_config()\n"
    )
    (parser,) = analyse_script(text).argument_parsers
    assert parser.parser == "TrlParser"
    assert {"seed_everything", "dataset_mix"} <= parser.fields
    assert parser.library_bases == ("trl.SFTConfig", "trl.ModelConfig")
    assert parser.complete


def test_a_base_from_an_unread_package_makes_the_parser_incomplete():
    text = (
        "from dataclasses import dataclass\nfrom transformers import HfArgumentParser\n"
        "from mylib.args import BaseArgs\n\n@dataclass\nclass A(BaseArgs):\n    x: int = 1\n\n"
        "HfArgumentParser((A,)).parse_args_into_dataclasses()\n"
    )
    (parser,) = analyse_script(text).argument_parsers
    assert not parser.complete


def test_parse_known_args_and_allow_extra_keys_drop_unknown_keys():
    text = (
        "from transformers import HfArgumentParser, TrainingArguments\n"
        "p = HfArgumentParser(TrainingArguments)\nargs, rest = p.parse_known_args()\n"
        "q = HfArgumentParser((TrainingArguments,))\nq.parse_dict({}, allow_extra_keys=True)\n"
    )
    first, second = analyse_script(text).argument_parsers
    assert first.drops_unknown[2] == "parse_known_args()"
    assert second.drops_unknown[:2] == (5, 35)


# ------------------------------------------------------------------------------------------------
# the findings
# ------------------------------------------------------------------------------------------------


def test_qlora_drops_evaluation_strategy_on_current_transformers(tmp_path, monkeypatch):
    git_project(tmp_path, {"qlora.py": QLORA, "scripts/finetune_guanaco_7b.sh": QLORA_SH}, monkeypatch)
    found = _findings({"GA002", "GA005", "GA008"})
    sh = "scripts/finetune_guanaco_7b.sh"
    ev = _flag_position(QLORA_SH, "evaluation_strategy")
    # --evaluation_strategy: removed (4.51) and, because of return_remaining_strings=True, dropped
    assert ("GA008", sh, *ev) in found
    assert ("GA005", sh, *ev) in found
    # --lora_modules all: no dataclass of qlora.py has it (it always adapts every linear layer,
    # find_all_linear_names, line 248): dropped too
    assert ("GA008", sh, *_flag_position(QLORA_SH, "lora_modules")) in found
    # --warmup_ratio is qlora's own field (qlora.py line 209), whatever transformers did with it;
    # the script's other own flags (--double_quant, --bits, --source_max_len...) are never unknown
    assert len(found) == 3, found


def test_qlora_with_its_own_pin_keeps_evaluation_strategy(tmp_path, monkeypatch):
    # qlora's requirements.txt pins transformers==4.31.0: older than the oldest release we ship (4.40),
    # which still has evaluation_strategy and warmup_ratio
    files = {
        "qlora.py": QLORA,
        "scripts/finetune_guanaco_7b.sh": QLORA_SH,
        "requirements.txt": "transformers==4.31.0\n",
    }
    git_project(tmp_path, files, monkeypatch)
    assert _findings({"GA002", "GA005", "GA008"}) == [
        ("GA008", "scripts/finetune_guanaco_7b.sh", *_flag_position(QLORA_SH, "lora_modules"))
    ]


def test_llava_own_fields_are_known_and_removed_flags_are_removed(tmp_path, monkeypatch):
    files = {"llava/train/train.py": LLAVA, "scripts/v1_5/finetune_lora.sh": LLAVA_SH}
    git_project(tmp_path, files, monkeypatch)
    found = _findings({"GA002", "GA005", "GA008"})
    sh = "scripts/v1_5/finetune_lora.sh"
    assert found == sorted(
        [
            ("GA005", sh, *_flag_position(LLAVA_SH, "evaluation_strategy")),
            ("GA005", sh, *_flag_position(LLAVA_SH, "warmup_ratio")),
        ]
    )


def test_llava_misspelt_flag_is_unknown_and_an_error(tmp_path, monkeypatch):
    sh = LLAVA_SH.replace("--lazy_preprocess True", "--lazy_preprocessing True")
    git_project(tmp_path, {"llava/train/train.py": LLAVA, "run.sh": sh}, monkeypatch)
    result = run_check([Path(".")], CheckOptions())
    unknown = [f for f in result.findings if f.rule == "GA002"]
    assert [(f.location.line, f.location.col) for f in unknown] == [_flag_position(sh, "lazy_preprocessing")]
    assert unknown[0].severity == "error"


def test_llava_pinned_transformers_accepts_its_flags(tmp_path, monkeypatch):
    # LLaVA's pyproject.toml pins transformers==4.37.2
    pyproject = '[project]\nname = "llava"\ndependencies = ["transformers==4.37.2", "peft"]\n'
    files = {
        "llava/train/train.py": LLAVA,
        "scripts/v1_5/finetune_lora.sh": LLAVA_SH,
        "pyproject.toml": pyproject,
    }
    git_project(tmp_path, files, monkeypatch)
    assert _findings({"GA002", "GA005", "GA007", "GA008"}) == []


def test_trl_script_flags_against_trl_and_transformers(tmp_path, monkeypatch):
    script = (
        "from trl import ModelConfig, ScriptArguments, SFTConfig, TrlParser\n\n"
        "parser = TrlParser((ScriptArguments, SFTConfig, ModelConfig))\n"
        "script_args, training_args, model_args = parser.parse_args_and_config()\n"
    )
    sh = (
        "accelerate launch sft.py --dataset_name trl-lib/Capybara --model_name_or_path Qwen/Qwen2-0.5B "
        "--learning_rate 2e-5 --max_seq_length 1024 --use_peft --lora_r 32\n"
    )
    git_project(tmp_path, {"sft.py": script, "run.sh": sh}, monkeypatch)
    found = _findings({"GA002", "GA005", "GA008"})
    # max_seq_length: SFTConfig's, gone in TRL 0.20 (max_length since)
    assert found == [("GA005", "run.sh", 1, sh.index("--max_seq_length") + 1)]


def test_a_script_without_a_readable_parser_is_not_judged(tmp_path, monkeypatch):
    script = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--foo')\np.parse_args()\n"
    git_project(
        tmp_path,
        {"train.py": script, "run.sh": "torchrun --nproc_per_node 2 train.py --foo 1 --bar 2\n"},
        monkeypatch,
    )
    assert _findings({"GA002", "GA005", "GA008"}) == []


def test_a_parser_that_reads_only_a_yaml_file_does_not_judge_the_flags(tmp_path, monkeypatch):
    script = (
        "import sys\nfrom transformers import HfArgumentParser, TrainingArguments\n"
        "(args,) = HfArgumentParser(TrainingArguments).parse_yaml_file(sys.argv[1])\n"
    )
    sh = "python train.py cfg.yaml --made_up_flag 1\n"
    git_project(tmp_path, {"train.py": script, "run.sh": sh}, monkeypatch)
    assert _findings({"GA002", "GA005", "GA008"}) == []


@pytest.mark.parametrize(
    "text",
    [
        "from transformers import HfArgumentParser\nHfArgumentParser()\n",
        "from transformers import HfArgumentParser\nHfArgumentParser(*types).parse_args_into_dataclasses()\n",
        "from transformers import HfArgumentParser\n"
        "HfArgumentParser(lambda: 1).parse_args_into_dataclasses()\n",
        "from dataclasses import dataclass\nfrom transformers import HfArgumentParser\n"
        "@dataclass\nclass A(A):\n    x: int = 1\nHfArgumentParser(A).parse_args_into_dataclasses()\n",
        "".join(f"class C{i}(C{i + 1}):\n    f{i}: int = 0\n" for i in range(300))
        + "from transformers import HfArgumentParser\nHfArgumentParser(C0).parse_args_into_dataclasses()\n",
        "p = HfArgumentParser((A, B))\np.parse_args_into_dataclasses(return_remaining_strings=flag)\n",
    ],
)
def test_odd_parser_forms_never_raise_and_never_claim_completeness_wrongly(text):
    facts = analyse_script(text)
    assert facts.syntax_error is None
    for parser in facts.argument_parsers:
        if parser.complete:
            assert parser.classes and all(c.resolved for c in parser.classes)
        assert parser.drops_unknown is None or parser.drops_unknown[2].endswith(("=True", "()"))
