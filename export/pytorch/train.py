"""Continue an anatomy run in PyTorch, on one process or many (torch.distributed, DDP):

    python3 train.py --steps 200 --out ../continued              # one process
    torchrun --nproc_per_node 2 train.py --steps 200 --out ../continued
    (Debian 12's torch 1.13 under Python 3.11 also needs --redirects 1 --tee 1 after torchrun: its
    default "0" no longer parses, a known bug of that pairing)
    torchrun --nnodes 2 --node_rank R --master_addr HOST --nproc_per_node 8 train.py ...

Everything the anatomy run was doing continues: the weights (model.safetensors), AdamW's moments
and step (optimizer.safetensors), the learning-rate schedule at its step, label smoothing and
clipping (run.json's options), on the run's tokenized training data (data.safetensors). The
batches are new ones (each process draws its share), so the run continues but not bit for bit.
--out is written as an anatomy run folder: `anatomy translate/evaluate/generate --checkpoint
OUT` read it. Backend: gloo on CPU, nccl when every process has a GPU (--backend to choose).
"""
import argparse
import json
import math
import os
import shutil
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

import model as book
import safetensors_io

HERE = os.path.dirname(os.path.abspath(__file__))


def schedule_lambda(info, peak):
    """The run's learning rate at a step, as a factor of the peak (anatomy's nn/lr_scheduler)."""
    s = info["schedule"]
    warmup, total, floor = s["warmup"], max(s["total_steps"], 1), s.get("min_lr", 0.0) / peak
    if s["name"] == "noam":  # factor · d^-0.5 · min(step^-0.5, step · warmup^-1.5), step 0 as 1
        d, factor = s["d_model"], s["factor"]
        return lambda step: factor * d ** -0.5 * min(max(step, 1) ** -0.5,
                                                      max(step, 1) * warmup ** -1.5) / peak
    if s["name"] == "constant":
        return lambda step: 1.0

    def warmup_decay(step):
        if step < warmup:
            return step / max(warmup, 1)
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        shape = 1.0 - progress if s["name"] == "linear" else 0.5 * (1 + math.cos(math.pi * progress))
        return floor + (1.0 - floor) * shape
    return warmup_decay


def translation_batches(data, info, epoch, rank, world):
    """Length-bucketed batches of at most max_tokens (padding included), this process's share."""
    src, src_off = data["source_ids"], data["source_offsets"]
    tgt, tgt_off = data["target_ids"], data["target_offsets"]
    n = src_off.numel() - 1
    g = torch.Generator().manual_seed(info["seed"] * 1000003 + epoch)
    order = torch.randperm(n, generator=g).tolist()
    length = lambda i: max(src_off[i + 1] - src_off[i], tgt_off[i + 1] - tgt_off[i] + 1).item()
    order.sort(key=length)
    batches, current, longest = [], [], 0
    for i in order:
        longest_if = max(longest, length(i))
        if current and longest_if * (len(current) + 1) > info["max_tokens"]:
            batches.append(current)
            current, longest_if = [], length(i)
        current.append(i)
        longest = longest_if
    if current:
        batches.append(current)
    perm = torch.randperm(len(batches), generator=g).tolist()
    batches = [batches[p] for p in perm]
    batches = batches[: len(batches) // world * world]  # every process takes as many steps
    bos, eos = info["bos"], info["eos"]
    for rows in batches[rank::world]:
        s = [src[src_off[i]:src_off[i + 1]] for i in rows]
        t = [tgt[tgt_off[i]:tgt_off[i + 1]] for i in rows]
        pad = lambda seqs: torch.nn.utils.rnn.pad_sequence(seqs, batch_first=True, padding_value=0)
        t_in = pad([torch.cat([torch.tensor([bos]), x]) for x in t])
        t_out = pad([torch.cat([x, torch.tensor([eos])]) for x in t])
        yield pad(s), t_in, t_out


def lm_batches(data, info, rank, step):
    ids, T, B = data["ids"], info["block"], info["batch"]
    g = torch.Generator().manual_seed(info["seed"] * 1000003 + step * 1009 + rank)
    while True:
        starts = torch.randint(0, ids.numel() - T, (B,), generator=g)
        yield (torch.stack([ids[i:i + T] for i in starts]),
               torch.stack([ids[i + 1:i + T + 1] for i in starts]))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--steps", type=int, default=100, help="optimizer steps to run")
    p.add_argument("--out", required=True, help="the anatomy run folder to write")
    p.add_argument("--backend", default=None, help="gloo (CPU) or nccl (GPUs); default: by device")
    p.add_argument("--log-every", type=int, default=10)
    args = p.parse_args()

    distributed = "WORLD_SIZE" in os.environ
    cuda = torch.cuda.is_available()
    if distributed:
        dist.init_process_group(args.backend or ("nccl" if cuda else "gloo"))
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if cuda else "cpu")
    torch.manual_seed(1234)  # dropout; the same on every process

    with open(os.path.join(HERE, "export.json")) as f:
        info = json.load(f)
    config = book.load_config(os.path.join(HERE, "config.json"))
    net = book.build(config, info["kind"]).to(device)
    weights, _ = safetensors_io.load(os.path.join(HERE, "model.safetensors"))
    net.load_state_dict(weights)
    o = info["optimizer"]
    params = dict(net.named_parameters())
    if o["decay_vectors"]:
        groups = [{"params": list(params.values()), "weight_decay": o["weight_decay"]}]
    else:  # nanoGPT's rule: no decay for biases and norm gains
        groups = [{"params": [p for p in params.values() if p.dim() >= 2],
                   "weight_decay": o["weight_decay"]},
                  {"params": [p for p in params.values() if p.dim() < 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"])
    state, _ = safetensors_io.load(os.path.join(HERE, "optimizer.safetensors"))
    start = int(state["step"].item())
    for name, param in params.items():
        if f"exp_avg.{name}" in state:
            opt.state[param] = {"step": torch.tensor(float(start)),
                                "exp_avg": state[f"exp_avg.{name}"].to(device),
                                "exp_avg_sq": state[f"exp_avg_sq.{name}"].to(device)}
    for group in opt.param_groups:
        group["initial_lr"] = o["lr"]
    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule_lambda(info, o["lr"]),
                                              last_epoch=info["schedule"]["step"])
    s = info["schedule"]
    if rank == 0 and s["name"] in ("linear", "cosine") and start + args.steps > s["total_steps"]:
        print(f"note: the run's {s['name']} schedule ends at step {s['total_steps']}; past it the "
              f"learning rate stays at its floor ({s.get('min_lr', 0.0):g})", flush=True)
    model = torch.nn.parallel.DistributedDataParallel(net) if distributed else net
    data, _ = safetensors_io.load(os.path.join(HERE, "data.safetensors"))

    def batches():
        epoch = info["epoch"]
        while True:
            if info["kind"] == "translation":
                yield from translation_batches(data, info, epoch, rank, world)
                epoch += 1
            else:
                yield from lm_batches(data, info, rank, start)

    losses = []
    model.train()
    stream = batches()
    for step in range(start + 1, start + args.steps + 1):
        if info["kind"] == "translation":
            src, t_in, t_out = (x.to(device) for x in next(stream))
            logits = model(src, t_in)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), t_out.reshape(-1),
                                   ignore_index=0, label_smoothing=info["label_smoothing"])
        else:
            x, y = (t.to(device) for t in next(stream))
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        opt.zero_grad()
        loss.backward()  # DDP averages the gradients of all processes here
        if info["clip"] > 0:
            torch.nn.utils.clip_grad_norm_(net.parameters(), info["clip"])
        opt.step()
        sched.step()
        mean = loss.detach().clone()
        if distributed:
            dist.all_reduce(mean)
            mean /= world
        losses.append(mean.item())
        if rank == 0 and (step - start) % args.log_every == 0:
            print(f"step {step}  loss {sum(losses[-args.log_every:]) / args.log_every:.4f}  "
                  f"lr {sched.get_last_lr()[0]:.2e}", flush=True)

    # Every replica must hold the same weights: compare a checksum of each.
    checksum = torch.tensor([sum(p.detach().double().sum().item() for p in net.parameters())])
    sums = [torch.zeros(1, dtype=torch.float64) for _ in range(world)]
    if distributed:
        dist.all_gather(sums, checksum.double())
    else:
        sums = [checksum.double()]
    if rank == 0:
        save(args.out, net, opt, params, start + args.steps, losses, [s.item() for s in sums], world)
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
        # Leave without the interpreter's teardown: there torch 1.13 can deadlock, the DDP
        # reducer destroying the gloo process group while a gloo thread waits for the GIL (seen
        # in the tests). Everything is written and closed by now.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def save(out, net, opt, params, step, losses, checksums, world):
    """An anatomy run folder: the export's files, the new weights and optimizer state."""
    os.makedirs(os.path.join(out, "best"), exist_ok=True)
    os.makedirs(os.path.join(out, "last"), exist_ok=True)
    for name in os.listdir(HERE):
        if name.endswith("tokenizer.json") or "tokenizer." in name or name == "config.json":
            shutil.copy(os.path.join(HERE, name), os.path.join(out, name))
    state = {k: v.cpu() for k, v in net.state_dict().items()}
    for folder in ("best", "last"):
        safetensors_io.save(os.path.join(out, folder, "model.safetensors"), state)
    moments = {"step": torch.tensor(step)}
    for name, p in params.items():
        if p in opt.state:
            moments[f"exp_avg.{name}"] = opt.state[p]["exp_avg"].cpu()
            moments[f"exp_avg_sq.{name}"] = opt.state[p]["exp_avg_sq"].cpu()
    safetensors_io.save(os.path.join(out, "optimizer.safetensors"), moments)
    with open(os.path.join(HERE, "run.json")) as f:
        run = json.load(f)
    run["step"] = step
    run["continued_in_pytorch"] = {"processes": world, "losses": losses,
                                   "replica_checksums": checksums}
    with open(os.path.join(out, "run.json"), "w") as f:
        json.dump(run, f, indent=2)
    print(f"wrote {out} (step {step}); replicas identical: "
          f"{max(checksums) - min(checksums) == 0}", flush=True)


if __name__ == "__main__":
    main()
