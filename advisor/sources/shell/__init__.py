"""Static reader for bash / sbatch launch scripts. Nothing in the script is ever executed.

The script is read the way bash reads it, as far as that can be done without running anything:
a small shell lexer (lexer.py: quotes, backslash continuations, comments, here-documents, `$(...)`,
backticks, `${...}`, `$((...))`, redirections and the `;`/`&&`/`||`/`|`/`&` operators) keeps the
file position of every character, then the commands are walked top to bottom (interpreter.py) with
a table of the variables the script assigns. A value that depends on something only known at run
time (a command substitution, a script argument, an environment variable the script does not set)
stays unknown, with the reason. Launch commands are recognised through the usual wrappers
(wrappers.py: `srun`, `nohup`, `env`, `bash -c`, ...) and read by the launcher registry
(advisor/sources/launchers: each launcher's flags, its command words, its `python -m` module) into
launcher flags, the training script and the script's own flags (commands.py).

Static approximations (documented, deliberate):
- Commands in `if`/`case`/loop bodies and after `&&`/`||` are read like any other command. An
  assignment there replaces the current value, except that it does not replace a known, non-empty
  value with an unknown one (`MODEL=default` ... `case $1 in -m) MODEL=$2` keeps `default`).
- `${X:-default}` for an X the script does not set gives the default: the script's own fallback.
- `#SBATCH` lines are read the way sbatch reads them: only before the first command (sbatch.py).

Why a hand-written lexer and not tree-sitter-bash: benchmarks/shell_reader.py measures both (import
0.9 vs 7.5 ms, parse 0.012 vs 0.030 ms a script); the interpreter re-lexes text no grammar sees
(`bash -c` strings, variable values with unknown pieces), so the lexer would stay anyway.
"""

from __future__ import annotations

from advisor.sources.shell.model import LaunchCommand, LaunchScript, Word
from advisor.sources.shell.reader import read_launch

__all__ = ["LaunchCommand", "LaunchScript", "Word", "read_launch"]
