"""A small model trained with ColossalAI's Booster (TorchDDPPlugin) on CPU with gloo.

Started by `colossalai run` (ssh to each worker, then torchrun there). Every rank prints who it
is; rank 0 prints the loss as it falls.
"""

import argparse
import os
import socket
import sys
import time

import colossalai
import torch
import torch.distributed as dist
from colossalai.booster import Booster
from colossalai.booster.plugin import TorchDDPPlugin


def say(line: str) -> None:
    """One write per line: ranks that share a pipe (pdsh, torchrun) never interleave mid-line."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--step-seconds", type=float, default=0.0, help="sleep after each step")
    args, extra = parser.parse_known_args()
    colossalai.launch_from_torch(seed=0)
    rank, world = dist.get_rank(), dist.get_world_size()
    say(
        f"rank={rank} world_size={world} local_rank={os.environ.get('LOCAL_RANK')}"
        f" host={socket.gethostname()} backend={dist.get_backend()} extra={extra}"
    )
    torch.manual_seed(0)
    true_w = torch.randn(16, 1)
    model = torch.nn.Linear(16, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    booster = Booster(plugin=TorchDDPPlugin())
    model, opt, criterion, _, _ = booster.boost(model, opt, torch.nn.MSELoss())
    gen = torch.Generator().manual_seed(1000 + rank)
    first = last = 0.0
    for step in range(1, args.steps + 1):
        x = torch.randn(64, 16, generator=gen)
        loss = criterion(model(x), x @ true_w)
        booster.backward(loss, opt)
        opt.step()
        opt.zero_grad()
        avg = loss.detach().clone()
        dist.all_reduce(avg)
        value = avg.item() / world
        first = value if step == 1 else first
        last = value
        if args.step_seconds:
            time.sleep(args.step_seconds)
        if rank == 0 and (step == 1 or step % 10 == 0):
            say(f"step={step} loss={value:.4f}")
    if rank == 0:
        say(f"loss fell from {first:.4f} to {last:.4f}")
    # Leave together: no rank closes its connections while another still uses them.
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
