"""The smallest program: producers that count, and a collector. No RL in it.

    from launchpad_programs.launchers import launch
    from launchpad_programs.ping import make_ping_program
    print(launch(make_ping_program(producers=2, messages=50), "local"))

It shows how to write node kinds: a node is a class built as ``Kind(ctx, **kwargs)`` with
``step()`` and ``close(interrupted)``; it reaches other nodes only through ``ctx``'s channels.
The collector (main) publishes a greeting on the ``greeting`` variable; each producer reads it,
acquires one step at a time from the shared ``budget`` counter and sends ``(number, greeting)``
on the ``numbers`` stream until the budget is spent. The tests run it on every launcher.
"""

from __future__ import annotations

from typing import Any

from launchpad_programs.program import FINISHED, IDLE, WORKED, Channel, Node, NodeContext, Program


class Producer:
    """Sends numbered messages while the shared budget lasts."""

    def __init__(self, ctx: NodeContext) -> None:
        self._ctx = ctx
        self._numbers = ctx.stream("numbers")
        self._budget = ctx.counter("budget")
        self._greeting = ctx.variable("greeting").reader("text")
        self._sent = 0

    def step(self) -> str:
        if self._budget.acquire(1) == 0:
            return FINISHED if self._budget.exhausted() else IDLE
        latest = self._greeting.latest()
        self._numbers.send((self._sent, latest[1].decode() if latest else None))
        self._budget.commit(1)
        self._sent += 1
        if self._sent == 1:
            self._ctx.ready()
        return WORKED

    def close(self, interrupted: bool) -> None:
        del interrupted


class Collector:
    """Publishes the greeting, gathers every producer's messages, returns them."""

    def __init__(self, ctx: NodeContext, producers: tuple[str, ...]) -> None:
        self._ctx = ctx
        self._producers = producers
        self._numbers = ctx.stream("numbers")
        ctx.variable("greeting").publish("text", 1, b"hello")
        self.received: dict[str, list[Any]] = {name: [] for name in producers}
        self.events: list[dict[str, Any]] = []

    def _take(self) -> bool:
        messages = self._numbers.receive()
        for source, message in messages:
            self.received[source].append(message)
        self.events.extend(self._ctx.events())
        return bool(messages)

    def step(self) -> str:
        if self._take():
            return WORKED
        return FINISHED if self._ctx.finished(self._producers) else IDLE

    def close(self, interrupted: bool) -> dict[str, Any]:
        self._take()  # the producers' last messages
        return {"received": self.received, "total": self._ctx.counter("budget").total(),
                "interrupted": interrupted, "events": self.events}


def make_ping_program(producers: int = 2, messages: int = 50) -> Program:
    """``producers`` Producer nodes sharing a budget of ``messages``, and a Collector."""
    names = tuple(f"producer_{i}" for i in range(producers))
    return Program(
        name="ping",
        nodes=(Node("collector", Collector, {"producers": names}, kind="collector", main=True,
                    runs="publishes a greeting, gathers the numbers"),
               *(Node(name, Producer, kind="producer", restart=True,
                      runs="sends numbered messages while the budget lasts")
                 for name in names)),
        channels=(Channel("numbers", "stream", names, ("collector",), "(number, greeting)"),
                  Channel("greeting", "variable", ("collector",), names, "b'hello'"),
                  Channel("budget", "counter", names, ("collector",), "messages sent",
                          max_total=messages)),
    )
