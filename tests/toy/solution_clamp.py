"""T00: clamp(values, low, high) -> a new list, each value moved into [low, high]."""


def clamp(values, low, high):
    """Values inside [low, high] stay; a value below goes to low, above to high."""
    return [min(max(v, low), high) for v in values]
