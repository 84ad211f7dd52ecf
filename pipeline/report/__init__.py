"""The run report: readers of the run's artifacts, matplotlib pictures, and the HTML page."""
