"""The commands of `gpu-advise`, one module per command group; advisor.cli builds the app from them.

MODULES is their import order, which is the order `gpu-advise --help` lists the commands in.
"""

from __future__ import annotations

MODULES = ("check", "plan", "estimate", "catalog", "baseline", "schema", "hardware")
