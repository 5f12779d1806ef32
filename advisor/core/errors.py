"""The error that means the tool cannot do its job (exit code 2); a leaf so any stage can raise it."""


class CheckError(Exception):
    """The tool cannot do its job (exit code 2): a missing path, an unknown hardware name."""
