#!/bin/bash
# The golden-file project: one accelerate run over a TrainingArguments YAML and a DeepSpeed JSON.
accelerate launch --num_processes 2 train.py configs/train.yaml
