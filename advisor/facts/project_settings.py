"""The gpu-advise settings that govern a config file: those found from the file's own folder upwards.

A leaf module: the key facts and the script-flag facts both judge against the versions these settings pin.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["settings_for"]


def settings_for(path: Any) -> Any:
    """The Settings for the file at path, or None when none are found or they cannot be read."""
    return _folder_settings(os.path.dirname(os.path.abspath(path)))


@cache
def _folder_settings(folder: str) -> Any:
    from advisor.settings import SettingsError, find_settings

    try:
        return find_settings(Path(folder))
    except (SettingsError, OSError, ValueError):
        return None
