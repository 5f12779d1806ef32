"""A vLLM server (`vllm serve`, the OpenAI api_server module, `trl vllm-serve`): its TP groups are
blocks of the first tp x pp x dp visible GPUs, and it is never judged as a training run."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import write_files


def serve(cmd: str) -> dict[str, str]:
    return {"serve.sh": "#!/bin/bash\n" + cmd + "\n"}


def test_tp_group_is_the_first_visible_gpus(run_facts_of) -> None:
    p = run_facts_of(
        serve("CUDA_VISIBLE_DEVICES=0,1 vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 2"),
        hardware="2xH100-PCIe",
    )["placement"]
    assert p.serving is True and p.tp_size == 2 and p.consistent is True
    assert p.tp_groups == [[0, 1]] and p.tp_groups_over_pcie == [[0, 1]]


def test_visible_set_picks_the_gpus(run_facts_of) -> None:
    p = run_facts_of(
        serve("CUDA_VISIBLE_DEVICES=1,2,3 python -m vllm.entrypoints.openai.api_server --model m -tp 2"),
        hardware="4xH100-NVL",
    )["placement"]
    assert p.tp_groups == [[1, 2]] and p.tp_groups_over_pcie == [[1, 2]]
    assert p.nvlink_group_for_tp == [0, 1]


def test_data_parallel_engines_take_consecutive_blocks(run_facts_of) -> None:
    p = run_facts_of(
        serve("trl vllm-serve --model Qwen/Qwen2.5-7B --tensor_parallel_size 2 --data_parallel_size 2"),
        hardware="4xH100-NVL",
    )["placement"]
    assert p.tp_groups == [[0, 1], [2, 3]] and p.tp_groups_over_pcie == []


def test_nvswitch_has_no_tp_group_over_pcie(run_facts_of) -> None:
    p = run_facts_of(serve("vllm serve m --tensor-parallel-size 8"), hardware="8xH100-SXM")["placement"]
    assert p.tp_groups == [list(range(8))] and p.tp_groups_over_pcie == []


def test_more_gpus_than_visible_is_not_judged(run_facts_of) -> None:
    p = run_facts_of(serve("vllm serve m --tensor-parallel-size 4"), hardware="2xH100-PCIe")["placement"]
    assert p.consistent is False and not p.tp_groups_over_pcie


@pytest.mark.parametrize(
    "hardware", ["2xH100-PCIe", "4xH100-NVL", "8xH100-SXM", "1xH100", "8xV100-32GB", None]
)
def test_a_server_gets_no_training_findings(
    hardware, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_files(
        tmp_path,
        serve(
            "CUDA_VISIBLE_DEVICES=0,1 vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 2 "
            "--dtype half --max-num-seqs 256 --gpu-memory-utilization 0.95 --max-model-len 8192\n"
            "trl vllm-serve --model Qwen/Qwen2.5-7B --tensor_parallel_size 1 --data_parallel_size 2"
        ),
    )
    monkeypatch.chdir(tmp_path)
    result = run_check([Path(".")], CheckOptions(hardware=hardware))
    assert not result.errors, result.errors
    assert len(result.runs) == 2
    codes = {f.rule for f in result.findings}
    assert codes <= {"GA306", "GA305"}, [f"{f.rule} {f.message}" for f in result.findings]
    assert ("GA306" in codes) == (hardware == "2xH100-PCIe"), codes
