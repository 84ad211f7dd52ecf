"""Schema stage: the schema anomalies are judged against, fixed on the first run."""
