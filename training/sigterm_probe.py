"""A rank that saves when it is told to stop: what a training script with a SIGTERM handler does.

Started by any launcher (torchrun, `deepspeed`, `colossalai run`) in place of a training script.
It prints `probe ready rank=R`, then waits. Once SIGTERM comes (its handler only notes it, as a
handler should: a rank may be told twice), it saves for `--save-seconds`, as a checkpoint would,
prints `probe saved rank=R after Ss` (S: seconds since the signal) and exits 0.

Both lines go to the container's own log (the standard output of its PID 1, /proc/1/fd/1) as
well as to the rank's: a rank started over ssh writes into a connection that closes while the
pod stops, and the container's log is what the kubelet keeps. No torch: it starts in well under a
second, so a test waits for the launchers, not for imports.

    deepspeed --hostfile ... sigterm_probe.py [--save-seconds S] [anything the launcher adds]
"""

import argparse
import os
import signal
import sys
import time
from types import FrameType


def rank() -> str:
    return os.environ.get("RANK") or os.environ.get("LOCAL_RANK") or "?"


def say(line: str) -> None:
    for path in ("/proc/1/fd/1", None):
        try:
            if path is None:
                sys.stdout.write(line + "\n")
                sys.stdout.flush()
            else:
                with open(path, "a", encoding="utf-8") as out:
                    out.write(line + "\n")
        except OSError:
            pass  # the other copy is the one that counts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--save-seconds", type=float, default=1.0)
    args, _ = parser.parse_known_args()
    told: list[float] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        # A handler only notes the signal: a second SIGTERM (from the rank's pod and from its
        # launcher, say) must not start a second save.
        told.append(time.monotonic())

    signal.signal(signal.SIGTERM, stop)
    say(f"probe ready rank={rank()} pid={os.getpid()}")
    while not told:
        time.sleep(0.1)
    time.sleep(args.save_seconds)  # writing a checkpoint
    say(f"probe saved rank={rank()} after {time.monotonic() - told[0]:.1f}s")


if __name__ == "__main__":
    main()
