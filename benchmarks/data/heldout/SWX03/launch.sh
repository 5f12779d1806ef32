#!/usr/bin/env bash
PYTORCH_CUDA_ALLOC_CONF='expandable_segments:True' NPROC_PER_NODE=4 torchrun --nproc_per_node 4 train.py train.yaml
