"""Command line: ``python -m fake_streams serve|demo`` (also installed as ``fake-redis-streams``).

``serve`` puts a fake server on a TCP port for subprocesses, non-Python services and redis-cli; its
first stdout line is the URL (``redis://127.0.0.1:PORT/0``), so a parent process can read it::

    proc = subprocess.Popen([sys.executable, "-m", "fake_streams", "serve", "--port", "0"], stdout=subprocess.PIPE, text=True)
    url = proc.stdout.readline().strip()
    ...
    proc.terminate(); proc.wait()        # SIGTERM (or SIGINT / Ctrl-C): clean exit, status 0

``demo`` runs the crash-and-recovery walkthrough of :mod:`fake_streams.demo` on the embedded server.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import signal
import sys
import threading
from typing import Iterator, List, Optional

from .profiles import PROFILES

DEFAULT_PORT = 6379


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m fake_streams",
        description="fake-redis-streams: an in-memory, byte-exact Redis Streams server for tests.",
    )
    commands = parser.add_subparsers(dest="command", metavar="{serve,demo}")
    commands.required = True
    versions = sorted(PROFILES)

    serve = commands.add_parser(
        "serve",
        help="serve a fake server over TCP (RESP2/RESP3) until SIGINT/SIGTERM",
        description="Serve streams and every command fakeredis serves over TCP. The first line on stdout is "
        "the URL (redis://HOST:PORT/0). SIGINT or SIGTERM closes every connection (blocked clients "
        "included) and exits with status 0.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT,
                       help=f"TCP port; 0 picks a free one (default: {DEFAULT_PORT})")
    serve.add_argument("--version", default="7.4", choices=versions, help="server profile (default: 7.4)")
    serve.add_argument("--clock", default="system", choices=("system", "manual"),
                       help="system: the wall clock (default); manual: time stands still at --start-ms, "
                       "so auto IDs share one millisecond and BLOCK timeouts never expire")
    serve.add_argument("--start-ms", type=int, default=None, metavar="MS",
                       help="the manual clock's time in Unix ms (default: now)")
    serve.add_argument("--maxclients", type=int, default=10000, metavar="N",
                       help="most clients connected at once; later ones get 'ERR max number of clients reached' "
                       "(default: 10000; the open-files limit is raised to N + 32 where the hard limit allows)")
    serve.add_argument("--unixsocket", default=None, metavar="PATH", help="also listen on this Unix socket")
    serve.add_argument("--requirepass", default=None, metavar="PASSWORD",
                       help="CONFIG SET requirepass PASSWORD at start: clients must AUTH")
    serve.add_argument("--cluster", type=int, default=None, metavar="N",
                       help="serve a Redis Cluster of N masters on --port, --port + 1 … (0: free ports), one URL per "
                       "line on stdout (the first node's first)")
    serve.add_argument("--sentinel", action="store_true",
                       help="serve a Sentinel deployment: a sentinel on --sentinel-port watching the master "
                       "--sentinel-master on --port and --sentinel-replicas replicas on --port + 1 … (0: free ports "
                       "for all); stdout: the sentinel's URL, then the master's, then each replica's, one per line")
    serve.add_argument("--sentinel-master", default="mymaster", metavar="NAME",
                       help="the master's name (default: mymaster)")
    serve.add_argument("--sentinel-replicas", type=int, default=1, metavar="N", help="number of replicas (default: 1)")
    serve.add_argument("--sentinel-port", type=int, default=None, metavar="PORT",
                       help="the sentinel's port (default: 26379; 0 with --port 0)")

    demo = commands.add_parser(
        "demo",
        help="watch a crashed consumer and its XAUTOCLAIM recovery on the embedded server",
        description="A producer, a consumer group with two workers, one crashing, a recovery pass with "
        "XAUTOCLAIM under the manual clock, and the final XPENDING / XINFO. No server needed.",
    )
    demo.add_argument("--version", default="7.4", choices=versions, help="server profile (default: 7.4)")
    return parser


def _raise_open_files_limit(maxclients: int) -> None:
    """adjustOpenFilesLimit: room for ``maxclients`` sockets and 32 more descriptors, as far as the hard limit goes."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = maxclients + 32
    if soft != resource.RLIM_INFINITY and soft < want:
        target = want if hard == resource.RLIM_INFINITY else min(want, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            pass


def _tune_gc() -> None:
    """The serving process's collector: what startup made (modules, the server) moves out of the collected
    generations (``gc.freeze``), and a collection of the youngest generation waits for 20,000 new container
    objects instead of 700. Stream entries are long-lived and acyclic; with the defaults their allocation
    alone triggers a young collection every few XADDs and re-traverses the whole startup heap in every full
    one (about a tenth of a pipelined XADD's CPU). Cyclic garbage is still collected, in larger steps. Only
    in ``serve``, a process of its own: a test process's collector (in-process or the served fixture) is
    left as it is."""
    gc.freeze()
    gc.set_threshold(20000, 20, 10)


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[threading.Event]:
    """An event SIGINT / SIGTERM set while the block runs (the previous handlers are put back after it)."""
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _serve(host: str, port: int, version: str, clock_name: str, start_ms: Optional[int], maxclients: int = 10000,
           unixsocket: Optional[str] = None, requirepass: Optional[str] = None) -> int:
    from .clock import ManualClock, SystemClock
    from .server import FakeStreamsServer
    from .tcp import serve

    _raise_open_files_limit(maxclients)
    clock = ManualClock(start_ms) if clock_name == "manual" else SystemClock()
    server = FakeStreamsServer(version=version, clock=clock)
    if requirepass:
        server.client().config_set("requirepass", requirepass)
    try:
        with _stop_on_signals() as stop:
            server.shutdown_hooks.append(stop.set)  # SHUTDOWN from a client ends the process too
            try:
                tcp = serve(server, host, port, maxclients=maxclients, unixsocket=unixsocket)
            except OSError as exc:
                print(f"fake-redis-streams: cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
                return 1
            _tune_gc()
            print(tcp.url, flush=True)
            profile = server.profile
            print(f"fake-redis-streams: {profile.server} {profile.hello_version} (profile {profile.name}, "
                  f"{clock_name} clock) on {tcp.url}; stop with Ctrl-C or SIGTERM", file=sys.stderr, flush=True)
            stop.wait()
            server.stop_scripts()  # a looping Lua script would hold the server lock the close needs
            tcp.close()
            return 0
    finally:
        server.close()


def _serve_cluster(host: str, port: int, nodes: int, version: str, clock_name: str, start_ms: Optional[int],
                   maxclients: int) -> int:
    """``serve --cluster N`` (:func:`fake_streams.topology.serving.serve_cluster`)."""
    from .clock import ManualClock, SystemClock
    from .topology.serving import serve_cluster

    if nodes < 1:
        print(f"fake-redis-streams: --cluster needs 1 or more nodes, not {nodes}", file=sys.stderr)
        return 2
    _raise_open_files_limit(maxclients * nodes)
    clock = ManualClock(start_ms) if clock_name == "manual" else SystemClock()
    with _stop_on_signals() as stop:
        try:
            served = serve_cluster(nodes, host, port, version=version, clock=clock, maxclients=maxclients)
        except OSError as exc:
            print(f"fake-redis-streams: cannot listen on {host}:{port}…: {exc.strerror or exc}", file=sys.stderr)
            return 1
        for node in served.cluster.nodes:  # SHUTDOWN on any node ends the process too
            node.server.shutdown_hooks.append(stop.set)
        print("\n".join(served.urls), flush=True)
        print(f"fake-redis-streams: a cluster of {nodes} masters (profile {version}, {clock_name} clock) on "
              f"{', '.join(served.urls)}; stop with Ctrl-C or SIGTERM", file=sys.stderr, flush=True)
        stop.wait()
        for node in served.cluster.nodes:
            node.server.stop_scripts()  # a looping Lua script would hold the server lock the close needs
        served.close()
        return 0


def _serve_sentinel(args: argparse.Namespace) -> int:
    """``serve --sentinel`` (:func:`fake_streams.topology.serving.serve_sentinel`)."""
    from .clock import ManualClock, SystemClock
    from .topology.serving import serve_sentinel

    if args.sentinel_replicas < 0:
        print(f"fake-redis-streams: --sentinel-replicas must be 0 or more, not {args.sentinel_replicas}",
              file=sys.stderr)
        return 2
    _raise_open_files_limit(args.maxclients * (args.sentinel_replicas + 2))
    clock = ManualClock(args.start_ms) if args.clock == "manual" else SystemClock()
    with _stop_on_signals() as stop:
        try:
            served = serve_sentinel(args.sentinel_master, args.sentinel_replicas, args.host, args.port,
                                    args.sentinel_port, version=args.version, clock=clock, maxclients=args.maxclients)
        except OSError as exc:
            print(f"fake-redis-streams: cannot listen on {args.host}: {exc.strerror or exc}", file=sys.stderr)
            return 1
        servers = served.sentinel.servers
        for server in servers:  # SHUTDOWN on any instance ends the process too
            server.shutdown_hooks.append(stop.set)
        print("\n".join(served.urls), flush=True)
        print(f"fake-redis-streams: a sentinel on {served.urls[0]} watching {args.sentinel_master!r} (profile "
              f"{args.version}, {args.clock} clock): master {served.urls[1]}, replicas "
              f"{', '.join(served.urls[2:]) or 'none'}; stop with Ctrl-C or SIGTERM", file=sys.stderr, flush=True)
        stop.wait()
        for server in servers:
            server.stop_scripts()  # a looping Lua script would hold the server lock the close needs
        served.close()
        return 0


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``python -m fake_streams`` and of the ``fake-redis-streams`` script."""
    args = _parser().parse_args(argv)
    if args.command == "serve" and args.sentinel:
        return _serve_sentinel(args)
    if args.command == "serve" and args.cluster is not None:
        return _serve_cluster(args.host, args.port, args.cluster, args.version, args.clock, args.start_ms,
                              args.maxclients)
    if args.command == "serve":
        return _serve(args.host, args.port, args.version, args.clock, args.start_ms, args.maxclients, args.unixsocket,
                      args.requirepass)
    from .demo import run

    try:
        return run(args.version)
    except BrokenPipeError:  # `... demo | head`: stop quietly (and keep the interpreter from complaining at exit)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
