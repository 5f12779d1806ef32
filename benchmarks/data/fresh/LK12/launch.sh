#!/usr/bin/env bash
accelerate launch --config_file accelerate.yaml train.py train.yaml
