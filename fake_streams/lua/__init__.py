"""Redis's Lua environment for the fake: EVAL/EVALSHA/EVAL_RO/EVALSHA_RO, SCRIPT, FUNCTION/FCALL, busy scripts.

* :mod:`.runtime` — one Lua 5.1 state (lupa) set up by ``prelude.lua`` as the server's sandbox;
* :mod:`.cjson`, :mod:`.cmsgpack`, :mod:`.bitop`, :mod:`.structlib` — the C libraries Redis links into its Lua
  (on the shared helpers of :mod:`.libs`);
* :mod:`.convert` — replies Lua ↔ RESP2/RESP3;
* :mod:`.engine` — EVAL*/SCRIPT, the script cache and the busy-script state; :mod:`.functions` — FUNCTION/FCALL
  and the function libraries; :mod:`.dump` — FUNCTION DUMP/RESTORE payloads.

Nothing here imports fakeredis: the adapter (``fake_streams._fakeredis``) gives :class:`.engine.ScriptEngine` a
:class:`.engine.Host` per command that runs ``redis.call`` through the per-command dispatch seam.
"""
