#!/usr/bin/env python3
"""An elastic PyTorch trainer for EDL's example image.

Logistic regression on a data set generated from a seed, trained with
torch.distributed (gloo) under torchrun, which restarts it whenever the job's
number of trainers changes:

    python3 -m torch.distributed.run --nnodes=1:8 ... /workspace/train.py
    python3 /workspace/train.py          # alone: world size 1, no process group

It reads RANK, WORLD_SIZE (and MASTER_ADDR, MASTER_PORT) from torchrun's
environment, and these, each also a flag (--epochs 300, --steps-per-epoch 20,
--checkpoint-dir is the one string and stays an environment variable):

    EDL_CHECKPOINT_DIR   where the checkpoint lives (default /checkpoint)
    EDL_EPOCHS           epochs to train (default 60)
    EDL_STEPS_PER_EPOCH  steps of an epoch (default 40; about 1 s an epoch at world size 1)
    EDL_BATCH_CHUNKS     a step's global batch, in chunks of 512 samples (default 16)
    EDL_FEATURES         the data set's features (default 256)
    EDL_SEED             the data set's seed (default 1)
    EDL_THREADS          torch threads per process (default 1)

The data set does not depend on the world size: a step's global batch is
made of chunks, each generated from (seed, step, chunk), and rank r takes
chunks r, r+W, r+2W, ... The ranks sum their gradients with an all-reduce
and divide by the global batch, so a step is the same step whatever the
number of trainers, and more trainers make an epoch shorter.

Rank 0 writes the checkpoint at the end of every epoch, atomically (a
temporary file renamed over the last one), and on SIGTERM. At start rank 0
reads it and broadcasts it, so training resumes where it stopped, at any
world size. On SIGTERM a trainer finishes its step; the stop travels with the
gradients' all-reduce, so every rank stops after the same step, and the
trainer exits with 143. Rank 0 prints one line an epoch:

    epoch=<n> loss=<f> world_size=<w> rank=<r> time=<unix seconds>

and, at the end, final_loss=<f>; it then exits 0. It appends the same lines
to train.log beside the checkpoint, so that they outlive the trainer pods.

It reports its progress to EDL after every step, in samples, with
edl_progress (the example image's helper; see docs/api.md, "Progress"):
EDL measures its throughput at each size and shows its ETA.
"""
import os
import signal
import sys
import time

STOP = False


def on_sigterm(signum, frame):
    global STOP
    STOP = True


# Before importing torch, which takes seconds: a SIGTERM then must not kill.
signal.signal(signal.SIGTERM, on_sigterm)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

try:
    import edl_progress  # noqa: E402
except ImportError:  # outside the example image: no reports
    edl_progress = None

CHUNK = 512


def env_int(name, default):
    """The setting name: a --flag on the command line (EDL_EPOCHS is
    --epochs), else the environment variable, else default."""
    flag = "--" + name[len("EDL_"):].lower().replace("_", "-")
    args = sys.argv[1:]
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return int(args[i + 1])
        if a.startswith(flag + "="):
            return int(a[len(flag) + 1:])
    return int(os.environ.get(name, default))


def true_weights(features, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(features, generator=g), torch.randn(1, generator=g)


def chunk(seed, step, c, features, w_true, b_true):
    """Chunk c of a step's batch: samples and their labels, from the seed."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + step * 10_007 + c + 1)
    x = torch.randn(CHUNK, features, generator=g)
    noise = 0.5 * torch.randn(CHUNK, generator=g)
    y = ((x @ w_true + b_true + noise) > 0).float()
    return x, y


def say(ckpt_dir, line):
    """Print a line of rank 0's and append it to the log beside the checkpoint."""
    print(line, flush=True)
    with open(os.path.join(ckpt_dir, "train.log"), "a") as f:
        f.write(line + "\n")


def save(path, state):
    tmp = path + ".tmp"
    torch.save(state, tmp)
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main():
    torch.set_num_threads(env_int("EDL_THREADS", 1))
    epochs = env_int("EDL_EPOCHS", 60)
    steps = env_int("EDL_STEPS_PER_EPOCH", 40)
    chunks = env_int("EDL_BATCH_CHUNKS", 16)
    features = env_int("EDL_FEATURES", 256)
    seed = env_int("EDL_SEED", 1)
    ckpt_dir = os.environ.get("EDL_CHECKPOINT_DIR", "/checkpoint")
    ckpt = os.path.join(ckpt_dir, "train.pt")

    distributed = "MASTER_ADDR" in os.environ
    if distributed:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1

    w = torch.zeros(features)
    b = torch.zeros(1)
    # state: the next epoch and step to run.
    state = torch.zeros(2, dtype=torch.int64)
    loss = float("nan")
    if rank == 0 and os.path.exists(ckpt):
        saved = torch.load(ckpt)
        w, b, loss = saved["w"], saved["b"], saved.get("loss", loss)
        state = torch.tensor([saved["epoch"], saved["step"]], dtype=torch.int64)
        say(ckpt_dir, f"resumed next_epoch={saved['epoch'] + 1} step={saved['step']} "
                      f"world_size={world} rank={rank} time={time.time():.3f}")
    if distributed:
        for t in (w, b, state):
            dist.broadcast(t, 0)
    start_epoch, start_step = int(state[0]), int(state[1])
    if rank == 0:
        os.makedirs(ckpt_dir, exist_ok=True)
        say(ckpt_dir, f"training world_size={world} rank={rank} epoch={start_epoch + 1} "
                      f"step={start_step} time={time.time():.3f}")

    w_true, b_true = true_weights(features, seed)
    lr = 0.5
    batch = chunks * CHUNK
    progress = None
    if edl_progress is not None:
        progress = edl_progress.Progress(total=epochs * steps * batch, batch=batch, trainers=world)
        progress.report((start_epoch * steps + start_step) * batch)
    for epoch in range(start_epoch, epochs):
        total, counted = 0.0, 0
        first = start_step if epoch == start_epoch else 0
        for step in range(first, steps):
            # Every rank's share of the step: the summed gradient and loss.
            gw = torch.zeros(features)
            gb = torch.zeros(1)
            lsum = torch.zeros(1)
            for c in range(rank, chunks, world):
                x, y = chunk(seed, step, c, features, w_true, b_true)
                z = x @ w + b
                p = torch.sigmoid(z)
                gw += x.t() @ (p - y)
                gb += (p - y).sum()
                lsum += torch.nn.functional.binary_cross_entropy_with_logits(z, y, reduction="sum")
            stop = torch.tensor([1.0 if STOP else 0.0])
            flat = torch.cat([gw, gb, lsum, stop])
            if distributed:
                dist.all_reduce(flat)
            gw, gb = flat[:features], flat[features:features + 1]
            w -= lr * gw / batch
            b -= lr * gb / batch
            total += float(flat[features + 1]) / batch
            counted += 1
            if progress is not None:
                progress.report((epoch * steps + step + 1) * batch)
            if float(flat[features + 2]) > 0:
                if rank == 0:
                    save(ckpt, {"epoch": epoch, "step": step + 1, "w": w, "b": b,
                               "loss": loss, "world_size": world})
                    say(ckpt_dir, f"stopped epoch={epoch + 1} step={step + 1} world_size={world} "
                                  f"rank={rank} time={time.time():.3f}")
                if distributed:
                    dist.destroy_process_group()
                sys.exit(143)
        if counted:
            loss = total / counted
        if rank == 0:
            save(ckpt, {"epoch": epoch + 1, "step": 0, "w": w, "b": b,
                           "loss": loss, "world_size": world})
            say(ckpt_dir, f"epoch={epoch + 1} loss={loss:.6f} world_size={world} rank={rank} "
                          f"time={time.time():.3f}")

    if rank == 0:
        say(ckpt_dir, f"final_loss={loss:.6f} time={time.time():.3f}")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
