"""Service discovery against the real server: Curator's layout and JSON byte for byte, every field
and payload kind through a round trip, update / disable / unregister, conflicts, the service
cache's events (an INVALID one for a garbage node), replay, providers by strategy with disabled
and down instances left out, asyncio twins and ``async for``, closed use, bad input."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from typing import Callable, List, Optional

import pytest

import zkrecipes
from zkrecipes import (
    ProviderStrategy,
    Registration,
    ServiceCache,
    ServiceCacheEvent,
    ServiceCacheEventKind,
    ServiceDiscovery,
    ServiceInstance,
    ServiceProvider,
    ServiceType,
    UriSpec,
)

from conftest import ZooKeeper, run_python, wait_until

K = ServiceCacheEventKind


class Recorder:
    def __init__(self) -> None:
        self.events: List[ServiceCacheEvent] = []
        self.lock = threading.Lock()

    def __call__(self, event: ServiceCacheEvent) -> None:
        with self.lock:
            self.events.append(event)

    def kinds(self) -> List[ServiceCacheEventKind]:
        with self.lock:
            return [e.kind for e in self.events]

    def snapshot(self) -> List[ServiceCacheEvent]:
        with self.lock:
            return list(self.events)


def every_field(name: str, id: str, **changes: object) -> ServiceInstance:
    fields: dict[str, object] = dict(
        id=id,
        address="10.0.0.7",
        port=8080,
        ssl_port=8443,
        payload={"region": "eu", "weights": [1, 2.5, None, True], "nested": {"k": "é\n\"q\""}},
        payload_class=None,
        service_type=ServiceType.DYNAMIC,
        uri_spec="{scheme}://{address}:{ssl-port}/v1",
        enabled=True,
        registration_time_utc=1_700_000_000_123,
    )
    fields.update(changes)
    return ServiceInstance(name, **fields)  # type: ignore[arg-type]


def test_an_instance_is_curators_json_byte_for_byte() -> None:
    i = ServiceInstance(
        "orders",
        id="6f2c",
        address="10.0.0.7",
        port=8080,
        registration_time_utc=1700000000123,
        uri_spec="{scheme}://{address}:{port}",
    )
    expected = (
        b'{"name":"orders","id":"6f2c","address":"10.0.0.7","port":8080,"sslPort":null,"payload":null,'
        b'"registrationTimeUTC":1700000000123,"serviceType":"DYNAMIC","uriSpec":{"parts":['
        b'{"value":"scheme","variable":true},{"value":"://","variable":false},'
        b'{"value":"address","variable":true},{"value":":","variable":false},'
        b'{"value":"port","variable":true}]}}'
    )
    assert i.to_json() == expected
    assert i.to_json(compatible=False) == expected[:-1] + b',"enabled":true}'
    assert ServiceInstance.from_json(expected) == i
    # Jackson's type information: a list as [class, value], an object with "@class" first.
    listed = ServiceInstance("s", id="i", payload=["a", "b"], payload_class="java.util.ArrayList")
    assert b'"payload":["java.util.ArrayList",["a","b"]]' in listed.to_json()
    typed = ServiceInstance("s", id="i", payload={"region": "eu"}, payload_class="com.example.Details")
    assert b'"payload":{"@class":"com.example.Details","region":"eu"}' in typed.to_json()
    for inst in (listed, typed):
        assert ServiceInstance.from_json(inst.to_json()) == inst
    # Defaults: a random UUID id, now, DYNAMIC, enabled.
    a, b = ServiceInstance("s"), ServiceInstance("s")
    assert a.id != b.id and len(a.id) == 36
    assert a.registration_time_utc > 1_600_000_000_000
    assert (a.service_type, a.enabled, a.payload, a.uri_spec) == (ServiceType.DYNAMIC, True, None, None)


def test_a_node_read_and_written_back_keeps_its_bytes() -> None:
    # A newer writer's field and a Java double's text survive a round trip through the dataclass,
    # dataclasses.replace included.
    node = (
        b'{"name":"n","id":"i","address":null,"port":null,"sslPort":null,'
        b'"payload":{"@class":"com.example.Details","region":"eu","weight":1.0E10},'
        b'"registrationTimeUTC":5,"serviceType":"STATIC","uriSpec":null,"extraField":[1,2]}'
    )
    i = ServiceInstance.from_json(node)
    assert (i.payload_class, i.payload, i.service_type) == (
        "com.example.Details",
        {"region": "eu", "weight": 1e10},
        ServiceType.STATIC,
    )
    assert i.to_json() == node
    moved = dataclasses.replace(i, port=81)
    assert moved.to_json() == node.replace(b'"port":null', b'"port":81')
    for bad in (b"not json", b"[1]", b'{"port":"eighty"}', b'{"serviceType":"WEIRD"}'):
        with pytest.raises(zkrecipes.CorruptedDataError):
            ServiceInstance.from_json(bad)
    # What Jackson coerces, Java reads and so do we: a numeric string for a port.
    assert ServiceInstance.from_json(b'{"name":"s","id":"x","port":"80"}').port == 80


def test_register_query_update_disable_unregister_with_every_field(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    client, raw = make_client(), make_client()
    d = ServiceDiscovery(client, path)
    instances = [
        every_field("orders", "a1"),
        every_field("orders", "a2", payload=["x", 1], payload_class="java.util.ArrayList"),
        every_field("orders", "a3", payload={"region": "us"}, payload_class="com.example.Details", address=None),
        every_field("billing", "b1", payload="text", ssl_port=None, uri_spec=None, port=None),
    ]
    regs = [d.register(i) for i in instances]
    assert regs[0].path == f"{path}/orders/a1" and regs[0].registered
    data, stat = raw.get_data(f"{path}/orders/a1")
    assert stat.ephemeral_owner == client.session_id, "DYNAMIC is ephemeral"
    assert data == instances[0].to_json(), "Curator's compatible JSON on the node"
    assert b'"enabled"' not in data
    assert d.query_for_names() == ["billing", "orders"]
    assert d.query_for_instances("orders") == instances[:3], "every field and payload kind back equal"
    assert [r.instance for r in regs] == instances
    assert d.query_for_instance("billing", "b1") == instances[3]
    assert d.query_for_instance("orders", "zz") is None
    assert d.query_for_instances("nothing") == []
    assert d.query_for_instance("orders", "a1").build_uri() == "https://10.0.0.7:8443/v1"  # type: ignore[union-attr]

    changed = dataclasses.replace(instances[0], port=8090, payload={"region": "ap"})
    regs[0].update(changed)
    wait_until(lambda: d.query_for_instance("orders", "a1") == changed, what="the update on the server")
    assert regs[0].instance == changed
    with pytest.raises(zkrecipes.InvalidArgumentError, match="must stay"):
        regs[0].update(dataclasses.replace(changed, id="other"))

    regs[0].set_enabled(False)
    wait_until(lambda: raw.get_data(f"{path}/orders/a1")[0].endswith(b'"enabled":false}'), what="disabled on the wire")
    got = d.query_for_instance("orders", "a1")
    assert got is not None and not got.enabled
    assert got == dataclasses.replace(changed, enabled=False)

    regs[0].unregister()
    regs[0].unregister()  # idempotent
    assert raw.exists(f"{path}/orders/a1") is None
    with pytest.raises(zkrecipes.ClosedError):
        regs[0].update(changed)
    with d.register(every_field("orders", "ctx")) as reg:
        assert isinstance(reg, Registration) and raw.exists(reg.path) is not None
    assert raw.exists(f"{path}/orders/ctx") is None, "leaving the with unregisters"
    d.close()
    assert ServiceDiscovery(raw, path).query_for_instances("orders") == [], "close unregisters the rest"
    with pytest.raises(zkrecipes.ClosedError):
        d.query_for_names()
    with pytest.raises(zkrecipes.ClosedError):
        d.register(every_field("orders", "late"))
    with pytest.raises(zkrecipes.ClosedError):
        ServiceCache(d, "orders")


def test_service_types_and_close_keeps_permanent_only(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    client, raw = make_client(), make_client()
    with ServiceDiscovery(client, path) as d:
        seq = d.register(ServiceInstance("s", id="q", service_type="DYNAMIC_SEQUENTIAL"))
        node = seq.path.rsplit("/", 1)[1]
        assert node.startswith("q") and len(node) == 11 and node[1:].isdigit(), node
        for id, ty in (("st", ServiceType.STATIC), ("pe", ServiceType.PERMANENT)):
            d.register(ServiceInstance("s", id=id, service_type=ty))
            stat = raw.exists(f"{path}/s/{id}")
            assert stat is not None and stat.ephemeral_owner == 0, f"{ty} is persistent"
    assert raw.get_children(f"{path}/s") == ["pe"], "close keeps PERMANENT only"


def test_unregister_after_close_deletes_a_permanent_instance(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    """Review-discovery #2: close leaves a registered PERMANENT instance; unregistering it
    afterwards deletes it (it was a silent no-op)."""
    client, raw = make_client(), make_client()
    d = ServiceDiscovery(client, path)
    reg = d.register(ServiceInstance("s", id="pe", service_type=ServiceType.PERMANENT))
    d.close()
    assert raw.exists(f"{path}/s/pe") is not None, "close keeps PERMANENT"
    reg.unregister()
    assert raw.exists(f"{path}/s/pe") is None, "unregister after close deletes it"
    reg.unregister()  # again: fine


def test_another_sessions_instance_is_a_conflict(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    a, b = make_client(), make_client()
    with ServiceDiscovery(a, path) as da, ServiceDiscovery(b, path) as db:
        da.register(ServiceInstance("s", id="same", port=1))
        with pytest.raises(zkrecipes.ConflictError):
            db.register(ServiceInstance("s", id="same", port=2))
        found = db.query_for_instance("s", "same")
        assert found is not None and found.port == 1, "left untouched"
        data, stat = b.get_data(f"{path}/s/same")
        assert stat.ephemeral_owner == a.session_id


def test_cache_events_are_named_and_a_garbage_node_is_invalid(client: zkrecipes.Client, path: str) -> None:
    with ServiceDiscovery(client, path) as d:
        rec = Recorder()
        cache = ServiceCache(d, "s")
        cache.listen(rec)
        with cache:
            assert cache.await_initialized(10)
            reg = d.register(every_field("s", "a"))
            created = client.exists(reg.path)
            assert created is not None and cache.await_zxid(created.czxid, 10)  # ADDED before the update
            reg.update(dataclasses.replace(reg.instance, port=2))
            wait_until(lambda: [i.port for i in cache.instances()] == [2], what="the update cached")
            bad = client.create(f"{path}/s/garbage", b"not json")
            assert bad is not None
            with pytest.raises(zkrecipes.CorruptedDataError):
                d.query_for_instance("s", "garbage")
            assert [i.id for i in d.query_for_instances("s")] == ["a"], "query leaves the garbage out"
            reg.unregister()
            fence = client.set_data(f"{path}/s", b"")
            assert cache.await_zxid(fence.mzxid, 10)
            wait_until(lambda: K.REMOVED in rec.kinds(), what="the removal heard")
            events = rec.snapshot()
            assert [e.kind for e in events] == [K.INITIALIZED, K.ADDED, K.UPDATED, K.INVALID, K.REMOVED]
            added, updated, invalid, removed = events[1:]
            assert added.instance == every_field("s", "a") and added.path == f"{path}/s/a"
            assert updated.old is not None and updated.old.port == 8080
            assert updated.instance is not None and updated.instance.port == 2
            assert isinstance(invalid.error, zkrecipes.CorruptedDataError) and invalid.path == f"{path}/s/garbage"
            assert invalid.instance is None
            assert removed.instance is not None and removed.instance.id == "a"
            assert not any(e.resync for e in events)
            assert cache.instances() == []

            # A late listener with replay: the cached instances first (and the still invalid
            # node), then INITIALIZED, then what happens next.
            d.register(every_field("s", "b"))
            wait_until(lambda: len(cache.instances()) == 1, what="b cached")
            late = Recorder()
            cache.listen(late, replay=True)
            d.register(every_field("s", "c"))
            wait_until(lambda: len(late.events) == 4, what="the replay and c")
            assert late.kinds() == [K.ADDED, K.INVALID, K.INITIALIZED, K.ADDED]
            assert [e.instance.id for e in late.snapshot() if e.instance is not None] == ["b", "c"]
    with pytest.raises(zkrecipes.ClosedError):
        cache.await_initialized(1)
    with pytest.raises(zkrecipes.ClosedError):
        cache.start()


def test_providers_pick_by_strategy_never_a_disabled_or_down_instance(client: zkrecipes.Client, path: str) -> None:
    with ServiceDiscovery(client, path) as d:
        c, a, b = (d.register(ServiceInstance("s", id=id, port=n)) for n, id in enumerate("cab"))
        with ServiceProvider(d, "s") as p:
            wait_until(lambda: len(p.get_all_instances()) == 3, what="three instances")
            picks = [p.get_instance() for _ in range(6)]
            assert [i.id for i in picks if i is not None] == ["a", "b", "c", "a", "b", "c"], "id order"
            b.set_enabled(False)
            wait_until(lambda: len(p.get_all_instances()) == 2, what="b disabled in the cache")
            assert {i.id for i in (p.get_instance() for _ in range(10)) if i is not None} == {"a", "c"}
            first = p.get_all_instances()[0]
            assert first.id == "a"
            p.note_error(first)
            assert len(p.get_all_instances()) == 2, "one error: not down"
            p.note_error(first)
            assert [i.id for i in (p.get_instance() for _ in range(5)) if i is not None] == ["c"] * 5
            c.set_enabled(False)
            wait_until(lambda: p.get_instance() is None, what="nothing usable")
        with pytest.raises(zkrecipes.ClosedError):
            p.get_instance()
        with pytest.raises(zkrecipes.ClosedError):
            p.note_error(first)
        c.set_enabled(True)
        b.set_enabled(True)
        with ServiceProvider(d, "s", "sticky") as sticky:
            wait_until(lambda: len(sticky.get_all_instances()) == 3, what="sticky sees three")
            first = sticky.get_instance()
            assert first is not None
            assert all(sticky.get_instance() == first for _ in range(10))
        with ServiceProvider(d, "s", ProviderStrategy.RANDOM, filter=lambda i: i.port == 1) as only_a:
            wait_until(lambda: len(only_a.get_all_instances()) == 1, what="filtered")
            got = only_a.get_instance()
            assert got is not None and got.id == "a"

        def broken(i: ServiceInstance) -> bool:
            raise RuntimeError("filter bug")

        with ServiceProvider(d, "s", filter=broken) as p2:
            with pytest.raises(RuntimeError, match="filter bug"):
                p2.get_instance()
        # A short down timeout: the instance comes back.
        with ServiceProvider(d, "s", down_error_threshold=1, down_timeout=0.05) as p3:
            wait_until(lambda: len(p3.get_all_instances()) == 3, what="all three enabled again")
            p3.note_error(next(i for i in p3.get_all_instances() if i.id == "b"))
            assert "b" not in [i.id for i in p3.get_all_instances()]
            wait_until(lambda: "b" in [i.id for i in p3.get_all_instances()], what="b back after the timeout")


async def until(predicate: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Polls ``predicate`` on the loop until it holds; fails after ``timeout`` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.01)


_FILTER_THREADS = """
import sys, threading, time, zkrecipes
from zkrecipes import ServiceDiscovery, ServiceInstance, ServiceProvider
hosts, path = sys.argv[1], sys.argv[2]
def wait(what, cond):
    deadline = time.monotonic() + 30
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)
with zkrecipes.Client(hosts).start() as c, ServiceDiscovery(c, path) as d:
    d.register(ServiceInstance("s", id="a", port=1))
    d.register(ServiceInstance("s", id="b", port=2))
    def slow(i):  # lets go of the GIL while it runs
        time.sleep(0.002)
        return True
    with ServiceProvider(d, "s", filter=slow) as p:
        wait("the provider sees both instances", lambda: len(p.get_all_instances()) == 2)
        def worker():
            for _ in range(100):
                assert p.get_instance() is not None
        ts = [threading.Thread(target=worker) for _ in range(3)]
        for t in ts: t.start()
        for t in ts: t.join()
    # A filter that notes an error on its own provider.
    own = []
    with ServiceProvider(d, "s", filter=lambda i: (own[0].note_error(i), True)[1]) as q:
        own.append(q)
        wait("the second provider sees an instance", lambda: bool(q.get_all_instances()))
print("done")
"""


def test_a_provider_filter_that_lets_go_of_the_gil_or_notes_errors_blocks_nobody(zk: ZooKeeper, path: str) -> None:
    """Threads sharing a provider whose filter lets go of the GIL (a sleep, I/O), and a filter
    that notes an error on its own provider: before, the filter ran under the provider's error
    table lock, which a thread holding the GIL waited for (every thread of the process froze;
    a subprocess, so that a hang fails the test instead of freezing pytest)."""
    child = run_python(_FILTER_THREADS, zk.connect, path)
    assert child.returncode == 0 and child.stdout.startswith("done"), child.stderr[-2000:]


def test_asyncio_twins_and_async_for(client: zkrecipes.Client, path: str) -> None:
    async def main() -> List[ServiceCacheEvent]:
        d = ServiceDiscovery(client, path)
        async with d:
            cache = ServiceCache(d, "s")
            await cache.start_async()
            assert await cache.await_initialized_async(10)
            it = cache.events()
            got: List[ServiceCacheEvent] = []

            async def consume() -> None:
                async for event in it:
                    got.append(event)
                    if len(got) == 3:
                        break

            task = asyncio.ensure_future(consume())
            async with await d.register_async(ServiceInstance("s", id="x", port=1)) as reg:
                assert await d.query_for_names_async() == ["s"]
                assert [i.id for i in await d.query_for_instances_async("s")] == ["x"]
                found: Optional[ServiceInstance] = await d.query_for_instance_async("s", "x")
                assert found == reg.instance
                assert await reg.wait_registered_async(10)
                created = await client.exists_async(reg.path)
                assert created is not None and await cache.await_zxid_async(created.czxid, 10)
                reg.update(dataclasses.replace(reg.instance, port=2))
                await until(lambda: [i.port for i in cache.instances()] == [2], "the update cached")
            await asyncio.wait_for(task, 20)
            async with ServiceProvider(d, "s") as p:
                assert p.get_instance() is None
            ended: List[ServiceCacheEvent] = []
            ending = cache.__aiter__()

            async def until_closed() -> None:
                async for event in ending:
                    ended.append(event)

            closing = asyncio.ensure_future(until_closed())
            await cache.close_async()
            await asyncio.wait_for(closing, 10)  # close ends the loop
        with pytest.raises(zkrecipes.ClosedError):
            await d.register_async(ServiceInstance("s"))
        return got

    got = asyncio.run(main())
    assert [(e.kind, e.instance.port if e.instance else None) for e in got] == [
        (K.ADDED, 1),
        (K.UPDATED, 2),
        (K.REMOVED, 2),
    ]


def test_uri_spec_and_bad_input(client: zkrecipes.Client, path: str) -> None:
    spec = UriSpec("{scheme}://foo.com:{port}/{ fred }{[}x{]}")
    i = ServiceInstance("s", id="the-id", port=1234, registration_time_utc=42)
    assert spec.build(i, {"fred": "barney"}) == "http://foo.com:1234/barney{x}"
    assert UriSpec("{scheme}/{port}").build() == "http/"
    assert str(spec) == "{scheme}://foo.com:{port}/{fred}{[}x{]}" and spec == UriSpec(str(spec))
    assert ServiceInstance("s", uri_spec=spec).uri_spec == str(spec)
    with pytest.raises(zkrecipes.InvalidArgumentError, match="Final variable not closed"):
        UriSpec("{a")

    def invalid(match: str, **fields: object) -> None:
        with pytest.raises(zkrecipes.InvalidArgumentError, match=match):
            ServiceInstance(fields.pop("name", "s"), **fields)  # type: ignore[arg-type]

    invalid("name must not be empty", name="")
    invalid("name", name="a/b")
    invalid("id must not be empty", id="")
    invalid("port 70000 is not a port", port=70000)
    invalid("ssl_port", ssl_port=-1)
    invalid("port", port=2**40)
    invalid("service_type", service_type="WEIRD")
    invalid("uri_spec", uri_spec="a}")
    invalid("payload is NaN", payload=float("nan"))
    invalid(r"payload\[0\]\[\"k\"\] is 1267650600228229401496703205376", payload=[{"k": 2**100}])
    invalid("payload_class", payload=[1], payload_class="NotAClass")
    invalid("registration_time_utc", registration_time_utc=2**64)
    deep: object = []
    for _ in range(200):
        deep = [deep]
    invalid("deeper", payload=deep)
    with pytest.raises(TypeError, match="payload"):
        ServiceInstance("s", payload=object())
    with pytest.raises(TypeError, match="keys are str"):
        ServiceInstance("s", payload={1: 2})
    with pytest.raises(TypeError, match="enabled"):
        ServiceInstance("s", enabled=1)  # type: ignore[arg-type]
    with pytest.raises(zkrecipes.InvalidArgumentError):
        ServiceDiscovery(client, "no-slash")
    d = ServiceDiscovery(client, path)
    with pytest.raises(TypeError, match="ServiceInstance"):
        d.register({"name": "s"})  # type: ignore[arg-type]
    with pytest.raises(zkrecipes.InvalidArgumentError, match="strategy"):
        ServiceProvider(d, "s", "fastest")
    with pytest.raises(zkrecipes.InvalidArgumentError, match="down_timeout"):
        ServiceProvider(d, "s", down_timeout=-1)
    with pytest.raises(zkrecipes.InvalidArgumentError, match="down_error_threshold"):
        ServiceProvider(d, "s", down_error_threshold=-1)
    with pytest.raises(zkrecipes.InvalidArgumentError):
        ServiceCache(d, "a/b")
    # A registered instance changed into a bad one: refused by update, as by register.
    reg = d.register(ServiceInstance("s", id="ok"))
    bad = reg.instance
    bad.port = 99999
    with pytest.raises(zkrecipes.InvalidArgumentError, match="port"):
        reg.update(bad)
    with pytest.raises(zkrecipes.InvalidArgumentError, match="port"):
        d.register(bad)
    d.close()


def test_the_enums_are_the_cores_lists() -> None:
    from zkrecipes import _native

    assert [t.value for t in ServiceType] == _native.SERVICE_TYPES
    assert [k.value for k in ServiceCacheEventKind] == _native.SERVICE_CACHE_EVENT_KINDS
    assert [s.value for s in ProviderStrategy] == _native.PROVIDER_STRATEGIES
