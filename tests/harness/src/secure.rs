//! Secured servers: TLS on a `secureClientPort` (client auth none, want or need), SASL
//! DIGEST-MD5 users, SASL required, x509 identities and a superuser, with the CA, certificates and
//! keys made at test time ([`TlsMaterial`]). See [`Security`].

use std::ffi::OsStr;
use std::fs;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType, SerialNumber,
};
use time::{Duration, OffsetDateTime};

use crate::install::apt_install;
use crate::kerberos::{Kdc, KerberosMaterial};

/// ZooKeeper's `ssl.clientAuth`: whether the server asks TLS clients for a certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientAuth {
    /// The server asks for no client certificate (`ssl.clientAuth=none`).
    None,
    /// The server asks for one but also serves clients without one (`want`); a client that
    /// presents one must present a valid one, and gets its `x509` identity.
    Want,
    /// A client without a valid certificate is refused in the TLS handshake (`need`,
    /// ZooKeeper's default).
    Need,
}

impl ClientAuth {
    /// Every value, in declaration order.
    pub const ALL: [ClientAuth; 3] = [ClientAuth::None, ClientAuth::Want, ClientAuth::Need];

    /// ZooKeeper's name for it: `none`, `want`, `need`.
    pub fn name(self) -> &'static str {
        match self {
            ClientAuth::None => "none",
            ClientAuth::Want => "want",
            ClientAuth::Need => "need",
        }
    }

    /// The value named `name` (see [`name`](Self::name)).
    pub fn from_name(name: &str) -> Option<ClientAuth> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }
}

/// The certificate a TLS server presents.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ServerCert {
    /// Signed by [`TlsMaterial::ca`], valid now, with an IP SAN for the server's `127.0.0.x`
    /// address (and the DNS SAN `localhost`).
    #[default]
    Valid,
    /// Signed by the CA with the right SANs, but its validity ended yesterday.
    Expired,
    /// Signed by the CA and valid, but its only SAN is the DNS name [`WRONG_SERVER_NAME`]: a
    /// client verifying the host name (the address it dialed) must refuse it.
    WrongName,
    /// Signed by the CA and valid, with the server's IP SAN only (no `localhost`): a client
    /// that dials `localhost` finds its host name missing and the address it reached named,
    /// which Java's ZKTrustManager accepts (it checks the peer's IP first).
    IpOnly,
}

impl ServerCert {
    /// Every value, in declaration order.
    pub const ALL: [ServerCert; 4] = [
        ServerCert::Valid,
        ServerCert::Expired,
        ServerCert::WrongName,
        ServerCert::IpOnly,
    ];

    /// `valid`, `expired`, `wrong-name`, `ip-only` (the `zk-harness --server-cert` values).
    pub fn name(self) -> &'static str {
        match self {
            ServerCert::Valid => "valid",
            ServerCert::Expired => "expired",
            ServerCert::WrongName => "wrong-name",
            ServerCert::IpOnly => "ip-only",
        }
    }

    /// The value named `name` (see [`name`](Self::name)).
    pub fn from_name(name: &str) -> Option<ServerCert> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// The only name in a [`ServerCert::WrongName`] certificate.
pub const WRONG_SERVER_NAME: &str = "wrong.example";

/// How a [`TestingServer`](crate::TestingServer) or [`TestingCluster`](crate::TestingCluster)
/// is secured; the default is not at all (plaintext only, like `start()`).
///
/// ```no_run
/// use zkrecipes_testing::{ClientAuth, Security, TestingServer};
///
/// let server = TestingServer::start_secure(
///     Security::new().tls(ClientAuth::Need).sasl_user("alice", "secret").x509_identities(true),
/// );
/// let tls = server.tls().expect("TLS material");
/// let hosts = server.secure_connect_string().expect("a secure port"); // "127.0.0.1:PORT"
/// # drop((tls, hosts));
/// ```
///
/// Every server keeps its plaintext `clientPort` (the harness's readiness checks and
/// four-letter words use it; a test may too); TLS adds a `secureClientPort` on the same address.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Security {
    /// TLS on a secure client port, asking clients for certificates as said; `None`: no TLS.
    pub tls: Option<ClientAuth>,
    /// What the TLS servers present.
    pub server_cert: ServerCert,
    /// SASL DIGEST-MD5 users, `(name, password)`.
    pub sasl_users: Vec<(String, String)>,
    /// Sessions that have not authenticated with SASL are closed at their first request
    /// (ZooKeeper's `enforce.auth.enabled=true`, `enforce.auth.schemes=sasl`).
    pub sasl_required: bool,
    /// TLS clients' certificates give them an `x509` identity (their subject, see
    /// [`TlsMaterial::x509_id`]).
    pub x509_identities: bool,
    /// A superuser, `(name, password)`: see [`superuser`](Self::superuser).
    pub superuser: Option<(String, String)>,
    /// SASL GSSAPI (Kerberos) against a KDC started for the server: see
    /// [`kerberos`](Self::kerberos).
    pub kerberos: bool,
    /// A server cut off from its quorum serves reads: see [`read_only_mode`](Self::read_only_mode).
    pub read_only_mode: bool,
}

impl Security {
    /// No security: the same as `Security::default()`.
    pub fn new() -> Security {
        Security::default()
    }

    /// TLS on a secure client port (`secureClientPort`, Netty), with certificates from a CA
    /// made for this server or ensemble ([`TlsMaterial`]); `client_auth` is `ssl.clientAuth`.
    pub fn tls(mut self, client_auth: ClientAuth) -> Security {
        self.tls = Some(client_auth);
        self
    }

    /// What the servers present on their secure port (default [`ServerCert::Valid`]); needs
    /// [`tls`](Self::tls).
    pub fn server_cert(mut self, cert: ServerCert) -> Security {
        self.server_cert = cert;
        self
    }

    /// A SASL DIGEST-MD5 user (repeatable; a second call for the same name replaces its
    /// password). Names are letters, digits, `.`, `_` and `-`; passwords have no `"`, `\` or
    /// line break. Clients authenticate as this user over either port; the node ACL identity is
    /// `sasl:NAME`.
    pub fn sasl_user(mut self, name: impl Into<String>, password: impl Into<String>) -> Security {
        let (name, password) = (name.into(), password.into());
        self.sasl_users.retain(|(n, _)| *n != name);
        self.sasl_users.push((name, password));
        self
    }

    /// Whether sessions must authenticate with SASL: a session that has not is closed at its
    /// first request with `SessionClosedRequireAuth` (ZooKeeper 3.8's `enforce.auth`, also known
    /// as `sessionRequireClientSASLAuth`). x509 and digest identities do not count.
    pub fn sasl_required(mut self, required: bool) -> Security {
        self.sasl_required = required;
        self
    }

    /// Whether a TLS client's certificate gives it the `x509` identity of its subject
    /// (ZooKeeper's X509AuthenticationProvider), so `CREATOR_ALL_ACL` over mutual TLS means
    /// "this certificate". ZooKeeper 3.8 does this on every server asking for client
    /// certificates (it refuses a presented certificate without the provider), so `true` needs
    /// [`ClientAuth::Want`] or [`ClientAuth::Need`], and turns on `tls(ClientAuth::Need)` when
    /// TLS is not set yet.
    pub fn x509_identities(mut self, on: bool) -> Security {
        self.x509_identities = on;
        if on && self.tls.is_none() {
            self.tls = Some(ClientAuth::Need);
        }
        self
    }

    /// A superuser, who may do anything whatever the ACLs: a session that adds the digest
    /// credentials `name:password` (`addauth digest name:password`) is `super`
    /// (`zookeeper.DigestAuthenticationProvider.superDigest`); when SASL is on, `name` is also
    /// a SASL user with that password and the SASL superuser (`zookeeper.superUser`).
    pub fn superuser(mut self, name: impl Into<String>, password: impl Into<String>) -> Security {
        self.superuser = Some((name.into(), password.into()));
        self
    }

    /// SASL with Kerberos (GSSAPI) instead of DIGEST-MD5: an MIT KDC (`krb5kdc`) is started
    /// for the server or ensemble on a free loopback port, with a realm in its temporary
    /// directory, a principal and keytab per server and a client principal with a keytab and a
    /// ticket cache ([`KerberosMaterial`], from `kerberos()` of the server or ensemble). Needs
    /// Debian's `krb5-kdc`, `krb5-admin-server` and `krb5-user` (installed on demand as root).
    /// ZooKeeper serves one SASL mechanism, so this excludes [`sasl_user`](Self::sasl_user).
    pub fn kerberos(mut self, on: bool) -> Security {
        self.kerberos = on;
        self
    }

    /// A member cut off from its quorum goes on serving reads to new sessions that allow it
    /// (`readonlymode.enabled=true`, with local sessions: `localSessionsEnabled`,
    /// `localSessionsUpgradingEnabled`; a client with `can_be_read_only` sees `READ_ONLY`).
    /// Not a security setting, but one of the servers' deployment, kept with the others here.
    pub fn read_only_mode(mut self, on: bool) -> Security {
        self.read_only_mode = on;
        self
    }

    /// Whether the servers enable SASL (some user, Kerberos, or
    /// [`sasl_required`](Self::sasl_required)).
    pub fn uses_sasl(&self) -> bool {
        !self.sasl_users.is_empty() || self.sasl_required || self.kerberos
    }

    /// The DIGEST-MD5 users of the JAAS file: [`sasl_users`](Self::sasl_users) and the
    /// superuser; none with Kerberos.
    fn jaas_users(&self) -> Vec<(String, String)> {
        if self.kerberos {
            return Vec::new();
        }
        let mut users = self.sasl_users.clone();
        if let Some((name, password)) = &self.superuser {
            users.retain(|(n, _)| n != name);
            users.push((name.clone(), password.clone()));
        }
        users
    }

    /// `Err` saying plainly what ZooKeeper cannot do with these settings (what `start_secure`
    /// panics with): x509 identities without client certificates, a server certificate choice
    /// without TLS, SASL names or passwords the JAAS file cannot hold.
    pub fn check(&self) -> Result<(), String> {
        if self.x509_identities && !matches!(self.tls, Some(ClientAuth::Want | ClientAuth::Need)) {
            return Err("x509 identities need client certificates: use \
                        tls(ClientAuth::Want) or tls(ClientAuth::Need), not ClientAuth::None"
                .into());
        }
        if self.kerberos && !self.sasl_users.is_empty() {
            return Err(
                "ZooKeeper serves one SASL mechanism: Kerberos (GSSAPI) or DIGEST-MD5 \
                        users (sasl_user), not both"
                    .into(),
            );
        }
        if self.server_cert != ServerCert::Valid && self.tls.is_none() {
            return Err(format!(
                "server_cert({:?}) needs TLS: add tls(ClientAuth::...)",
                self.server_cert
            ));
        }
        for (name, password) in self.jaas_users() {
            let name_ok = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
            if !name_ok {
                return Err(format!(
                    "SASL user name {name:?}: use letters, digits, `.`, `_` and `-` only"
                ));
            }
            if password.contains(['"', '\\', '\n', '\r']) {
                return Err(format!(
                    "the password of SASL user {name:?} has a `\"`, `\\` or line break, which \
                     the JAAS file cannot hold"
                ));
            }
        }
        if let Some((name, _)) = &self.superuser {
            if name.is_empty() || name.contains(':') {
                return Err(format!("superuser name {name:?}: not empty, no `:`"));
            }
        }
        Ok(())
    }
}

/// A client certificate of [`TlsMaterial`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientIdentity {
    /// [`TlsMaterial::client_cert`]: valid, EC P-256, PKCS#8 key, `CN=zkr-client`.
    Client,
    /// [`TlsMaterial::other_client_cert`]: valid, EC P-256, PKCS#8 key, `CN=zkr-other`.
    Other,
    /// [`TlsMaterial::rsa_client_cert`]: valid, RSA 2048, PKCS#1 key, `CN=zkr-rsa-client`.
    Rsa,
    /// [`TlsMaterial::sec1_client_cert`]: valid, EC P-256, SEC1 key, `CN=zkr-sec1-client`.
    Sec1,
    /// [`TlsMaterial::expired_client_cert`]: signed by the CA, expired yesterday,
    /// `CN=zkr-expired-client`.
    Expired,
    /// [`TlsMaterial::wrong_ca_client_cert`]: valid but signed by [`TlsMaterial::wrong_ca`],
    /// `CN=zkr-wrong-ca-client`.
    WrongCa,
}

impl ClientIdentity {
    /// Every identity, in declaration order.
    pub const ALL: [ClientIdentity; 6] = [
        ClientIdentity::Client,
        ClientIdentity::Other,
        ClientIdentity::Rsa,
        ClientIdentity::Sec1,
        ClientIdentity::Expired,
        ClientIdentity::WrongCa,
    ];

    /// The stem of its files: `client`, `other-client`, `rsa-client`, `sec1-client`,
    /// `expired-client`, `wrong-ca-client` (`STEM.pem`, `STEM.key`, `STEM-keystore.pem`).
    pub fn name(self) -> &'static str {
        match self {
            ClientIdentity::Client => "client",
            ClientIdentity::Other => "other-client",
            ClientIdentity::Rsa => "rsa-client",
            ClientIdentity::Sec1 => "sec1-client",
            ClientIdentity::Expired => "expired-client",
            ClientIdentity::WrongCa => "wrong-ca-client",
        }
    }

    /// The common name of its subject (the whole subject is `CN=` this).
    pub fn common_name(self) -> &'static str {
        match self {
            ClientIdentity::Client => "zkr-client",
            ClientIdentity::Other => "zkr-other",
            ClientIdentity::Rsa => "zkr-rsa-client",
            ClientIdentity::Sec1 => "zkr-sec1-client",
            ClientIdentity::Expired => "zkr-expired-client",
            ClientIdentity::WrongCa => "zkr-wrong-ca-client",
        }
    }
}

const CA_NAME: &str = "zkrecipes testing CA";
const WRONG_CA_NAME: &str = "zkrecipes wrong CA";
/// The password of [`TlsMaterial::encrypted_client_key`].
const KEY_PASSWORD: &str = "zkr-key-password";

/// The CA, certificates and keys of a TLS server or ensemble, made when it starts: PEM files in
/// [`dir`](Self::dir) (inside the server's temporary directory, gone with it).
///
/// Every client certificate has the subject `CN=<name>` (see [`ClientIdentity`]), extended key
/// usage clientAuth and no SAN; server certificates have serverAuth and the SANs of
/// [`ServerCert`]. Keys are EC P-256 unless said otherwise. Each `*_key` file holds just the
/// key; [`keystore`](Self::keystore) gives the key (PKCS#8) and certificate in one file, the
/// form ZooKeeper's Java client wants for `zookeeper.ssl.keyStore.type=PEM`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TlsMaterial {
    /// The directory holding every file below.
    pub dir: PathBuf,
    /// The CA certificate that signed the servers' certificates and the client certificates
    /// (all but the wrong-CA one); the servers trust it and only it.
    pub ca: PathBuf,
    /// A valid client certificate, `CN=zkr-client`.
    pub client_cert: PathBuf,
    /// Its key: EC P-256, PKCS#8 (`BEGIN PRIVATE KEY`).
    pub client_key: PathBuf,
    /// A valid client certificate with another subject, `CN=zkr-other`.
    pub other_client_cert: PathBuf,
    /// Its key: EC P-256, PKCS#8.
    pub other_client_key: PathBuf,
    /// A valid client certificate for an RSA key, `CN=zkr-rsa-client`.
    pub rsa_client_cert: PathBuf,
    /// Its key: RSA 2048, PKCS#1 (`BEGIN RSA PRIVATE KEY`).
    pub rsa_client_key: PathBuf,
    /// A valid client certificate, `CN=zkr-sec1-client`.
    pub sec1_client_cert: PathBuf,
    /// Its key: EC P-256, SEC1 (`BEGIN EC PRIVATE KEY`).
    pub sec1_client_key: PathBuf,
    /// [`client_key`](Self::client_key) encrypted (PKCS#8, PBES2: PBKDF2-HMAC-SHA256 and
    /// AES-256-CBC; `BEGIN ENCRYPTED PRIVATE KEY`) with
    /// [`encrypted_client_key_password`](Self::encrypted_client_key_password); it goes with
    /// [`client_cert`](Self::client_cert).
    pub encrypted_client_key: PathBuf,
    /// The password of [`encrypted_client_key`](Self::encrypted_client_key).
    pub encrypted_client_key_password: String,
    /// A client certificate signed by the CA whose validity ended yesterday,
    /// `CN=zkr-expired-client`.
    pub expired_client_cert: PathBuf,
    /// Its key: EC P-256, PKCS#8.
    pub expired_client_key: PathBuf,
    /// A client certificate signed by [`wrong_ca`](Self::wrong_ca), `CN=zkr-wrong-ca-client`.
    pub wrong_ca_client_cert: PathBuf,
    /// Its key: EC P-256, PKCS#8.
    pub wrong_ca_client_key: PathBuf,
    /// A CA that signed nothing the servers present or trust (a client trusting it alone must
    /// refuse every server).
    pub wrong_ca: PathBuf,
}

impl TlsMaterial {
    /// The material whose files are in `dir` (a [`dir`](Self::dir), e.g. the `tls_dir` a
    /// `zk-harness start` printed); no file is read or written.
    pub fn at(dir: &Path) -> TlsMaterial {
        let file = |name: &str| dir.join(name);
        TlsMaterial {
            dir: dir.to_owned(),
            ca: file("ca.pem"),
            client_cert: file("client.pem"),
            client_key: file("client.key"),
            other_client_cert: file("other-client.pem"),
            other_client_key: file("other-client.key"),
            rsa_client_cert: file("rsa-client.pem"),
            rsa_client_key: file("rsa-client.key"),
            sec1_client_cert: file("sec1-client.pem"),
            sec1_client_key: file("sec1-client.key"),
            encrypted_client_key: file("client-encrypted.key"),
            encrypted_client_key_password: KEY_PASSWORD.to_owned(),
            expired_client_cert: file("expired-client.pem"),
            expired_client_key: file("expired-client.key"),
            wrong_ca_client_cert: file("wrong-ca-client.pem"),
            wrong_ca_client_key: file("wrong-ca-client.key"),
            wrong_ca: file("wrong-ca.pem"),
        }
    }

    /// Every path and value as `(name, text)`, names as the fields (`ca`, `client_cert`,
    /// ...) plus, for each identity `STEM` (`client`, `other_client`, `rsa_client`,
    /// `sec1_client`, `expired_client`, `wrong_ca_client`), `STEM_keystore` and `STEM_x509_id`;
    /// `dir` first. What the `zk-harness` CLI prints and the Python and Node kits expose.
    pub fn entries(&self) -> Vec<(String, String)> {
        let text = |p: &Path| p.display().to_string();
        let mut entries = vec![
            ("dir".to_owned(), text(&self.dir)),
            ("ca".to_owned(), text(&self.ca)),
        ];
        for which in ClientIdentity::ALL {
            let stem = which.name().replace('-', "_");
            entries.push((format!("{stem}_cert"), text(self.cert(which))));
            entries.push((format!("{stem}_key"), text(self.key(which))));
            entries.push((format!("{stem}_keystore"), text(&self.keystore(which))));
            entries.push((format!("{stem}_x509_id"), self.x509_id(which)));
        }
        entries.push((
            "encrypted_client_key".to_owned(),
            text(&self.encrypted_client_key),
        ));
        entries.push((
            "encrypted_client_key_password".to_owned(),
            self.encrypted_client_key_password.clone(),
        ));
        entries.push(("wrong_ca".to_owned(), text(&self.wrong_ca)));
        entries
    }

    /// The certificate of `which`.
    pub fn cert(&self, which: ClientIdentity) -> &Path {
        match which {
            ClientIdentity::Client => &self.client_cert,
            ClientIdentity::Other => &self.other_client_cert,
            ClientIdentity::Rsa => &self.rsa_client_cert,
            ClientIdentity::Sec1 => &self.sec1_client_cert,
            ClientIdentity::Expired => &self.expired_client_cert,
            ClientIdentity::WrongCa => &self.wrong_ca_client_cert,
        }
    }

    /// The key of `which`, in the format its field says.
    pub fn key(&self, which: ClientIdentity) -> &Path {
        match which {
            ClientIdentity::Client => &self.client_key,
            ClientIdentity::Other => &self.other_client_key,
            ClientIdentity::Rsa => &self.rsa_client_key,
            ClientIdentity::Sec1 => &self.sec1_client_key,
            ClientIdentity::Expired => &self.expired_client_key,
            ClientIdentity::WrongCa => &self.wrong_ca_client_key,
        }
    }

    /// `STEM-keystore.pem`: the key of `which` as PKCS#8 followed by its certificate, one file,
    /// as ZooKeeper's Java client reads a PEM key store (`zookeeper.ssl.keyStore.location`).
    pub fn keystore(&self, which: ClientIdentity) -> PathBuf {
        self.dir.join(format!("{}-keystore.pem", which.name()))
    }

    /// The certificate server `index` presents (`server<index>.pem`).
    pub fn server_cert(&self, index: usize) -> PathBuf {
        self.dir.join(format!("server{index}.pem"))
    }

    /// Server `index`'s key and certificate, its `ssl.keyStore.location`.
    pub fn server_keystore(&self, index: usize) -> PathBuf {
        self.dir.join(format!("server{index}-keystore.pem"))
    }

    /// The `x509` identity ZooKeeper records for a session over TLS with `which`'s certificate
    /// (the id of `x509` ACL entries, e.g. `CN=zkr-client`).
    pub fn x509_id(&self, which: ClientIdentity) -> String {
        Self::x509_id_for_cn(which.common_name())
    }

    /// The `x509` identity of a certificate from [`issue_client`](Self::issue_client)`(cn, ..)`:
    /// its subject as Java's `X500Principal.getName()` writes it (RFC 2253: `CN=` and `cn`, with
    /// `,+"\<>;` and a leading `#` or space or a trailing space escaped by `\`).
    pub fn x509_id_for_cn(cn: &str) -> String {
        let last = cn.chars().count().saturating_sub(1);
        let mut id = String::from("CN=");
        for (i, c) in cn.chars().enumerate() {
            let escape = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
                || (i == 0 && matches!(c, '#' | ' '))
                || (i == last && c == ' ');
            if escape {
                id.push('\\');
            }
            id.push(c);
        }
        id
    }

    /// The text of a file (a PEM file of this material); panics naming the file if it cannot
    /// be read.
    pub fn read(path: impl AsRef<Path>) -> String {
        let path = path.as_ref();
        fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("zkrecipes-testing: cannot read {}: {e}", path.display()))
    }

    /// Issues a fresh client identity now: a new EC P-256 key (PKCS#8) and a certificate for it
    /// with the subject `CN=cn`, signed by [`ca`](Self::ca) (valid from yesterday for 30 days).
    /// Each file is written atomically (a temporary file in the same directory, then renamed
    /// over the target), the key first, then the certificate, so a client re-reading them at
    /// each connection (certificate rotation) never sees half a file. Panics on failure.
    pub fn issue_client(&self, cn: &str, cert_out: impl AsRef<Path>, key_out: impl AsRef<Path>) {
        let ca_key = KeyPair::from_pem(&Self::read(self.dir.join("ca.key"))).unwrap_or_else(|e| {
            panic!(
                "zkrecipes-testing: the CA key of {}: {e}",
                self.dir.display()
            )
        });
        let issuer = Issuer::new(ca_params(CA_NAME, OffsetDateTime::now_utc()), ca_key);
        let key = new_key();
        let cert = client_params(cn, Validity::Valid.window(OffsetDateTime::now_utc()))
            .signed_by(&key, &issuer)
            .unwrap_or_else(|e| {
                panic!("zkrecipes-testing: cannot sign a certificate for {cn:?}: {e}")
            });
        write_atomically(key_out.as_ref(), &key.serialize_pem());
        write_atomically(cert_out.as_ref(), &cert.pem());
    }

    /// Makes the CA, the servers' certificates (server `i` on `hosts[i]`) and every client
    /// identity under `dir` (created, or emptied first).
    pub(crate) fn generate(dir: &Path, hosts: &[Ipv4Addr], server_cert: ServerCert) -> TlsMaterial {
        let material = TlsMaterial::at(dir);
        let _ = fs::remove_dir_all(dir);
        fs::create_dir_all(dir)
            .unwrap_or_else(|e| panic!("zkrecipes-testing: cannot create {}: {e}", dir.display()));
        let now = OffsetDateTime::now_utc();
        let fail = |what: &str, e: rcgen::Error| -> ! {
            panic!("zkrecipes-testing: cannot make the TLS material ({what}): {e}")
        };

        let ca_key = new_key();
        let ca = ca_params(CA_NAME, now)
            .self_signed(&ca_key)
            .unwrap_or_else(|e| fail("CA", e));
        write(&material.ca, &ca.pem());
        write(&dir.join("ca.key"), &ca_key.serialize_pem());
        let issuer = Issuer::new(ca_params(CA_NAME, now), ca_key);
        let wrong_ca_key = new_key();
        let wrong_ca = ca_params(WRONG_CA_NAME, now)
            .self_signed(&wrong_ca_key)
            .unwrap_or_else(|e| fail("wrong CA", e));
        write(&material.wrong_ca, &wrong_ca.pem());
        let wrong_issuer = Issuer::new(ca_params(WRONG_CA_NAME, now), wrong_ca_key);

        for (index, &host) in hosts.iter().enumerate() {
            let key = new_key();
            let (sans, validity) = match server_cert {
                ServerCert::Valid => (server_sans(host), Validity::Valid),
                ServerCert::Expired => (server_sans(host), Validity::Expired),
                ServerCert::WrongName => (vec![dns(WRONG_SERVER_NAME)], Validity::Valid),
                ServerCert::IpOnly => (vec![SanType::IpAddress(IpAddr::V4(host))], Validity::Valid),
            };
            let mut params = leaf_params(&format!("zkr-server-{index}"), validity.window(now));
            params.subject_alt_names = sans;
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
            let cert = params
                .signed_by(&key, &issuer)
                .unwrap_or_else(|e| fail("server certificate", e));
            write(&material.server_cert(index), &cert.pem());
            write(
                &material.server_keystore(index),
                &format!("{}{}", key.serialize_pem(), cert.pem()),
            );
        }

        for which in ClientIdentity::ALL {
            let (key, pkcs8) = match which {
                ClientIdentity::Rsa => {
                    let pkcs8 = openssl(
                        &[
                            "genpkey",
                            "-algorithm",
                            "RSA",
                            "-pkeyopt",
                            "rsa_keygen_bits:2048",
                        ],
                        None,
                    );
                    let key =
                        KeyPair::from_pkcs8_pem_and_sign_algo(&pkcs8, &rcgen::PKCS_RSA_SHA256)
                            .unwrap_or_else(|e| fail("RSA key", e));
                    (key, pkcs8)
                }
                _ => {
                    let key = new_key();
                    let pkcs8 = key.serialize_pem();
                    (key, pkcs8)
                }
            };
            let validity = match which {
                ClientIdentity::Expired => Validity::Expired,
                _ => Validity::Valid,
            };
            let mut params = client_params(which.common_name(), validity.window(now));
            if which == ClientIdentity::Rsa {
                params.key_usages.push(KeyUsagePurpose::KeyEncipherment);
            }
            let cert = match which {
                ClientIdentity::WrongCa => params.signed_by(&key, &wrong_issuer),
                _ => params.signed_by(&key, &issuer),
            }
            .unwrap_or_else(|e| fail(which.name(), e));
            let key_file = match which {
                // PKCS#1 and SEC1: OpenSSL's "traditional" formats.
                ClientIdentity::Rsa | ClientIdentity::Sec1 => {
                    openssl(&["pkey", "-traditional"], Some(&pkcs8))
                }
                _ => pkcs8.clone(),
            };
            write(material.cert(which), &cert.pem());
            write(material.key(which), &key_file);
            write(&material.keystore(which), &format!("{pkcs8}{}", cert.pem()));
            if which == ClientIdentity::Client {
                let encrypted = openssl(
                    &[
                        "pkcs8",
                        "-topk8",
                        "-v2",
                        "aes-256-cbc",
                        "-v2prf",
                        "hmacWithSHA256",
                        "-passout",
                        &format!("pass:{KEY_PASSWORD}"),
                    ],
                    Some(&pkcs8),
                );
                write(&material.encrypted_client_key, &encrypted);
            }
        }
        material
    }
}

/// What the harness adds to a server's configuration for a [`Security`]: made once per server
/// or ensemble, before its servers are configured.
#[derive(Debug)]
pub(crate) struct Deployment {
    pub(crate) security: Security,
    pub(crate) tls: Option<TlsMaterial>,
    /// The JAAS file of each server (the same for all without Kerberos); empty without SASL.
    jaas: Vec<PathBuf>,
    /// Killed when the deployment is dropped (after its servers).
    kdc: Option<Kdc>,
}

impl Deployment {
    /// Checks `security` and writes what it needs under `root` (`tls/`, `kerberos/`, the JAAS
    /// files) for servers on `hosts`, starting a KDC for Kerberos. Panics with the reason if
    /// ZooKeeper cannot do it.
    pub(crate) fn prepare(root: &Path, hosts: &[Ipv4Addr], security: &Security) -> Deployment {
        if let Err(e) = security.check() {
            panic!("zkrecipes-testing: {e}");
        }
        let tls = security
            .tls
            .map(|_| TlsMaterial::generate(&root.join("tls"), hosts, security.server_cert));
        let kdc = security
            .kerberos
            .then(|| Kdc::start(&root.join("kerberos"), hosts));
        let jaas = match &kdc {
            Some(kdc) => (0..hosts.len())
                .map(|i| {
                    let path = root.join(format!("jaas-{i}.conf"));
                    write(&path, &kdc.server_jaas(i));
                    path
                })
                .collect(),
            None if security.uses_sasl() => {
                let mut text = String::from(
                    "Server {\n    org.apache.zookeeper.server.auth.DigestLoginModule required",
                );
                for (name, password) in security.jaas_users() {
                    text += &format!("\n    user_{name}=\"{password}\"");
                }
                text += ";\n};\n";
                let path = root.join("jaas.conf");
                write(&path, &text);
                vec![path; hosts.len()]
            }
            None => Vec::new(),
        };
        Deployment {
            security: security.clone(),
            tls,
            jaas,
            kdc,
        }
    }

    /// The Kerberos material, with Kerberos.
    pub(crate) fn kerberos(&self) -> Option<&KerberosMaterial> {
        self.kdc.as_ref().map(|kdc| &kdc.material)
    }

    /// The `zoo.cfg` lines of server `index` (on `host`, secure port `secure_port`).
    pub(crate) fn zoo_cfg(&self, index: usize, host: Ipv4Addr, secure_port: Option<u16>) -> String {
        let mut cfg = String::new();
        if let (Some(tls), Some(auth), Some(port)) = (&self.tls, self.security.tls, secure_port) {
            cfg += &format!(
                "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
                 secureClientPortAddress={host}\nsecureClientPort={port}\n\
                 ssl.keyStore.location={}\nssl.keyStore.type=PEM\n\
                 ssl.trustStore.location={}\nssl.trustStore.type=PEM\n\
                 ssl.clientAuth={}\n\
                 authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider\n",
                tls.server_keystore(index).display(),
                tls.ca.display(),
                auth.name(),
            );
        }
        if !self.jaas.is_empty() {
            cfg +=
                "authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n";
        }
        if self.security.sasl_required {
            cfg += "enforce.auth.enabled=true\nenforce.auth.schemes=sasl\n";
        }
        if self.security.read_only_mode {
            // A read-only server makes local sessions only (a global one would need the
            // quorum: it answers NOTREADONLY in place of the handshake); a local session that
            // makes an ephemeral node becomes global, as a client's usual session.
            cfg += "localSessionsEnabled=true\nlocalSessionsUpgradingEnabled=true\n";
        }
        cfg
    }

    /// Whether servers get a secure client port.
    pub(crate) fn secure(&self) -> bool {
        self.tls.is_some()
    }

    /// Extra JVM flags of server `index` (the JAAS file, Kerberos, the superuser).
    pub(crate) fn jvm_flags(&self, index: usize) -> Vec<String> {
        let mut flags = Vec::new();
        if let Some(jaas) = self.jaas.get(index) {
            flags.push(format!(
                "-Djava.security.auth.login.config={}",
                jaas.display()
            ));
        }
        if let Some(kerberos) = self.kerberos() {
            flags.push(format!(
                "-Djava.security.krb5.conf={}",
                kerberos.krb5_conf.display()
            ));
        }
        if let Some((name, password)) = &self.security.superuser {
            flags.push(format!(
                "-Dzookeeper.DigestAuthenticationProvider.superDigest={}",
                digest_id(name, password)
            ));
            if !self.jaas.is_empty() && self.kdc.is_none() {
                flags.push(format!("-Dzookeeper.superUser={name}"));
            }
        }
        if self.security.read_only_mode {
            flags.push("-Dreadonlymode.enabled=true".to_string());
        }
        flags
    }
}

/// ZooKeeper's digest identity of `name:password`: `name:base64(sha1("name:password"))`.
pub(crate) fn digest_id(name: &str, password: &str) -> String {
    let sha1 = ring::digest::digest(
        &ring::digest::SHA1_FOR_LEGACY_USE_ONLY,
        format!("{name}:{password}").as_bytes(),
    );
    format!("{name}:{}", base64(sha1.as_ref()))
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[derive(Clone, Copy)]
enum Validity {
    Valid,
    Expired,
}

impl Validity {
    /// `(not_before, not_after)`: from yesterday for 30 days, or from 30 days ago to yesterday.
    fn window(self, now: OffsetDateTime) -> (OffsetDateTime, OffsetDateTime) {
        match self {
            Validity::Valid => (now - Duration::days(1), now + Duration::days(30)),
            Validity::Expired => (now - Duration::days(30), now - Duration::days(1)),
        }
    }
}

fn new_key() -> KeyPair {
    KeyPair::generate().unwrap_or_else(|e| panic!("zkrecipes-testing: cannot make a key: {e}"))
}

fn serial() -> SerialNumber {
    // Positive, never zero, 63 bits of randomness.
    SerialNumber::from(fastrand::u64(1..) >> 1 | 1)
}

fn ca_params(name: &str, now: OffsetDateTime) -> CertificateParams {
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.not_before = now - Duration::days(60);
    params.not_after = now + Duration::days(365);
    params.serial_number = Some(serial());
    params
}

fn leaf_params(
    cn: &str,
    (not_before, not_after): (OffsetDateTime, OffsetDateTime),
) -> CertificateParams {
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, cn);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.use_authority_key_identifier_extension = true;
    params.not_before = not_before;
    params.not_after = not_after;
    params.serial_number = Some(serial());
    params
}

fn client_params(cn: &str, window: (OffsetDateTime, OffsetDateTime)) -> CertificateParams {
    let mut params = leaf_params(cn, window);
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params
}

fn server_sans(host: Ipv4Addr) -> Vec<SanType> {
    vec![SanType::IpAddress(IpAddr::V4(host)), dns("localhost")]
}

fn dns(name: &str) -> SanType {
    SanType::DnsName(name.try_into().expect("an ASCII DNS name"))
}

fn write(path: &Path, text: &str) {
    fs::write(path, text)
        .unwrap_or_else(|e| panic!("zkrecipes-testing: cannot write {}: {e}", path.display()));
}

/// Writes `text` to a temporary file next to `path`, then renames it over `path`.
fn write_atomically(path: &Path, text: &str) {
    let name = path.file_name().unwrap_or_else(|| OsStr::new("file"));
    let mut temp_name = name.to_owned();
    temp_name.push(format!(".tmp-{:08x}", fastrand::u32(..)));
    let temp = path.with_file_name(temp_name);
    write(&temp, text);
    if let Err(e) = fs::rename(&temp, path) {
        let _ = fs::remove_file(&temp);
        panic!(
            "zkrecipes-testing: cannot rename {} to {}: {e}",
            temp.display(),
            path.display()
        );
    }
}

/// The `openssl` command, installed with apt-get when missing and running as root; panics with
/// the fix otherwise.
fn openssl_command() -> PathBuf {
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let find = || {
        std::env::var_os("PATH")
            .and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|dir| dir.join("openssl"))
                    .find(|p| p.is_file())
            })
            .or_else(|| Some(PathBuf::from("/usr/bin/openssl")).filter(|p| p.is_file()))
    };
    if let Some(found) = find() {
        return found;
    }
    const HOW: &str = "the TLS material of zkrecipes-testing needs the `openssl` command (RSA \
                       keys, PKCS#1, SEC1 and encrypted PKCS#8 keys): install it with `sudo \
                       apt-get update && sudo apt-get install -y openssl`";
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        panic!("zkrecipes-testing: no `openssl` on PATH; {HOW}");
    }
    if let Err(e) = apt_install(&["openssl"]) {
        panic!("zkrecipes-testing: {e}; {HOW}");
    }
    find().unwrap_or_else(|| {
        panic!("zkrecipes-testing: apt-get installed openssl but it is not on PATH; {HOW}")
    })
}

/// Runs `openssl ARGS` with `input` on stdin; returns its stdout, panicking with its stderr on
/// failure.
fn openssl(args: &[&str], input: Option<&str>) -> String {
    let mut child = Command::new(openssl_command())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("zkrecipes-testing: cannot run `openssl`: {e}"));
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input = input.unwrap_or_default().to_owned();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let out = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("zkrecipes-testing: `openssl` failed: {e}"));
    let _ = feeder.join();
    if !out.status.success() {
        panic!(
            "zkrecipes-testing: `openssl {}` failed ({}): {}",
            args.first().copied().unwrap_or_default(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8(out.stdout).expect("openssl writes PEM text")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_ids_are_escaped() {
        for a in ClientAuth::ALL {
            assert_eq!(ClientAuth::from_name(a.name()), Some(a));
        }
        for c in ServerCert::ALL {
            assert_eq!(ServerCert::from_name(c.name()), Some(c));
        }
        assert_eq!(TlsMaterial::x509_id_for_cn("zkr-client"), "CN=zkr-client");
        assert_eq!(TlsMaterial::x509_id_for_cn("a,b+c "), "CN=a\\,b\\+c\\ ");
        assert_eq!(TlsMaterial::x509_id_for_cn("#x"), "CN=\\#x");
        // ZooKeeper's DigestAuthenticationProvider.generateDigest("super:test").
        assert_eq!(
            digest_id("super", "test"),
            "super:D/InIHSb7yEEbrWz8b9l71RjZJU="
        );
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"a"), "YQ==");
    }

    #[test]
    fn settings_zookeeper_cannot_honour_are_refused() {
        assert!(Security::new().check().is_ok());
        assert_eq!(
            Security::new().x509_identities(true).tls,
            Some(ClientAuth::Need)
        );
        let e = Security::new()
            .tls(ClientAuth::None)
            .x509_identities(true)
            .check();
        assert!(e.unwrap_err().contains("Want"));
        let e = Security::new().server_cert(ServerCert::Expired).check();
        assert!(e.unwrap_err().contains("needs TLS"));
        let e = Security::new().sasl_user("a b", "x").check();
        assert!(e.unwrap_err().contains("letters"));
        let e = Security::new().sasl_user("alice", "x\"y").check();
        assert!(e.unwrap_err().contains("JAAS"));
        let twice = Security::new()
            .sasl_user("alice", "1")
            .sasl_user("alice", "2");
        assert_eq!(twice.sasl_users, vec![("alice".to_owned(), "2".to_owned())]);
    }
}
