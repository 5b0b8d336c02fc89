"""Serve a :class:`~fake_streams.server.FakeStreamsServer` over TCP, speaking RESP2/RESP3 like a real server.

>>> from fake_streams import FakeStreamsServer
>>> from fake_streams.tcp import serve
>>> server = FakeStreamsServer()
>>> with serve(server) as tcp:           # port 0: a free port
...     url = tcp.url                    # 'redis://127.0.0.1:PORT/0'
>>> server.close()

The package: :mod:`.loop` (the event loop: one thread for every client's I/O, ``maxclients``, output
batched per client per pass), :mod:`.protocol` (the request parser: inline and multibulk, the server's
protocol errors and limits), :mod:`.wire` (reply encoding and nil shapes). Each client's commands run
through the adapter's :class:`~fake_streams._fakeredis.tcp.TcpClient` (stream commands on the direct path
where possible, the rest through fakeredis's dispatch), in the same keyspace as in-process clients.

:meth:`TcpServer.close` stops accepting, releases blocked clients, closes every socket and joins the
thread; it leaves the FakeStreamsServer open (in-process clients keep working).
"""

from __future__ import annotations

from typing import Any, Optional

from .loop import TcpServer
from .protocol import ProtocolError, RequestParser
from .wire import NIL_ARRAY, ErrorReply, Reply, encode, shape_nil_arrays

__all__ = ["NIL_ARRAY", "ErrorReply", "ProtocolError", "Reply", "RequestParser", "TcpServer", "encode", "serve",
           "shape_nil_arrays"]


def serve(server: Any, host: str = "127.0.0.1", port: int = 0, *, maxclients: Optional[int] = None,
          unixsocket: Optional[str] = None, backlog: int = 4096) -> TcpServer:
    """Serve ``server`` on ``host:port`` (0 = a free port), and on the Unix socket ``unixsocket`` if given,
    until ``.close()``; returns the :class:`TcpServer`. ``maxclients`` sets CONFIG ``maxclients``
    (default 10000).

    In-process clients of ``server`` and TCP clients share one keyspace; a TCP client blocked in
    XREAD BLOCK is woken by an XADD from either side.
    """
    if getattr(server, "closed", False):
        raise ValueError(f"{server!r} is closed")
    from .._fakeredis import TcpClient

    return TcpServer(server, TcpClient, host, port, backlog=backlog, maxclients=maxclients, unixsocket=unixsocket)
