"""Fault planning (pure) and application (the nemesis)."""
