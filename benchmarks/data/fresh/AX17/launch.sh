#!/usr/bin/env bash
axolotl train train.yaml
