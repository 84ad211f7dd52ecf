"""Evaluation stage helpers: the choice of the baseline model for TFMA's regression check."""
