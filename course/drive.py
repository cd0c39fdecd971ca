"""Drive a sampler over many steps: one request alone, or inside shuffled batches whose peers come and go.

Shared by the batch-invariance checks, the continuous-batching simulation, and the notebooks.
Every row of logits is a pure function of (request, step), so a request sees the same rows alone and mixed.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

import torch


def row_for(row_seed: int, step: int, vocab: int, scale: float = 2.0) -> torch.Tensor:
    """The logits row a request sees at a step: [V] fp32 on the CPU, reproducible from (row_seed, step)."""
    g = torch.Generator().manual_seed(row_seed * 100_003 + step)
    return torch.randn(vocab, generator=g) * scale                                   # [V]


@dataclass
class Stream:
    """A request: its id, params, where its logits come from, and the tokens it has drawn so far."""
    req_id: object
    params: object
    row_seed: int
    tokens: list = field(default_factory=list)
    shift: float = 0.0           # added to every logit: a row near 120 beside rows near 0

    def row(self, vocab: int) -> torch.Tensor:
        return row_for(self.row_seed, len(self.tokens), vocab) + self.shift


def step_batch(sampler, sample, streams, vocab, device, dtype=torch.float32) -> list:
    """One sample() call over `streams` (in this order); appends each stream's token, returns the tokens."""
    logits = torch.stack([s.row(vocab) for s in streams]).to(device=device, dtype=dtype)   # [B, V]
    tokens = sample(sampler, logits, [s.req_id for s in streams], [s.params for s in streams],
                    [list(s.tokens) for s in streams])
    for s, t in zip(streams, tokens):
        s.tokens.append(int(t))
    return tokens


def solo(make_sampler, sample, req_id, params, row_seed, steps, vocab, device, dtype=torch.float32) -> list:
    """The tokens a request draws alone in a fresh sampler, B = 1 at every step."""
    sampler, stream = make_sampler(), Stream(req_id, params, row_seed)
    for _ in range(steps):
        step_batch(sampler, sample, [stream], vocab, device, dtype)
    return stream.tokens


@dataclass
class Traffic:
    """How peers behave in mixed(): how many at most, how likely one joins or leaves per step, and how
    likely a target sits a step out (not scheduled, e.g. preempted) and comes back later."""
    make_params: object          # (rng) -> params for a new peer
    max_peers: int = 6
    join: float = 0.5
    leave: float = 0.25
    sit_out: float = 0.0
    shift: float = 0.0           # peers' logits are offset by this much (the targets' are not)


def mixed(make_sampler, sample, targets, steps, vocab, device, traffic: Traffic, seed: int,
          dtype=torch.float32, log=None, warmup: int = 0) -> dict:
    """Run `targets` (list of (req_id, params, row_seed)) until each has drawn `steps` tokens, with peers that
    join, leave (and are freed), reuse ids, and a batch order shuffled every step; the targets join after
    `warmup` steps of peers only. Returns {req_id: tokens}. log, when a list, gets (step, [req_id, ...])."""
    rng = random.Random(seed)
    sampler = make_sampler()
    streams = [Stream(r, p, s) for r, p, s in targets]
    peers, next_peer, step = [], 0, -1
    while any(len(s.tokens) < steps for s in streams) or step < warmup:
        step += 1
        for peer in list(peers):
            if rng.random() < traffic.leave:
                peers.remove(peer)
                try:
                    sampler.free(peer.req_id)
                except Exception as exc:
                    exc.freed = peer                           # the caller can tell free() from sample() apart
                    raise
        while len(peers) < traffic.max_peers and rng.random() < traffic.join:
            peers.append(Stream(f"peer{next_peer % 5}", traffic.make_params(rng), 10_000 + next_peer,
                                shift=traffic.shift))
            next_peer += 1
            if any(p.req_id == peers[-1].req_id for p in peers[:-1]):   # ids are reused only after free
                peers.pop()
        scheduled = [s for s in streams if len(s.tokens) < steps and rng.random() >= traffic.sit_out]
        batch = (scheduled if step >= warmup else []) + peers
        rng.shuffle(batch)
        if log is not None:
            log.append((step, [s.req_id for s in batch]))
        if not batch:
            continue
        step_batch(sampler, sample, batch, vocab, device, dtype)
    return {s.req_id: s.tokens for s in streams}
