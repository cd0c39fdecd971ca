"""Chunk maxima: one cheap read of the logits for the fast path's greedy rows and its window
(solutions/p08_sampler_fast.py: argmax_rows here, window_topk there).

A row seen as chunks of CHUNK logits: amax over each chunk reads the row once and keeps no index, several
times cheaper than argmax or topk over the whole row. A row's first maximum lies in the first chunk (or tail
logit) that holds the row's maximum, and its W largest values in the W chunks with the largest maxima: only
those chunks are read again. One [B, C] of maxima serves both kinds of rows.
"""
import torch

CHUNK = 64           # logits per chunk; a row's last V % CHUNK logits are its tail, read as they are


def chunk_view(x):
    """x [B, V] as [B, C, CHUNK]: its first C = V // CHUNK chunks (a view, no copy; the tail is left out)."""
    chunks = x.shape[1] // CHUNK
    return x[:, :chunks * CHUNK].view(x.shape[0], chunks, CHUNK)


def chunk_maxima(x):
    """[B, C]: the maximum of each chunk of each row."""
    return chunk_view(x).amax(-1)


def argmax_rows(x, rows, maxima):
    """[g] torch.argmax of x's listed rows (the first maximum), from the chunk maxima and one chunk per row."""
    chunks = maxima.shape[1]
    cols = torch.cat([maxima[rows], x[rows, chunks * CHUNK:]], 1)               # [g, C + tail] in id order
    top = cols.amax(-1, keepdim=True)                                           # [g, 1] the row maximum
    if bool(top.isnan().any()):
        return torch.argmax(x.index_select(0, rows), dim=-1)                    # NaN: torch's own rule
    first = (cols == top).int().argmax(-1)                                      # [g] first column holding it
    inside = chunk_view(x)[rows, first.clamp(max=chunks - 1)].argmax(-1)        # [g] its first maximum there
    return torch.where(first < chunks, first * CHUNK + inside, first - chunks + chunks * CHUNK)
