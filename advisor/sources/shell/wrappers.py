"""Commands that run another command (srun, env, nohup, timeout, uv run, ...) and their options."""

from __future__ import annotations

# Commands that run another command, and their options that take no value.
WRAPPERS: dict[str, frozenset[str]] = {
    "srun": frozenset(
        {
            "-l",
            "--label",
            "-u",
            "--unbuffered",
            "--exclusive",
            "--overlap",
            "--pty",
            "-Q",
            "--quiet",
            "-v",
            "--verbose",
            "-X",
            "--disable-status",
            "--multi-prog",
            "-K",
            "--kill-on-bad-exit",
            "-k",
            "--no-kill",
            "-E",
            "--preserve-env",
            "-H",
            "--hold",
            "-O",
            "--overcommit",
            "-s",
            "--oversubscribe",
            "--exact",
            "--whole",
            "--spread-job",
            "--contiguous",
            "--test-only",
        }
    ),
    "numactl": frozenset({"-a", "--all", "-l", "--localalloc", "-H", "--hardware", "-s", "--show"}),
    "taskset": frozenset({"-a", "--all-tasks", "-c", "--cpu-list", "-p", "--pid"}),
    "timeout": frozenset({"--preserve-status", "--foreground", "-v", "--verbose"}),
    "nice": frozenset(),
    "ionice": frozenset({"-t"}),
    "stdbuf": frozenset(),
    "sudo": frozenset({"-E", "-H", "-n", "-S", "-b", "-i", "-s", "--preserve-env"}),
    "mpirun": frozenset(
        {"--allow-run-as-root", "--oversubscribe", "--tag-output", "-tag-output", "--bind-to-core"}
    ),
    "mpiexec": frozenset({"--allow-run-as-root", "--oversubscribe", "--tag-output"}),
    "xvfb-run": frozenset({"-a", "--auto-servernum"}),
}
WRAPPER_POSITIONALS = {"timeout": 1, "taskset": 1}
SIMPLE_WRAPPERS = {"nohup", "time", "exec", "command", "builtin", "caffeinate", "unbuffer"}
RUNNERS = {"uv", "poetry", "pixi", "conda", "pipenv", "hatch", "rye", "micromamba", "mamba"}
SHELLS = {"bash", "sh", "zsh", "dash", "ksh"}
