"""What a short `gpu-advise` process does around its command: two costs that are not its work.

Measured with benchmarks/check_speed.py (2-core sandbox, `check` of the bundled example): the cyclic
garbage collector runs again and again while ~250 modules import, over objects that live until exit
anyway (~25 ms), and the interpreter's teardown, a last collection and then every module and object
freed one by one, takes another ~20-40 ms. So the console script (advisor/__main__.py) turns collection
off before the imports (`defer_collection`), advisor/cli.py turns it back on just before a command runs
with what start-up built frozen out of later collections (`start_collecting`), and the process leaves
with `exit_now` once its output is flushed.

Nothing depends on the skipped teardown: files are written, closed and renamed into place before a
command returns, temporary folders are removed by their `with` blocks and no atexit handler is
registered on these paths. In-process callers (tests, typer's CliRunner) never call defer_collection:
for them start_collecting does nothing, and they exit as usual.
"""

from __future__ import annotations

import gc
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from advisor.core.replay_record import Recorder

_deferred = False


def defer_collection() -> None:
    """No cyclic collection until start_collecting (the console script, before it imports anything)."""
    global _deferred
    if gc.isenabled():
        gc.disable()
        _deferred = True


# The youngest generation is collected after this many new container objects instead of 700. A check
# allocates a few hundred thousand short-lived objects (AST nodes, records, findings) that reference
# counting frees; at 700 the collector ran ~50 times in the bundled example's check and cost ~6 ms of
# its ~70 (in-process, paired). mypy tunes its build the same way, for the same reason (mypy/build.py:
# "Run gc less frequently, as otherwise we can spend a large fraction of cpu in gc",
# gc.set_threshold(200 * 1000, 30, 30)); cycles are still collected, in bounded memory.
COMMAND_GEN0_THRESHOLD = 100_000


def start_collecting() -> None:
    """Collection on again for the command's own objects, less often; start-up's are frozen out of it."""
    global _deferred
    if _deferred:
        gc.freeze()
        _, older, oldest = gc.get_threshold()
        gc.set_threshold(COMMAND_GEN0_THRESHOLD, older, oldest)
        gc.enable()
        _deferred = False


def exit_code(code: object) -> int:
    """SystemExit's code as the interpreter turns it into an exit status (None: 0; text: printed, 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF  # as the interpreter's exit status: sys.exit(-1) is 255, sys.exit(256) is 0
    print(code, file=sys.stderr)
    return 1


def exit_now(code: object, recorder: Recorder | None = None) -> None:
    """Flush the output and end the process without the interpreter's teardown. A stdout closed early
    (`gpu-advise check | head -1`) is exit status 1, as main's own broken-pipe handling gives. With a
    recorder (advisor/core/replay.py), a run whose output was all written is stored for replay."""
    status = exit_code(code)
    flushed = True
    for stream in (sys.stdout, sys.stderr):
        if stream is None:
            continue
        try:
            stream.flush()
        except BrokenPipeError:
            status, flushed = status or 1, False  # the reader went away (`| head`): nothing more to say
        except (OSError, ValueError) as exc:  # a full disk, a closed stream: say so, as Python would
            status, flushed = status or 1, False
            try:  # noqa: SIM105 - contextlib is not imported on a replayed check's path
                os.write(2, f"gpu-advise: cannot write the output: {exc}\n".encode(errors="replace"))
            except (OSError, ValueError):
                pass
    if recorder is not None:
        import contextlib

        if not flushed:
            recorder.refuse("the output could not be written")
        with contextlib.suppress(Exception):  # storing is an optimisation: the run's own answer stands
            recorder.finish(status)
    os._exit(status)


def _cache_folder_present() -> bool:
    """Whether the cache folder exists (the variables of advisor/core/replay.py cache_folder, which
    decides): on a fresh machine there is nothing to replay and nothing is recorded, so a CI runner's
    first check does not even import the replay."""
    if os.environ.get("GPU_ADVISE_NO_CACHE"):
        return False
    base = os.environ.get("GPU_ADVISE_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return os.path.isdir(os.path.join(os.path.expanduser(base), "gpu-advise"))


def replay_or_record(argv: list[str]) -> Recorder | None:
    """`check` in the console script: end the process with a stored answer when every input of this very
    check is unchanged (advisor/core/replay.py), else a recorder of this run (None: not stored)."""
    if not argv or argv[0] != "check" or not _cache_folder_present():
        return None
    from advisor.core import replay

    try:
        status = replay.replay(argv)
    except Exception:  # an unreadable entry is a miss: the check runs
        status = None
    if status is not None:
        exit_now(status)
    try:
        from advisor.core.replay_record import start

        return start(argv)
    except Exception:  # no recorder: the check runs as it would, unrecorded
        return None
