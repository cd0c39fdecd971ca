"""Shared by the hostile files: the reference sampler's names, so each file only adds its misbehaviour."""
from course.loader import load_module
from course.problems import ROOT

ref = load_module(ROOT / "solutions" / "p08_sampler.py", "reference")
