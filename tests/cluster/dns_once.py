"""A DNS relay that answers the launcher each question once (run in a pod of the real node).

    python3 dns_once.py UPSTREAM_IP LAUNCHER_PREFIX

Every query goes to UPSTREAM_IP:53 (the cluster's DNS) and its answer back, except a question
(name and type) that the launcher already had answered with records: that one is dropped, as a
DNS that stops answering after the launcher's barrier would drop it (a DNS pod restarting, a
lost UDP answer, the gateway's address moving). Negative answers do not count, so a name that
does not exist yet is answered until it does. The launcher is the client whose address the cluster's DNS
names LAUNCHER_PREFIX... in reverse. Every decision is printed with its time: the pod's log is
the test's evidence. The pods of the job under test use this relay as their only nameserver.
Standard library only: the node's base image has python3 and nothing else of ours.
"""

from __future__ import annotations

import socket
import sys
import time


def question(packet: bytes) -> tuple[str, int] | None:
    """The first question's name and type, or None for a packet that is not a plain query."""
    labels, i = [], 12
    try:
        while packet[i]:
            if packet[i] & 0xC0:
                return None
            labels.append(packet[i + 1 : i + 1 + packet[i]].decode("ascii", "replace"))
            i += 1 + packet[i]
        return ".".join(labels).lower(), int.from_bytes(packet[i + 1 : i + 3], "big")
    except IndexError:
        return None


def reverse(address: str) -> str:
    """The cluster DNS's name for a pod address ("?" until it has one)."""
    try:
        return socket.gethostbyaddr(address)[0]
    except OSError:
        return "?"


def main(upstream: str, launcher_prefix: str) -> None:
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("0.0.0.0", 53))
    names: dict[str, str] = {}
    asked: set[tuple[str, str, int]] = set()
    print(f"{time.time():.3f} relaying to {upstream}; launcher: {launcher_prefix}*", flush=True)
    while True:
        packet, client = server.recvfrom(4096)
        q = question(packet)
        if q is None:
            continue
        who = names.get(client[0]) or reverse(client[0])
        if who != "?":
            names[client[0]] = who
        key = (client[0], *q)
        if who.startswith(launcher_prefix) and key in asked:
            print(f"{time.time():.3f} DROPPED {who} {q[0]} type {q[1]}", flush=True)
            continue
        relay = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        relay.settimeout(2)
        try:
            relay.sendto(packet, (upstream, 53))
            answer = relay.recv(4096)
        except OSError as err:
            print(f"{time.time():.3f} upstream failed for {q[0]}: {err}", flush=True)
            continue
        finally:
            relay.close()
        server.sendto(answer, client)
        if len(answer) >= 8 and answer[3] & 0x0F == 0 and int.from_bytes(answer[6:8], "big"):
            asked.add(key)  # answered with records
        print(f"{time.time():.3f} answered {who} {q[0]} type {q[1]}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
