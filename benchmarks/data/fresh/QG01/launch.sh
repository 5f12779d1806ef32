#!/usr/bin/env bash
python train.py train.yaml
