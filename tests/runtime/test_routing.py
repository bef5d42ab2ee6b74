"""Each routing policy's defining rule on hand-made streams (Nasir et al. §4, §5.1)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.replay.state import StateStore
from runtime.routing import POLICIES, SPLITTING, KeyTable, RouterState, canonical, cap, route


def zipf_keys(n: int, keys: int, z: float, seed: int = 1) -> np.ndarray:
    p = np.arange(1, keys + 1, dtype=float) ** -z
    return np.random.default_rng(seed).choice(keys, size=n, p=p / p.sum())


def test_kg_is_deterministic_per_key_and_h1() -> None:
    table = KeyTable.build(50, 7, seed=3)
    keys = zipf_keys(2000, 50, 1.2)
    out, _ = route("kg", keys, table)
    assert np.array_equal(out, table.first[keys])
    again, _ = route("key", keys[::-1], table)  # the alias; order does not matter
    assert np.array_equal(again, out[::-1])


def test_sg_is_round_robin_per_source() -> None:
    table = KeyTable.build(5, 4)
    keys = np.zeros(12, dtype=np.int64)
    out, state = route("sg", keys, table)
    assert out.tolist() == [0, 1, 2, 3] * 3
    more, _ = route("shuffle", keys[:3], table, state=state)
    assert more.tolist() == [0, 1, 2]  # continues where the source stopped
    src = np.array([0, 1] * 4)
    two, st2 = route("sg", keys[:8], table, sources=src, state=RouterState.zeros(2, 4))
    assert two[src == 0].tolist() == [0, 1, 2, 3] and two[src == 1].tolist() == [1, 2, 3, 0]
    assert st2.sent.tolist() == [4, 4]


def test_pkg_picks_the_less_loaded_of_its_two_by_local_counts() -> None:
    first, second = np.array([0, 0, 1]), np.array([1, 2, 2])
    table = KeyTable.build(3, 3, first=first, second=second)
    keys = np.array([0, 0, 0, 1, 2, 2, 0])
    out, state = route("pkg", keys, table)
    # loads (0,0,0) -> key0: tie, H1=0; (1,0,0) -> 1; (1,1,0) -> tie 0; (2,1,0) key1 -> 2;
    # key2 (1 vs 2): loads 1,1 -> tie H1=1; then 2 vs 1 -> 2; key0: 2 vs 2 -> 0
    assert out.tolist() == [0, 1, 0, 2, 1, 2, 0]
    assert state.load.tolist() == [[3, 2, 2]]
    assert route("potc", keys, table)[0].tolist() == out.tolist()  # the old name


def test_pkg_rule_on_a_random_stream() -> None:
    table = KeyTable.build(200, 10, seed=5)
    keys = zipf_keys(3000, 200, 1.0)
    out, _ = route("pkg", keys, table)
    load = np.zeros(10, dtype=np.int64)
    for k, b in zip(keys.tolist(), out.tolist(), strict=True):
        a, c = int(table.first[k]), int(table.second[k])
        assert b in (a, c)
        assert load[b] == min(load[a], load[c])
        load[b] += 1


def test_potc_msg_uses_two_random_bins_per_message_and_balances() -> None:
    table = KeyTable.build(1, 10)
    out, _ = route("potc_msg", np.zeros(5000, dtype=np.int64), table)  # one key everywhere
    counts = np.bincount(out, minlength=10)
    assert (counts > 0).all() and counts.max() - counts.min() <= 3


@pytest.mark.parametrize("eps", [0.0, 0.01, 0.3])
def test_porc_never_exceeds_its_cap_and_takes_the_first_free_probe(eps: float) -> None:
    b = 12
    table = KeyTable.build(300, b, seed=2)
    keys = zipf_keys(4000, 300, 1.4)
    out, state = route("porc", keys, table, epsilon=eps)
    load = np.zeros(b, dtype=np.int64)
    for t, (k, j) in enumerate(zip(keys.tolist(), out.tolist(), strict=True), start=1):
        c = max(math.ceil((1 + eps) * t / b - 1e-9), math.ceil(t / b))
        assert int(cap(np.array([t]), b, eps)[0]) == c
        probe = int(table.first[k])
        while load[probe] >= c:  # H_1, H_2, ...: every earlier probe was full
            probe = (probe + int(table.step[k])) % b
        assert j == probe and load[j] < c
        load[j] += 1
        assert load.max() <= c
    assert np.array_equal(state.load[0], load)
    assert math.gcd(int(table.step[0]), b) == 1  # a permutation of the bins


def test_chbl_bound_holds_at_every_message() -> None:
    b, eps = 9, 0.1
    table = KeyTable.build(100, b, seed=4, points=5)
    keys = zipf_keys(3000, 100, 1.5)
    out, _ = route("chbl", keys, table, epsilon=eps)
    load = np.zeros(b, dtype=np.int64)
    ch, _ = route("ch", keys, table)
    for t, (j, home) in enumerate(zip(out.tolist(), ch.tolist(), strict=True), start=1):
        load[j] += 1
        assert load.max() <= max(math.ceil((1 + eps) * t / b - 1e-9), math.ceil(t / b))
        if load[home] < cap(np.array([t]), b, eps)[0] and j != home:
            pytest.fail("CH-BL skipped its free clockwise bin")
    assert np.array_equal(ch, table.principal("ch")[keys])


def test_ch_keeps_a_key_on_one_bin() -> None:
    table = KeyTable.build(500, 16, seed=7)
    keys = zipf_keys(5000, 500, 0.8)
    out, _ = route("ch", keys, table)
    per_key = pd.DataFrame({"k": keys, "b": out}).groupby("k")["b"].nunique()
    assert per_key.max() == 1


def test_policy_names_and_bad_input_are_clear_errors() -> None:
    assert canonical("POTC") == "pkg" and canonical("key") == "kg" and canonical("porc") == "porc"
    with pytest.raises(ValueError, match="unknown routing policy 'round'"):
        canonical("round")
    table = KeyTable.build(3, 2)
    with pytest.raises(ValueError, match="epsilon must be a number"):
        route("porc", np.zeros(3, dtype=np.int64), table, epsilon=-0.1)
    with pytest.raises(ValueError, match="sources"):
        route("sg", np.zeros(3, dtype=np.int64), table, sources=np.array([0, 1, 2]),
              state=RouterState.zeros(2, 2))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 15), st.integers(-50, 50)), min_size=1, max_size=200),
       st.sampled_from(POLICIES), st.integers(1, 6),
       st.lists(st.tuples(st.integers(0, 5), st.sampled_from(["n0", "n1", "n2"])), max_size=8),
       st.integers(0, 3))
def test_state_sums_survive_splits_migrations_and_merges(
        rows: list[tuple[int, int]], policy: str, bins: int,
        moves: list[tuple[int, str]], seed: int) -> None:
    """Route, fold into key-group state, migrate key groups, merge partials into each key's
    principal key group: the per-key sums equal pandas' group-by, whatever happened."""
    keys = np.array([k for k, _ in rows], dtype=np.int64)
    values = np.array([v for _, v in rows], dtype=np.float64)
    table = KeyTable.build(16, bins, seed=seed, points=3)
    out, _ = route(policy, keys, table, epsilon=0.05)
    placement = [f"n{g % 3}" for g in range(bins)]
    store = StateStore()
    half = len(keys) // 2
    for part in (slice(0, half), slice(half, None)):  # two batches with migrations between
        frame = pd.DataFrame({"g": out[part], "e": keys[part], "v": values[part]})
        agg = frame.groupby(["g", "e"], as_index=False)["v"].agg(["sum", "count"])
        store.update(placement, agg["g"].to_numpy(), np.zeros(len(agg), dtype=np.int64),
                     agg["e"].to_numpy(), agg["sum"].to_numpy(), agg["count"].to_numpy(float))
        for g, node in moves:
            if g < bins and store.node_of(g) is not None:
                store.migrate(g, placement[g], node)
            if g < bins:
                placement[g] = node
    home = table.principal(policy)
    popped = {g: store.pop_windows(g, lambda w: True) for g in range(bins)}
    for windows in popped.values():
        for w, cells in windows.items():
            for e, (total, count) in cells.items():
                store.add(int(home[e]), placement[int(home[e])], w, e, total, count)
    sums: dict[int, float] = {}
    holders: dict[int, set[int]] = {}
    for g, _w, e, total, _c in store.items():
        sums[e] = sums.get(e, 0.0) + total
        holders.setdefault(e, set()).add(g)
    expected = pd.Series(values).groupby(keys).sum()
    assert sums == pytest.approx(expected.to_dict())
    assert all(h == {int(home[e])} for e, h in holders.items())  # merged into one place
    if policy not in SPLITTING:
        assert all(int(home[k]) == j for k, j in zip(keys, out, strict=True))
