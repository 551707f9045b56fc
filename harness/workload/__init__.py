"""What the clients do during a run."""
