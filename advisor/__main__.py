"""The `gpu-advise` console script and `python -m advisor`: advisor.cli.main as a short-lived process,
without the start-up collections and the teardown that are not its work (advisor/commands/startup.py),
and a `check` whose inputs are all unchanged answered from its stored output (advisor/core/replay.py)."""

from __future__ import annotations


def run() -> None:
    import sys

    from advisor.commands import startup

    startup.defer_collection()
    recorder = startup.replay_or_record(sys.argv[1:])  # a stored answer ends the process here
    from advisor.cli import main

    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    startup.exit_now(code, recorder)


if __name__ == "__main__":
    run()
