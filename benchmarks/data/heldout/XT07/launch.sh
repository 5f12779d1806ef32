#!/usr/bin/env bash
NPROC_PER_NODE=8 NNODES=1 torchrun --nproc_per_node 8 --nnodes 1 train.py train.yaml
