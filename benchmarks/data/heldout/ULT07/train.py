# ljm565/universal-llm-trainer's own loop at aefdc4a4 (src/trainer/trainer.py, src/models/*.py), written as a
# plain PyTorch loop with the row's settings in train.yaml, for its 4-bit QLoRA configs. What it keeps:
# - bit 4 loads the model with dtype=torch.float32 (src/models/llama3.py:31: dtype is the `bit` string, else
#   float32), so embeddings, norms and lm_head are fp32 and the residual stream is fp32; the 4-bit Linears
#   compute in bnb_4bit_compute_dtype bfloat16 (config_quant/bnb_4bit.yaml) and return fp32;
# - build.py:129-131 then calls peft's prepare_model_for_kbit_training on the model (a no-op cast here:
#   every non-quantized weight is already fp32);
# - the model is called without labels and the loop computes nn.CrossEntropyLoss itself on the logits
#   (src/models/*.py:84, 97), the logits dropped after the loss (del_logits_after_forward);
# - torch.optim.AdamW over model.parameters(), HF gradient checkpointing, no autocast (amp_training False);
# - LoRA via PEFT on the modules config/*.yaml names.
import sys

import torch
import yaml
from datasets import load_dataset
from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig


def build_dataloader(cfg: dict) -> DataLoader:
    """Rows of max_length tokens, fully filled (the README's condition), src / src_attention_mask / label."""
    tokenizer = AutoTokenizer.from_pretrained(cfg["model_name_or_path"])
    text = "\n".join(
        ex["question"] for ex in load_dataset(cfg["dataset_name"], "ARC-Challenge", split="train")
    )
    ids = tokenizer(text)["input_ids"]
    n = cfg["max_length"]
    rows = [ids[i : i + n] for i in range(0, len(ids) - n + 1, n)]
    data = [{"src": r, "src_attention_mask": [1] * n, "label": r} for r in rows]

    def collate(items: list[dict]) -> dict:
        return {k: torch.tensor([it[k] for it in items]) for k in items[0]}

    return DataLoader(data, batch_size=cfg["per_device_train_batch_size"], shuffle=True, collate_fn=collate)


def main(cfg: dict) -> None:
    quant = BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_compute_dtype=torch.bfloat16,
        bnb_4bit_quant_type=cfg["bnb_4bit_quant_type"],
        bnb_4bit_use_double_quant=cfg["use_bnb_nested_quant"],
    )
    model = AutoModelForCausalLM.from_pretrained(
        cfg["model_name_or_path"], torch_dtype=torch.float32, quantization_config=quant, device_map={"": 0}
    )
    model.enable_input_require_grads()
    model.gradient_checkpointing_enable()
    model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
    lora = LoraConfig(
        r=cfg["lora_r"],
        lora_alpha=cfg["lora_alpha"],
        lora_dropout=cfg["lora_dropout"],
        target_modules=cfg["lora_target_modules"],
    )
    model = get_peft_model(model, lora)
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=cfg["learning_rate"],
        betas=(cfg["adam_beta1"], 0.999),
        weight_decay=cfg["weight_decay"],
    )
    criterion = torch.nn.CrossEntropyLoss(ignore_index=-100)
    accum = cfg["gradient_accumulation_steps"]
    for step, batch in enumerate(build_dataloader(cfg)):
        batch = {k: v.to(0) for k, v in batch.items()}
        logits = model(input_ids=batch["src"], attention_mask=batch["src_attention_mask"]).logits
        loss = criterion(logits[:, :-1, :].reshape(-1, logits.size(-1)), batch["label"][:, 1:].reshape(-1))
        del logits
        (loss / accum).backward()
        if (step + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        main(yaml.safe_load(f))
