#!/usr/bin/env bash
NPROC_PER_NODE=8 PYTORCH_CUDA_ALLOC_CONF='expandable_segments:True' torchrun --nproc_per_node 8 train.py train.yaml
