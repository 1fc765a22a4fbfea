"""Test fixtures: ONE real ZooKeeper for the whole session, started by the harness CLI
(``target/debug/zk-harness``, built by ``scripts/test-python``) and stopped at the end even on
failure. Tests are isolated by unique paths, not by servers. No mocks, no skips: if the harness
or ZooKeeper is missing, every test fails with the command that fixes it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Callable, Iterator, List

import pytest

import zkrecipes

REPO = Path(__file__).resolve().parents[2]
HARNESS = Path(os.environ.get("ZKR_HARNESS", REPO / "target" / "debug" / "zk-harness"))


class ZooKeeper:
    """The session's server: its connect string and the harness commands that act on it."""

    def __init__(self, state_dir: str, connect: str) -> None:
        self.dir = state_dir
        self.connect = connect

    def harness(self, *args: str) -> str:
        out = subprocess.run(
            [str(HARNESS), *args, "--dir", self.dir], check=True, capture_output=True, text=True, timeout=60
        )
        return out.stdout.strip()


@pytest.fixture(scope="session")
def zk() -> Iterator[ZooKeeper]:
    if not HARNESS.exists():
        pytest.fail(
            f"the ZooKeeper harness {HARNESS} is missing: run ./scripts/test-python (or "
            "`cargo build -p zkrecipes-testing --bin zk-harness`) first",
            pytrace=False,
        )
    state_dir = tempfile.mkdtemp(prefix="zkr-pytest-")
    try:
        started = subprocess.run(
            [str(HARNESS), "start", "--dir", state_dir], capture_output=True, text=True, timeout=120
        )
        if started.returncode != 0:
            pytest.fail(
                f"could not start ZooKeeper with the harness: {started.stderr.strip()}\n"
                "install it with ./scripts/setup (Debian's zookeeper package)",
                pytrace=False,
            )
        server = ZooKeeper(state_dir, started.stdout.strip().splitlines()[-1])
        yield server
    finally:
        subprocess.run([str(HARNESS), "stop", "--dir", state_dir], capture_output=True, timeout=60)
        shutil.rmtree(state_dir, ignore_errors=True)


@pytest.fixture
def path(request: pytest.FixtureRequest) -> str:
    """A unique path for one test."""
    name = "".join(c if c.isalnum() else "_" for c in request.node.name)[:60]
    return f"/pytest/{name}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def make_client(zk: ZooKeeper) -> Iterator[Callable[..., zkrecipes.Client]]:
    """Starts clients on the session's server; closes them all after the test."""
    made: List[zkrecipes.Client] = []

    def make(**options: object) -> zkrecipes.Client:
        options.setdefault("session_timeout", 10.0)
        options.setdefault("connection_timeout", 10.0)
        c = zkrecipes.Client(zk.connect, **options)  # type: ignore[arg-type]
        made.append(c)
        return c.start()

    yield make
    for c in made:
        c.close()


@pytest.fixture
def client(make_client: Callable[..., zkrecipes.Client]) -> zkrecipes.Client:
    return make_client()


def run_python(code: str, *args: str) -> "subprocess.CompletedProcess[str]":
    """Runs ``code`` in a new interpreter (this one's executable) with ``args`` as sys.argv[1:];
    its output captured as text. For what only a process of its own can show (its exit)."""
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)


def children_left(client: zkrecipes.Client, path: str) -> List[str]:
    """The children of ``path``, none if the node is gone: recipes make their parents containers,
    which the harness's servers reap within 250 ms of their emptying, so a test that checks a
    recipe left nothing under one takes either answer."""
    try:
        return client.get_children(path)
    except zkrecipes.NoNodeError:
        return []


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    """Polls ``predicate`` until it holds, failing after ``timeout`` seconds (a bounded wait on
    a condition, never a sleep standing in for synchronisation)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.01)
