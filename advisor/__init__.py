"""gpu-advise: a config linter and static advisor for multi-GPU training."""

from pathlib import Path

__version__ = "0.1.0"

# The installed package's folder: its data/, _rules/ and _prebuilt.json; in a source checkout its parent
# holds rules/
PACKAGE_DIR = Path(__file__).resolve().parent
