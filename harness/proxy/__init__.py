"""A Toxiproxy-API-compatible TCP proxy (see server.py for why it exists)."""
