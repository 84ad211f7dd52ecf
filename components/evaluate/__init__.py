"""Evaluation stage: the stock TFMA Evaluator, taught that an empty baseline means none."""
