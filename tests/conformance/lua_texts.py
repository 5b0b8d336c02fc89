"""Valkey 9.1 (the oracle) → Valkey 8.0 (the profile): the Lua error texts Valkey changed after 8.0.

The valkey-8.0 profile follows Valkey 8.0.1's source (script_lua.c, eval.c, function_lua.c, functions.c). Valkey 9
rewrote its scripting engine, and these replies changed with it; :func:`as_valkey_8` rewrites the 9.1 reply into
8.0's before the comparison, one documented rule each (anything else still has to match as it is):

* the suffix lost the script's sha / function name: `` script: on @user_script:1.`` (8.0: `` script: <sha>, on …``);
* ``This Valkey command is not allowed from script`` (8.0: ``This Redis command …``);
* ``Script killed by user with SCRIPT KILL.`` / ``… FUNCTION KILL.`` (8.0: ``… SCRIPT KILL...`` for both);
* ``Could not find scripting engine 'x'`` (8.0: ``Unexpected engine in script shebang: #!x``);
* FUNCTION LOAD's register-time errors without the ``Error registering functions: ERR`` frame, and
  ``Function names can only …`` (8.0: the frame, and ``Library names can only …``, the 7.0 text);
* ``redis.call`` of an unknown subcommand: the command's own ``unknown subcommand '…'. Try X HELP.`` (8.0: its
  ``lookupCommand`` finds no command, so ``Unknown command called from script``, as for an unknown command).
"""

from __future__ import annotations

import re
from typing import Any

from .replies import Err, expected_err

_SUFFIX = re.compile(r" script: ([^ ]+), on (@user_(?:script|function):\d+)\.$")  # a sha / name has no space
_RULES = [
    (re.compile(r"^ERR This Valkey command is not allowed from script"), "ERR This Redis command is not allowed from script"),
    (re.compile(r"^ERR Script killed by user with (?:SCRIPT|FUNCTION) KILL\. script:"),
     "ERR Script killed by user with SCRIPT KILL... script:"),
    (re.compile(r"^ERR Could not find scripting engine '(.*)'$"), r"ERR Unexpected engine in script shebang: #!\1"),
    (re.compile(r"^ERR Function names can only contain letters, numbers, or underscores\(_\) and must be at least one "
                r"character long$"),
     "ERR Error registering functions: ERR Library names can only contain letters, numbers, or underscores(_) and "
     "must be at least one character long"),
    (re.compile(r"^ERR unknown subcommand '.*'\. Try [A-Z]+ HELP\. script:"), "ERR Unknown command called from script script:"),
    (re.compile(r"^ERR Function already exists in the library$"),
     "ERR Error registering functions: ERR Function already exists in the library"),
]


def _rewrite(real: Err, fake: Any) -> Err:
    text = real.full
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    if isinstance(fake, Err):
        wanted = _SUFFIX.search(fake.full)
        if wanted and text.endswith(f" script: on {wanted.group(2)}."):
            text = text[: -len(f" script: on {wanted.group(2)}.")] + wanted.group(0)
    return expected_err(text) if text != real.full else real


def as_valkey_8(real: Any, fake: Any, pair: Any) -> Any:
    """Normalizer (pair.same(..., normalize=as_valkey_8)): Valkey 9.1's reply as Valkey 8.0 gives it. Not on the
    valkey-9.1 profile (``pair.target.exact``), which gives Valkey 9.1.2's own texts."""
    if pair.target.kind != "valkey" or pair.target.exact:
        return real
    if isinstance(real, Err):
        return _rewrite(real, fake)
    if isinstance(real, list):
        fakes = fake if isinstance(fake, list) and len(fake) == len(real) else [None] * len(real)
        return [as_valkey_8(r, f, pair) for r, f in zip(real, fakes)]
    return real


def valkey_8_texts(pair: Any) -> Any:
    """``pair`` (and every pair it ``connect()``s) comparing through :func:`as_valkey_8` by default: Lua
    transcripts read as plain ``pair.same(...)`` calls. Skips Valkey with the Redis 7.4 profile."""
    import pytest

    if pair.target.kind == "valkey" and pair.profile.server != "valkey":
        pytest.skip("Valkey's Lua texts are not Redis 7.4's: Lua is compared with the valkey-8.0 profile")
    _install(pair)
    return pair


def _with_texts(normalize: Any) -> Any:
    if normalize is None:
        return as_valkey_8
    return [*(normalize if isinstance(normalize, (list, tuple)) else [normalize]), as_valkey_8]


def _install(pair: Any) -> None:
    same, read, connect = pair.same, pair.read, pair.connect
    pair.same = lambda *argv, normalize=None: same(*argv, normalize=_with_texts(normalize))
    pair.read = lambda normalize=None: read(normalize=_with_texts(normalize))

    def connect_with_texts() -> Any:
        child = connect()
        _install(child)
        return child

    pair.connect = connect_with_texts
