"""Generate the launcher flag tables that can be read from the launcher itself.

    python3 tools/gen_launcher_flags.py   # writes advisor/data/launchers/accelerate.json

`accelerate launch`'s flags come from its own argparse parser
(accelerate/commands/launch.py: launch_command_parser), so the table follows the installed release
instead of a hand-kept list. A flag whose action stores a constant (store_true) takes no value.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "advisor" / "data" / "launchers"


def accelerate_flags() -> dict:
    import accelerate
    from accelerate.commands.launch import launch_command_parser

    parser = launch_command_parser()
    bools: set[str] = set()
    values: set[str] = set()
    shorts: dict[str, str] = {}
    for action in parser._actions:
        longs = [o for o in action.option_strings if o.startswith("--")]
        if not longs:
            continue  # the positional training_script and its arguments
        names = {o[2:].replace("-", "_") for o in longs}
        takes_no_value = action.nargs == 0 or isinstance(action, argparse._HelpAction)
        (bools if takes_no_value else values).update(names)
        canonical = longs[0][2:].replace("-", "_")
        for o in action.option_strings:
            if not o.startswith("--"):
                shorts[o[1:]] = canonical
    return {
        "launcher": "accelerate",
        "source": {"package": "accelerate", "version": accelerate.__version__},
        "parser": "accelerate.commands.launch.launch_command_parser",
        "bools": sorted(bools),
        "values": sorted(values),
        "shorts": dict(sorted(shorts.items())),
    }


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    data = accelerate_flags()
    (OUT / "accelerate.json").write_text(json.dumps(data, indent=1) + "\n")
    counts = f"{len(data['bools'])} switches, {len(data['values'])} options"
    print(f"accelerate {data['source']['version']}: {counts}")


if __name__ == "__main__":
    main()
