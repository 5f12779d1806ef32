"""The packages a shell install script pins: ``pip install accelerate==0.33.0`` in ``install.sh``.

Repositories often set up their environment with a script rather than a requirements file (ContextualAI's
HALOs install.sh: one ``pip install NAME==VERSION`` per line). The script is lexed by the launch-script
lexer (advisor.sources.shell.lexer: quotes, line continuations, comments, here-document bodies) and never
run. A command is an install when its words are ``pip install``, ``pip3 install``, ``python[3] -m pip
install``, ``uv pip install`` or ``conda``/``mamba`` ``install`` (conda's ``NAME=VERSION``); each literal
argument that is no option is a requirement, and ``-r FILE`` names a requirements file, resolved from the
script's folder after the literal ``cd`` commands before it. A word with a variable or a substitution is
not known and pins nothing. Later installs of one package replace earlier ones (pip reinstalls), so the
requests are returned in order and the last one wins (advisor.sources.pins).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from advisor.sources.shell.lexer import Lexer, Lit, Src

# options of `pip install` that take a value (pip 23.2 _internal/cli/cmdoptions.py: -c/--constraint,
# -i/--index-url, --extra-index-url, -f/--find-links, -t/--target, --root, --prefix, --src, --python,
# --platform, --implementation, --abi, --python-version, --progress-bar, --config-settings, -C,
# --global-option, --no-binary, --only-binary, --upgrade-strategy, --cache-dir, --log, --proxy, --retries,
# --timeout, --exists-action, --trusted-host, --cert, --client-cert, --report); -r and -e are read
_PIP_VALUED = frozenset(
    {
        "-c",
        "--constraint",
        "-i",
        "--index-url",
        "--extra-index-url",
        "-f",
        "--find-links",
        "-t",
        "--target",
        "--root",
        "--prefix",
        "--src",
        "--python",
        "--platform",
        "--implementation",
        "--abi",
        "--python-version",
        "--progress-bar",
        "--config-settings",
        "-C",
        "--global-option",
        "--no-binary",
        "--only-binary",
        "--upgrade-strategy",
        "--cache-dir",
        "--log",
        "--proxy",
        "--retries",
        "--timeout",
        "--exists-action",
        "--trusted-host",
        "--cert",
        "--client-cert",
        "--report",
        "--index-strategy",  # uv pip
    }
)
# conda/mamba install options with a value (conda 24 cli/helpers.py: -c/--channel, -n/--name, -p/--prefix,
# --file is read like -r)
_CONDA_VALUED = frozenset({"-c", "--channel", "-n", "--name", "-p", "--prefix", "--repodata-fn", "--subdir"})
_SEPARATORS = frozenset({"\n", ";", "&&", "||", "|", "|&", "&", "(", ")", ";;", "{", "}"})
MAX_REQUESTS = 2_000
READING = 1  # bump when what install_requests returns for a text changes (its results are cached on disk)

# (kind, value, line): kind "req" (a requirement as written), "file" (a requirements file, resolved
# from the script's folder), "conda" (a conda spec: NAME, NAME=VERSION, NAME==VERSION)
Request = tuple[str, str, int]


def install_requests(text: str) -> list[Request]:
    """The install requests of a shell script, in order."""
    if "install" not in text:
        return []
    src = Src(text)
    errors: list[tuple[str, int]] = []
    tokens = Lexer(src).run(errors)
    out: list[Request] = []
    cwd = PurePosixPath(".")
    words: list[tuple[str | None, int]] = []
    skip_next = False
    for tok in [*tokens, None]:
        if tok is None or (tok.kind == "op" and tok.value in _SEPARATORS):
            if words:
                cwd = _command(words, cwd, out)
                if len(out) > MAX_REQUESTS:
                    return out[:MAX_REQUESTS]
            words = []
            continue
        if tok.kind == "redir":
            skip_next = tok.heredoc is None  # `> log.txt`: the next word is the redirection's target
            continue
        if tok.kind != "word":
            continue
        if skip_next:
            skip_next = False
            continue
        literal = all(isinstance(p, Lit) for p in tok.parts)
        text_of = "".join(p.text for p in tok.parts if isinstance(p, Lit)) if literal else None
        words.append((text_of, text.count("\n", 0, src.off(tok.start)) + 1))
    return out


def _command(words: list[tuple[str | None, int]], cwd: PurePosixPath, out: list[Request]) -> PurePosixPath:
    """Reads one simple command; returns the folder the next one runs in."""
    names = [w for w, _ in words]
    while names and names[0] is not None and ("=" in names[0] or names[0] in ("sudo", "env", "command")):
        names, words = names[1:], words[1:]  # VAR=value pip install ..., sudo pip install ...
    if not names or names[0] is None:
        return cwd
    head = names[0].rsplit("/", 1)[-1]
    if head in ("cd", "pushd"):
        target = names[1] if len(names) > 1 else None
        if target is None or target.startswith(("/", "~", "-")):
            return PurePosixPath("/unknown")  # an absolute or unknown folder: -r paths there are not read
        return cwd / target
    rest: list[tuple[str | None, int]] | None = None
    conda = False
    if head in ("pip", "pip3") and names[1:2] == ["install"]:
        rest = words[2:]
    elif re.fullmatch(r"python(3(\.\d+)?)?", head) and names[1:4] == ["-m", "pip", "install"]:
        rest = words[4:]
    elif head == "uv" and names[1:3] == ["pip", "install"]:
        rest = words[3:]
    elif head in ("conda", "mamba", "micromamba") and names[1:2] == ["install"]:
        rest, conda = words[2:], True
    if rest is not None:
        _arguments(rest, cwd, conda, out)
    return cwd


def _arguments(
    words: list[tuple[str | None, int]], cwd: PurePosixPath, conda: bool, out: list[Request]
) -> None:
    valued = _CONDA_VALUED if conda else _PIP_VALUED
    files = ("--file",) if conda else ("-r", "--requirement")
    i = 0
    while i < len(words):
        word, line = words[i]
        i += 1
        if word is None:
            continue
        if word in files or word in ("-e", "--editable"):
            value = words[i][0] if i < len(words) else None
            i += 1
            if value is not None:
                _add_value(word, value, line, cwd, out)
            continue
        flag, eq, value = word.partition("=")
        if word.startswith("-") and eq and (flag in files or flag in ("-e", "--editable")):
            _add_value(flag, value, line, cwd, out)
            continue
        if word.startswith("-r") and len(word) > 2 and not conda:
            _add_value("-r", word[2:], line, cwd, out)
            continue
        if word in valued:
            i += 1
            continue
        if word.startswith("-"):
            continue
        out.append(("conda" if conda else "req", word, line))


def _add_value(flag: str, value: str, line: int, cwd: PurePosixPath, out: list[Request]) -> None:
    if flag in ("-e", "--editable"):
        out.append(("req", value, line))  # a URL is read for its name; a local folder pins nothing
    elif not str(cwd).startswith("/") and not value.startswith(("/", "~")) and "://" not in value:
        out.append(("file", str(cwd / value), line))
