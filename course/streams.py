"""Counter-based random streams: the n-th uniform of the stream keyed by a seed is a pure function of (seed, n).

`stream_uniform(seed, n)` is SplitMix64 (Steele, Lea and Flood, 2014), whose n-th output for a seed s is
mix(s + (n + 1) * GAMMA). The seed is mixed once first, so neighbouring seeds (1000, 1001, ...) do not give
shifted copies of one stream. Nothing here remembers anything between calls. The uniforms of a whole batch are
computed on the host with the other per-row knobs and reach the device in the one upload a call makes anyway.
vLLM's and SGLang's seeded sampling key their streams the same way, on the device.
"""
import numpy as np

MASK = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15      # 2**64 / the golden ratio, odd: SplitMix64's step


def mix64(z: int) -> int:
    """SplitMix64's finaliser: a 64-bit integer to a well-mixed 64-bit integer (a bijection)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def stream_uniform(seed: int, n: int) -> float:
    """The n-th uniform (n = 0, 1, ...) of the stream keyed by seed: 53 random bits as a float64 in [0, 1)."""
    return (mix64((mix64(int(seed) & MASK) + (n + 1) * GAMMA) & MASK) >> 11) * 2.0 ** -53   # int(): numpy ints too


_SHIFTS = tuple(np.uint64(s) for s in (30, 27, 31, 11))                      # numpy scalars made once
_MULTIPLIERS = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB), np.uint64(GAMMA)


def _mix64_array(z):
    """mix64 of a numpy uint64 array (its arithmetic wraps modulo 2**64, as `& MASK` does above); z is reused."""
    z ^= z >> _SHIFTS[0]
    z *= _MULTIPLIERS[0]
    z ^= z >> _SHIFTS[1]
    z *= _MULTIPLIERS[1]
    z ^= z >> _SHIFTS[2]
    return z


def stream_uniforms(seeds, counts):
    """[stream_uniform(s, n) for s, n in zip(seeds, counts)], bit for bit: numpy computes a batch's at once (a few
    rows take the loop: numpy's fixed cost per call is more than theirs)."""
    if len(seeds) < 16:
        return [stream_uniform(seed, n) for seed, n in zip(seeds, counts)]
    try:
        keys = np.array(seeds, dtype=np.uint64)                                  # a seed in [0, 2**64)
    except OverflowError:                                                        # a negative or larger seed
        keys = np.array([int(seed) & MASK for seed in seeds], dtype=np.uint64)
    steps = np.array(counts, dtype=np.uint64)
    steps += np.uint64(1)
    steps *= _MULTIPLIERS[2]                                                     # (n + 1) * GAMMA
    z = _mix64_array(_mix64_array(keys) + steps) >> _SHIFTS[3]                   # the top 53 bits
    return (z.astype(np.float64) * 2.0 ** -53).tolist()
