"""Dynamic ensembles: get_config, reconfig and the ensemble tracker. Refusals and bad input
against the session's standalone server; the real 3 -> 4 -> 3 change with a tracked client
keeping its session against ONE reconfigurable ensemble from the testing kit."""

from __future__ import annotations

import asyncio
from typing import List

import pytest

import zkrecipes
from zkrecipes import ConnectionState, CreateMode, EnsembleConfig, ServerRole
from zkrecipes.testing import TestingCluster

from conftest import ZooKeeper, wait_until


def test_a_standalone_server_has_no_members_and_refuses_reconfig(zk: ZooKeeper) -> None:
    with zkrecipes.Client(zk.connect, track_ensemble=True) as c:
        config = c.get_config()
        assert isinstance(config, EnsembleConfig)
        assert (config.members, config.version, config.connect_string) == ([], 0, "")
        assert config.member(1) is None
        # No member lines: the tracker keeps the hosts it was given.
        assert c.current_connect_string == zk.connect
        assert asyncio.run(c.get_config_async()) == config

        with pytest.raises(zkrecipes.ServerError, match="reconfigEnabled") as e:
            c.reconfig(leaving=[2])
        assert e.value.zk_code == -123

        async def refused() -> None:
            await c.reconfig_async(leaving=2, from_config=config.version)

        with pytest.raises(zkrecipes.ServerError, match="reconfigEnabled"):
            asyncio.run(refused())

        # Refused before anything is sent.
        for bad in [
            dict(joining="4=127.0.0.4:1:2;3"),
            dict(joining=["server.x=127.0.0.4:1:2;3"]),
            dict(joining=["server.4=127.0.0.4:1:2:leader;3"]),
            dict(joining=["server.4=127.0.0.4:1:2;3"], leaving=[4]),
            dict(new_members=["server.1=127.0.0.1:1:2;3"], leaving=[2]),
            dict(new_members=[]),
            dict(from_config=-2),
        ]:
            with pytest.raises(zkrecipes.InvalidArgumentError):
                c.reconfig(**bad)  # type: ignore[arg-type]
        for bad_type in [dict(joining=[4]), dict(leaving=["2"]), dict(from_config="1")]:
            with pytest.raises(TypeError):
                c.reconfig(**bad_type)  # type: ignore[arg-type]
        assert c.get_config() == config

    # The tracker cannot follow TLS ports.
    with pytest.raises(zkrecipes.InvalidArgumentError, match="track_ensemble"):
        zkrecipes.Client("127.0.0.1:1", tls=zkrecipes.TlsOptions(), track_ensemble=True).start()
    closed = zkrecipes.Client(zk.connect)
    with pytest.raises(zkrecipes.ClosedError):
        closed.get_config()


def test_a_tracked_client_follows_3_to_4_to_3_members_in_one_session() -> None:
    with TestingCluster.start_reconfigurable(3, superuser=("super", "secret")) as cluster:
        admin = zkrecipes.Client(cluster.connect_string, auth=("digest", "super:secret")).start()
        tracked = zkrecipes.Client(cluster.connect_string, session_timeout=20, track_ensemble=True).start()
        try:
            states: List[ConnectionState] = []
            tracked.add_state_listener(states.append)
            session = tracked.session_id
            tracked.create("/eph", b"mine", mode=CreateMode.EPHEMERAL)

            config = tracked.get_config()
            assert [m.id for m in config.members] == [1, 2, 3]
            for m, server in zip(config.members, cluster.servers):
                assert m.role is ServerRole.PARTICIPANT
                assert m.server_line == server.reconfig_spec
                assert m.client_address == server.connect_string
            three = ",".join(s.connect_string for s in cluster.servers)
            assert config.connect_string == three
            wait_until(lambda: tracked.current_connect_string == three, 30, "the tracker's first read")

            # A non-member cannot change the ensemble.
            with pytest.raises(zkrecipes.NoAuthError, match="superuser"):
                tracked.reconfig(leaving=[3])

            # Grow: a fourth participant joins.
            fourth = cluster.add_server()
            grown = admin.reconfig(joining=[fourth.reconfig_spec], from_config=config.version)
            assert [m.id for m in grown.members] == [1, 2, 3, 4] and grown.version > config.version
            assert cluster.wait_for_members([1, 2, 3, 4], 30)
            four = ",".join(s.connect_string for s in cluster.servers)
            wait_until(lambda: tracked.current_connect_string == four, 30, "the tracker follows 4 members")
            with pytest.raises(zkrecipes.BadVersionError):
                admin.reconfig(leaving=[4], from_config=config.version)

            # Shrink: a member that does not lead leaves, and is stopped for good.
            leader = cluster.leader
            leaving = next(s for s in cluster.servers[:3] if leader is None or s.index != leader.index)
            shrunk = admin.reconfig(leaving=[leaving.index + 1])
            staying = [s for s in cluster.servers if s.index != leaving.index]
            assert [m.id for m in shrunk.members] == [s.index + 1 for s in staying]
            assert cluster.wait_for_members([s.index + 1 for s in staying], 30)
            after = ",".join(s.connect_string for s in staying)
            wait_until(lambda: tracked.current_connect_string == after, 30, "the tracker follows 3 members")
            leaving.stop()
            assert tracked.exists("/") is not None

            # One session all along: its ephemeral node lives on.
            assert tracked.session_id == session
            stat = admin.exists("/eph")
            assert stat is not None and stat.ephemeral_owner == session
            assert ConnectionState.LOST not in states
        finally:
            tracked.close()
            admin.close()


def _connect(hosts: str, *, can_be_read_only: bool) -> zkrecipes.Client | None:
    """A started client on ``hosts``, or None if it could not connect (closed again)."""
    client = zkrecipes.Client(hosts, session_timeout=10, connection_timeout=2, can_be_read_only=can_be_read_only)
    try:
        return client.start()
    except zkrecipes.ZkRecipesError:
        client.close()
        return None


def test_a_member_cut_off_from_its_quorum_serves_reads_to_a_client_that_allows_it() -> None:
    with TestingCluster(3, read_only_mode=True) as cluster:
        writer = zkrecipes.Client(cluster.connect_string).start()
        try:
            writer.create("/ro/seen", b"before", create_parents=True)
        finally:
            writer.close()
        cluster.servers[0].stop()
        cluster.servers[1].stop()
        third = cluster.servers[2].connect_string
        reader: List[zkrecipes.Client] = []

        def connected() -> bool:
            # A member that has not seen the loss yet still serves as a follower (CONNECTED).
            c = _connect(third, can_be_read_only=True)
            if c is not None and c.state is ConnectionState.READ_ONLY:
                reader.append(c)
                return True
            if c is not None:
                c.close()
            return False

        wait_until(connected, 60, "a session on the member in read-only mode")
        ro = reader[0]
        try:
            assert ro.get_data("/ro/seen")[0] == b"before", "reads are served"
            with pytest.raises(zkrecipes.ServerError) as refused:
                ro.set_data("/ro/seen", b"after")
            assert refused.value.zk_code == -119, refused.value  # NOTREADONLY
            assert ro.get_data("/ro/seen")[0] == b"before", "the write was refused, not applied"
            # Without can_be_read_only, the same member lets nobody in.
            assert _connect(third, can_be_read_only=False) is None
        finally:
            ro.close()
