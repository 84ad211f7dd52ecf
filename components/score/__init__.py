"""Score: batch predictions with the served model (runner.py --score; work in progress)."""
