# lit-gpt finetune/lora.py at 8641822 (the resource table's version), written as a plain accelerate loop
# with the row's settings in train.yaml. What it keeps of the source's memory semantics:
# - devices > 1: Fabric's FSDPStrategy(auto_wrap_policy={Block}, activation_checkpointing_policy={Block})
#   (finetune/lora.py:83-89); Lightning Fabric's FSDPStrategy defaults use_orig_params=True on torch >= 2.0
#   (lightning/fabric/strategies/fsdp.py, FSDPStrategy.__init__), so each wrapped Block holds its frozen
#   weights and its LoRA adapters in one FlatParameter (accelerate.yaml: fsdp_use_orig_params true);
# - its own loop, not HF Trainer (which wraps LoRA leaves in units of their own): gradient accumulation
#   under fabric.no_backward_sync(model, enabled=is_accumulating) (finetune/lora.py:214-215), here
#   accelerator.accumulate, which enters no_sync on the accumulating micro-batches;
# - `logits` stays referenced through backward (finetune/lora.py:216-220), as below.
import sys

import torch
import yaml
from accelerate import Accelerator
from datasets import load_dataset
from peft import LoraConfig, get_peft_model
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM, AutoTokenizer, DataCollatorForSeq2Seq


def build_dataloader(cfg: dict) -> DataLoader:
    """Alpaca prompts + responses, cut at max_length, each micro-batch padded to its longest sample."""
    tokenizer = AutoTokenizer.from_pretrained(cfg["model_name_or_path"])
    tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token

    def encode(ex: dict) -> dict:
        text = f"{ex['instruction']}\n{ex['input']}\n{ex['output']}"
        ids = tokenizer(text, truncation=True, max_length=cfg["max_length"])["input_ids"]
        return {"input_ids": ids, "labels": ids}

    data = load_dataset(cfg["dataset_name"], split="train")
    data = data.map(encode, remove_columns=data.column_names)
    collate = DataCollatorForSeq2Seq(tokenizer, padding=True)
    return DataLoader(data, batch_size=cfg["per_device_train_batch_size"], shuffle=True, collate_fn=collate)


def main(cfg: dict) -> None:
    accelerator = Accelerator(gradient_accumulation_steps=cfg["gradient_accumulation_steps"])
    model = AutoModelForCausalLM.from_pretrained(cfg["model_name_or_path"], torch_dtype=torch.bfloat16)
    lora = LoraConfig(
        r=cfg["lora_r"],
        lora_alpha=cfg["lora_alpha"],
        lora_dropout=cfg["lora_dropout"],
        target_modules=cfg["lora_target_modules"],
    )
    model = get_peft_model(model, lora)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg["learning_rate"], weight_decay=cfg["weight_decay"])
    train_dataloader = build_dataloader(cfg)
    model, optimizer, train_dataloader = accelerator.prepare(model, optimizer, train_dataloader)
    for batch in train_dataloader:
        with accelerator.accumulate(model):
            logits = model(input_ids=batch["input_ids"]).logits
            loss = torch.nn.functional.cross_entropy(
                logits[:, :-1].flatten(0, 1), batch["labels"][:, 1:].flatten(), ignore_index=-100
            )
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        main(yaml.safe_load(f))
