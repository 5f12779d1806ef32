"""Checks judged by the file's consumer: GA003 by who reads the YAML, GA001 on launch flags and
accelerate's gpu_ids, and line-independent fingerprints."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.core.document import Location
from advisor.core.findings import Finding
from advisor.facts.document import document_facts
from advisor.sources.read import read_document

AXOLOTL = (
    "base_model: meta-llama/Llama-3.1-8B\ndatasets:\n  - path: x\n    type: alpaca\nmicro_batch_size: 2\n"
)


def facts(tmp_path: Path, name: str, text: str):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return document_facts(read_document(p))


def ga003_keys(ns) -> list[str | None]:
    return [item["location"].key for item in ns["problems"] if item["kind"] == "yaml11-scalar"]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("axolotl.yaml", AXOLOTL + "learning_rate: 2e-5\n"),  # pydantic lax mode: a float
        (
            "recipe.yaml",
            "model_name_or_path: m\ndataset_name: d\nmax_length: 512\nlearning_rate: 2e-5\n",
        ),  # TrlParser
        ("sft.yaml", "stage: sft\nfinetuning_type: lora\noutput_dir: o\nlearning_rate: 1e-4\n"),  # OmegaConf
        ("hparams.yaml", "lr: 1e-5\nuse_ema: yes\n"),  # unknown consumer (Hydra): nothing judged
    ],
)
def test_number_strings_that_the_consumer_converts_are_not_reported(
    tmp_path: Path, name: str, text: str
) -> None:
    ns = facts(tmp_path, name, text)
    assert ga003_keys(ns) == []
    assert ns["type_errors"] == []


def test_number_strings_are_reported_where_nothing_converts_them(tmp_path: Path) -> None:
    assert ga003_keys(facts(tmp_path, "train.yaml", "output_dir: out\nlearning_rate: 1e-5\n")) == [
        "/learning_rate"
    ]


def test_bool_words_are_still_reported_for_known_kinds(tmp_path: Path) -> None:
    ns = facts(tmp_path, "axolotl.yaml", AXOLOTL + "learning_rate: 2e-5\nbf16: yes\n")
    assert ga003_keys(ns) == ["/bf16"]
    acc = "compute_environment: LOCAL_MACHINE\ndistributed_type: NO\nnum_processes: 1\n"
    assert ga003_keys(facts(tmp_path, "acc.yaml", acc)) == ["/distributed_type"]


def test_accelerate_gpu_ids_as_an_int_is_a_type_error_with_a_quote_hint(tmp_path: Path) -> None:
    # accelerate launch does args.gpu_ids.split(","): an unquoted single id (an int) fails
    acc = "distributed_type: MULTI_GPU\nnum_processes: 2\ngpu_ids: 0\n"
    errors = facts(tmp_path, "acc.yaml", acc)["type_errors"]
    assert [(e["location"].line, e["location"].col) for e in errors] == [(3, 10)]
    assert "quote it: '0'" in errors[0]["message"]
    for ok in ("gpu_ids: '0'\n", "gpu_ids: 0,1\n", "gpu_ids: all\n"):
        assert facts(tmp_path, "acc.yaml", acc.replace("gpu_ids: 0\n", ok))["type_errors"] == []


def launch_errors(tmp_path: Path, line: str) -> list[tuple[str, int, int]]:
    ns = facts(tmp_path, "run.sh", "#!/bin/bash\n" + line + "\n")
    return [(e["key"], e["location"].line, e["location"].col) for e in ns["type_errors"]]


def test_training_flags_on_a_launch_line_are_converted_like_argparse(tmp_path: Path) -> None:
    line = "torchrun --nproc-per-node=2 train.py --per_device_train_batch_size=abc --learning_rate 2e-5"
    assert launch_errors(tmp_path, line) == [("per_device_train_batch_size", 2, 68)]
    ok = "torchrun train.py --per_device_train_batch_size 4 --bf16 yes --tf32 0 --fp16 --optim adamw_torch"
    assert launch_errors(tmp_path, ok) == []


def test_bool_and_choice_flags_follow_hf_string_to_bool_and_choices(tmp_path: Path) -> None:
    line = "accelerate launch train.py --bf16 on --optim adamw_bogus --num_train_epochs x"
    assert sorted(k for k, _, _ in launch_errors(tmp_path, line)) == ["bf16", "num_train_epochs", "optim"]


def test_flags_not_read_by_training_arguments_are_left_alone(tmp_path: Path) -> None:
    assert launch_errors(tmp_path, "vllm serve m --seed abc") == []
    assert launch_errors(tmp_path, "python train.py --my_flag abc --per_device_train_batch_size $BS") == []


def _finding(line: int, message: str, key: str | None = None) -> Finding:
    return Finding("GA900", "unused-suppression", "warning", message, Location(Path("a.yaml"), line, 1, key))


def test_keyless_fingerprint_survives_lines_added_above() -> None:
    before = _finding(10, "no GA201 finding on line 10 to suppress")
    after = _finding(13, "no GA201 finding on line 13 to suppress")
    assert before.fingerprint("a.yaml") == after.fingerprint("a.yaml")
    other_rule = _finding(10, "no GA202 finding on line 10 to suppress")
    assert other_rule.fingerprint("a.yaml") != before.fingerprint("a.yaml")
    keyed = _finding(10, "x", key="/learning_rate")
    assert keyed.fingerprint("a.yaml") == _finding(40, "y", key="/learning_rate").fingerprint("a.yaml")


def test_keyless_fingerprint_end_to_end_with_a_suppression_comment(tmp_path: Path, monkeypatch) -> None:
    from advisor.pipeline.check import CheckOptions, run_check

    # a directive on the line above names the line it covers: "no GA201 finding on line 2"
    text = "# gpu-advise: ignore[GA201]\noutput_dir: out\nper_device_train_batch_size: 4\n"
    monkeypatch.chdir(tmp_path)

    def fingerprints() -> set[str]:
        result = run_check([Path(".")], CheckOptions())
        hits = [f for f in result.findings if f.rule == "GA900"]
        assert all("on line" in f.message for f in hits)
        return {f.fingerprint("train.yaml") for f in hits}

    (tmp_path / "train.yaml").write_text(text, encoding="utf-8")
    first = fingerprints()
    (tmp_path / "train.yaml").write_text("# a comment\n\n" + text, encoding="utf-8")
    assert first and fingerprints() == first
