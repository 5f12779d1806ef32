"""The fact-layer readers of a training script that the plan takes in (advisor.plan.run_plan.ScriptReaders):
the pipeline hands them to build_plan, so the plan layer imports no fact module."""

from __future__ import annotations

from advisor.facts.deepspeed_code import fill_code_deepspeed
from advisor.facts.script_layout import training_values
from advisor.plan.run_plan import ScriptReaders

SCRIPT_READERS = ScriptReaders(training_values=training_values, code_deepspeed=fill_code_deepspeed)
