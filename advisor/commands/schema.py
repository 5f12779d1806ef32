"""`gpu-advise schema`: the JSON schema of the settings or of a hardware descriptor."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

from advisor.commands.base import SchemaKind, command

if TYPE_CHECKING:
    import typer

else:
    from advisor.commands.base import typer  # PlainTyper until advisor.cli builds the app and rebinds it here


@command("schema")
def schema(
    kind: Annotated[SchemaKind, typer.Argument(help="settings or hardware")] = SchemaKind.settings,
) -> None:
    """Print the JSON schema of the settings or of a hardware descriptor (for editor completion)."""
    import json

    if kind is SchemaKind.hardware:
        from advisor.sources.hardware import hardware_schema

        data = hardware_schema()
    else:
        from advisor.sources.settings import settings_schema

        data = settings_schema()
    sys.stdout.write(json.dumps(data, indent=2) + "\n")
