#!/usr/bin/env bash
NPROC_PER_NODE=4 torchrun --nproc_per_node 4 train.py train.yaml
