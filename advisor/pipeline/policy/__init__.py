"""The gate's own policy on a pull request (`check --base REV`): what the change relaxes against REV
(GA801-GA805), and `--policy-from-base`, under which REV's settings, rules, baseline and recorded
measurements govern.
advisor/pipeline/policy/base.py is the entry point; the other modules compare one kind of policy each."""

from __future__ import annotations

from advisor.pipeline.policy.base import BasePolicy as BasePolicy
