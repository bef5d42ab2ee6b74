"""jobs/plan/scaling.py: node set, set B and the cool-down history from earlier scaling sections."""
from __future__ import annotations

from jobs.plan.scaling import history_of, with_scaling_nodes
from placement.model import ClusterState, KeyGroup, Node
from placement.scaling.policy import new_node_ids


def state() -> ClusterState:
    kgs = (KeyGroup("a", "op", 10.0), KeyGroup("b", "op", 10.0))
    # the runtime still reports node-00 (terminated earlier, runtime lagging), not node-03 yet
    return ClusterState((Node("node-00"), Node("node-01"), Node("node-02")), kgs,
                        {"a": "node-01", "b": "node-02"})


SECTIONS = [
    {"decision": "out", "nodes_to_add": ["node-03"], "nodes_to_mark": [],
     "nodes_to_terminate": [], "reason": "scale-out"},
    {"decision": "in", "nodes_to_add": [], "nodes_to_mark": ["node-00", "node-02"],
     "nodes_to_terminate": [], "reason": "scale-in"},
    {"decision": "none", "nodes_to_add": [], "nodes_to_mark": ["node-02"],
     "nodes_to_terminate": ["node-00"], "reason": "terminate"},
]


def test_node_set_adds_announced_nodes_drops_terminated_and_keeps_marks() -> None:
    out = with_scaling_nodes(state(), SECTIONS)
    assert out.node_ids == ("node-01", "node-02", "node-03")
    assert [n.id for n in out.nodes if n.marked_for_removal] == ["node-02"]
    assert with_scaling_nodes(state(), []) == state()


def test_history_keeps_decisions_in_order_and_every_used_id() -> None:
    history = history_of([*SECTIONS, {"reason": "old plan without a decision"}])
    assert history.decisions == ("out", "in", "none", "none")
    assert history.used_node_ids == {"node-03", "node-00"}
    assert history.blocked_by("out", 3) == 3 and history.blocked_by("out", 2) is None
    # a terminated id is never handed out again
    assert new_node_ids(["node-01"], 1, history.used_node_ids) == ("node-04",)
