"""ACLs of created nodes: ``Client(acl=...)`` with digest auth, through recipes and plain creates."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from typing import Callable

import pytest

import zkrecipes
from zkrecipes import CREATOR_ALL_ACL, Acl, Perms


def test_creator_all_acl_locks_out_other_sessions(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    owner = make_client(auth=("digest", "alice:secret"), acl=CREATOR_ALL_ACL)
    anonymous = make_client()
    wrong = make_client(auth=("digest", "alice:wrong"))
    same = make_client(auth=[("digest", "alice:secret")])
    # Parents the recipes create carry the ACL too: keep the shared /pytest open.
    anonymous.create(path, b"", create_parents=True)

    # A counter and a lock created through the recipes carry the owner's ACL (and so do their
    # parents, which the recipes create).
    counter = zkrecipes.DistributedAtomicLong(owner, f"{path}/counter")
    assert counter.add(5).succeeded
    lock = zkrecipes.InterProcessMutex(owner, f"{path}/lock")
    assert lock.acquire(timeout=10)
    node = lock.lock_node()
    assert node is not None

    for other in (anonymous, wrong):
        with pytest.raises(zkrecipes.NoAuthError, match="NO_AUTH"):
            other.get_data(f"{path}/counter")
        with pytest.raises(zkrecipes.NoAuthError, match="NO_AUTH"):
            other.get_data(node)
        with pytest.raises(zkrecipes.NoAuthError, match="NO_AUTH"):
            other.delete(node)
        with pytest.raises(zkrecipes.NoAuthError, match="NO_AUTH"):
            other.get_children(f"{path}/lock")
        # The other session's own counter on the same path cannot read it either.
        with pytest.raises(zkrecipes.NoAuthError):
            zkrecipes.DistributedAtomicLong(other, f"{path}/counter").get()
    assert owner.exists(node) is not None, "the lock node survived the failed deletes"

    # A session with the same digest identity reads and deletes.
    assert zkrecipes.DistributedAtomicLong(same, f"{path}/counter").get().post_value == 5
    assert same.get_children(f"{path}/lock") == [node.rsplit("/", 1)[1]]
    same.delete(node)
    assert owner.exists(node) is None


def test_digest_acl_helper_matches_zookeeper(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    digest = base64.b64encode(hashlib.sha1(b"bob:pw").digest()).decode()
    assert zkrecipes.make_digest_acl_credential("bob", "pw") == f"bob:{digest}"
    acl = [zkrecipes.make_digest_acl("bob", "pw", all=True), zkrecipes.make_acl("world", "anyone", read=True)]
    assert acl[0] == Acl(Perms.ALL, "digest", f"bob:{digest}") and acl[1].perms == Perms.READ
    writer = make_client(auth=("digest", "bob:pw"), acl=acl)
    anonymous = make_client()
    anonymous.create(path, b"", create_parents=True)
    writer.create(f"{path}/n", b"v")
    path = f"{path}/n"
    # world may read but not write or delete; bob may do everything.
    assert anonymous.get_data(path)[0] == b"v"
    with pytest.raises(zkrecipes.NoAuthError):
        anonymous.set_data(path, b"w")
    writer.set_data(path, b"w")
    assert anonymous.get_data(path)[0] == b"w"


def test_acl_applies_to_async_recipes(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    owner = make_client(auth=("digest", "carol:pw"), acl=[Acl(Perms.ALL, "auth", "")])
    anonymous = make_client()
    anonymous.create(path, b"", create_parents=True)

    async def main() -> None:
        lock = zkrecipes.InterProcessMutex(owner, f"{path}/lock")
        assert await lock.acquire_async(timeout=10)
        with pytest.raises(zkrecipes.NoAuthError):
            await anonymous.get_children_async(f"{path}/lock")
        await lock.release_async()

    asyncio.run(main())


def test_bad_acls_are_rejected(zk: object) -> None:
    with pytest.raises(zkrecipes.InvalidArgumentError):
        Acl(0, "world", "anyone")
    with pytest.raises(zkrecipes.InvalidArgumentError):
        Acl(64, "world", "anyone")
    with pytest.raises(TypeError):
        Acl(Perms.READ, "", "anyone")
    with pytest.raises(TypeError):
        zkrecipes.Client("127.0.0.1:1", acl=[("world", "anyone")])  # type: ignore[list-item]
    with pytest.raises(zkrecipes.InvalidArgumentError):
        zkrecipes.Client("127.0.0.1:1", acl=[])
    # A single entry is accepted as well as a list.
    zkrecipes.Client("127.0.0.1:1", acl=zkrecipes.READ_ACL_UNSAFE[0]).close()


def test_get_and_set_acl_by_version(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    c = make_client()
    c.create(path, b"x", create_parents=True)
    acl, stat = c.get_acl(path)
    assert acl == zkrecipes.OPEN_ACL_UNSAFE and stat.aversion == 0
    stat = c.set_acl(path, zkrecipes.READ_ACL_UNSAFE, version=0)
    assert stat.aversion == 1
    assert c.get_acl(path)[0] == zkrecipes.READ_ACL_UNSAFE
    with pytest.raises(zkrecipes.NoAuthError):
        c.set_data(path, b"y")
    with pytest.raises(zkrecipes.NoNodeError):
        c.get_acl(f"{path}/missing")
    with pytest.raises(zkrecipes.InvalidArgumentError):
        c.set_acl(path, [])
    assert asyncio.run(c.get_acl_async(path))[0] == zkrecipes.READ_ACL_UNSAFE


def test_create_acl_and_acl_provider(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    alice = [zkrecipes.make_digest_acl("alice", "secret", all=True)]
    seen: list[str] = []

    def provider(p: str) -> "list[Acl] | None":
        seen.append(p)
        if p.endswith("/boom"):
            raise RuntimeError("provider refused")
        return alice if "/private" in p else None

    owner = make_client(auth=("digest", "alice:secret"), acl_provider=provider)
    anonymous = make_client()
    anonymous.create(path, b"", create_parents=True)
    owner.create(f"{path}/private/a", b"", create_parents="persistent")
    owner.create(f"{path}/public", b"")
    assert f"{path}/private/a" in seen and f"{path}/private" in seen, seen
    assert owner.get_acl(f"{path}/private/a")[0] == alice
    assert anonymous.get_acl(f"{path}/public")[0] == zkrecipes.OPEN_ACL_UNSAFE
    with pytest.raises(zkrecipes.NoAuthError):
        anonymous.get_data(f"{path}/private/a")
    # A recipe's node goes through the provider.
    lock = zkrecipes.InterProcessMutex(owner, f"{path}/private/lock")
    with lock:
        node = lock.lock_node()
        assert node is not None and owner.get_acl(node)[0] == alice
    # A provider that raises fails the create; nothing is created.
    with pytest.raises(zkrecipes.InvalidArgumentError, match="provider refused"):
        owner.create(f"{path}/boom", b"")
    assert anonymous.exists(f"{path}/boom") is None
    # One create's own ACL wins.
    owner.create(f"{path}/private/open", b"", acl=zkrecipes.OPEN_ACL_UNSAFE)
    assert anonymous.get_acl(f"{path}/private/open")[0] == zkrecipes.OPEN_ACL_UNSAFE
    # A mapping of prefixes.
    mapped = make_client(auth=("digest", "alice:secret"), acl_provider={f"{path}/m": alice})
    mapped.create(f"{path}/m", b"")
    mapped.create(f"{path}/n", b"")
    assert mapped.get_acl(f"{path}/m")[0] == alice
    assert mapped.get_acl(f"{path}/n")[0] == zkrecipes.OPEN_ACL_UNSAFE


def test_transaction_create_with_its_own_acl(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    alice = [zkrecipes.make_digest_acl("alice", "secret", all=True)]
    owner = make_client(auth=("digest", "alice:secret"))
    anonymous = make_client()
    owner.create(path, b"", create_parents=True)
    results = (
        owner.transaction()
        .create(f"{path}/private", b"p", acl=alice)
        .create(f"{path}/open", b"o")
        .commit()
    )
    assert [r.path for r in results] == [f"{path}/private", f"{path}/open"]
    assert owner.get_acl(f"{path}/private")[0] == alice
    assert owner.get_acl(f"{path}/open")[0] == zkrecipes.OPEN_ACL_UNSAFE
    with pytest.raises(zkrecipes.NoAuthError):
        anonymous.get_data(f"{path}/private")
    assert anonymous.get_data(f"{path}/open")[0] == b"o"
    # An empty ACL is refused before anything is sent: nothing is created.
    with pytest.raises(zkrecipes.InvalidArgumentError):
        owner.transaction().create(f"{path}/never", b"", acl=[]).commit()
    assert owner.exists(f"{path}/never") is None
    # asyncio too.
    asyncio.run(owner.transaction().create(f"{path}/async", b"", acl=alice).commit_async())
    assert owner.get_acl(f"{path}/async")[0] == alice


def test_security_options_are_checked(zk: object) -> None:
    with pytest.raises(TypeError):
        zkrecipes.Client("127.0.0.1:1", tls="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        zkrecipes.Client("127.0.0.1:1", acl_provider=42)  # type: ignore[arg-type]
    with pytest.raises(zkrecipes.InvalidArgumentError, match="not supported"):
        zkrecipes.Client("127.0.0.1:1", sasl=zkrecipes.SaslOptions("u", "p", mechanism="PLAIN"))
    s = zkrecipes.SaslOptions("alice", "s3cret")
    assert "s3cret" not in repr(s)
    # TLS inputs are checked when the client starts, before any connection.
    c = zkrecipes.Client("127.0.0.1:1", tls=zkrecipes.TlsOptions(ca="/nonexistent/ca.pem"), connection_timeout=30)
    with pytest.raises(zkrecipes.InvalidArgumentError, match="cannot read the TLS CA file /nonexistent/ca.pem"):
        c.start()
    c = zkrecipes.Client("127.0.0.1:1", tls=zkrecipes.TlsOptions(ca="-----BEGIN CERTIFICATE-----\ngarbage\n"))
    with pytest.raises(zkrecipes.InvalidArgumentError, match="TLS CA"):
        c.start()
