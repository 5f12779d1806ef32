"""max_length is a cap, not the data's length (issue 21 section 2, "Data lengths").

Without the data's length (settings dataset-tokens / dataset-samples) and without packing, the time model
counts every sample at max_length: the step time is then an upper bound and the tokens it counts are not the
data's, so `estimate` says the real tokens per second are unknown. HF `group_by_length` batches samples of
nearly one length (transformers trainer_pt_utils.py get_length_grouped_indices: mega-batches of 50 x batch
sorted by length), so padding to the longest adds little.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.estimate.timing import DataLength, tokens_per_micro_batch
from tests.conftest import estimate_json_run, git_project

SFT = """model_name_or_path: Qwen/Qwen2.5-1.5B
use_peft: true
bf16: true
per_device_train_batch_size: 4
max_length: 2048
max_steps: 100
output_dir: out
"""


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> dict:
    base = {"launch.sh": "#!/bin/bash\npython train.py sft.yaml\n", "train.py": "pass\n"}
    git_project(tmp_path, {**base, **files}, monkeypatch)
    return estimate_json_run()


def test_unknown_length_counts_no_capped_token_as_real(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _run(tmp_path, monkeypatch, {"sft.yaml": SFT})
    assert run["time"]["real_tokens_known"] is False
    said = " ".join(run["assumptions"])
    assert "max_length 2048, a cap and not the data's length" in said
    assert "real tokens per second are unknown" in said


@pytest.mark.parametrize("known", [False, True])
def test_the_time_line_says_when_tokens_are_counted_at_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, known: bool
) -> None:
    files = {"launch.sh": "#!/bin/bash\npython train.py sft.yaml\n", "train.py": "pass\n", "sft.yaml": SFT}
    if known:
        toml = '[[runs]]\npath = "launch.sh"\ndataset-samples = 10\ndataset-tokens = 3000\n'
        files[".gpu-advise.toml"] = toml
    git_project(tmp_path, files, monkeypatch)
    result = CliRunner().invoke(app, ["estimate", ".", "-H", "1xH100"])
    assert result.exit_code == 0, result.output
    (time_line,) = [line for line in result.stdout.splitlines() if line.startswith("Time:")]
    assert ("tokens/s counted at max_length" in time_line) is not known
    assert ("real tokens per second are unknown" in time_line) is not known


def test_the_data_length_makes_the_tokens_real(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toml = '[[runs]]\npath = "launch.sh"\ndataset-samples = 1000\ndataset-tokens = 300000\n'
    run = _run(tmp_path, monkeypatch, {"sft.yaml": SFT, ".gpu-advise.toml": toml})
    assert run["time"]["real_tokens_known"] is True
    assert "300 tokens per sample on average" in " ".join(run["assumptions"])


def test_packing_fills_every_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = _run(tmp_path, monkeypatch, {"sft.yaml": SFT + "packing: true\n"})
    assert run["time"]["real_tokens_known"] is True


def test_length_grouped_batches_are_barely_padded() -> None:
    mean = 300.0
    _, padded, basis = tokens_per_micro_batch(4, 2048, DataLength(tokens_per_sample=mean))
    _, grouped, _ = tokens_per_micro_batch(4, 2048, DataLength(tokens_per_sample=mean, length_grouped=True))
    assert padded == pytest.approx(4 * 2 * mean * 4 / 5) and "padded to ~480" in basis
    assert grouped == pytest.approx(4 * mean)


def test_group_by_length_speeds_up_the_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toml = '[[runs]]\npath = "launch.sh"\ndataset-samples = 1000\ndataset-tokens = 300000\n'
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    plain = _run(tmp_path / "a", monkeypatch, {"sft.yaml": SFT, ".gpu-advise.toml": toml})
    grouped = _run(
        tmp_path / "b", monkeypatch, {"sft.yaml": SFT + "group_by_length: true\n", ".gpu-advise.toml": toml}
    )
    assert grouped["time"]["step_time_s"] < 0.9 * plain["time"]["step_time_s"]


def test_padding_free_packing_attends_within_each_sample() -> None:
    # transformers 5.24 modeling_flash_attention_utils.py:855-861: packed position_ids -> varlen attention
    from advisor.core.records import replace
    from advisor.estimate import TrainingSetup, estimate_time, flops_per_token, resolve_model

    setup = TrainingSetup(
        model=resolve_model("meta-llama/Meta-Llama-3-8B").count(),
        micro_batch=1,
        seq_len=8192,
        precision="bf16",
        gradient_checkpointing=True,
        optimizer="adamw_torch_fused",
        attn_implementation="flash_attention_2",
    )
    row = DataLength(tokens_per_sample=300.0, packed=True)
    varlen = DataLength(tokens_per_sample=300.0, packed=True, padding_free=True)
    whole = estimate_time(setup, 989, 1.0, "H100-SXM", 1, data=row)
    within = estimate_time(setup, 989, 1.0, "H100-SXM", 1, data=varlen)
    assert whole.flops_per_token == pytest.approx(flops_per_token(setup, attention_span=8192))
    assert within.flops_per_token == pytest.approx(flops_per_token(setup, attention_span=300))
    assert within.step_time_s < whole.step_time_s
    # SDPA gets a block mask, not a variable-length kernel: the whole row is computed
    sdpa = estimate_time(replace(setup, attn_implementation="sdpa"), 989, 1.0, "H100-SXM", 1, data=varlen)
    assert sdpa.flops_per_token == pytest.approx(whole.flops_per_token)
    # the samples' length unknown: the whole row is timed and the estimate says it is a bound
    unknown = estimate_time(setup, 989, 1.0, "H100-SXM", 1, data=DataLength(packed=True, padding_free=True))
    assert unknown.flops_per_token == pytest.approx(whole.flops_per_token)
    assert any("whose length is unknown" in a and "upper bound" in a for a in unknown.assumptions)
    assert not any("whose length is unknown" in a for a in within.assumptions + whole.assumptions)


def test_a_consumer_rule_for_per_sample_attention_times_each_sample() -> None:
    # advisor.facts.packed_attention names the consumer's rule (TRL best-fit packing, LLaMA-Factory
    # neat_packing, axolotl sample_packing); the mean length stands for every sample: a lower bound on
    # the attention FLOPs, since each sample's grow with its length squared
    from advisor.estimate import TrainingSetup, estimate_time, flops_per_token, resolve_model

    setup = TrainingSetup(
        model=resolve_model("meta-llama/Meta-Llama-3-8B").count(),
        micro_batch=1,
        seq_len=32768,
        precision="bf16",
        gradient_checkpointing=True,
        attn_implementation="flash_attention_2",
    )
    rule = DataLength(tokens_per_sample=400.0, packed=True, per_document="LLaMA-Factory neat_packing")
    t = estimate_time(setup, 989, 1.0, "H100-SXM", 1, data=rule)
    assert t.flops_per_token == pytest.approx(flops_per_token(setup, attention_span=400))
    (line,) = [a for a in t.assumptions if "attend within each sample" in a]
    assert "LLaMA-Factory neat_packing" in line and "lower bound on the attention FLOPs" in line
    across = estimate_time(
        setup, 989, 1.0, "H100-SXM", 1, data=DataLength(tokens_per_sample=400.0, packed=True)
    )
    assert across.flops_per_token == pytest.approx(flops_per_token(setup, attention_span=32768))


@pytest.mark.parametrize(("pin", "faster"), [("trl==0.26.0", True), ("trl==0.18.0", False)])
def test_trl_best_fit_packing_times_attention_per_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pin: str, faster: bool
) -> None:
    # trl 0.26 sft_trainer.py:731: packing with the default 'bfd' strategy turns padding_free on, so
    # flash-attention runs within each sample; trl 0.18 packs under one mask over the row
    toml = '[[runs]]\npath = "launch.sh"\ndataset-samples = 1000\ndataset-tokens = 300000\n'
    sft = SFT.replace("max_length: 2048", "max_length: 16384") + "attn_implementation: flash_attention_2\n"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    row = _run(
        tmp_path / "a",
        monkeypatch,
        {
            "sft.yaml": sft + "packing: true\npacking_strategy: wrapped\n",
            ".gpu-advise.toml": toml,
            "requirements.txt": pin + "\n",
        },
    )
    packed = _run(
        tmp_path / "b",
        monkeypatch,
        {"sft.yaml": sft + "packing: true\n", ".gpu-advise.toml": toml, "requirements.txt": pin + "\n"},
    )
    assert (packed["time"]["step_time_s"] < 0.9 * row["time"]["step_time_s"]) is faster


def test_unknown_sample_lengths_say_how_much_the_row_attention_weighs() -> None:
    from advisor.estimate import TrainingSetup, estimate_time, flops_per_token, resolve_model

    setup = TrainingSetup(
        model=resolve_model("meta-llama/Meta-Llama-3-8B").count(),
        micro_batch=1,
        seq_len=32768,
        precision="bf16",
        gradient_checkpointing=True,
        attn_implementation="flash_attention_2",
    )
    t = estimate_time(setup, 989, 1.0, "H100-SXM", 1, data=DataLength(packed=True, per_document="TRL"))
    whole, none = flops_per_token(setup, attention_span=32768), flops_per_token(setup, attention_span=0)
    (line,) = [a for a in t.assumptions if "whose length is unknown" in a]
    assert f"that attention is {(whole - none) / whole:.0%} of the FLOPs timed" in line
    assert 0.2 < (whole - none) / whole < 0.6  # 32k rows of an 8B model: attention is a large share


def test_the_json_reports_the_collectives_and_what_is_not_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    launch = "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py sft.yaml\n"
    sft = SFT.replace("use_peft: true\n", "") + "fsdp: full_shard auto_wrap\n"
    git_project(tmp_path, {"launch.sh": launch, "train.py": "pass\n", "sft.yaml": sft}, monkeypatch)
    t = estimate_json_run("8xA100-SXM-80GB")["time"]
    assert t["comm_s"] > 0 and 0 <= t["exposed_comm_s"] <= t["comm_s"]
