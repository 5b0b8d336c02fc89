"""Redis's Lua environment for the fake: EVAL/EVALSHA/EVAL_RO/EVALSHA_RO, SCRIPT, FUNCTION/FCALL, busy scripts.

* :mod:`.runtime` — one Lua 5.1 state (lupa) set up by ``prelude.lua`` as the server's sandbox;
* :mod:`.libs` — cjson, cmsgpack, bit and struct, as Redis links them;
* :mod:`.convert` — replies Lua ↔ RESP2/RESP3;
* :mod:`.engine` — the commands, the script cache, function libraries and the busy-script state.

Nothing here imports fakeredis: the adapter (``fake_streams._fakeredis``) gives :class:`.engine.ScriptEngine` a
:class:`.engine.Host` per command that runs ``redis.call`` through the per-command dispatch seam.
"""
