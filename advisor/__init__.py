"""gpu-advise: a config linter and static advisor for multi-GPU training."""

__version__ = "0.1.0"
