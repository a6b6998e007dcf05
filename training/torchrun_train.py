"""A small model trained with torch.distributed (gloo) under torchrun, on data it makes itself.

Every rank prints who it is (RANK, WORLD_SIZE, LOCAL_RANK, the host), then rank 0 prints the
loss every few steps and how far it fell. DistributedDataParallel averages the gradients over all
ranks, so the loss is the same model's on every rank. Runs on CPU; no download, no GPU.

    torchrun --nnodes=2 --nproc_per_node=2 ... torchrun_train.py [--steps N] [--pause SECONDS]
"""

import argparse
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def say(line: str) -> None:
    """One write per line: ranks that share a pipe (pdsh, torchrun) never interleave mid-line."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--pause", type=float, default=0.0, help="seconds to sleep each step")
    args, extra = parser.parse_known_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    say(
        f"rank={rank} world_size={world} local_rank={os.environ.get('LOCAL_RANK')}"
        f" host={socket.gethostname()} env_RANK={os.environ.get('RANK')}"
        f" env_WORLD_SIZE={os.environ.get('WORLD_SIZE')} extra={extra}"
    )
    torch.manual_seed(0)  # the same true weights and start on every rank
    true_w = torch.randn(16, 1)
    model = DistributedDataParallel(torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    gen = torch.Generator().manual_seed(1000 + rank)  # each rank its own shard of data
    first = last = 0.0
    for step in range(1, args.steps + 1):
        x = torch.randn(64, 16, generator=gen)
        y = x @ true_w + 0.01 * torch.randn(64, 1, generator=gen)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        avg = loss.detach().clone()
        dist.all_reduce(avg)
        value = avg.item() / world
        first = value if step == 1 else first
        last = value
        if rank == 0 and (step == 1 or step % 10 == 0):
            say(f"step={step} loss={value:.4f}")
        time.sleep(args.pause)
    if rank == 0:
        say(f"loss fell from {first:.4f} to {last:.4f}")
    # Leave together: no rank closes its connections while another still uses them.
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
