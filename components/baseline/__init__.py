"""Baseline stage: the model currently served, which the Evaluator compares a candidate with."""
