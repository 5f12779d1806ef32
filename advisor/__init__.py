"""gpu-advise: a config linter and static advisor for multi-GPU training."""

__version__ = "0.1.0"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    # The installed package's folder: its data/, _rules/ and _prebuilt.json; in a source checkout its
    # parent holds rules/
    PACKAGE_DIR: Path


def __getattr__(name: str) -> object:
    """PACKAGE_DIR on first use (PEP 562): a replayed check (advisor/core/replay.py) never imports
    pathlib (~3 ms with fnmatch, re and urllib.parse)."""
    if name == "PACKAGE_DIR":
        from pathlib import Path

        value = Path(__file__).resolve().parent
        globals()["PACKAGE_DIR"] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
