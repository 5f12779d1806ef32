"""A config the launch script writes before the launch (a here-document redirected into a file, `echo >>`,
`tee`) exists when the launcher opens it: no GA004 for it, while a file nothing writes is still missing.
Upstream form, hand-copied and shortened: RLHFlow/Online-RLHF @3a00ed83 run_loop2.sh:47-75 writes
dpo_config.yaml with `cat <<EOT > dpo_config.yaml` inside a function, then runs `accelerate launch ...
dpo_iteration/run_dpo.py dpo_config.yaml` in the same function."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check
from advisor.sources.shell.reader import read_launch
from tests.conftest import write_files

ZERO2 = "distributed_type: DEEPSPEED\nnum_processes: 8\ndeepspeed_config:\n  zero_stage: 2\n"
SCRIPT = "from trl import DPOConfig, DPOTrainer\n"

ONLINE_RLHF = """#!/bin/bash
run_iteration() {
    local model_path=$1
    cat <<EOT > dpo_config.yaml
run_name: iter1
learning_rate: 5e-7
per_device_train_batch_size: 1
gradient_accumulation_steps: 16
EOT
    accelerate launch --config_file ./configs/zero2.yaml dpo_iteration/run_dpo.py dpo_config.yaml
}
run_iteration RLHFlow/LLaMA3-SFT
"""


def _missing(tmp_path: Path, launch: str) -> list[str]:
    (tmp_path / ".git").mkdir()
    write_files(
        tmp_path, {"run_loop.sh": launch, "configs/zero2.yaml": ZERO2, "dpo_iteration/run_dpo.py": SCRIPT}
    )
    result = run_check([tmp_path / "run_loop.sh"], CheckOptions(hardware="8xH100-SXM"))
    assert not result.errors, result.errors
    return [f.message.split("'")[1] for f in result.findings if f.rule == "GA004"]


def test_a_heredoc_written_config_is_not_missing(tmp_path: Path) -> None:
    assert _missing(tmp_path, ONLINE_RLHF) == []  # was: training_args file 'dpo_config.yaml' does not exist


def test_a_file_nothing_writes_is_still_missing(tmp_path: Path) -> None:
    launch = ONLINE_RLHF.replace("run_dpo.py dpo_config.yaml", "run_dpo.py dpo_config_v2.yaml")
    assert _missing(tmp_path, launch) == ["dpo_config_v2.yaml"]


def test_a_file_written_after_the_launch_is_missing(tmp_path: Path) -> None:
    launch = (
        "#!/bin/bash\n"
        "accelerate launch --config_file configs/zero2.yaml dpo_iteration/run_dpo.py cfg.yaml\n"
        "echo 'learning_rate: 1e-6' > cfg.yaml\n"
    )
    assert _missing(tmp_path, launch) == ["cfg.yaml"]


def test_a_file_written_in_another_folder_is_missing(tmp_path: Path) -> None:
    launch = ONLINE_RLHF.replace("cat <<EOT > dpo_config.yaml", "cat <<EOT > configs/dpo_config.yaml")
    assert _missing(tmp_path, launch) == ["dpo_config.yaml"]


@pytest.mark.parametrize(
    ("line", "written"),
    [
        ("cat <<EOF > a.yaml\nx: 1\nEOF\n", ["a.yaml"]),
        ("echo x >> logs/run.log 2>&1\n", ["logs/run.log"]),
        ("printf '%s' \"$CFG\" | tee -a b.yaml c.json > /dev/null\n", ["b.yaml", "c.json"]),
        ("cat x >| d.json\n", ["d.json"]),
        ("python gen.py &> out.txt\n", ["out.txt"]),
        ('cat $UNSET_DIR/x > "$OUT"\n', []),  # the name is not known statically
        ("sort < in.txt\n", []),  # input only
    ],
)
def test_the_reader_records_what_a_command_writes(line: str, written: list[str]) -> None:
    doc = read_launch(Path("run.sh"), "#!/bin/bash\n" + line)
    assert [w.path for w in doc.data.written] == written
