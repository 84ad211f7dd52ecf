"""Benchmarks: ratios measured side by side in one run, printed as tables (never asserted)."""
