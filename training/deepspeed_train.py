"""A small model trained with DeepSpeed (ZeRO stage 1) on CPU with gloo, on data it makes itself.

Started by the `deepspeed` launcher on every worker (over pdsh and ssh). Every rank prints who it
is and the environment the launcher forwarded; rank 0 prints the loss as it falls.

    deepspeed --hostfile ... deepspeed_train.py [--steps N] [--zero-stage S] [anything else]
"""

import argparse
import json
import os
import socket
import sys
import time

import deepspeed
import torch
import torch.distributed as dist


def say(line: str) -> None:
    """One write per line: ranks that share a pipe (pdsh, torchrun) never interleave mid-line."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--zero-stage", type=int, default=1)
    parser.add_argument("--step-seconds", type=float, default=0.0, help="sleep after each step")
    parser.add_argument("--local_rank", type=int, default=-1)  # the launcher passes it
    args, extra = parser.parse_known_args()
    deepspeed.init_distributed(dist_backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    say(
        f"rank={rank} world_size={world} local_rank={os.environ.get('LOCAL_RANK')}"
        f" host={socket.gethostname()} backend={dist.get_backend()}"
        + (
            f" DEMO_FORWARDED={os.environ['DEMO_FORWARDED']}"
            if "DEMO_FORWARDED" in os.environ
            else ""
        )
        + f" argv={json.dumps(extra)}"
    )
    torch.manual_seed(0)
    true_w = torch.randn(16, 1)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    config = {
        "train_micro_batch_size_per_gpu": 32,
        "gradient_accumulation_steps": 1,
        "train_batch_size": 32 * world,
        "optimizer": {"type": "SGD", "params": {"lr": 0.05}},
        "zero_optimization": {"stage": args.zero_stage},
        # DeepSpeed's own optimizers (Adam and its kin) compile a kernel on first use; plain
        # SGD needs no compiler, but ZeRO wants to be told that it is fine with it
        "zero_allow_untested_optimizer": True,
    }
    engine, _, _, _ = deepspeed.initialize(
        model=model, model_parameters=model.parameters(), config=config
    )
    gen = torch.Generator().manual_seed(1000 + rank)
    first = last = 0.0
    for step in range(1, args.steps + 1):
        x = torch.randn(32, 16, generator=gen)
        y = torch.tanh(x @ true_w)
        loss = torch.nn.functional.mse_loss(engine(x), y)
        engine.backward(loss)
        engine.step()
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
        say(f"loss fell from {first:.4f} to {last:.4f} (ZeRO stage {args.zero_stage})")
    # Leave together: no rank closes its connections while another still uses them, and the
    # process group is shut down before the interpreter tears the process down.
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
