#!/usr/bin/env bash
NPROC_PER_NODE=8 NNODES=4 torchrun --nproc_per_node 8 --nnodes 4 train.py train.yaml
