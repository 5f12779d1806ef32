"""Which packed runs attend within each packed sample (advisor.facts.packed_attention), per consumer.

Each case is the consumer's own config form: a TRL SFT recipe (trl 0.19 sft_trainer.py:394, 0.20 :439,
1.0 :837: packing with a best-fit strategy turns padding_free on; 0.18 has no strategy), LLaMA-Factory
(0.9.3 model_utils/packing.py:110-116: neat_packing patches flash-attention's unpad data; packing alone
attends across samples) and axolotl (monkeypatch/multipack.py@70be5461: sample_packing's position_ids).
"""

from __future__ import annotations

import pytest

from advisor.facts.data_length import data_length
from advisor.facts.packed_attention import per_document_attention

TRL = """model_name_or_path: meta-llama/Llama-2-7b-hf
attn_implementation: flash_attention_2
max_length: 8192
per_device_train_batch_size: 1
bf16: true
output_dir: out
"""
LAUNCH = {
    "launch.sh": "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py sft.yaml\n",
    "train.py": "import trl\n",
}


@pytest.mark.parametrize(
    ("pin", "extra", "within"),
    [
        ("trl==0.26.0", "packing: true\n", True),  # default 'bfd'
        ("trl==1.16.0", "packing: true\npacking_strategy: bfd_split\n", True),
        ("trl==0.19.0", "packing: true\n", True),  # default 'ffd'
        ("trl==0.26.0", "packing: true\npacking_strategy: wrapped\n", False),
        ("trl==0.26.0", "packing: true\npacking_strategy: bfd_split\n", False),  # not in 0.26's set
        ("trl==0.18.0", "packing: true\n", False),  # packing before strategies: one mask over the row
        ("trl==0.18.0", "packing: true\npadding_free: true\n", True),
    ],
)
def test_trl_packing_attends_per_sample_by_release(facts_of, pin: str, extra: str, within: bool) -> None:
    names = facts_of({**LAUNCH, "requirements.txt": pin + "\n", "sft.yaml": TRL + extra})
    why = per_document_attention(names["plan"])
    assert (why is not None) is within, why
    data = data_length(names["plan"])
    assert data.packed and (data.per_document is not None) is within


def test_trl_without_packing_has_no_packed_rows(facts_of) -> None:
    names = facts_of({**LAUNCH, "requirements.txt": "trl==0.26.0\n", "sft.yaml": TRL})
    data = data_length(names["plan"])
    assert not data.packed and data.per_document is None


LF = """model_name_or_path: meta-llama/Llama-2-7b-hf
stage: sft
do_train: true
finetuning_type: full
dataset: alpaca_en
template: llama2
cutoff_len: 8192
flash_attn: fa2
per_device_train_batch_size: 1
bf16: true
output_dir: out
"""


@pytest.mark.parametrize(("extra", "within"), [("neat_packing: true\n", True), ("packing: true\n", False)])
def test_llamafactory_neat_packing_attends_per_sample(facts_of, extra: str, within: bool) -> None:
    launch = {"launch.sh": "#!/bin/bash\nllamafactory-cli train sft.yaml\n"}
    names = facts_of({**launch, "sft.yaml": LF + extra})
    assert names["plan"].training.known_value("dialect").value == "llamafactory"
    assert (per_document_attention(names["plan"]) is not None) is within


AXOLOTL = """base_model: meta-llama/Llama-2-7b-hf
datasets:
  - path: tatsu-lab/alpaca
    type: alpaca
sequence_len: 8192
flash_attention: true
micro_batch_size: 1
gradient_accumulation_steps: 1
num_epochs: 1
optimizer: adamw_torch_fused
learning_rate: 0.0002
bf16: auto
output_dir: ./outputs/out
"""


@pytest.mark.parametrize(("extra", "within"), [("sample_packing: true\n", True), ("", False)])
def test_axolotl_sample_packing_attends_per_sample(facts_of, extra: str, within: bool) -> None:
    names = facts_of({"cfg.yml": AXOLOTL + extra})
    assert (per_document_attention(names["plan"]) is not None) is within


SWIFT = """#!/bin/bash
NPROC_PER_NODE=8 \\
swift sft \\
    --model Qwen/Qwen2.5-7B \\
    --tuner_type full \\
    --torch_dtype bfloat16 \\
    --attn_impl flash_attn \\
    --max_length 16384 {extra}
"""


@pytest.mark.parametrize(("extra", "within"), [("--packing true", True), ("", False)])
def test_swift_packing_is_padding_free_per_sample(facts_of, extra: str, within: bool) -> None:
    # ms-swift 4.6.0 arguments/sft_args.py:186-197: packing sets padding_free (flash attention required);
    # template/base.py:750-768 packing_row writes each sample's own position_ids
    names = facts_of({"train.sh": SWIFT.format(extra=extra)})
    assert (per_document_attention(names["plan"]) is not None) is within
    data = data_length(names["plan"])
    assert data.packed is within and (data.per_document is not None) is within
    from advisor.facts.estimate_inputs import _attn

    assert _attn(names["plan"]) == "flash_attention_2"  # --attn_impl flash_attn (model_args.py:34)
