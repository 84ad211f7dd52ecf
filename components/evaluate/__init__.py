"""Evaluation stage: the stock TFMA Evaluator, with no baseline when none is comparable, and
the reasons for its blessing in words."""
