"""Float64 boundaries, found bit by bit: where a row's kept count (or its token) changes as top_p (or the uniform)
moves by one double; the grader's F7 and F8 probes and the fast-path notebook place rows there."""
import struct


def bits_of(x: float) -> int:
    """A positive double's bits as an int: neighbouring doubles are neighbouring ints."""
    return struct.unpack("<q", struct.pack("<d", x))[0]


def float_of(b: int) -> float:
    return struct.unpack("<d", struct.pack("<q", b))[0]


def step_between(past, lo: float, hi: float) -> tuple:
    """(below, at): the two neighbouring positive doubles in [lo, hi] where past(x) turns True (False at lo, True at
    hi, once): e.g. past = "the row keeps more tokens at top_p = x than at lo"."""
    a, b = bits_of(lo), bits_of(hi)                      # positive doubles: bit order is value order
    while b - a > 1:
        mid = (a + b) // 2
        a, b = (a, mid) if past(float_of(mid)) else (mid, b)
    return float_of(a), float_of(b)
