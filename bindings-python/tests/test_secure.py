"""Secured ensembles from Python, against real servers from the testing kit
(``zkrecipes.testing.TestingServer(tls=..., sasl_users=..., x509=...)``): TLS with x509 identities,
SASL, and every hostile case of issue 30 with its exception class and the words a user needs."""

from __future__ import annotations

import time
from typing import Iterator

import pytest

import zkrecipes
from zkrecipes.testing import TestingServer


@pytest.fixture(scope="module")
def mtls() -> Iterator[TestingServer]:
    with TestingServer(tls="need", x509=True) as server:
        yield server


@pytest.fixture(scope="module")
def sasl() -> Iterator[TestingServer]:
    with TestingServer(sasl_users={"alice": "secret"}, sasl_required=True) as server:
        yield server


def tls_of(server: TestingServer, who: str = "client", **kw: object) -> zkrecipes.TlsOptions:
    m = server.tls
    assert m is not None
    return zkrecipes.TlsOptions(ca=m.ca, cert=m.cert(who), key=m.key(who), **kw)  # type: ignore[arg-type]


def secure(server: TestingServer) -> str:
    s = server.secure_connect_string
    assert s is not None
    return s


def connect(hosts: str, **kw: object) -> zkrecipes.Client:
    kw.setdefault("connection_timeout", 5.0)
    return zkrecipes.Client(hosts, **kw).start()  # type: ignore[arg-type]


def test_mutual_tls_x509_identity_and_recipes(mtls: TestingServer) -> None:
    m = mtls.tls
    assert m is not None
    with connect(secure(mtls), tls=tls_of(mtls), acl=zkrecipes.CREATOR_ALL_ACL) as c:
        c.create("/py-mine", b"x")
        acl, _ = c.get_acl("/py-mine")
        assert acl == [zkrecipes.Acl(zkrecipes.Perms.ALL, "x509", m.client_x509_id)]
        with zkrecipes.InterProcessMutex(c, "/py-locks/tls"):
            pass
        with connect(secure(mtls), tls=tls_of(mtls, "other_client")) as other:
            with pytest.raises(zkrecipes.NoAuthError):
                other.get_data("/py-mine")
    # PEM text (str and bytes) instead of paths, RSA and SEC1 keys.
    with open(m.ca) as f:
        ca_text = f.read()
    with open(m.client_cert, "rb") as f:
        cert_bytes = f.read()
    with open(m.client_key) as f:
        key_text = f.read()
    with connect(secure(mtls), tls=zkrecipes.TlsOptions(ca=ca_text, cert=cert_bytes, key=key_text)) as c:
        assert c.get_data("/py-mine")[0] == b"x"
    for who in ("rsa_client", "sec1_client"):
        with connect(secure(mtls), tls=tls_of(mtls, who)) as c:
            assert c.exists("/py-mine") is not None


def test_server_certificates_we_refuse(mtls: TestingServer) -> None:
    m = mtls.tls
    assert m is not None
    start = time.monotonic()
    c = zkrecipes.Client(
        secure(mtls), connection_timeout=60.0, tls=zkrecipes.TlsOptions(ca=m.wrong_ca, cert=m.client_cert, key=m.client_key)
    )
    with pytest.raises(zkrecipes.AuthFailedError, match="unknown issuer"):
        c.start()
    assert time.monotonic() - start < 30, "waited for the connection timeout"
    with TestingServer(tls="none", server_cert="expired") as expired:
        em = expired.tls
        assert em is not None
        with pytest.raises(zkrecipes.AuthFailedError, match="expired"):
            connect(secure(expired), tls=zkrecipes.TlsOptions(ca=em.ca))
    with TestingServer(tls="none", server_cert="wrong-name") as wrong:
        wm = wrong.tls
        assert wm is not None
        with pytest.raises(zkrecipes.AuthFailedError, match="does not name the host"):
            connect(secure(wrong), tls=zkrecipes.TlsOptions(ca=wm.ca))
        with connect(secure(wrong), tls=zkrecipes.TlsOptions(ca=wm.ca, verify_hostname=False)) as c:
            c.exists("/")


def test_client_certificates_the_server_refuses(mtls: TestingServer) -> None:
    m = mtls.tls
    assert m is not None
    with pytest.raises(zkrecipes.AuthFailedError, match="client certificate"):
        connect(secure(mtls), tls=zkrecipes.TlsOptions(ca=m.ca))
    for who in ("expired_client", "wrong_ca_client"):
        with pytest.raises(zkrecipes.AuthFailedError, match="the server rejected the client certificate"):
            connect(secure(mtls), tls=tls_of(mtls, who))


def test_the_wrong_protocol_on_a_port_is_named(mtls: TestingServer) -> None:
    m = mtls.tls
    assert m is not None
    with pytest.raises(zkrecipes.TimeoutError, match="speaks TLS"):
        connect(secure(mtls), connection_timeout=2.0)
    with pytest.raises(zkrecipes.TimeoutError, match="speaks plaintext ZooKeeper, not TLS"):
        connect(mtls.connect_string, connection_timeout=2.0, tls=tls_of(mtls))


def test_bad_tls_inputs_before_any_connection(mtls: TestingServer) -> None:
    m = mtls.tls
    assert m is not None
    cases = [
        (zkrecipes.TlsOptions(ca="/nonexistent/ca.pem"), "cannot read the TLS CA file"),
        (zkrecipes.TlsOptions(ca="-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n"), "TLS CA"),
        (zkrecipes.TlsOptions(ca=m.ca, cert=m.client_cert, key=m.other_client_key), "does the key belong"),
        (zkrecipes.TlsOptions(ca=m.ca, cert=m.client_cert, key=m.encrypted_client_key), "is encrypted"),
        (zkrecipes.TlsOptions(ca=m.ca, cert=m.client_cert), "without its private key"),
    ]
    for tls, words in cases:
        # Port 1: nothing listens; a connection attempt would end in a timeout, not this.
        with pytest.raises(zkrecipes.InvalidArgumentError, match=words):
            zkrecipes.Client("127.0.0.1:1", connection_timeout=30.0, tls=tls).start()


def test_sasl_users_and_refusals(sasl: TestingServer) -> None:
    with connect(sasl.connect_string, sasl=zkrecipes.SaslOptions("alice", "secret"), acl=zkrecipes.CREATOR_ALL_ACL) as c:
        c.create("/py-alice", b"")
        assert c.get_acl("/py-alice")[0] == [zkrecipes.Acl(zkrecipes.Perms.ALL, "sasl", "alice")]
    for opts, words in [
        ({"sasl": zkrecipes.SaslOptions("alice", "wrong")}, 'as "alice"'),
        ({"sasl": zkrecipes.SaslOptions("mallory", "not-alices")}, 'as "mallory"'),
        ({}, "requires authentication"),
    ]:
        start = time.monotonic()
        with pytest.raises(zkrecipes.AuthFailedError, match=words):
            connect(sasl.connect_string, connection_timeout=60.0, **opts)
        assert time.monotonic() - start < 30, f"{words}: retried?"


def test_asyncio_connect_over_tls(mtls: TestingServer) -> None:
    import asyncio

    async def main() -> bytes:
        c = zkrecipes.Client(secure(mtls), tls=tls_of(mtls))
        await c.start_async()
        try:
            await c.create_async("/py-async-tls", b"a")
            return (await c.get_data_async("/py-async-tls"))[0]
        finally:
            await c.close_async()

    assert asyncio.run(main()) == b"a"


def test_pem_text_with_a_preamble_and_key_material_never_echoed(mtls: TestingServer) -> None:
    """Review-secure #3: PEM text with text before its first ``-----BEGIN`` (OpenSSL's ``Bag
    Attributes``) was taken for a path, refused, and the key shown in the error."""
    m = mtls.tls
    assert m is not None
    preamble = b"Bag Attributes\n    localKeyID: 01 00 00 00\nKey Attributes: <No Attributes>\n"
    with open(m.client_key, "rb") as f:
        key_bytes = preamble + f.read()
    with open(m.client_cert, "rb") as f:
        cert_bytes = b"\xef\xbb\xbf" + f.read()  # a UTF-8 byte order mark
    for key in (key_bytes, key_bytes.decode("utf-8")):
        tls = zkrecipes.TlsOptions(ca=m.ca, cert=cert_bytes, key=key)
        with connect(secure(mtls), tls=tls, acl=zkrecipes.CREATOR_ALL_ACL) as c:
            path = f"/py-preamble-{type(key).__name__}"
            c.create(path, b"")
            assert c.get_acl(path)[0] == [zkrecipes.Acl(zkrecipes.Perms.ALL, "x509", m.client_x509_id)]
    # Bytes are PEM text, whatever they hold; a str with a line break too: never a path, never shown.
    for bad in (b"SECRET-MARKER", "SECRET-MARKER\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49", b"SECRET-MARKER\n"):
        tls = zkrecipes.TlsOptions(ca=m.ca, cert=m.client_cert, key=bad)
        assert "SECRET" not in repr(tls)
        with pytest.raises(zkrecipes.InvalidArgumentError) as raised:
            zkrecipes.Client("127.0.0.1:1", connection_timeout=30.0, tls=tls).start()
        assert "SECRET" not in str(raised.value), raised.value
        assert "TLS client" in str(raised.value), raised.value


def test_secrets_stay_out_of_repr_and_errors() -> None:
    """Review-secure #4: TlsOptions' repr showed the key; a credential with a lone surrogate was
    echoed in the error."""
    key = "-----BEGIN PRIVATE KEY-----\nKEYSECRET\n-----END PRIVATE KEY-----\n"
    for tls in (
        zkrecipes.TlsOptions(ca="/etc/zk/ca.pem", cert="/etc/zk/client.pem", key=key),
        zkrecipes.TlsOptions(key=key.encode()),
        zkrecipes.TlsOptions(key="KEYSECRET" * 10),
    ):
        shown = repr(tls)
        assert "KEYSECRET" not in shown and "BEGIN PRIVATE" not in shown, shown
    shown = repr(zkrecipes.TlsOptions(ca="/etc/zk/ca.pem", key=key))
    assert "'/etc/zk/ca.pem'" in shown and "<PEM text, " in shown, shown
    with pytest.raises(zkrecipes.InvalidArgumentError) as raised:
        zkrecipes.Client("127.0.0.1:1", auth=("digest", "alice:S3CRET\udcff"))
    assert "S3CRET" not in str(raised.value) and "udcff" not in str(raised.value), raised.value
    assert "digest" in str(raised.value), raised.value
