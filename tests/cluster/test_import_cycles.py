"""No two modules of the cluster plane import each other, even only for types: a cycle means a
type lives one floor too high (as ScenarioConfig and MeasuredPool once did in workload.py)."""

from import_graph import find_cycle, import_graph


def test_the_cluster_plane_has_no_import_cycle():
    graph = import_graph("rlguard.cluster")
    assert "rlguard.cluster.overlay" in graph and "rlguard.cluster.engine" in graph
    assert find_cycle(graph) is None


def test_a_cycle_is_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
