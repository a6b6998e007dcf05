#!/usr/bin/env python3
"""The API server's Service address for the real node's pods: what kube-proxy does for that one
Service, without touching the host.

    python tools/apirelay.py LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT

A pod that runs in the cluster (the operator, from its image) finds the API server the way every
in-cluster client does: at `KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT`, the ClusterIP of
the `kubernetes` Service (10.0.0.1:443 here), which kubelet puts in every pod's environment.
A real cluster's kube-proxy makes that address lead to the API server with iptables rules and
`net.ipv4.ip_forward=1`, both host state the test node never writes (tools/realnode.py). So the
node gives the address to its own bridge instead (`10.0.0.1/32` on `t9kbr0`, gone with the
bridge) and this relay, listening there, copies each connection's bytes to the API server on
loopback. TLS passes through untouched: the pod checks the API server's own certificate (which
names 10.0.0.1) against its ServiceAccount's CA, exactly as on any cluster.

Only the standard library; one thread, one event loop. A connection the API server refuses is
closed at once; the relay itself never exits on a client's behaviour.
"""

from __future__ import annotations

import asyncio
import signal
import sys

CHUNK = 64 * 1024


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def _serve(
    target: tuple[str, int], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        up_reader, up_writer = await asyncio.open_connection(*target)
    except OSError as err:
        print(f"apirelay: the API server at {target[0]}:{target[1]} refused: {err}", flush=True)
        writer.close()
        return
    await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def main(listen: tuple[str, int], target: tuple[str, int]) -> None:
    server = await asyncio.start_server(
        lambda r, w: _serve(target, r, w), listen[0], listen[1], reuse_address=True
    )
    print(f"apirelay: {listen[0]}:{listen[1]} -> {target[0]}:{target[1]}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__.split("\n\n")[1] if __doc__ else "usage: apirelay.py LH LP TH TP")
    asyncio.run(main((sys.argv[1], int(sys.argv[2])), (sys.argv[3], int(sys.argv[4]))))
