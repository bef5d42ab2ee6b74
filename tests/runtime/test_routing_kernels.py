"""The compiled loops of the sequential policies route exactly as the pure-Python reference."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.routing import KeyTable, RouterState, route
from runtime.routing.kernels import warm_up

SEQUENTIAL = ("pkg", "potc_msg", "chbl", "porc")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=0, max_size=300), st.sampled_from(SEQUENTIAL),
       st.integers(1, 13), st.integers(1, 4), st.sampled_from([0.0, 0.01, 0.3, 2.0]),
       st.integers(0, 5), st.integers(1, 4), st.integers(0, 2**31))
def test_compiled_equals_pure_python(keys_list: list[int], policy: str, bins: int, sources: int,
                                     eps: float, seed: int, points: int, mix: int) -> None:
    """Same bins and state on random streams, several sources, and a second batch that starts
    from the first one's loads (a cap that is not fresh)."""
    keys = np.array(keys_list, dtype=np.int64)
    table = KeyTable.build(41, bins, seed=seed, points=points)
    src = np.random.default_rng(mix).integers(0, sources, size=len(keys))
    half = len(keys) // 3
    state_c = state_p = RouterState.zeros(sources, bins)
    for part in (slice(0, half), slice(half, None)):
        out_c, state_c = route(policy, keys[part], table, state=state_c, sources=src[part],
                               epsilon=eps)
        out_p, state_p = route(policy, keys[part], table, state=state_p, sources=src[part],
                               epsilon=eps, compiled=False)
        assert out_c.dtype == np.int64 and out_c.tolist() == out_p.tolist()
        assert np.array_equal(state_c.load, state_p.load)
        assert np.array_equal(state_c.sent, state_p.sent)


def test_compiled_equals_pure_python_on_a_skewed_stream_and_leaves_the_state_alone() -> None:
    """A hot key that fills many bins (long probe walks), one source, 1,000 bins."""
    rng = np.random.default_rng(3)
    p = np.arange(1, 5001, dtype=float) ** -1.3
    keys = rng.choice(5000, size=40_000, p=p / p.sum())
    table = KeyTable.build(5000, 1000, seed=1)
    assert warm_up() >= 0.0
    start = RouterState.zeros(1, 1000)
    for policy in SEQUENTIAL:
        out_c, new_c = route(policy, keys, table, state=start, epsilon=0.01)
        out_p, new_p = route(policy, keys, table, state=start, epsilon=0.01, compiled=False)
        assert np.array_equal(out_c, out_p), policy
        assert np.array_equal(new_c.load, new_p.load) and new_c.load.sum() == len(keys)
    assert start.load.sum() == 0  # the kernels work on a copy
