"""The Compose cluster's files, installed as the package data `harness.compose` (pyproject maps this folder
there), so a non-editable install finds them: see SHIPPED_COMPOSE_FILE in harness/spec.py."""
