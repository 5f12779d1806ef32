"""`gpu-advise estimate`: a model id with flags, or the runs under PATHS (typer CliRunner, offline)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from tests.conftest import REPO, write_files

runner = CliRunner()


def _json(args: list[str]) -> dict:
    result = runner.invoke(app, ["estimate", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_json_shape_for_a_model_id() -> None:
    data = _json(["meta-llama/Meta-Llama-3-8B", "--method", "lora", "--batch", "2", "--seq", "2048"])
    assert data["version"] == 1
    assert isinstance(data["params"], int)
    assert data["model"]["hub_id"] == "meta-llama/Meta-Llama-3-8B" and data["model"]["source"] == "catalog"
    assert data["setup"] == data["setup"] | {"method": "lora", "micro_batch": 2, "seq_len": 2048, "gpus": 1}
    names = [it["name"] for it in data["breakdown"]]
    assert names[0] == "weights" and "activations" in names
    assert all(isinstance(it["gib"], float | int) and it["gib"] >= 0 for it in data["breakdown"])
    mem = data["memory"]
    assert mem["low_gib"] < mem["peak_gib"] < mem["high_gib"]
    # the breakdown adds up to the peak
    assert sum(it["gib"] for it in data["breakdown"]) == pytest.approx(mem["peak_gib"], abs=0.05)
    # no --hardware: a verdict for each reference GPU, and where each layout fits
    assert {v["verdict"] for v in data["verdicts"]} <= {"fits", "tight", "does not fit"}
    assert len(data["verdicts"]) >= 4
    layouts = {(r["method"], r["strategy"], r["offload"]) for r in data["comparison"]}
    assert ("full", "none", False) in layouts and ("qlora", "zero3", True) in layouts
    assert set(data["cheapest"]) == {"full", "lora", "qlora"}
    assert data["cheapest"]["lora"]["gpus"] == 1  # an 8B LoRA fits on one large card
    assert any("assumed" in a for a in data["assumptions"])


def test_params_of_llama_3_8b_is_the_section_8_count() -> None:
    # memory-model.md section 8.2: Meta-Llama-3-8B has 8,030,261,248 parameters
    assert _json(["meta-llama/Meta-Llama-3-8B"])["params"] == 8_030_261_248


def test_70b_full_fine_tune_on_one_a100_80gb_does_not_fit() -> None:
    data = _json(["meta-llama/Meta-Llama-3-70B", "--method", "full", "-H", "1xA100-80GB"])
    assert data["params"] == 70_553_706_496
    assert data["verdict"] == "does not fit"
    assert data["verdicts"] == [
        {"gpu": data["hardware"]["gpu"], "usable_gib": 80.0, "verdict": "does not fit"}
    ]
    assert data["memory"]["peak_gib"] > 500  # 16 bytes per parameter before activations
    assert data["cheapest"]["full"] is None  # nothing full fits on one 80 GB card
    assert data["cheapest"]["qlora"]["gpus"] == 1
    savings = {w["change"]: w["saves_gib"] for w in data["what_if"]}
    assert any(k.startswith("LoRA") for k in savings) and all(v > 0 for v in savings.values())


def test_text_output_has_the_table_the_bars_and_the_verdict() -> None:
    result = runner.invoke(
        app, ["estimate", "meta-llama/Meta-Llama-3-70B", "-H", "1xA100-80GB", "--no-color"]
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "70,553,706,496 parameters" in out
    assert "optimizer states" in out and "█" in out
    assert "does not fit" in out
    assert "Cheapest that fits" in out and "QLoRA on 1 GPU" in out
    assert "\x1b[" not in out


def test_unknown_model_offline_exits_2_with_one_clear_line() -> None:
    result = runner.invoke(app, ["estimate", "someone/not-a-real-model-xyz"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert "unknown model 'someone/not-a-real-model-xyz'" in lines[0] and "--online" in lines[0]
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["gpt2", "-H", "no-such-machine"], "no-such-machine"),
        (["gpt2", "-H", "1xH100", "--gpus", "4"], "--gpus 4"),
        (["gpt2", "--batch", "0"], "--batch 0"),
        (["gpt2", "--batch", "100000000000000000000"], "--batch 1000"),
        (["gpt2", "--optim", "my_custom_optimizer"], "--optim"),
    ],
)
def test_bad_options_exit_2(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["estimate", *args])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_strategies_change_the_per_gpu_peak() -> None:
    base = ["meta-llama/Meta-Llama-3-8B", "-H", "8xH100-SXM", "--batch", "1", "--seq", "2048"]
    ddp = _json([*base, "--strategy", "ddp"])
    zero3 = _json([*base, "--strategy", "zero3"])
    offload = _json([*base, "--strategy", "zero3", "--offload"])
    assert ddp["setup"]["gpus"] == 8
    assert zero3["memory"]["peak_gib"] < ddp["memory"]["peak_gib"]
    assert offload["memory"]["peak_gib"] < zero3["memory"]["peak_gib"]
    assert offload["memory"]["host_gib"] > 0
    assert zero3["time"]["tokens_per_s"] > 0 and 0 < zero3["time"]["scaling_efficiency"] <= 1


def test_tokens_give_hours() -> None:
    data = _json(["meta-llama/Meta-Llama-3-8B", "-H", "1xH100", "--method", "lora", "--tokens", "1e8"])
    assert data["time"]["hours"] == pytest.approx(data["time"]["hours_single_gpu"])
    assert 0.5 < data["time"]["hours"] < 20


def test_runs_under_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_files(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\naccelerate launch --num_processes 2 train.py sft.yaml\n",
            "sft.yaml": "model_name_or_path: Qwen/Qwen2.5-1.5B\nuse_peft: true\nbf16: true\n"
            "per_device_train_batch_size: 4\nmax_length: 1024\nnum_train_epochs: 1\n",
            "train.py": "print('train')\n",
            ".gpu-advise.toml": '[[runs]]\npath = "launch.sh"\ndataset-samples = 20000\n',
            "other/args.yaml": "model_name_or_path: someone/unknown-model\nmax_length: 512\n",
        },
    )
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["estimate", ".", "-H", "2xH100-PCIe", "--format", "json"])
    assert result.exit_code == 0, result.output
    runs = {r["run"]: r for r in json.loads(result.stdout)["runs"]}
    run = runs["launch.sh"]
    assert (
        run["setup"]["method"] == "lora" and run["setup"]["gpus"] == 2 and run["setup"]["strategy"] == "ddp"
    )
    assert run["params"] == 1_543_714_304
    assert run["time"]["hours"] is not None and run["time"]["hours_single_gpu"] > run["time"]["hours"]
    assert "unknown" in runs["other/args.yaml"]
    text = runner.invoke(app, ["estimate", ".", "-H", "2xH100-PCIe"])
    assert text.exit_code == 0 and "run launch.sh" in text.stdout and "no estimate" in text.stdout


def test_missing_path_among_several_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.yaml").write_text("model_name_or_path: gpt2\n")
    result = runner.invoke(app, ["estimate", "a.yaml", "missing.yaml"])
    assert result.exit_code == 2 and "missing.yaml" in result.output


def test_example_project(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO / "fixtures" / "example")
    data = json.loads(runner.invoke(app, ["estimate", ".", "--format", "json"]).stdout)
    (run,) = data["runs"]
    assert run["model"]["hub_id"] == "Qwen/Qwen2.5-1.5B" and run["setup"]["strategy"] == "fsdp"
    assert run["hardware"]["name"] == "4xH100-NVL" and run["verdict"] == "fits"


def test_a_local_model_folder_is_a_model_not_a_run(tmp_path: Path) -> None:
    from advisor.estimate import resolve_model

    (tmp_path / "config.json").write_text(json.dumps(resolve_model("gpt2").config))
    data = _json([str(tmp_path)])
    assert data["model"]["source"] == "path" and data["params"] == 124_439_808


def test_a_run_shows_the_dtypes_it_assumed_and_where_each_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sft = "model_name_or_path: Qwen/Qwen2.5-0.5B\ndtype: bfloat16\nbf16: false\nmax_length: 512\n"
    write_files(tmp_path, {"sft.yaml": sft})
    monkeypatch.chdir(tmp_path)
    data = json.loads(runner.invoke(app, ["estimate", ".", "--format", "json", "-H", "1xH100"]).stdout)
    (run,) = data["runs"]
    rows = {d["what"]: d for d in run["dtypes"]}
    assert rows["weights"]["dtype"] == "bf16" and rows["weights"]["source"].startswith("sft.yaml:2")
    assert rows["compute"]["dtype"] == "bf16, no autocast"
    assert rows["optimizer"]["dtype"] == "bf16 states"
    text = runner.invoke(app, ["estimate", ".", "-H", "1xH100"]).output
    lines = [
        ln for ln in text.splitlines() if ln.startswith(("weights:", "compute:", "optimizer:", "trainable:"))
    ]
    assert len(lines) == 4 and "sft.yaml:2" in lines[0]


def test_a_standalone_recipe_gets_an_estimate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_files(
        tmp_path, {"sft.yaml": "model_name_or_path: Qwen/Qwen2.5-0.5B\nbf16: true\nmax_length: 512\n"}
    )
    monkeypatch.chdir(tmp_path)
    data = json.loads(runner.invoke(app, ["estimate", ".", "--format", "json"]).stdout)
    (run,) = data["runs"]
    assert "unknown" not in run and run["setup"]["gpus"] == 1 and run["memory"]["peak_gib"] > 0
    assert any(a.startswith("world size unknown") for a in run["assumptions"])
