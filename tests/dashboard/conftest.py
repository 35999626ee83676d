"""Fixtures for the dashboard tests: a simulator-backed stand-in for the control API, and the app built on it
in threading mode with the frame loop driven by hand (dashboard.tick())."""

from __future__ import annotations

import threading
import time

import pytest

from tests.dashboard.fake_control import FakeControl
from web.app import create_app


@pytest.fixture
def fake():
    server = FakeControl(3, seed=1)
    server.elect("A")
    yield server
    server.stop()


def make_app(**config):
    base = {"ASYNC_MODE": "threading", "AUTOSTART": False, "TESTING": True, "FRAME_HZ": 20}
    base.update(config)
    app = create_app(base)
    return app, app.extensions["socketio"], app.extensions["hwm_dashboard"]


@pytest.fixture
def live(fake):
    app, socketio, dashboard = make_app(CONTROL_URL=fake.control_url)
    dashboard.tick()  # the first poll: the dashboard learns the cluster
    yield app, socketio, dashboard
    dashboard.stop()


def received(client, name=None):
    got = client.get_received()
    return [m for m in got if name is None or m["name"] == name]


def frames(client):
    return [m["args"][0] for m in received(client, "frame")]


def wait_until(predicate, timeout=10.0, step=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


class LockedDriver:
    """lab.harness.scenario.SimDriver on the fake's simulator, holding the fake's lock (its HTTP threads read it)."""

    def __init__(self, fake: FakeControl):
        from lab.harness.scenario import SimDriver

        self._driver = SimDriver(fake.sim)
        self._lock = fake.lock
        self.names = self._driver.names

    def __getattr__(self, name):
        attr = getattr(self._driver, name)
        if not callable(attr):
            return attr

        def locked(*args, **kwargs):
            with self._lock:
                return attr(*args, **kwargs)
        return locked


class FakeHost:
    """A cluster host (web.cluster.ClusterHost's interface) whose clusters are FakeControl simulators."""

    def __init__(self):
        self.started: list[tuple[int, dict, object]] = []
        self.fake: FakeControl | None = None
        self.control_url = None
        self.token = None  # a fake control API asks for no token
        self.lock = threading.Lock()

    def start(self, nodes, settings=None, scenario=None):
        self.stop()
        self.started.append((nodes, dict(settings or {}), scenario))
        self.fake = FakeControl(nodes, seed=len(self.started))
        self.control_url = self.fake.control_url
        return self.control_url

    def driver(self, scenario):
        return LockedDriver(self.fake)

    def stop(self):
        if self.fake:
            self.fake.stop()
            self.fake = None
