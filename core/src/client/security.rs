//! Secure connections: [`TlsOptions`] (TLS with rustls, the `ring` provider), [`SaslOptions`]
//! (SASL DIGEST-MD5) and [`AclProvider`] (Curator's ACLProvider: the ACL of each created node).
//!
//! What is checked, and when (docs/SECURITY.md says it for users):
//! - Every PEM input is read, parsed and assembled into a TLS configuration when the client is
//!   built, so an unreadable file, garbage PEM, an encrypted key or a key that does not match its
//!   certificate is `InvalidArgument` before any connection is tried.
//! - Files are read again for each new connection, so certificates rotated on disk are used from
//!   the next connection on, without restarting the process. A file that is broken at that moment
//!   fails that connection attempt (and says why); the next attempt reads it again.
//! - The server's certificate is verified against the CA (without one, the system's trust store)
//!   and, unless turned off, its name against the host of the connect string (IP SANs for IPs).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use zookeeper_client as zk;

use super::types::Acl;
use crate::{Error, Result};

/// A PEM input: a file, read again for each new connection, or the PEM text itself.
///
/// PEM text is never shown (`Debug` gives its length), and neither is a "path" that cannot be
/// one (a line break or another control character, more than 256 bytes, or 64 or more
/// characters of base64 alone: key material given where a path was expected): `Debug` and
/// error messages say `(N bytes, not a file path)` instead.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Pem {
    /// A file holding PEM.
    File(PathBuf),
    /// PEM text (`-----BEGIN ...`, possibly after other text such as OpenSSL's
    /// `Bag Attributes`).
    Text(String),
}

impl Pem {
    /// The rule every face follows for a string option: text that holds `-----BEGIN`
    /// anywhere, or a line break, is PEM text (no real path does: OpenSSL's `Bag Attributes`
    /// or `openssl x509 -text` output, or a byte order mark, may come before the first
    /// `-----BEGIN`); anything else is a file path. Bytes (Python `bytes`, Node `Buffer`) are
    /// always text: see [`Pem::text`].
    pub fn from_arg(arg: impl Into<String>) -> Pem {
        let arg = arg.into();
        if arg.contains("-----BEGIN") || arg.contains(['\n', '\r']) {
            Pem::Text(arg)
        } else {
            Pem::File(PathBuf::from(arg))
        }
    }

    /// PEM text, whatever it looks like (the faces' bytes and Buffers).
    pub fn text(text: impl Into<String>) -> Pem {
        Pem::Text(text.into())
    }

    /// Reads the PEM text (`what` names the option in the error: "TLS CA", ...). A byte order
    /// mark before the text is dropped.
    pub(crate) fn read(&self, what: &str) -> Result<String> {
        // "" is how C config code and environment variables say "unset": say so, instead of
        // "cannot read the file : No such file or directory".
        let empty = match self {
            Pem::File(path) => path.as_os_str().is_empty(),
            Pem::Text(text) => text.trim().is_empty(),
        };
        if empty {
            return Err(Error::invalid(format!(
                "the {what} is empty: give a file path or PEM text, or leave the option unset"
            )));
        }
        let text = match self {
            Pem::Text(t) => t.clone(),
            Pem::File(path) => std::fs::read(path)
                .map_err(|e| {
                    Error::invalid(format!(
                        "cannot read the {what} file {}: {e}",
                        shown_path(path)
                    ))
                })
                .and_then(|bytes| {
                    String::from_utf8(bytes).map_err(|_| {
                        Error::invalid(format!(
                            "the {what} file {} is not PEM text (it is not UTF-8: DER? convert it with `openssl x509 -inform der`)",
                            shown_path(path)
                        ))
                    })
                })?,
        };
        Ok(match text.strip_prefix('\u{feff}') {
            Some(rest) => rest.to_string(),
            None => text,
        })
    }

    /// How a face may show this input without giving a secret away (Python's `TlsOptions`
    /// repr): `None` for a path, which may be shown as given; else `PEM text, N bytes`, or
    /// `N bytes, not a file path` for a "path" that cannot be one ([`Debug`](fmt::Debug) hides
    /// the same).
    pub fn redacted(&self) -> Option<String> {
        match self {
            Pem::Text(t) => Some(format!("PEM text, {} bytes", t.len())),
            Pem::File(p) => {
                secret_like(p).then(|| format!("{} bytes, not a file path", p.as_os_str().len()))
            }
        }
    }

    fn describe(&self) -> String {
        match self {
            Pem::File(p) => format!("file {}", shown_path(p)),
            Pem::Text(_) => "PEM text".into(),
        }
    }
}

/// A path as it may be shown in a message: as given, unless [`hidden_path`] hides it.
fn shown_path(path: &Path) -> String {
    hidden_path(path).unwrap_or_else(|| path.display().to_string())
}

/// `(N bytes, not a file path)` for a "path" that cannot be one and may be a secret (key
/// material given where a path was expected): one with a control character (a line break),
/// longer than 256 bytes, or 64 or more characters of base64 alone.
fn hidden_path(path: &Path) -> Option<String> {
    secret_like(path).then(|| format!("({} bytes, not a file path)", path.as_os_str().len()))
}

/// Whether a "path" cannot be one and may be a secret (see [`hidden_path`]).
fn secret_like(path: &Path) -> bool {
    let text = path.as_os_str().to_string_lossy();
    let base64 = |c: char| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=');
    text.chars().any(char::is_control)
        || text.len() > 256
        || (text.len() >= 64 && text.chars().all(base64))
}

impl fmt::Debug for Pem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pem::File(p) => match hidden_path(p) {
                Some(hidden) => write!(f, "File({hidden})"),
                None => f.debug_tuple("File").field(p).finish(),
            },
            // Keys are secrets: never in logs.
            Pem::Text(t) => write!(f, "Text({} bytes)", t.len()),
        }
    }
}

impl From<&str> for Pem {
    fn from(s: &str) -> Pem {
        Pem::from_arg(s)
    }
}

impl From<String> for Pem {
    fn from(s: String) -> Pem {
        Pem::from_arg(s)
    }
}

impl From<PathBuf> for Pem {
    fn from(p: PathBuf) -> Pem {
        Pem::File(p)
    }
}

impl From<&Path> for Pem {
    fn from(p: &Path) -> Pem {
        Pem::File(p.to_path_buf())
    }
}

/// TLS for the client's connections (ZooKeeper's `secureClientPort`; Java's
/// `zookeeper.client.secure=true`).
///
/// ```no_run
/// # fn main() -> zkrecipes::Result<()> {
/// use zkrecipes::{ClientBuilder, TlsOptions};
/// let client = ClientBuilder::new("zk1.example:2281")
///     .tls(TlsOptions::new().ca("/etc/zk/ca.pem").identity("/etc/zk/client.pem", "/etc/zk/client.key"))
///     .connect_blocking()?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsOptions {
    ca: Option<Pem>,
    cert: Option<Pem>,
    key: Option<Pem>,
    verify_hostname: bool,
    every_host: bool,
}

impl Default for TlsOptions {
    fn default() -> Self {
        TlsOptions::new()
    }
}

impl TlsOptions {
    /// TLS with the system's trust store, no client certificate, hostname verification on, and
    /// every host of the connect string spoken to over TLS.
    pub fn new() -> TlsOptions {
        TlsOptions {
            ca: None,
            cert: None,
            key: None,
            verify_hostname: true,
            every_host: true,
        }
    }

    /// The CA certificates (and CRLs) that sign the servers' certificates, instead of the
    /// system's trust store.
    pub fn ca(mut self, ca: impl Into<Pem>) -> Self {
        self.ca = Some(ca.into());
        self
    }

    /// The client certificate (chain) and its private key (PKCS#8, or RSA / EC in their own
    /// PEM forms; unencrypted), presented when the server asks for one (`ssl.clientAuth`). With
    /// ZooKeeper's X509AuthenticationProvider, the certificate's subject is this client's
    /// `x509` identity in ACLs.
    pub fn identity(self, cert: impl Into<Pem>, key: impl Into<Pem>) -> Self {
        self.cert(cert).key(key)
    }

    /// The client certificate alone (see [`identity`](Self::identity)); needs [`key`](Self::key).
    pub fn cert(mut self, cert: impl Into<Pem>) -> Self {
        self.cert = Some(cert.into());
        self
    }

    /// The client certificate's private key (see [`identity`](Self::identity)).
    pub fn key(mut self, key: impl Into<Pem>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Whether the server's certificate must name the host it is reached at (default true).
    /// Turning it off still checks the certificate chain against the CA, but any server with a
    /// certificate from that CA is accepted for any host: a man-in-the-middle risk.
    pub fn verify_hostname(mut self, yes: bool) -> Self {
        self.verify_hostname = yes;
        self
    }

    /// Whether every host of the connect string speaks TLS (default true). With false, only
    /// hosts written `tcp+tls://host:port` do, and the others are plaintext. No silent
    /// plaintext: with true, a host written `tcp://` is refused (`InvalidArgument` from
    /// connect), and with false, a connect string with no `tcp+tls://` host is.
    pub fn every_host(mut self, yes: bool) -> Self {
        self.every_host = yes;
        self
    }

    /// Whether the server's name is verified.
    pub fn verifies_hostname(&self) -> bool {
        self.verify_hostname
    }

    /// Whether every host speaks TLS.
    pub fn is_every_host(&self) -> bool {
        self.every_host
    }

    /// Whether a client certificate is configured.
    pub fn has_identity(&self) -> bool {
        self.cert.is_some()
    }

    /// The client certificate and key (what the server's x509 provider knows this client as).
    pub(crate) fn certificate(&self) -> (Option<&Pem>, Option<&Pem>) {
        (self.cert.as_ref(), self.key.as_ref())
    }

    /// Reads and parses every input; the wire crate's certificates.
    fn load(&self) -> Result<zk::TlsCerts> {
        let ca = match &self.ca {
            Some(pem) => {
                let text = pem.read("TLS CA")?;
                zk::TlsCa::from_pem(&text).map_err(|e| {
                    Error::invalid(format!(
                        "the TLS CA ({}) holds no usable certificate ({e}); expected PEM `-----BEGIN CERTIFICATE-----`",
                        pem.describe()
                    ))
                })?
            }
            None => zk::TlsCa::system().map_err(|e| Error::invalid(format!("TLS: {e}")))?,
        };
        let mut certs = zk::TlsCerts::builder().with_ca(ca);
        match (&self.cert, &self.key) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(Error::invalid(
                    "TLS: a client certificate was given without its private key",
                ))
            }
            (None, Some(_)) => {
                return Err(Error::invalid(
                    "TLS: a client private key was given without its certificate",
                ))
            }
            (Some(cert), Some(key)) => {
                let cert_text = cert.read("TLS client certificate")?;
                if !cert_text.contains("-----BEGIN CERTIFICATE-----") {
                    return Err(Error::invalid(format!(
                        "the TLS client certificate ({}) holds no certificate; expected PEM `-----BEGIN CERTIFICATE-----`",
                        cert.describe()
                    )));
                }
                let key_text = key.read("TLS client key")?;
                if key_text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----")
                    || key_text.contains("Proc-Type: 4,ENCRYPTED")
                {
                    return Err(Error::invalid(format!(
                        "the TLS client key ({}) is encrypted; zkrecipes needs an unencrypted key (decrypt it, e.g. `openssl pkey -in key.pem -out key-plain.pem`, and protect the file by its permissions)",
                        key.describe()
                    )));
                }
                let identity = zk::TlsIdentity::from_pem(&cert_text, &key_text).map_err(|e| {
                    Error::invalid(format!(
                        "the TLS client certificate ({}) or key ({}) cannot be read: {e}; expected PEM `-----BEGIN PRIVATE KEY-----` (PKCS#8), `RSA PRIVATE KEY` or `EC PRIVATE KEY`",
                        cert.describe(),
                        key.describe()
                    ))
                })?;
                certs = certs.with_identity(identity);
            }
        }
        let certs = certs
            .build()
            .map_err(|e| Error::invalid(format!("TLS: {e}")))?;
        certs.check(self.verify_hostname).map_err(|e| {
            let e = e.to_string();
            let hint = if self.key.is_some() && e.contains("private key") {
                " (does the key belong to the certificate?)"
            } else if e.to_ascii_lowercase().contains("crl") {
                " (a certificate revocation list of the TLS CA)"
            } else {
                ""
            };
            Error::invalid(format!("TLS: {e}{hint}"))
        })?;
        Ok(certs)
    }

    /// Checks every input now and gives the wire crate's options, which read the inputs again
    /// for each new connection.
    pub(crate) fn wire(&self) -> Result<zk::TlsOptions> {
        self.load()?;
        let me = self.clone();
        let loader =
            zk::TlsCertsLoader::new(move || me.load().map_err(|e| e.message().to_string()));
        let options = zk::TlsOptions::new().with_certs(loader);
        Ok(if self.verify_hostname {
            options
        } else {
            // SAFETY: not memory safety: the wire crate marks this `unsafe` to flag the
            // man-in-the-middle risk, which `verify_hostname(false)` documents and the user chose.
            unsafe { options.with_no_hostname_verification() }
        })
    }
}

/// SASL authentication at each connection (ZooKeeper's `SASLAuthenticationProvider`).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct SaslOptions {
    mechanism: SaslMechanism,
}

#[derive(Clone, PartialEq, Eq, Hash)]
enum SaslMechanism {
    DigestMd5 {
        username: String,
        password: String,
    },
    #[cfg(feature = "gssapi")]
    Gssapi {
        service: String,
        hostname: Option<String>,
    },
}

impl SaslOptions {
    /// The mechanisms this build supports, by their SASL names.
    #[cfg(not(feature = "gssapi"))]
    pub const MECHANISMS: &'static [&'static str] = &["DIGEST-MD5"];
    /// The mechanisms this build supports, by their SASL names.
    #[cfg(feature = "gssapi")]
    pub const MECHANISMS: &'static [&'static str] = &["DIGEST-MD5", "GSSAPI"];

    /// GSSAPI (Kerberos) with the credentials of the process's ticket cache (`KRB5CCNAME`,
    /// `kinit`) and Kerberos configuration (`KRB5_CONFIG`), for the server principal
    /// `zookeeper/<host>` (the host as written in the connect string; see
    /// [`with_service`](Self::with_service), [`with_hostname`](Self::with_hostname)). Only in
    /// builds with the `gssapi` feature.
    #[cfg(feature = "gssapi")]
    pub fn gssapi() -> SaslOptions {
        SaslOptions {
            mechanism: SaslMechanism::Gssapi {
                service: "zookeeper".into(),
                hostname: None,
            },
        }
    }

    /// GSSAPI: the server principal's primary (Java's `zookeeper.sasl.client.username`;
    /// default `zookeeper`). No effect on other mechanisms.
    #[cfg(feature = "gssapi")]
    pub fn with_service(mut self, name: impl Into<String>) -> SaslOptions {
        if let SaslMechanism::Gssapi { service, .. } = &mut self.mechanism {
            *service = name.into();
        }
        self
    }

    /// GSSAPI: the server principal's instance for every server (default: each server's host
    /// as written in the connect string). No effect on other mechanisms.
    #[cfg(feature = "gssapi")]
    pub fn with_hostname(mut self, host: impl Into<String>) -> SaslOptions {
        if let SaslMechanism::Gssapi { hostname, .. } = &mut self.mechanism {
            *hostname = Some(host.into());
        }
        self
    }

    /// DIGEST-MD5 as `username` with `password` (a user of the server's JAAS `Server` section,
    /// `user_<name>="<password>"`).
    pub fn digest_md5(username: impl Into<String>, password: impl Into<String>) -> SaslOptions {
        SaslOptions {
            mechanism: SaslMechanism::DigestMd5 {
                username: username.into(),
                password: password.into(),
            },
        }
    }

    /// A mechanism by its SASL name (`"DIGEST-MD5"`, ASCII case-insensitive), for the faces.
    pub fn new(
        mechanism: &str,
        username: impl Into<String>,
        password: impl Into<String>,
    ) -> Result<SaslOptions> {
        if mechanism.eq_ignore_ascii_case("DIGEST-MD5") {
            return Ok(SaslOptions::digest_md5(username, password));
        }
        #[cfg(feature = "gssapi")]
        if mechanism.eq_ignore_ascii_case("GSSAPI") {
            // The credentials come from the ticket cache; a username names the service.
            let (service, password): (String, String) = (username.into(), password.into());
            if !password.is_empty() {
                return Err(Error::invalid(
                    "SASL GSSAPI takes no password: the credentials come from the Kerberos ticket cache (kinit, KRB5CCNAME)",
                ));
            }
            if service.contains(['@', '/']) {
                return Err(Error::invalid(format!(
                    "SASL GSSAPI: the username names the server's service (the primary of its principal, default zookeeper), not the client; {service:?} is a principal: the client's comes from the ticket cache"
                )));
            }
            let options = SaslOptions::gssapi();
            return Ok(if service.is_empty() {
                options
            } else {
                options.with_service(service)
            });
        }
        let hint = if mechanism.eq_ignore_ascii_case("GSSAPI") {
            " (GSSAPI needs a source build of zkrecipes with the `gssapi` cargo feature)"
        } else {
            ""
        };
        Err(Error::invalid(format!(
            "SASL mechanism {mechanism:?} is not supported; expected one of {}{hint}",
            SaslOptions::MECHANISMS.join(", ")
        )))
    }

    /// The mechanism's SASL name.
    pub fn mechanism(&self) -> &'static str {
        match self.mechanism {
            SaslMechanism::DigestMd5 { .. } => "DIGEST-MD5",
            #[cfg(feature = "gssapi")]
            SaslMechanism::Gssapi { .. } => "GSSAPI",
        }
    }

    /// The user authenticated as (GSSAPI: the ticket cache's principal, shown as
    /// `<ticket cache>`).
    pub fn username(&self) -> &str {
        match &self.mechanism {
            SaslMechanism::DigestMd5 { username, .. } => username,
            #[cfg(feature = "gssapi")]
            SaslMechanism::Gssapi { .. } => "<ticket cache>",
        }
    }

    pub(crate) fn validate(&self) -> Result<()> {
        match &self.mechanism {
            SaslMechanism::DigestMd5 { username, .. } if username.is_empty() => Err(
                Error::invalid("SASL DIGEST-MD5: the username must not be empty"),
            ),
            SaslMechanism::DigestMd5 { .. } => Ok(()),
            #[cfg(feature = "gssapi")]
            SaslMechanism::Gssapi { service, .. } if service.is_empty() => {
                Err(Error::invalid("SASL GSSAPI: the service must not be empty"))
            }
            #[cfg(feature = "gssapi")]
            SaslMechanism::Gssapi { .. } => Ok(()),
        }
    }

    pub(crate) fn wire(&self) -> zk::SaslOptions {
        match &self.mechanism {
            SaslMechanism::DigestMd5 { username, password } => {
                zk::SaslOptions::digest_md5(username.clone(), password.clone()).into()
            }
            #[cfg(feature = "gssapi")]
            SaslMechanism::Gssapi { service, hostname } => {
                let options = zk::SaslOptions::gssapi().with_username(service.clone());
                match hostname {
                    Some(h) => options.with_hostname(h.clone()).into(),
                    None => options.into(),
                }
            }
        }
    }
}

impl fmt::Debug for SaslOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SaslOptions")
            .field("mechanism", &self.mechanism())
            .field("username", &self.username())
            .field("password", &"<hidden>")
            .finish()
    }
}

type AclFn = dyn Fn(&str) -> Result<Option<Vec<Acl>>> + Send + Sync;

/// Curator's ACLProvider: the ACL of each node the client creates (recipes' nodes, parents and
/// the namespace's included), chosen by the node's server-side path (namespace included, as
/// Curator passes it).
///
/// Lookup: a function if one is set and it answers; else the longest path rule that is the
/// path itself or one of its ancestors; else the default ACL. An ACL given to one `create`
/// (or one transaction create) wins over the provider.
#[derive(Clone)]
pub struct AclProvider {
    default: Vec<Acl>,
    rules: Vec<(String, Vec<Acl>)>,
    func: Option<Arc<AclFn>>,
}

impl AclProvider {
    /// A provider with `default` for every path.
    pub fn new(default: Vec<Acl>) -> AclProvider {
        AclProvider {
            default,
            rules: Vec::new(),
            func: None,
        }
    }

    /// `acl` for `prefix` and every node below it (a path rule; the longest match wins).
    /// `"/"` is a rule for every node; an empty prefix is refused (`InvalidArgument` from
    /// connect), not taken for `"/"`.
    pub fn with_path(mut self, prefix: impl Into<String>, acl: Vec<Acl>) -> AclProvider {
        let prefix = prefix.into();
        let prefix = match prefix.trim_end_matches('/') {
            "" if prefix.is_empty() => prefix,
            "" => "/".to_string(),
            p => p.to_string(),
        };
        self.rules.retain(|(p, _)| *p != prefix);
        self.rules.push((prefix, acl));
        self
    }

    /// `f(path)` chooses the ACL; `Ok(None)` falls back to the path rules and the default. An
    /// error (or an empty list) fails the create with it, before anything is sent: a node is
    /// never created with an ACL its provider did not choose. Called on the client's runtime
    /// for each create: keep it quick.
    pub fn with_fn(
        mut self,
        f: impl Fn(&str) -> Result<Option<Vec<Acl>>> + Send + Sync + 'static,
    ) -> AclProvider {
        self.func = Some(Arc::new(f));
        self
    }

    /// The default ACL (Curator's `getDefaultAcl`).
    pub fn default_acl(&self) -> &[Acl] {
        &self.default
    }

    /// The path rules, in the order given.
    pub fn rules(&self) -> &[(String, Vec<Acl>)] {
        &self.rules
    }

    /// Whether only the default applies (no rules, no function).
    pub(crate) fn is_default_only(&self) -> bool {
        self.rules.is_empty() && self.func.is_none()
    }

    /// The ACL for `path` (Curator's `getAclForPath`), server-side path; the function's error,
    /// or `InvalidArgument` if it chose an empty list.
    pub fn acl_for_path(&self, path: &str) -> Result<Vec<Acl>> {
        if let Some(f) = &self.func {
            match f(path) {
                Ok(Some(acl)) if acl.is_empty() => {
                    return Err(Error::invalid(format!(
                        "the ACL provider chose an empty ACL for {path}"
                    )))
                }
                Ok(Some(acl)) => return Ok(acl),
                Ok(None) => {}
                Err(e) => return Err(e.context(format!("the ACL provider, for {path}"))),
            }
        }
        Ok(self
            .rule_for(path)
            .map(<[Acl]>::to_vec)
            .unwrap_or_else(|| self.default.clone()))
    }

    fn rule_for(&self, path: &str) -> Option<&[Acl]> {
        self.rules
            .iter()
            .filter(|(prefix, _)| {
                prefix == "/"
                    || path == prefix
                    || path
                        .strip_prefix(prefix.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            })
            .max_by_key(|(prefix, _)| prefix.len())
            .map(|(_, acl)| acl.as_slice())
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.default.is_empty() {
            return Err(Error::invalid(
                "the ACL list for created nodes must not be empty",
            ));
        }
        for (prefix, acl) in &self.rules {
            if prefix.is_empty() {
                return Err(Error::invalid(
                    "ACL provider: a path rule's prefix is empty: write \"/\" for a rule for every node",
                ));
            }
            if !prefix.starts_with('/') {
                return Err(Error::invalid(format!(
                    "ACL provider: the path rule {prefix:?} must be an absolute path"
                )));
            }
            if acl.is_empty() {
                return Err(Error::invalid(format!(
                    "ACL provider: the ACL for {prefix:?} must not be empty"
                )));
            }
        }
        Ok(())
    }
}

impl Default for AclProvider {
    fn default() -> AclProvider {
        AclProvider::new(Acl::open())
    }
}

impl fmt::Debug for AclProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AclProvider")
            .field("default", &self.default)
            .field("rules", &self.rules)
            .field("func", &self.func.as_ref().map(|_| "<fn>"))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Permission;

    #[test]
    fn pem_arguments_are_text_when_they_hold_pem_or_a_line_break() {
        assert!(matches!(Pem::from_arg("/etc/ca.pem"), Pem::File(_)));
        assert!(matches!(
            Pem::from_arg("  -----BEGIN CERTIFICATE-----\nxyz"),
            Pem::Text(_)
        ));
        assert_eq!(
            format!("{:?}", Pem::from_arg("-----BEGIN PRIVATE KEY-----\nsecret")),
            "Text(34 bytes)"
        );
        // Text before the first marker (OpenSSL's Bag Attributes, a byte order mark), or any
        // line break: text, never a path.
        for text in [
            "Bag Attributes\n    localKeyID: 01\n-----BEGIN PRIVATE KEY-----\nx",
            "\u{feff}-----BEGIN CERTIFICATE-----\nx",
            "no marker\nsecret",
            "secret\r",
        ] {
            assert!(matches!(Pem::from_arg(text), Pem::Text(_)), "{text:?}");
        }
        assert!(matches!(Pem::from_arg("relative/ca.pem"), Pem::File(_)));
        for empty in [Pem::from_arg(""), Pem::text(""), Pem::text(" \n")] {
            let e = empty.read("TLS CA").unwrap_err();
            assert!(
                e.message().contains("the TLS CA is empty"),
                "{empty:?}: {e}"
            );
        }
        assert!(matches!(Pem::text("/etc/ca.pem"), Pem::Text(_)));
        // What a face may show: a path as given, nothing of a secret.
        assert_eq!(Pem::from_arg("/etc/ca.pem").redacted(), None);
        assert_eq!(
            Pem::from_arg("-----BEGIN PRIVATE KEY-----\nk")
                .redacted()
                .as_deref(),
            Some("PEM text, 29 bytes")
        );
        assert_eq!(
            Pem::from_arg("QUJD".repeat(20)).redacted().as_deref(),
            Some("80 bytes, not a file path")
        );
        // A byte order mark is dropped when read.
        let read = Pem::from_arg("\u{feff}-----BEGIN CERTIFICATE-----\n").read("TLS CA");
        assert_eq!(read.unwrap(), "-----BEGIN CERTIFICATE-----\n");
    }

    #[test]
    fn a_path_that_cannot_be_one_is_never_shown() {
        let shown = |p: &str| format!("{:?}", Pem::File(p.into()));
        assert_eq!(shown("/etc/zk/ca.pem"), "File(\"/etc/zk/ca.pem\")");
        let key_line = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgSECRETSECRETSECRET";
        let long = format!("/{}", "a".repeat(300));
        for secret in ["SECRET\nkey", key_line, long.as_str()] {
            let d = shown(secret);
            assert!(d.contains("bytes, not a file path"), "{d}");
            assert!(!d.contains("SECRET") && !d.contains("aaaa"), "{d}");
            let e = Pem::File(secret.into()).read("TLS client key").unwrap_err();
            assert!(
                !e.message().contains("SECRET") && !e.message().contains("aaaa"),
                "{e}"
            );
            assert!(e.message().contains("not a file path"), "{e}");
        }
    }

    #[test]
    fn the_longest_path_rule_wins_and_a_function_wins_over_rules() {
        let read = vec![Acl::new(Permission::READ, "world", "anyone")];
        let p = AclProvider::new(Acl::open())
            .with_path("/app", Acl::creator_all())
            .with_path("/app/public/", read.clone());
        let acl = |p: &AclProvider, path| p.acl_for_path(path).unwrap();
        assert_eq!(acl(&p, "/other"), Acl::open());
        assert_eq!(acl(&p, "/app"), Acl::creator_all());
        assert_eq!(acl(&p, "/app/x"), Acl::creator_all());
        assert_eq!(acl(&p, "/application"), Acl::open());
        assert_eq!(acl(&p, "/app/public/y"), read);
        let f = p.with_fn(|path| match path {
            "/app/x" => Ok(Some(Acl::read_only())),
            "/app/empty" => Ok(Some(vec![])),
            "/app/bad" => Err(Error::invalid("no")),
            _ => Ok(None),
        });
        assert_eq!(acl(&f, "/app/x"), Acl::read_only());
        assert_eq!(acl(&f, "/app/y"), Acl::creator_all());
        assert!(f.acl_for_path("/app/empty").is_err());
        let e = f.acl_for_path("/app/bad").unwrap_err();
        assert_eq!(e.message(), "the ACL provider, for /app/bad: no");
    }

    #[test]
    fn sasl_options_hide_the_password_and_refuse_unknown_mechanisms() {
        let s = SaslOptions::new("digest-md5", "alice", "s3cret").unwrap();
        assert_eq!(s.mechanism(), "DIGEST-MD5");
        assert!(!format!("{s:?}").contains("s3cret"));
        let e = SaslOptions::new("PLAIN", "a", "b").unwrap_err();
        assert!(e.message().contains("DIGEST-MD5"), "{e}");
    }

    /// GSSAPI takes its credentials from the ticket cache: a password, or the user's own
    /// principal where the service's primary goes, is refused rather than dropped or misread.
    #[cfg(feature = "gssapi")]
    #[test]
    fn gssapi_refuses_a_password_and_a_principal_for_the_service() {
        assert_eq!(
            SaslOptions::new("gssapi", "", "").unwrap().mechanism(),
            "GSSAPI"
        );
        assert!(SaslOptions::new("GSSAPI", "zk", "").is_ok());
        let e = SaslOptions::new("GSSAPI", "", "secret").unwrap_err();
        assert!(e.message().contains("takes no password"), "{e}");
        assert!(!e.message().contains("secret"), "{e}");
        let e = SaslOptions::new("GSSAPI", "alice@EXAMPLE.COM", "").unwrap_err();
        assert!(e.message().contains("is a principal"), "{e}");
    }
}
