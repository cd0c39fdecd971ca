"""Hostile: raises while importing."""
import torch

WEIGHTS = torch.load("/nonexistent/weights.pt")
