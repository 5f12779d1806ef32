"""Fixture for tests/facts/test_script.py: a trimmed accelerate no-Trainer script. Never executed."""

import argparse
import json
import logging
import os

import torch
from accelerate import Accelerator
from datasets import load_dataset
from transformers import AutoModelForCausalLM, AutoTokenizer

logger = logging.getLogger(__name__)


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--output_dir", default="out")
    parser.add_argument("--push_to_hub", action="store_true")
    return parser.parse_args()


def main():
    args = parse_args()
    accelerator = Accelerator()
    if accelerator.is_main_process:
        os.makedirs(args.output_dir, exist_ok=True)
    # every rank opens the same log file
    logger.addHandler(logging.FileHandler(os.path.join(args.output_dir, "train.log")))

    raw = load_dataset("wikitext", "wikitext-2-raw-v1")
    tokenizer = AutoTokenizer.from_pretrained("gpt2")
    with accelerator.main_process_first():
        tokenized = raw.map(lambda b: tokenizer(b["text"]), batched=True)
    # device_map="auto" under a multi-process launcher: every rank spreads the model over all GPUs
    model = AutoModelForCausalLM.from_pretrained("gpt2", device_map="auto")
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    model, optimizer = accelerator.prepare(model, optimizer)

    for batch in tokenized["train"]:
        loss = model(**batch).loss
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()

    accelerator.wait_for_everyone()
    with accelerator.main_process_first():
        tokenized.save_to_disk(os.path.join(args.output_dir, "tokenized"))
    if accelerator.is_main_process:
        save_all(accelerator, model, tokenizer, args.output_dir)
    accelerator.save_state(os.path.join(args.output_dir, "state"))
    finish(accelerator, model, args)


def finish(accelerator, model, args):
    if not accelerator.is_main_process:
        return
    save_all(accelerator, model, None, args.output_dir)
    publish(model, args)


def save_all(accelerator, model, tokenizer, output_dir):
    unwrapped = accelerator.unwrap_model(model)
    unwrapped.save_pretrained(output_dir, save_function=accelerator.save)
    with open(os.path.join(output_dir, "all_results.json"), "w") as fh:
        json.dump({"done": True}, fh)


def publish(model, args):
    if args.push_to_hub:
        model.push_to_hub("me/model")


if __name__ == "__main__":
    main()
