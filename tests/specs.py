"""Spec sections for tests, built from keyword fields as an experiment file would give them."""

from pydantic import TypeAdapter

from harness.spec import ClusterSpec

_CLUSTER = TypeAdapter(ClusterSpec)


def cluster_spec(**fields):
    """A cluster section (local, compose or external, by `backend`) from keyword fields."""
    return _CLUSTER.validate_python(fields)
