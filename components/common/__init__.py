"""Definitions shared by several stages (no TFX imports)."""
