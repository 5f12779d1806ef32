"""Keys judged against the releases the project pins (issue 11, item 2) and the deprecations read from
the consumers' sources (item 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.facts import versions
from advisor.pipeline.check import CheckOptions, run_check
from advisor.plan.context import CheckContext
from advisor.sources.pins import read_folder_pins
from tests.conftest import git_project

TA = ("TrainingArguments",)


def _targets(path: Path) -> dict:
    return versions.targets_for(path, None, CheckContext.standalone(path))


def _findings(codes: set[str]) -> list[tuple[str, str, int, int]]:
    result = run_check([Path(".")], CheckOptions())
    assert not result.errors, result.errors
    return sorted(
        (f.rule, str(f.location.file), f.location.line, f.location.col)
        for f in result.findings
        if f.rule in codes
    )


ARGS = (
    "output_dir: out\nper_device_train_batch_size: 4\nwarmup_ratio: 0.03\noverwrite_output_dir: true\n"
    "logging_dir: logs\n"
)


# ------------------------------------------------------------------------------------------------
# the verdicts
# ------------------------------------------------------------------------------------------------


def test_transformers_4_57_pin_accepts_keys_removed_later(tmp_path, monkeypatch):
    # the case: the three keys exist in transformers 4.57 (training_args.py of 4.57.6)
    git_project(
        tmp_path,
        {"requirements.txt": "torch==2.4.0\ntransformers==4.57.1\n", "train.yaml": ARGS},
        monkeypatch,
    )
    assert _findings({"GA002", "GA005", "GA007"}) == []


def test_without_a_pin_the_current_release_judges(tmp_path, monkeypatch):
    git_project(tmp_path, {"train.yaml": ARGS}, monkeypatch)
    assert _findings({"GA005"}) == [
        ("GA005", "train.yaml", 3, 1),
        ("GA005", "train.yaml", 4, 1),
        ("GA005", "train.yaml", 5, 1),
    ]


def test_deprecated_and_removed_are_different_findings(tmp_path, monkeypatch):
    # transformers 5.6: warmup_ratio and logging_dir warn in __post_init__ (deprecated), the FSDP
    # top-level keys and evaluation_strategy are gone
    text = (
        "output_dir: out\nwarmup_ratio: 0.03\nevaluation_strategy: steps\nlogging_steps: 5\n"
        "learning_rate: 1.0e-5\n"
    )
    git_project(tmp_path, {"requirements.txt": "transformers==5.6.0\n", "train.yaml": text}, monkeypatch)
    assert _findings({"GA005", "GA007"}) == [("GA005", "train.yaml", 3, 1), ("GA007", "train.yaml", 2, 1)]


def test_a_key_added_after_the_pinned_release_is_unknown(tmp_path, monkeypatch):
    # eval_strategy replaced evaluation_strategy in 4.41; a 4.40 project cannot read it
    text = "output_dir: out\neval_strategy: steps\nlogging_steps: 5\nlearning_rate: 1.0e-5\n"
    git_project(tmp_path, {"requirements.txt": "transformers==4.40.2\n", "train.yaml": text}, monkeypatch)
    assert _findings({"GA002", "GA005"}) == [("GA002", "train.yaml", 2, 1)]


def test_target_versions_setting_wins_over_pins(tmp_path, monkeypatch):
    settings = '[tool.gpu-advise]\ntarget-versions = {transformers = "5.20"}\n'
    files = {"requirements.txt": "transformers==4.57.1\n", "pyproject.toml": settings, "train.yaml": ARGS}
    git_project(tmp_path, files, monkeypatch)
    assert [f[2] for f in _findings({"GA005"})] == [3, 4, 5]


def test_llamafactory_is_judged_at_the_transformers_ceiling_it_requires(tmp_path, monkeypatch):
    # LLaMA-Factory 0.9.5 requires transformers<=5.6.0, where warmup_ratio is deprecated, not removed
    text = (
        "model_name_or_path: Qwen/Qwen2.5-0.5B\nstage: sft\ndo_train: true\nfinetuning_type: lora\n"
        "dataset: alpaca_en_demo\ntemplate: qwen\noutput_dir: out\nwarmup_ratio: 0.1\n"
    )
    git_project(tmp_path, {"train_lora.yaml": text}, monkeypatch)
    assert _findings({"GA005", "GA007"}) == [("GA007", "train_lora.yaml", 8, 1)]


def test_a_replacement_is_named_only_when_the_release_reads_it():
    index = versions.releases("transformers").index("4.50.3")
    status = versions.key_status("transformers", TA, "evaluation_strategy", index)
    assert (status.state, status.replacement) == ("deprecated", "eval_strategy")
    assert versions.key_status("transformers", TA, "eval_strategy", 0).state == "new"
    # logging_dir's deprecation (5.0-5.14) names no replacement at all
    five = versions.releases("transformers").index("5.0.0")
    assert versions.key_status("transformers", TA, "logging_dir", five) == versions.KeyStatus("deprecated")


def test_trl_history_knows_max_seq_length():
    releases = versions.releases("trl")
    old = releases.index("0.19.1")
    new = releases.index("1.16.0")
    assert versions.key_status("trl", ("SFTConfig",), "max_seq_length", old).state in (
        "present",
        "deprecated",
    )
    assert versions.key_status("trl", ("SFTConfig",), "max_seq_length", new).state == "removed"


# ------------------------------------------------------------------------------------------------
# reading the pins
# ------------------------------------------------------------------------------------------------


def _pins(tmp_path: Path, name: str, text: str) -> dict[str, str]:
    (tmp_path / name).write_text(text, encoding="utf-8")
    return {k: p.spec for k, p in read_folder_pins(tmp_path).items()}


def test_requirements_with_extras_markers_and_comments(tmp_path):
    text = (
        "# training\n-r base.txt\ntransformers[torch]>=4.41,<5 ; python_version >= '3.9'\n"
        "trl==0.19.1  # pinned\n"
    )
    assert _pins(tmp_path, "requirements.txt", text) == {"transformers": ">=4.41,<5", "trl": "==0.19.1"}


def test_pyproject_pep621_like_llava(tmp_path):
    # haotian-liu/LLaVA pyproject.toml @ c121f04 pins "transformers==4.37.2" in dependencies and
    # "deepspeed==0.12.6" in the train extra
    text = '[project]\nname = "llava"\ndependencies = ["torch==2.1.2", "transformers==4.37.2", "peft"]\n'
    text += '[project.optional-dependencies]\ntrain = ["deepspeed==0.12.6", "ninja"]\n'
    pins = {"transformers": "==4.37.2", "deepspeed": "==0.12.6", "torch": "==2.1.2"}  # torch: torch_release
    assert _pins(tmp_path, "pyproject.toml", text) == pins


def test_poetry_caret_and_exact(tmp_path):
    text = (
        '[tool.poetry.dependencies]\npython = "^3.10"\ntransformers = "^4.40"\ntrl = {version = "0.12.2"}\n'
    )
    assert _pins(tmp_path, "pyproject.toml", text) == {"transformers": ">=4.40,<5", "trl": "==0.12.2"}


def test_lock_files_are_exact(tmp_path):
    uv = 'version = 1\n[[package]]\nname = "transformers"\nversion = "4.46.3"\n'
    assert _pins(tmp_path, "uv.lock", uv) == {"transformers": "==4.46.3"}
    pipfile = json.dumps({"default": {"trl": {"version": "==0.13.0"}}})
    assert _pins(tmp_path, "Pipfile.lock", pipfile)["trl"] == "==0.13.0"


def test_lock_file_beats_requirements_in_the_same_folder(tmp_path):
    (tmp_path / "requirements.txt").write_text("transformers>=4.40\n")
    (tmp_path / "poetry.lock").write_text('[[package]]\nname = "transformers"\nversion = "4.45.2"\n')
    assert read_folder_pins(tmp_path)["transformers"].spec == "==4.45.2"


def test_environment_yml_conda_and_pip(tmp_path):
    text = (
        "name: x\ndependencies:\n  - python=3.11\n  - conda-forge::transformers=4.44.2\n"
        "  - pip:\n    - trl==0.11.4\n"
    )
    assert _pins(tmp_path, "environment.yml", text) == {"transformers": "==4.44.2", "trl": "==0.11.4"}


def test_setup_cfg_install_requires(tmp_path):
    text = (
        "[metadata]\nname = x\n\n[options]\ninstall_requires =\n    accelerate>=0.34,<1\n    peft==0.13.2\n"
    )
    assert _pins(tmp_path, "setup.cfg", text) == {"accelerate": ">=0.34,<1", "peft": "==0.13.2"}


def test_setup_py_is_read_not_run(tmp_path):
    marker = tmp_path / "ran"
    text = (
        f"open({str(marker)!r}, 'w').write('x')\nfrom setuptools import setup\n"
        "REQS = ['transformers==4.48.3', 'numpy']\nsetup(name='x', install_requires=REQS)\n"
    )
    assert _pins(tmp_path, "setup.py", text) == {"transformers": "==4.48.3"}
    assert not marker.exists()


def test_broken_pin_files_pin_nothing(tmp_path):
    assert _pins(tmp_path, "pyproject.toml", "[project\n") == {}
    assert _pins(tmp_path, "setup.py", "def (:\n") == {}


def test_nearest_folder_wins_up_to_the_project_root(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text("transformers==4.57.1\n")
    sub = tmp_path / "recipes" / "sft"
    sub.mkdir(parents=True)
    (sub / "requirements.txt").write_text("transformers==5.2.0\n")
    assert _targets(sub / "a.yaml")["transformers"].release == "5.2.0"
    assert _targets(tmp_path / "b.yaml")["transformers"].release == "4.57.6"
    # above the project root nothing is read
    assert not versions.targets_for(
        tmp_path.parent / "c.yaml", None, CheckContext.standalone(tmp_path.parent / "c.yaml")
    )["transformers"].pinned


@pytest.mark.parametrize(
    ("spec", "release"),
    [
        ("==4.57.1", "4.57.6"),
        (">=4.41,<5", "4.57.6"),
        ("<=5.6.0", "5.6.2"),
        ("~=4.45.0", "4.45.2"),
        ("==4.31.0", "4.40.2"),  # older than we ship: the oldest we have
    ],
)
def test_specifiers_resolve_to_a_shipped_minor(spec, release):
    target = versions.resolve_spec("transformers", spec, "test")
    assert target is not None and target.release == release


# ------------------------------------------------------------------------------------------------
# deprecations read from the consumers' sources (item 3)
# ------------------------------------------------------------------------------------------------

# The shape of axolotl's examples (examples/llama-2/qlora.yml) with the keys axolotl 0.19 deprecates
# (Field(deprecated=...) in utils/schemas/config.py, handle_legacy_message_fields_logic in
# utils/schemas/utils.py) and the one its DeprecatedParameters validator refuses
# (utils/schemas/deprecated.py).
AXOLOTL = """base_model: NousResearch/Llama-2-7b-hf
load_in_4bit: true
adapter: qlora
datasets:
  - path: mhenrichsen/alpaca_2k_test
    type: chat_template
    message_field_role: from
    message_field_content: value
sequence_len: 4096
max_packed_sequence_len: 4096
micro_batch_size: 2
gradient_accumulation_steps: 4
num_epochs: 1
learning_rate: 0.0002
flash_attention: true
output_dir: ./out
"""


def test_axolotl_deprecations_and_the_refused_key(tmp_path, monkeypatch):
    git_project(tmp_path, {"qlora.yml": AXOLOTL}, monkeypatch)
    result = run_check([Path(".")], CheckOptions())
    found = sorted(
        (f.rule, f.severity, f.location.line, f.location.col)
        for f in result.findings
        if f.rule in {"GA002", "GA005", "GA007"}
    )
    assert found == [
        ("GA005", "error", 10, 1),  # max_packed_sequence_len: the validator raises
        ("GA007", "info", 7, 5),  # message_field_role, inside the datasets entry
        ("GA007", "info", 8, 5),  # message_field_content
        ("GA007", "info", 15, 1),  # flash_attention
    ]


def test_axolotl_replacements_come_from_its_messages():
    from advisor.sources import known_keys as kk

    assert kk.removed_key("axolotl", "flash_attention").replacement == "attn_implementation"
    assert (
        kk.removed_key("axolotl", "message_field_role", ("datasets",)).replacement
        == "message_property_mappings"
    )
    assert kk.removed_key("axolotl", "max_packed_sequence_len").refused


def test_transformers_5_6_deprecates_warmup_ratio():
    index = versions.releases("transformers").index("5.6.2")
    status = versions.key_status("transformers", TA, "warmup_ratio", index)
    assert (status.state, status.replacement) == ("deprecated", "warmup_steps")
    assert versions.key_status("transformers", TA, "warmup_ratio", index + 20).state == "removed"


def test_accelerate_and_deepspeed_keys_added_after_the_pin(tmp_path, monkeypatch):
    # accelerate's parallelism_config arrived in 1.10 (commands/config/config_args.py ClusterConfig);
    # DeepSpeed's zero_optimization.zenflow in 0.17 (runtime/zero/config.py DeepSpeedZeroConfig);
    # stage3_prefetch_bucket_size is the alias DeepSpeed files write for prefetch_bucket_size
    acc = (
        "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 2\n"
        "mixed_precision: bf16\nparallelism_config:\n  parallelism_config_dp_shard_size: 2\n"
    )
    ds = (
        '{"train_micro_batch_size_per_gpu": 1,\n "zero_optimization": {"stage": 3, '
        '"stage3_prefetch_bucket_size": 5e7,\n "zenflow": {}}}\n'
    )
    files = {"requirements.txt": "accelerate==0.34.2\ndeepspeed==0.14.4\n", "acc.yaml": acc, "ds.json": ds}
    git_project(tmp_path, files, monkeypatch)
    assert _findings({"GA002", "GA005"}) == [("GA002", "acc.yaml", 5, 1), ("GA002", "ds.json", 3, 2)]
    (tmp_path / "requirements.txt").unlink()  # the next check reads the pins again: nothing to clear
    assert _findings({"GA002", "GA005"}) == []


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("pyproject.toml", "project = 1\ntransformers = 2\n"),
        ("pyproject.toml", '[tool]\npoetry = "transformers"\n'),
        ("Pipfile.lock", '["transformers"]'),
        ("environment.yml", "dependencies: 3\n# transformers\n"),
        ("environment.yml", "dependencies:\n  - pip: 7\n# transformers\n"),
        ("setup.py", "setup(install_requires=" + "[" * 200 + "'transformers==4.45.0'" + "]" * 200 + ")\n"),
        ("requirements.txt", b"\xff\xfetransformers==4.45.0\n"),
    ],
)
def test_odd_pin_files_never_raise(tmp_path, name, text):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    pins = read_folder_pins(tmp_path)
    assert set(pins) <= {"transformers"}
