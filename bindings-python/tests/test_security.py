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
