"""The gpu-advise settings that govern a config file: those found from the file's own folder upwards.

The key facts and the script-flag facts both judge against the versions these settings pin. The check's
context finds them, once per folder (advisor.plan.context.CheckContext.settings_near).
"""

from __future__ import annotations

from typing import Any

from advisor.plan.context import CheckContext, context_for

__all__ = ["settings_for"]


def settings_for(path: Any, context: CheckContext | None = None) -> Any:
    """The Settings for the file at path, or None when none are found or they cannot be read."""
    return (context or context_for(path)).settings_near(path)
