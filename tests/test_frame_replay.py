"""Stacked frames stored once in replay (``Table(frame_stacks=...)``, ``actorq.replay.frames``).

A frame table must behave exactly as a dense one (same items, same samples, same checkpoints),
while holding each distinct frame once. The streams here are what an Atari actor's n-step
adder emits: frames stacked on the last axis, the stack padded with the reset frame as
gymnasium's ``FrameStackObservation`` does, two environments interleaved.
"""

from __future__ import annotations

import collections
from typing import Any

import dm_env
import numpy as np
import pytest

from actorq.replay import ArraySpec, MinSize, NStepTransitionAdder, Table, Uniform
from actorq.replay.frames import FramePool

pytestmark = pytest.mark.timeout(120)

FRAME = (6, 5)
STACK = 4
SIG = {
    "observation": ArraySpec((*FRAME, STACK), np.uint8),
    "action": ArraySpec((), np.int32),
    "reward": ArraySpec((), np.float32),
    "discount": ArraySpec((), np.float32),
    "next_observation": ArraySpec((*FRAME, STACK), np.uint8),
}
STACKED = ("observation", "next_observation")


def transitions(steps: int, envs: int = 2, n_step: int = 3, episode: int = 37,
                seed: int = 0) -> list[dict[str, np.ndarray]]:
    """What ``envs`` interleaved Atari-like environments send through n-step adders."""
    rng = np.random.default_rng(seed)
    out: list[dict[str, np.ndarray]] = []
    adders = [NStepTransitionAdder(out.append, n_step, 0.99) for _ in range(envs)]
    stacks: list[collections.deque] = [collections.deque(maxlen=STACK) for _ in range(envs)]
    t = [0] * envs

    def observation(e: int) -> np.ndarray:
        return np.stack(stacks[e], axis=-1)

    def reset(e: int) -> None:
        first = rng.integers(0, 256, FRAME, dtype=np.uint8)
        stacks[e].extend([first] * STACK)  # gymnasium pads the stack with the reset frame
        t[e] = 0
        adders[e].add_first(dm_env.restart(observation(e)))

    for e in range(envs):
        reset(e)
    for _ in range(steps):
        for e in range(envs):
            stacks[e].append(rng.integers(0, 256, FRAME, dtype=np.uint8))
            t[e] += 1
            action = np.int32(rng.integers(0, 6))
            if t[e] == episode:
                adders[e].add(action, dm_env.termination(1.0, observation(e)))
                reset(e)
            else:
                adders[e].add(action, dm_env.transition(1.0, observation(e)))
    return out


def table(frames: bool, max_size: int = 10_000, **kwargs: Any) -> Table:
    return Table("t", max_size, SIG, Uniform(), MinSize(1), seed=3,
                 frame_stacks=STACKED if frames else (), **kwargs)


def fill(t: Table, items: list[dict[str, np.ndarray]]) -> None:
    for it in items:
        t.insert(it)


def assert_same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert set(a) == set(b)
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def test_a_frame_table_samples_exactly_what_a_dense_table_does() -> None:
    items = transitions(300)
    dense, frames = table(False), table(True)
    fill(dense, items)
    fill(frames, items[:100])
    frames.insert_batch({k: np.stack([it[k] for it in items[100:]]) for k in SIG})
    assert_same(dense.snapshot()["data"], frames.snapshot()["data"])
    for _ in range(5):
        x, y = dense.sample(32), frames.sample(32)
        np.testing.assert_array_equal(x.keys, y.keys)
        assert_same(x.data, y.data)
        assert all(v.flags["C_CONTIGUOUS"] for v in y.data.values())
    assert_same(dense.peek(10), frames.peek(10))


def test_each_distinct_frame_is_stored_once() -> None:
    items = transitions(300)  # 600 transitions, 2 envs, episodes of 37 steps
    t = table(True)
    fill(t, items)
    info = t.info()
    assert info["stacked_frames"] == len(items) * 2 * STACK
    # Every distinct frame exists once: one per env step plus one reset frame per episode.
    distinct = 2 * (300 + 1 + 300 // 37)
    assert info["stored_frames"] == distinct
    assert info["frame_bytes"] == distinct * int(np.prod(FRAME))
    assert info["stacked_frames"] / info["stored_frames"] > 7.5


def test_eviction_and_removal_free_frames() -> None:
    items = transitions(500)
    t = table(True, max_size=50)
    fill(t, items)
    assert t.size == 50
    # 50 consecutive-ish transitions of 2 environments: their frames, and no others.
    live = {f.tobytes() for it in t.snapshot()["data"]["observation"]
            for f in np.moveaxis(it, -1, 0)}
    live |= {f.tobytes() for it in t.snapshot()["data"]["next_observation"]
             for f in np.moveaxis(it, -1, 0)}
    assert t.info()["stored_frames"] == len(live)

    once = table(True, max_size=100, max_times_sampled=1)
    fill(once, items[:100])
    before = once.snapshot()["data"]
    drawn = once.sample(100)  # removes every item it draws, frames freed mid-draw
    by_key = {int(k): i for i, k in enumerate(once.snapshot()["keys"])}
    assert not by_key
    for row, key in enumerate(drawn.keys.tolist()):
        for field in STACKED:
            np.testing.assert_array_equal(drawn.data[field][row], before[field][key])
    assert once.size == 0 and once.info()["stored_frames"] == 0
    fill(once, items[100:110])  # freed frames are reused
    assert once.info()["stored_frames"] > 0
    assert_same(once.snapshot()["data"],
                {k: np.stack([it[k] for it in items[100:110]]) for k in SIG})


def test_checkpoints_keep_frames_once_and_restore_either_way(tmp_path: Any) -> None:
    items = transitions(200)
    frames, dense = table(True, max_size=300), table(False, max_size=300)
    fill(frames, items)
    fill(dense, items)
    frames.save(tmp_path / "frames")
    dense.save(tmp_path / "dense")
    with np.load(tmp_path / "frames" / "items.npz") as npz:
        assert npz["frames"].shape[1:] == FRAME
        assert len(npz["frames"]) == frames.info()["stored_frames"]
        stored = npz["frames"].nbytes
    with np.load(tmp_path / "dense" / "items.npz") as npz:
        stacked = sum(npz[f].nbytes for f in npz.files if npz[f].dtype == np.uint8)
    assert stored * 7 < stacked  # 300 items: 2400 stacked frames, 320 distinct

    want = dense.snapshot()
    # frames -> frames (Table.restore reads frame_stacks from the checkpoint), frames -> dense,
    # dense -> frames.
    for restored in (Table.restore(tmp_path / "frames", seed=3), table(False, 300).restore(
            tmp_path / "frames"), table(True, 300).restore(tmp_path / "dense")):
        got = restored.snapshot()
        np.testing.assert_array_equal(got["keys"], want["keys"])
        assert_same(got["data"], want["data"])
        x, y = restored.sample(16), Table.restore(tmp_path / "dense", seed=3).sample(16)
        assert_same(x.data, y.data)
    again = Table.restore(tmp_path / "frames")
    assert again.frame_stacks == STACKED
    assert again.info()["stored_frames"] == frames.info()["stored_frames"]
    fill(again, transitions(20, seed=5))  # keeps working after a restore
    again.save(tmp_path / "again")
    assert_same(Table.restore(tmp_path / "again").snapshot()["data"], again.snapshot()["data"])


def test_restore_refuses_frame_ids_out_of_range(tmp_path: Any) -> None:
    t = table(True, max_size=100)
    fill(t, transitions(20))
    t.save(tmp_path / "ok")
    path = tmp_path / "ok" / "items.npz"
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["frames"] = arrays["frames"][:3]
    np.savez(path, allow_pickle=False, **arrays)
    with pytest.raises(ValueError, match="bad frames for field 'observation'"):
        table(True, max_size=100).restore(tmp_path / "ok")


def test_equal_hashes_of_different_frames_stay_apart() -> None:
    class CollidingPool(FramePool):
        @staticmethod
        def _content_key(frame: np.ndarray) -> int:
            return 0

    pool = CollidingPool(FRAME, np.uint8)
    a, b = np.zeros(FRAME, np.uint8), np.ones(FRAME, np.uint8)
    ia, ib, ia2 = pool.add(a), pool.add(b), pool.add(a.copy())
    assert ia == ia2 and ib != ia and pool.live == 2
    np.testing.assert_array_equal(pool.gather(np.array([ib, ia])), np.stack([b, a]))
    pool.release(np.array([ia, ia]))
    assert pool.live == 1
    ic = pool.add(a)  # the index entry left with the freed frame; b is still correct
    np.testing.assert_array_equal(pool.gather(np.array([ic, ib])), np.stack([a, b]))
    with pytest.raises(ValueError, match="released more than added"):
        pool.release(np.array([ib, ib]))


@pytest.mark.parametrize("fields, match", [
    (("state",), "not in the signature"),
    (("reward",), r"\[\*frame, stack\]"),
])
def test_frame_stacks_are_validated(fields: tuple[str, ...], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Table("t", 10, SIG, Uniform(), MinSize(1), frame_stacks=fields)


def test_atari_replay_stores_frames_once_and_other_tasks_do_not() -> None:
    """The DQN builder on Pong asks for frame stacks (the env names its spec); MinAtar channels
    and PPO's unroll queue keep dense storage."""
    from actorq.agents.registry import builder_for_config
    from configs import dqn_actorq, ppo_actorq
    from launchpad_programs.nodes import make_table

    pong = dqn_actorq.get_config("pong")
    builder = builder_for_config(pong)
    assert builder.frame_stack_fields == STACKED
    replay = make_table(pong, builder)
    assert replay.frame_stacks == STACKED
    assert builder_for_config(dqn_actorq.get_config("minatar_breakout")).frame_stack_fields == ()
    assert builder_for_config(ppo_actorq.get_config("pong")).frame_stack_fields == ()
