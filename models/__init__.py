"""Model builders, named by import path in the pipeline config (user code lives here or
anywhere)."""
