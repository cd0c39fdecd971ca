"""Shared helpers of the course repo: problem metadata, grader, hints, oracle, plots, benchmark."""
