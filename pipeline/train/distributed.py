"""Data parallelism: rank, world size, device and the gradient all-reduce (Dist)."""
from __future__ import annotations

import os

import torch
import torch.distributed as dist

from pipeline.device import require_given_gpus, use_cpu, use_gpu


class Dist:
    """Rank, world size and device; explicit gradient all-reduce over torch.distributed.

    Our choice: one flat all-reduce of the summed gradients instead of the DDP module wrapper -- the same
    arithmetic, but a rank whose share of a batch is empty and parameters unused in a step need no special
    casing. Each rank's loss is divided by the *global* batch's token or sentence count (loss_denominator), so the
    summed gradient equals the single-process gradient of the whole batch.
    """

    def __init__(self):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        local = int(os.environ.get("LOCAL_RANK", str(self.rank)))
        require_given_gpus()  # a job given GPUs that torch cannot use stops rather than train on the CPU
        cuda = torch.cuda.is_available()
        self.device = torch.device("cuda", local % max(torch.cuda.device_count(), 1)) if cuda else torch.device("cpu")
        if cuda:
            use_gpu()
        else:
            use_cpu()
        self.owns_group = False
        if self.world > 1 and not dist.is_initialized():
            if cuda:
                torch.cuda.set_device(self.device)
            dist.init_process_group("nccl" if cuda else "gloo")
            self.owns_group = True

    @property
    def main(self) -> bool:
        return self.rank == 0

    def share(self, batch: list[int]) -> list[int]:
        """This rank's disjoint part of a global batch (round robin)."""
        return batch[self.rank :: self.world]

    def broadcast_model(self, model: torch.nn.Module) -> None:
        """Give every rank rank 0's parameters and buffers."""
        if self.world > 1:
            for tensor in list(model.parameters()) + list(model.buffers()):
                dist.broadcast(tensor.data, src=0)

    def reduce_step(self, params: list[torch.nn.Parameter], stats):
        """Sum gradients and `stats` (floats, or a tensor that stays one) over ranks; a parameter unused on every
        rank keeps grad None."""
        if self.world == 1:
            return stats
        grads = [p.grad.reshape(-1) if p.grad is not None else p.new_zeros(p.numel()) for p in params]
        used = [float(p.grad is not None) for p in params]
        lazy = isinstance(stats, torch.Tensor)
        tail_values = torch.tensor(used + ([] if lazy else stats), device=self.device, dtype=grads[0].dtype)
        parts = grads + [tail_values] + ([stats.to(grads[0].dtype)] if lazy else [])
        flat = torch.cat(parts)
        dist.all_reduce(flat)
        offset = 0
        for p in params:
            n = p.numel()
            p.grad = flat[offset : offset + n].view_as(p).clone()
            offset += n
        tail = flat[offset : offset + len(params)].tolist()
        for p, u in zip(params, tail):
            if u == 0:
                p.grad = None
        rest = flat[offset + len(params):]
        return rest.double() if lazy else rest.tolist()

    def all_sum(self, values: list[float]) -> list[float]:
        """Sum a few floats over ranks (float64)."""
        if self.world == 1:
            return values
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        dist.all_reduce(t)
        return t.tolist()

    def gather(self, obj) -> list:
        """Every rank's `obj`, in rank order."""
        if self.world == 1:
            return [obj]
        out = [None] * self.world
        dist.all_gather_object(out, obj)
        return out

    def barrier(self) -> None:
        if self.world > 1:
            dist.barrier()

    def close(self) -> None:
        if self.owns_group:
            dist.destroy_process_group()

