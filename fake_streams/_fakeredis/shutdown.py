"""SHUTDOWN (fakeredis has none), registered in :mod:`.overrides`: the server stops as a real one exits.

``SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]`` checks its arguments as ``shutdownCommand`` does, then asks the
FakeStreamsServer to shut down (:meth:`~fake_streams.server.FakeStreamsServer.request_shutdown`: a running script
stops, the server closes in another thread, its shutdown hooks run — ``serve`` exits). The caller gets no reply:
its connection fails, as with a server that exited (redis-py's ``shutdown()`` expects exactly that). While a script
is busy only ``SHUTDOWN NOSAVE`` gets here (:mod:`.scripting`); the others get BUSY.
"""

from __future__ import annotations

from typing import Any, Tuple

from .access import no_response
from .compat import SimpleError
from .overrides import override, signature

_OPTIONS = (b"nosave", b"save", b"now", b"force", b"abort")


@override("shutdown")
def _shutdown(sock: Any, name: str, base: Any) -> Tuple[Any, Any]:
    if getattr(sock, "_transaction", None) is not None:  # no-multi: refused at queue time, EXEC then aborts
        valkey = sock._sf_session.server.profile.server == "valkey"
        raise SimpleError("ERR Command 'shutdown' not allowed inside a transaction" if valkey else
                          "ERR Command not allowed inside a transaction")
    return (lambda *args: shutdown(sock, args)), signature(name, 0, True, flags="s")


def shutdown(sock: Any, args: Tuple[bytes, ...]) -> Any:
    options = [bytes(a).lower() for a in args]
    flags = {o for o in options if o != b"abort"}
    if any(o not in _OPTIONS for o in options) or (b"abort" in options and flags) or \
            {b"nosave", b"save"} <= flags:
        raise SimpleError("ERR syntax error")
    if b"abort" in options:
        raise SimpleError("ERR No shutdown in progress.")
    sock._sf_session.server.request_shutdown()
    return no_response()
