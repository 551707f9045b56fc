"""`cluster.proxy`: the embedded proxy by default, a real toxiproxy-server when asked for (by name or path);
what a machine without one says before anything starts, and what `doctor` lists."""

import os
import stat

import pytest

from harness.cluster import input_problems
from harness.cluster.local import LocalTansuCluster
from harness.cluster.toxiproxy import ToxiproxyServer, toxiproxy_server_for, version_number
from harness.doctor import _toxiproxy
from tests.specs import cluster_spec as ClusterSpec


def fake_server(folder, version="2.12.0-69-gf48fd7f"):
    """A stand-in program that answers `-version` as toxiproxy-server does."""
    path = folder / "toxiproxy-server"
    path.write_text(f"#!/bin/sh\necho 'toxiproxy-server version {version}'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def no_server(monkeypatch, tmp_path):
    monkeypatch.delenv("TOXIPROXY_SERVER", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))


def test_embedded_is_the_default_even_with_a_toxiproxy_server_on_path(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    fake_server(tmp_path)
    spec = ClusterSpec(backend="local")
    assert spec.proxy == "embedded" and toxiproxy_server_for(spec.proxy) is None
    assert LocalTansuCluster(spec, tmp_path).server.kind == "embedded"
    assert input_problems(spec) == []


def test_toxiproxy_takes_the_server_from_the_environment_then_path(monkeypatch, tmp_path):
    server = fake_server(tmp_path)
    monkeypatch.delenv("TOXIPROXY_SERVER", raising=False)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert toxiproxy_server_for("toxiproxy") == str(server)
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.setenv("TOXIPROXY_SERVER", str(fake_server(other)))
    assert toxiproxy_server_for("toxiproxy") == str(other / "toxiproxy-server")
    cluster = LocalTansuCluster(ClusterSpec(backend="local", proxy="toxiproxy"), tmp_path)
    assert cluster.server.kind == "toxiproxy-server" and cluster.server.program == str(other / "toxiproxy-server")
    assert input_problems(ClusterSpec(backend="local", proxy="toxiproxy")) == []


def test_a_path_names_the_server_itself(tmp_path, no_server):
    server = fake_server(tmp_path)
    assert toxiproxy_server_for(str(server)) == str(server)
    assert input_problems(ClusterSpec(backend="local", proxy=str(server))) == []
    assert input_problems(ClusterSpec(backend="local", broker="kafka", brokers=3, kafka_home=str(tmp_path),
                                      proxy=str(server)))[0].startswith("cluster.kafka_home:")


def test_a_missing_server_is_bad_input_naming_the_field_and_the_fix(tmp_path, no_server):
    [msg] = input_problems(ClusterSpec(backend="local", proxy="toxiproxy"))
    assert msg.startswith("cluster.proxy: toxiproxy needs a toxiproxy-server on PATH or in $TOXIPROXY_SERVER")
    not_a_program = tmp_path / "toxiproxy-server"
    not_a_program.write_text("")
    [msg] = input_problems(ClusterSpec(backend="local", proxy=str(not_a_program)))
    assert msg == f"cluster.proxy: {not_a_program} (cluster.proxy) is not an executable file"
    problems = input_problems(ClusterSpec(backend="local", broker="kafka", brokers=3, kafka_home=str(tmp_path),
                                          proxy="toxiproxy"))
    assert [p.split(":")[0] for p in problems] == ["cluster.proxy", "cluster.kafka_home"]


@pytest.mark.parametrize("value", ["", "  ", "a\nb"])
def test_an_empty_or_multi_line_proxy_is_refused(value):
    with pytest.raises(ValueError, match="not embedded, toxiproxy or the path of a toxiproxy-server"):
        ClusterSpec(backend="local", proxy=value)


def test_the_cluster_line_names_the_server_and_its_version(tmp_path):
    server = ToxiproxyServer(tmp_path / "toxiproxy.log", "/x/toxiproxy-server")
    server.version = version_number('{"version": "2.12.0-69-gf48fd7f"}')
    assert server.description == "toxiproxy-server 2.12.0-69-gf48fd7f"
    assert ToxiproxyServer(tmp_path / "toxiproxy.log").description == "embedded"
    assert version_number("2.1.4\n") == "2.1.4"


def test_doctor_lists_the_server_with_its_version(monkeypatch, tmp_path):
    monkeypatch.setenv("TOXIPROXY_SERVER", str(fake_server(tmp_path, "2.9.0")))
    check = _toxiproxy()
    assert check.ok and not check.needed and "(2.9.0; used with cluster.proxy: toxiproxy)" in check.detail


def test_doctor_says_the_embedded_proxy_serves_without_one(no_server):
    check = _toxiproxy()
    assert not check.ok and not check.needed and "embedded" in check.detail and "PATH" in check.fix
