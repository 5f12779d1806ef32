"""The `gpu-advise` console script and `python -m advisor`: advisor.cli.main as a short-lived process,
without the start-up collections and the teardown that are not its work (advisor/commands/startup.py)."""

from __future__ import annotations


def run() -> None:
    from advisor.commands import startup

    startup.defer_collection()
    from advisor.cli import main

    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    startup.exit_now(code)


if __name__ == "__main__":
    run()
