"""The fault kinds, one module each (faults/kind.py says what a kind holds); faults/registry.py lists them."""
