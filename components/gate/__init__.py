"""Data gate: stops the run before training when ExampleValidator found anomalies."""
