"""Hostile: does not parse."""
def apply_top_k(logits, top_k)
    return logits
