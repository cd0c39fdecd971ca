"""Rows of logits the checks are made of: LLM-like (Zipf), a likely head over a long light tail, and the
top_p that keeps exactly n tokens of a row (half-way between two 'mass before' values, so never a near-tie)."""
import torch

from course import oracle


def zipf_logits(g, batch, vocab, alpha=1.1):
    """LLM-like rows: log-probabilities of a Zipf law over a random permutation of the vocabulary. [B, V]"""
    ranks = torch.arange(1, vocab + 1, dtype=torch.float32)
    rows = [(-alpha * ranks.log())[torch.randperm(vocab, generator=g)] for _ in range(batch)]
    return torch.stack(rows)


def head_and_tail(g, vocab, head):
    """A row with `head` likely tokens (distinct values) scattered over the vocab, and a long light tail. [V]"""
    row = torch.randn(vocab, generator=g) * 0.5 - 12.0                                        # [V]
    row[:head] = torch.linspace(3.0, 0.0, head)
    return row[torch.randperm(vocab, generator=g)]


def top_p_keeping(row, keep, temperature=1.0):
    """The top_p that keeps exactly `keep` tokens of row at this temperature, half-way between two 'mass before' values."""
    values = [v / temperature for v in row.tolist()]
    probs, before = oracle.softmax(values), [0.0]
    for i in oracle.descending_order(values)[:keep]:
        before.append(before[-1] + probs[i])
    return (before[-2] + before[-1]) / 2
