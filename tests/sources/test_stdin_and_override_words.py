"""Command words that name no file: `python - <<PY` reads its program from standard input (Python's
docs, Command line `-`), like `python -c`; `key.path=cfg.yaml` is a Hydra override (volcengine/verl's
launch scripts), not a config the script parses. A field trial found GA004 errors on both (ms-swift's
.dev_scripts/ci_container_test.sh, verl's dapo_7b_async_retool.sh); the scripts here are hand-written cuts
of their form."""

from __future__ import annotations

from pathlib import Path

from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import git_project

STDIN = "#!/bin/bash\npython - <<'PY'\nimport importlib.util\nprint(1)\nPY\n"
HYDRA = """\
#!/bin/bash
python3 -m verl.trainer.main_ppo \\
    data.train_batch_size=512 \\
    actor_rollout_ref.rollout.multi_turn.tool_config_path=recipe/retool/tool_config.yaml \\
    trainer.n_gpus_per_node=8
"""
MISSING = "#!/bin/bash\ntorchrun --nproc_per_node 2 train.py configs/missing.yaml\n"


def _missing(result) -> list[str]:
    return [f.message for f in result.findings if f.rule == "GA004"]


def test_a_program_from_standard_input_is_no_missing_file(tmp_path, monkeypatch):
    git_project(tmp_path, {"ci.sh": STDIN}, monkeypatch)
    result = run_check([Path(".")], CheckOptions(hardware="8xA100-SXM-80GB"))
    assert _missing(result) == []


def test_a_hydra_override_naming_a_yaml_is_no_config_file(tmp_path, monkeypatch):
    git_project(tmp_path, {"run.sh": HYDRA}, monkeypatch)
    result = run_check([Path(".")], CheckOptions(hardware="8xA100-SXM-80GB"))
    assert _missing(result) == []


def test_a_missing_positional_config_is_still_reported(tmp_path, monkeypatch):
    git_project(tmp_path, {"run.sh": MISSING, "train.py": "import transformers\n"}, monkeypatch)
    result = run_check([Path(".")], CheckOptions(hardware="8xA100-SXM-80GB"))
    assert any("missing.yaml" in m for m in _missing(result)), _missing(result)
