"""The notebooks' side: widget panels and figures (plain functions, tested without a kernel), the notebook
source builder, the output-strip filter and the one-time setup."""
