"""The program graph: validation, and a program with no RL in it on every launcher."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from launchpad_programs.launchers import launch
from launchpad_programs.ping import Collector, Producer, make_ping_program
from launchpad_programs.program import Channel, Node, Program

LAUNCHERS_DIR = Path(__file__).resolve().parents[1] / "launchpad_programs" / "launchers"


def check_ping(result: dict, producers: int, messages: int, exact: bool) -> None:
    received = result["received"]
    assert set(received) == {f"producer_{i}" for i in range(producers)}
    sent = sum(len(v) for v in received.values())
    # Every message sent arrived, once, in order per producer, with the published greeting.
    assert sent == result["total"]
    for messages_of_one in received.values():
        assert [n for n, _ in messages_of_one] == list(range(len(messages_of_one)))
        assert all(greeting == "hello" for _, greeting in messages_of_one)
    if exact:
        assert sent == messages
    else:  # the local counter reserves nothing: concurrent producers may each take one more
        assert messages <= sent <= messages + producers - 1
    assert not result["interrupted"]
    assert any(e["event"] == "ready" for e in result["events"])


def test_single_launcher_runs_the_ping_program():
    check_ping(launch(make_ping_program(3, 40), "single"), 3, 40, exact=True)


def test_local_launcher_runs_the_ping_program():
    check_ping(launch(make_ping_program(2, 200), "local"), 2, 200, exact=False)


@pytest.mark.filterwarnings("ignore:os.fork\\(\\) was called:RuntimeWarning")
def test_ray_launcher_runs_the_ping_program(ray_session):
    check_ping(launch(make_ping_program(2, 200), "ray"), 2, 200, exact=True)


def test_single_launcher_interleaves_in_program_order():
    # One message per producer per round: the budget is shared evenly and reproducibly.
    result = launch(make_ping_program(2, 10), "single")
    assert [len(v) for v in result["received"].values()] == [5, 5]


class _Waiter:
    """Waits forever for a message nobody sends."""

    def __init__(self, ctx):
        self._stream = ctx.stream("numbers")

    def step(self) -> str:
        return "worked" if self._stream.receive() else "idle"

    def close(self, interrupted: bool) -> bool:
        return interrupted


class _Silent:
    def __init__(self, ctx):
        pass

    def step(self) -> str:
        return "idle"

    def close(self, interrupted: bool) -> None:
        pass


def test_single_launcher_reports_a_stalled_program():
    program = Program("stall", nodes=(Node("main", _Waiter, main=True), Node("quiet", _Silent)),
                      channels=(Channel("numbers", "stream", ("quiet",), ("main",)),))
    with pytest.raises(RuntimeError, match="stalled"):
        launch(program, "single")


@pytest.mark.parametrize("nodes, channels, message", [
    ((Node("a", Collector), Node("b", Producer)), (), "exactly one main node"),
    ((Node("a", Collector, main=True), Node("a", Producer)), (), "names repeat"),
    ((Node("a", Collector, main=True), Node("b", Producer)),
     (Channel("x", "queue", ("b",), ("a",)),), "unknown kind"),
    ((Node("a", Collector, main=True), Node("b", Producer)),
     (Channel("x", "stream", ("a",), ("b",)),), "must flow into the main node"),
    ((Node("a", Collector, main=True), Node("b", Producer)),
     (Channel("x", "variable", ("b",), ("a",)),), "published by the main node"),
    ((Node("a", Collector, main=True),), (Channel("x", "stream", ("c",), ("a",)),),
     "unknown node"),
])
def test_program_rejects_a_malformed_graph(nodes, channels, message):
    with pytest.raises(ValueError, match=message):
        Program("bad", nodes=nodes, channels=channels)


def test_unknown_launcher_is_rejected():
    with pytest.raises(ValueError, match="unknown launcher 'slurm'"):
        launch(make_ping_program(), "slurm")


def test_launchers_know_no_node_kinds_and_import_no_agent():
    words = re.compile(r"\b(learner|evaluator|replay|agent|dqn|d4pg|sac|quantiz\w*)\b", re.I)
    imports = re.compile(r"^\s*(from|import)\s+(actorq|launchpad_programs\.(nodes|workers|"
                         r"actorq_program|pacing))\b", re.M)
    for path in LAUNCHERS_DIR.glob("*.py"):
        text = path.read_text()
        assert not words.findall(text), (path.name, words.findall(text))
        assert not imports.findall(text), path.name


def test_program_prints_its_nodes_and_channels():
    text = str(make_ping_program(2, 5))
    assert re.search(r"collector +\[collector, main\]", text)
    assert re.search(r"producer_1 +\[producer, restarted\]", text)
    assert re.search(r"budget +\(counter\) producer_0, producer_1 -> collector", text)


def test_the_library_never_names_the_launchers_package():
    """Data flows one way: nothing under actorq/ imports (or mentions) launchpad_programs."""
    library = Path(__file__).resolve().parents[1] / "actorq"
    offenders = [str(path.relative_to(library)) for path in library.rglob("*.py")
                 if "launchpad_programs" in path.read_text()]
    assert not offenders, offenders
