//! Client options: retry policies, ACL and authentication, and the versioned options struct.

use std::ffi::c_char;
use std::ptr;
use std::time::Duration;

use zkrecipes::{
    timeout, Acl, AclProvider, ClientBuilder, Error, Pem, Permission, Result, RetryPolicy,
    SaslOptions, TlsOptions,
};

use crate::boundary::{arg_opt_str, arg_out, arg_slice, arg_str, ffi_boundary, ffi_call};
use crate::status::zkr_status;

// ---------------------------------------------------------------------------------------------
// Retry policies

/// Which retry policy a zkr_retry_policy describes (Curator's six).
pub type zkr_retry_kind = u32;
/// `base_sleep_ms * max(1, random(1 << (n + 1)))`, at most `max_sleep_ms` (0: no cap),
/// `max_retries` times (at most 29). Curator's ExponentialBackoffRetry; the default policy.
pub const ZKR_RETRY_EXPONENTIAL_BACKOFF: zkr_retry_kind = 1;
/// Like ZKR_RETRY_EXPONENTIAL_BACKOFF with every sleep bounded by `max_sleep_ms`
/// (BoundedExponentialBackoffRetry).
pub const ZKR_RETRY_BOUNDED_EXPONENTIAL_BACKOFF: zkr_retry_kind = 2;
/// `max_retries` retries, `sleep_ms` apart (RetryNTimes).
pub const ZKR_RETRY_N_TIMES: zkr_retry_kind = 3;
/// One retry after `sleep_ms` (RetryOneTime).
pub const ZKR_RETRY_ONE_TIME: zkr_retry_kind = 4;
/// Retries `sleep_ms` apart while less than `max_elapsed_ms` has passed (RetryUntilElapsed).
pub const ZKR_RETRY_UNTIL_ELAPSED: zkr_retry_kind = 5;
/// Retries forever, `sleep_ms` apart (RetryForever).
pub const ZKR_RETRY_FOREVER: zkr_retry_kind = 6;

/// How operations that failed with a connection loss are tried again. Make one with a
/// `zkr_retry_*` function; the fields a kind does not use are ignored.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct zkr_retry_policy {
    /// One of the ZKR_RETRY_* constants.
    pub kind: zkr_retry_kind,
    /// Retries after the first try (EXPONENTIAL_BACKOFF, BOUNDED_EXPONENTIAL_BACKOFF, N_TIMES).
    pub max_retries: u32,
    /// The base sleep (EXPONENTIAL_BACKOFF, BOUNDED_EXPONENTIAL_BACKOFF).
    pub base_sleep_ms: i64,
    /// The longest single sleep (BOUNDED_EXPONENTIAL_BACKOFF; EXPONENTIAL_BACKOFF, 0 = no cap).
    pub max_sleep_ms: i64,
    /// The sleep between tries (N_TIMES, ONE_TIME, UNTIL_ELAPSED, FOREVER).
    pub sleep_ms: i64,
    /// How long to keep retrying (UNTIL_ELAPSED).
    pub max_elapsed_ms: i64,
}

impl zkr_retry_policy {
    /// A policy of `kind` with every field 0 (what the constructors fill in).
    const fn of(kind: zkr_retry_kind) -> zkr_retry_policy {
        zkr_retry_policy {
            kind,
            max_retries: 0,
            base_sleep_ms: 0,
            max_sleep_ms: 0,
            sleep_ms: 0,
            max_elapsed_ms: 0,
        }
    }
}

/// The panic boundary of the constructors (they cannot fail: a bad value is reported when the
/// policy is used).
fn retry(function: &str, policy: zkr_retry_policy) -> zkr_retry_policy {
    ffi_boundary(function, zkr_retry_policy::of(0), || policy)
}

/// Curator's ExponentialBackoffRetry(base_sleep_ms, max_retries, max_sleep_ms); max_sleep_ms 0 =
/// no cap. The default is (1000, 3, 0).
#[no_mangle]
pub extern "C" fn zkr_retry_exponential_backoff(
    base_sleep_ms: i64,
    max_retries: u32,
    max_sleep_ms: i64,
) -> zkr_retry_policy {
    retry(
        "zkr_retry_exponential_backoff",
        zkr_retry_policy {
            base_sleep_ms,
            max_retries,
            max_sleep_ms,
            ..zkr_retry_policy::of(ZKR_RETRY_EXPONENTIAL_BACKOFF)
        },
    )
}

/// Curator's BoundedExponentialBackoffRetry(base_sleep_ms, max_sleep_ms, max_retries).
#[no_mangle]
pub extern "C" fn zkr_retry_bounded_exponential_backoff(
    base_sleep_ms: i64,
    max_sleep_ms: i64,
    max_retries: u32,
) -> zkr_retry_policy {
    retry(
        "zkr_retry_bounded_exponential_backoff",
        zkr_retry_policy {
            base_sleep_ms,
            max_sleep_ms,
            max_retries,
            ..zkr_retry_policy::of(ZKR_RETRY_BOUNDED_EXPONENTIAL_BACKOFF)
        },
    )
}

/// Curator's RetryNTimes(n, sleep_ms).
#[no_mangle]
pub extern "C" fn zkr_retry_n_times(n: u32, sleep_ms: i64) -> zkr_retry_policy {
    retry(
        "zkr_retry_n_times",
        zkr_retry_policy {
            max_retries: n,
            sleep_ms,
            ..zkr_retry_policy::of(ZKR_RETRY_N_TIMES)
        },
    )
}

/// Curator's RetryOneTime(sleep_ms).
#[no_mangle]
pub extern "C" fn zkr_retry_one_time(sleep_ms: i64) -> zkr_retry_policy {
    retry(
        "zkr_retry_one_time",
        zkr_retry_policy {
            sleep_ms,
            ..zkr_retry_policy::of(ZKR_RETRY_ONE_TIME)
        },
    )
}

/// Curator's RetryUntilElapsed(max_elapsed_ms, sleep_ms).
#[no_mangle]
pub extern "C" fn zkr_retry_until_elapsed(max_elapsed_ms: i64, sleep_ms: i64) -> zkr_retry_policy {
    retry(
        "zkr_retry_until_elapsed",
        zkr_retry_policy {
            max_elapsed_ms,
            sleep_ms,
            ..zkr_retry_policy::of(ZKR_RETRY_UNTIL_ELAPSED)
        },
    )
}

/// Curator's RetryForever(sleep_ms).
#[no_mangle]
pub extern "C" fn zkr_retry_forever(sleep_ms: i64) -> zkr_retry_policy {
    retry(
        "zkr_retry_forever",
        zkr_retry_policy {
            sleep_ms,
            ..zkr_retry_policy::of(ZKR_RETRY_FOREVER)
        },
    )
}

fn non_negative_ms(ms: i64, what: &str) -> Result<Duration> {
    if ms < 0 {
        Err(Error::InvalidArgument(
            format!("retry policy: {what} is {ms} ms; it must not be negative").into(),
        ))
    } else {
        Ok(Duration::from_millis(ms as u64))
    }
}

impl zkr_retry_policy {
    pub(crate) fn to_core(self) -> Result<RetryPolicy> {
        let ms = non_negative_ms;
        let policy = match self.kind {
            ZKR_RETRY_EXPONENTIAL_BACKOFF => {
                let mut p =
                    RetryPolicy::exponential_backoff(ms(self.base_sleep_ms, "base_sleep_ms")?, 0);
                if let RetryPolicy::ExponentialBackoff {
                    max_retries,
                    max_sleep,
                    ..
                } = &mut p
                {
                    // Not clamped silently: a number above Curator's limit is reported by validate().
                    *max_retries = self.max_retries;
                    if self.max_sleep_ms != 0 {
                        *max_sleep = ms(self.max_sleep_ms, "max_sleep_ms")?;
                    }
                }
                p
            }
            ZKR_RETRY_BOUNDED_EXPONENTIAL_BACKOFF => RetryPolicy::BoundedExponentialBackoff {
                base_sleep: ms(self.base_sleep_ms, "base_sleep_ms")?,
                max_sleep: ms(self.max_sleep_ms, "max_sleep_ms")?,
                max_retries: self.max_retries,
            },
            ZKR_RETRY_N_TIMES => RetryPolicy::NTimes {
                n: self.max_retries,
                sleep: ms(self.sleep_ms, "sleep_ms")?,
            },
            ZKR_RETRY_ONE_TIME => RetryPolicy::OneTime {
                sleep: ms(self.sleep_ms, "sleep_ms")?,
            },
            ZKR_RETRY_UNTIL_ELAPSED => RetryPolicy::UntilElapsed {
                max_elapsed: ms(self.max_elapsed_ms, "max_elapsed_ms")?,
                sleep: ms(self.sleep_ms, "sleep_ms")?,
            },
            ZKR_RETRY_FOREVER => RetryPolicy::Forever {
                sleep: ms(self.sleep_ms, "sleep_ms")?,
            },
            other => {
                return Err(Error::InvalidArgument(
                    format!("retry policy: unknown kind {other}; use a zkr_retry_* function")
                        .into(),
                ))
            }
        };
        policy.validate()?;
        Ok(policy)
    }
}

// ---------------------------------------------------------------------------------------------
// ACL, authentication, options

/// The layout version of zkr_client_options this header describes. Version 2 added `acl`,
/// `acl_len`, `auth` and `auth_len` at the end; version 3 the TLS, SASL and ACL-provider fields
/// after them; version 4 `max_request_bytes`; version 5 `track_ensemble`. Programs built with an older version keep working
/// (the new fields take their defaults).
pub const ZKR_CLIENT_OPTIONS_VERSION: u32 = 5;

/// ZooKeeper's permission bits (ZooDefs.Perms), for zkr_acl.perms: read data and children.
pub const ZKR_PERM_READ: u32 = 1;
/// Set data.
pub const ZKR_PERM_WRITE: u32 = 2;
/// Create children.
pub const ZKR_PERM_CREATE: u32 = 4;
/// Delete children.
pub const ZKR_PERM_DELETE: u32 = 8;
/// Set the ACL.
pub const ZKR_PERM_ADMIN: u32 = 16;
/// Every permission.
pub const ZKR_PERM_ALL: u32 = 31;

/// One ACL entry (ZooKeeper's ACL): `perms` granted to `id` in `scheme`. Common entries:
/// `{ZKR_PERM_ALL, "world", "anyone"}` (OPEN_ACL_UNSAFE, the default),
/// `{ZKR_PERM_ALL, "auth", ""}` (CREATOR_ALL_ACL: the identities the session authenticated as),
/// `{ZKR_PERM_READ, "world", "anyone"}` (READ_ACL_UNSAFE),
/// `{ZKR_PERM_ALL, "digest", "user:base64(sha1(user:password))"}`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct zkr_acl {
    /// A combination of ZKR_PERM_* bits (1..31).
    pub perms: u32,
    /// The scheme: "world", "auth", "digest", "ip", ... Not NULL.
    pub scheme: *const c_char,
    /// The id within the scheme ("anyone", "", "user:hash", "10.0.0.0/8"). Not NULL.
    pub id: *const c_char,
}

/// One path rule of the client's ACL provider (Curator's ACLProvider): nodes at `prefix` and
/// below it (server-side paths, namespace included) get `acl` instead of the default ACL; the
/// longest matching prefix wins.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct zkr_acl_rule {
    /// An absolute path. Not NULL.
    pub prefix: *const c_char,
    /// `acl_len` entries (> 0).
    pub acl: *const zkr_acl,
    /// The number of entries at `acl`.
    pub acl_len: usize,
}

/// One authentication entry added to the session (ZooKeeper's addAuthInfo).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct zkr_auth {
    /// The scheme, e.g. "digest". Not NULL.
    pub scheme: *const c_char,
    /// The credentials, e.g. "user:password" for digest.
    pub credentials: *const u8,
    /// Length of `credentials` in bytes.
    pub credentials_len: usize,
}

/// Client options. Always start from zkr_client_options_init(&opts), which sets `size` and
/// `version` and every default; then change the fields you need. The struct may grow at its end in
/// later versions: `size` tells the library how much of it your program knows, so programs built
/// against an older header keep working.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct zkr_client_options {
    /// sizeof(zkr_client_options) as your program sees it (set by zkr_client_options_init).
    pub size: usize,
    /// ZKR_CLIENT_OPTIONS_VERSION as your program saw it (set by zkr_client_options_init).
    pub version: u32,
    /// Allow connecting to a read-only server (state ZKR_STATE_READ_ONLY). Default false.
    pub can_be_read_only: bool,
    /// Session timeout asked of the server, > 0. Default 60000.
    pub session_timeout_ms: i64,
    /// How long to wait for a connection, at start and before each try of an operation, > 0.
    /// Default 15000.
    pub connection_timeout_ms: i64,
    /// The retry policy. Default zkr_retry_exponential_backoff(1000, 3, 0).
    pub retry: zkr_retry_policy,
    /// Curator's namespace: every path is relative to "/<namespace_name>". NULL (default): none.
    /// Read during zkr_client_connect only.
    pub namespace_name: *const c_char,
    /// Authentication scheme, e.g. "digest". NULL (default): no authentication.
    pub auth_scheme: *const c_char,
    /// Authentication credentials, e.g. "user:password" for digest.
    pub auth_credentials: *const u8,
    /// Length of `auth_credentials` in bytes.
    pub auth_credentials_len: usize,
    /// (version 2) The ACL given to every node this client creates, recipes' nodes and the parents
    /// they create included: `acl_len` entries. NULL (default): world:anyone, all permissions
    /// (OPEN_ACL_UNSAFE). Read during zkr_client_connect only (the library keeps a copy).
    pub acl: *const zkr_acl,
    /// (version 2) The number of entries at `acl` (0 with NULL; > 0 otherwise).
    pub acl_len: usize,
    /// (version 2) More authentication entries, `auth_len` of them, added after the one in
    /// `auth_scheme` (if any): a session may hold several identities. NULL (default): none.
    /// Read during zkr_client_connect only.
    pub auth: *const zkr_auth,
    /// (version 2) The number of entries at `auth`.
    pub auth_len: usize,
    /// (version 3) Connect over TLS (ZooKeeper's secureClientPort). Default false. Each PEM field
    /// below is a file path (read again at each new connection, so a certificate rotated on disk
    /// is used from the next reconnection on) or PEM text (a string holding `-----BEGIN` anywhere,
    /// or a line break: text such as OpenSSL's `Bag Attributes` may come first; error messages
    /// never show PEM text). Bad files, garbage PEM, an encrypted key or a key that does not match the
    /// certificate are ZKR_INVALID_ARGUMENT from zkr_client_connect, before any connection.
    pub tls: bool,
    /// (version 3) The CA certificate(s) that sign the servers' certificates. NULL (default):
    /// the system's trust store.
    pub tls_ca: *const c_char,
    /// (version 3) This client's certificate (for servers with ssl.clientAuth; its subject is the
    /// client's `x509` identity in ACLs). NULL (default): none. Needs `tls_key`.
    pub tls_cert: *const c_char,
    /// (version 3) The certificate's unencrypted private key (PKCS#8, RSA or EC). NULL: none.
    pub tls_key: *const c_char,
    /// (version 3) Do not check that the server's certificate names the host it is reached at
    /// (the chain is still checked; a man-in-the-middle risk). Default false. Only with `tls`
    /// (set without it: ZKR_INVALID_ARGUMENT, as the PEM fields).
    pub tls_skip_hostname_verification: bool,
    /// (version 3) Only hosts written `tcp+tls://host:port` speak TLS; the others plaintext.
    /// Default false: every host speaks TLS. No silent plaintext: with `tls`, a host written
    /// `tcp://` (this false) or a connect string with no `tcp+tls://` host (this true) is
    /// ZKR_INVALID_ARGUMENT, as is a `tcp+tls://` host without `tls`.
    pub tls_marked_hosts_only: bool,
    /// (version 3) The SASL mechanism ("DIGEST-MD5"). NULL (default): no SASL, unless
    /// `sasl_username` is set (then DIGEST-MD5).
    pub sasl_mechanism: *const c_char,
    /// (version 3) The SASL user. NULL (default): no SASL. A refusal is ZKR_AUTH_FAILED from
    /// zkr_client_connect, at once and never retried.
    pub sasl_username: *const c_char,
    /// (version 3) The SASL password (read during zkr_client_connect only).
    pub sasl_password: *const c_char,
    /// (version 3) ACL-provider path rules, `acl_rules_len` of them: nodes below a rule's prefix
    /// get its ACL instead of `acl`. NULL (default): none. Read during zkr_client_connect only.
    pub acl_rules: *const zkr_acl_rule,
    /// (version 3) The number of entries at `acl_rules`.
    pub acl_rules_len: usize,
    /// (version 4) The largest request the client sends, in bytes on the wire (path, data, ACL
    /// and framing), at least 1024. Default 1048575 (0xfffff, the server's default
    /// jute.maxbuffer). A bigger request is ZKR_INVALID_ARGUMENT before it is sent (the server
    /// would drop the connection). Raise it only together with the servers' jute.maxbuffer.
    pub max_request_bytes: usize,
    /// (version 5) Follow the ensemble's configuration (Curator's EnsembleTracker): the client
    /// reads /zookeeper/config at each connection and each change, and its server list becomes
    /// the members' client addresses (zkr_client_current_connect_string), so members added or
    /// removed by a reconfiguration are used without ending the session. Default false. Not
    /// with `tls` (the configuration names only plaintext client ports: ZKR_INVALID_ARGUMENT).
    pub track_ensemble: bool,
}

fn default_options() -> zkr_client_options {
    zkr_client_options {
        size: std::mem::size_of::<zkr_client_options>(),
        version: ZKR_CLIENT_OPTIONS_VERSION,
        can_be_read_only: false,
        session_timeout_ms: 60_000,
        connection_timeout_ms: 15_000,
        retry: zkr_retry_exponential_backoff(1000, 3, 0),
        namespace_name: ptr::null(),
        auth_scheme: ptr::null(),
        auth_credentials: ptr::null(),
        auth_credentials_len: 0,
        acl: ptr::null(),
        acl_len: 0,
        auth: ptr::null(),
        auth_len: 0,
        tls: false,
        tls_ca: ptr::null(),
        tls_cert: ptr::null(),
        tls_key: ptr::null(),
        tls_skip_hostname_verification: false,
        tls_marked_hosts_only: false,
        sasl_mechanism: ptr::null(),
        sasl_username: ptr::null(),
        sasl_password: ptr::null(),
        acl_rules: ptr::null(),
        acl_rules_len: 0,
        max_request_bytes: zkrecipes::client::DEFAULT_MAX_REQUEST_BYTES,
        track_ensemble: false,
    }
}

/// Fills `opts` with the defaults (API.md's): session timeout 60 s, connection timeout 15 s,
/// exponential backoff 1 s × 3 retries, no namespace, no authentication, not read-only, the ACL
/// world:anyone (all permissions).
///
/// In C and C++ `zkr_client_options_init(&opts)` is a macro of this header that calls
/// zkr_client_options_init_sized with your program's sizeof(zkr_client_options) and
/// ZKR_CLIENT_OPTIONS_VERSION. This function is the exported symbol of programs built before
/// that macro (and of `(zkr_client_options_init)(&opts)`): it fills the whole struct as this
/// library lays it out, so it suits only a struct of this header's version.
///
/// `opts` may point to uninitialized memory.
#[no_mangle]
pub extern "C" fn zkr_client_options_init(opts: *mut zkr_client_options) -> zkr_status {
    ffi_call("zkr_client_options_init", || {
        arg_out(opts, "opts")?.write(default_options());
        Ok(())
    })
}

/// Fills the first `size` bytes of `opts` with the defaults (see zkr_client_options_init), for a
/// program whose header describes options version `version` in `size` bytes; `opts->size` and
/// `opts->version` get your values, so zkr_client_connect later reads only what your program
/// knows. Nothing past `size` bytes is written: a program built against an older header may
/// pass its smaller struct to a newer library. Call it through the `zkr_client_options_init`
/// macro, which passes sizeof(zkr_client_options) and ZKR_CLIENT_OPTIONS_VERSION as your
/// program sees them.
///
/// ZKR_INVALID_ARGUMENT (nothing written): `opts` NULL; `size` smaller than the `size` and
/// `version` fields; `version` 0; or a struct from a newer header than this library (a larger
/// `size` or `version` than its own: link the matching library).
///
/// `opts` may point to uninitialized memory.
#[no_mangle]
pub extern "C" fn zkr_client_options_init_sized(
    opts: *mut zkr_client_options,
    size: usize,
    version: u32,
) -> zkr_status {
    ffi_call("zkr_client_options_init_sized", || {
        let out = crate::boundary::non_null(opts, "opts")?;
        caller_layout(size, version).map_err(|e| {
            Error::InvalidArgument(
                match e {
                    Layout::Unknown => format!(
                    "size {size} and version {version} describe no zkr_client_options: use the \
                     zkr_client_options_init(&opts) macro of zkrecipes.h"
                ),
                    newer => newer.to_string(),
                }
                .into(),
            )
        })?;
        let defaults = zkr_client_options {
            size,
            version,
            ..default_options()
        };
        // SAFETY: `out` is non-NULL and, by contract, points to at least `size` writable bytes
        // (the caller's struct); `size` is at most our struct's size (checked), so both ranges
        // are whole, and they cannot overlap (`defaults` is a local).
        unsafe {
            ptr::copy_nonoverlapping(
                ptr::from_ref(&defaults).cast::<u8>(),
                out.as_ptr().cast::<u8>(),
                size,
            );
        }
        Ok(())
    })
}

/// Why a caller's `size` and `version` cannot be read ([`caller_layout`]).
enum Layout {
    /// Too small for the two fields, or version 0: not filled by an init.
    Unknown,
    /// From a newer header than this library's.
    Newer { size: usize, version: u32 },
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Layout::Unknown => write!(f, "opts is not initialized: call zkr_client_options_init(&opts) first"),
            Layout::Newer { size, version } => write!(
                f,
                "opts come from a newer zkrecipes header (options version {version}, {size} bytes) than this \
                 library {} (version {ZKR_CLIENT_OPTIONS_VERSION}); link the matching library",
                zkrecipes::VERSION
            ),
        }
    }
}

/// The one rule for a caller's struct: how many of its bytes this library takes, given the
/// `size` and `version` its header gave it. A version-1 program knows nothing past
/// auth_credentials_len, a version-2 one nothing past auth_len, a version-3 one nothing past
/// acl_rules_len, a version-4 one nothing past max_request_bytes, whatever its `size` says.
fn caller_layout(size: usize, version: u32) -> std::result::Result<usize, Layout> {
    let header = std::mem::size_of::<usize>() + std::mem::size_of::<u32>();
    if size < header || version == 0 {
        return Err(Layout::Unknown);
    }
    if version > ZKR_CLIENT_OPTIONS_VERSION || size > std::mem::size_of::<zkr_client_options>() {
        return Err(Layout::Newer { size, version });
    }
    Ok(match version {
        1 => size.min(std::mem::offset_of!(zkr_client_options, acl)),
        2 => size.min(std::mem::offset_of!(zkr_client_options, tls)),
        3 => size.min(std::mem::offset_of!(zkr_client_options, max_request_bytes)),
        4 => size.min(std::mem::offset_of!(zkr_client_options, track_ensemble)),
        _ => size,
    })
}

/// Reads the caller's options, taking only the bytes its `size` covers.
///
/// # Safety
/// `opts` is NULL or points to at least `size` readable bytes, `size` being its first field.
pub(crate) unsafe fn read_options(opts: *const zkr_client_options) -> Result<zkr_client_options> {
    let mut merged = default_options();
    if opts.is_null() {
        return Ok(merged);
    }
    // SAFETY: `size` and `version` come first in every version of the struct, so a caller's
    // struct has them whatever header it was built with.
    let (size, version) = unsafe {
        (
            ptr::read_unaligned(opts.cast::<usize>()),
            ptr::read_unaligned(
                opts.cast::<u8>()
                    .add(std::mem::size_of::<usize>())
                    .cast::<u32>(),
            ),
        )
    };
    let size =
        caller_layout(size, version).map_err(|e| Error::InvalidArgument(e.to_string().into()))?;
    // SAFETY: the caller's struct has `size` readable bytes (checked to be at most ours), and
    // `merged` is a whole struct of ours.
    unsafe {
        ptr::copy_nonoverlapping(
            opts.cast::<u8>(),
            ptr::from_mut(&mut merged).cast::<u8>(),
            size,
        );
    }
    Ok(merged)
}

/// The core's builder for `hosts` with the caller's options (their pointers read through the
/// boundary's helpers).
pub(crate) fn builder(hosts: &str, o: &zkr_client_options) -> Result<ClientBuilder> {
    let mut b = ClientBuilder::new(hosts)
        .session_timeout(timeout::positive_millis(
            o.session_timeout_ms,
            "opts.session_timeout_ms",
        )?)
        .connection_timeout(timeout::positive_millis(
            o.connection_timeout_ms,
            "opts.connection_timeout_ms",
        )?)
        .retry_policy(o.retry.to_core()?)
        .can_be_read_only(o.can_be_read_only)
        .max_request_bytes(o.max_request_bytes)
        .track_ensemble(o.track_ensemble);
    {
        if let Some(ns) = arg_opt_str(o.namespace_name, "opts.namespace_name")? {
            b = b.namespace(ns);
        }
        if let Some(scheme) = arg_opt_str(o.auth_scheme, "opts.auth_scheme")? {
            let cred = arg_slice(
                o.auth_credentials,
                o.auth_credentials_len,
                "opts.auth_credentials",
            )?;
            b = b.auth(scheme, cred.to_vec());
        }
        for (i, a) in arg_slice(o.auth, o.auth_len, "opts.auth")?
            .iter()
            .enumerate()
        {
            let scheme = scheme_arg(a.scheme, &format!("opts.auth[{i}].scheme"))?;
            let cred = arg_slice(
                a.credentials,
                a.credentials_len,
                &format!("opts.auth[{i}].credentials"),
            )?;
            b = b.auth(scheme, cred.to_vec());
        }
        let default = if !o.acl.is_null() || o.acl_len != 0 {
            acl_list(o.acl, o.acl_len, "opts.acl")?
        } else {
            Acl::open()
        };
        let mut provider = AclProvider::new(default);
        for (i, r) in arg_slice(o.acl_rules, o.acl_rules_len, "opts.acl_rules")?
            .iter()
            .enumerate()
        {
            let prefix = arg_str(r.prefix, &format!("opts.acl_rules[{i}].prefix"))?;
            let acl = acl_list(r.acl, r.acl_len, &format!("opts.acl_rules[{i}].acl"))?;
            provider = provider.with_path(prefix, acl);
        }
        b = b.acl_provider(provider);
        let tls_field = |p, what| arg_opt_str(p, what).map(|s| s.map(Pem::from_arg));
        let (ca, cert, key) = (
            tls_field(o.tls_ca, "opts.tls_ca")?,
            tls_field(o.tls_cert, "opts.tls_cert")?,
            tls_field(o.tls_key, "opts.tls_key")?,
        );
        if o.tls {
            let mut tls = TlsOptions::new()
                .verify_hostname(!o.tls_skip_hostname_verification)
                .every_host(!o.tls_marked_hosts_only);
            if let Some(ca) = ca {
                tls = tls.ca(ca);
            }
            if let Some(cert) = cert {
                tls = tls.cert(cert);
            }
            if let Some(key) = key {
                tls = tls.key(key);
            }
            b = b.tls(tls);
        } else if ca.is_some()
            || cert.is_some()
            || key.is_some()
            || o.tls_skip_hostname_verification
            || o.tls_marked_hosts_only
        {
            return Err(Error::InvalidArgument(
                "opts.tls_ca, tls_cert, tls_key, tls_skip_hostname_verification or \
                 tls_marked_hosts_only is set but opts.tls is false: set opts.tls = true"
                    .into(),
            ));
        }
        let mechanism = arg_opt_str(o.sasl_mechanism, "opts.sasl_mechanism")?;
        if let Some(user) = arg_opt_str(o.sasl_username, "opts.sasl_username")? {
            let password =
                arg_opt_str(o.sasl_password, "opts.sasl_password")?.ok_or_else(|| {
                    Error::InvalidArgument(
                        "opts.sasl_username is set without opts.sasl_password".into(),
                    )
                })?;
            b = b.sasl(SaslOptions::new(
                mechanism.unwrap_or("DIGEST-MD5"),
                user,
                password,
            )?);
        } else if mechanism.is_some() {
            return Err(Error::InvalidArgument(
                "opts.sasl_mechanism is set without opts.sasl_username".into(),
            ));
        }
    }
    Ok(b)
}

/// `len` ACL entries at `acl` (at least one).
pub(crate) fn acl_list(acl: *const zkr_acl, len: usize, what: &str) -> Result<Vec<Acl>> {
    let entries = arg_slice(acl, len, what)?;
    if entries.is_empty() {
        return Err(Error::InvalidArgument(
            format!(
                "{what} is set with length 0: give at least one entry, or NULL for the default"
            )
            .into(),
        ));
    }
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let scheme = scheme_arg(e.scheme, &format!("{what}[{i}].scheme"))?;
            let id = arg_str(e.id, &format!("{what}[{i}].id"))?;
            Ok(Acl::new(permission(e.perms, what, i)?, scheme, id))
        })
        .collect()
}

/// A scheme: a non-empty string.
fn scheme_arg<'a>(scheme: *const c_char, what: &str) -> Result<&'a str> {
    let scheme = arg_str(scheme, what)?;
    if scheme.is_empty() {
        return Err(Error::InvalidArgument(format!("{what} is empty").into()));
    }
    Ok(scheme)
}

/// ZooKeeper's permission bits as a `Permission`.
fn permission(bits: u32, what: &str, i: usize) -> Result<Permission> {
    Permission::from_bits(bits).map_err(|_| {
        Error::InvalidArgument(
            format!("{what}[{i}].perms is {bits}: use a combination of ZKR_PERM_* (1..31)").into(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(opts: &zkr_client_options) -> Result<ClientBuilder> {
        // Every pointer in the test options is NULL, dangling with length 0, or local.
        builder("127.0.0.1:2181", opts)
    }

    fn read(opts: &zkr_client_options) -> Result<zkr_client_options> {
        // SAFETY: a whole local struct.
        unsafe { read_options(opts) }
    }

    #[test]
    fn options_from_an_older_smaller_struct_take_defaults_for_the_rest() {
        let mut opts = default_options();
        opts.session_timeout_ms = 1234;
        opts.retry.kind = 99; // beyond the older program's size: must be ignored
        opts.size = std::mem::offset_of!(zkr_client_options, retry);
        let read = read(&opts).unwrap();
        assert_eq!(read.session_timeout_ms, 1234);
        assert_eq!(read.retry.kind, ZKR_RETRY_EXPONENTIAL_BACKOFF);
        assert!(read.retry.to_core().is_ok());
    }

    #[test]
    fn version_1_options_ignore_the_version_2_fields() {
        let mut opts = default_options();
        opts.version = 1;
        opts.size = std::mem::offset_of!(zkr_client_options, acl);
        opts.acl = std::ptr::dangling();
        opts.acl_len = 3;
        opts.auth = std::ptr::dangling();
        opts.auth_len = 2;
        let r = read(&opts).unwrap();
        assert!(r.acl.is_null() && r.acl_len == 0);
        assert!(r.auth.is_null() && r.auth_len == 0);
        assert!(build(&r).is_ok());
        // Version 1 with the whole struct's size: still only version 1's fields.
        opts.size = std::mem::size_of::<zkr_client_options>();
        let r = read(&opts).unwrap();
        assert!(r.acl.is_null() && r.auth_len == 0);
    }

    #[test]
    fn version_2_options_ignore_the_version_3_fields() {
        let mut opts = default_options();
        opts.version = 2;
        opts.size = std::mem::offset_of!(zkr_client_options, tls);
        opts.tls = true;
        opts.sasl_username = std::ptr::dangling();
        opts.acl_rules_len = 5;
        let r = read(&opts).unwrap();
        assert!(!r.tls && r.sasl_username.is_null() && r.acl_rules_len == 0);
        assert!(build(&r).is_ok());
    }

    #[test]
    fn version_3_options_ignore_the_version_4_fields() {
        let mut opts = default_options();
        opts.version = 3;
        opts.size = std::mem::size_of::<zkr_client_options>();
        opts.max_request_bytes = 5; // a version-3 program never wrote it
        let r = read(&opts).unwrap();
        assert_eq!(
            r.max_request_bytes,
            zkrecipes::client::DEFAULT_MAX_REQUEST_BYTES
        );
        assert!(build(&r).is_ok());
        opts.version = 4;
        let r = read(&opts).unwrap();
        assert_eq!(r.max_request_bytes, 5);
        // Too small: refused by zkr_client_connect (tests/c/test_cache.c).
    }

    #[test]
    fn version_4_options_ignore_the_version_5_fields() {
        let mut opts = default_options();
        opts.version = 4;
        opts.size = std::mem::size_of::<zkr_client_options>();
        opts.track_ensemble = true; // a version-4 program never wrote it
        assert!(!read(&opts).unwrap().track_ensemble);
        opts.version = 5;
        assert!(read(&opts).unwrap().track_ensemble);
        // With TLS: refused when connecting (tests/c/test_ensemble.c).
    }

    #[test]
    fn tls_and_sasl_fields_are_checked() {
        let mut opts = default_options();
        opts.tls_ca = c"/etc/ca.pem".as_ptr();
        assert!(matches!(build(&opts), Err(Error::InvalidArgument(m)) if m.contains("opts.tls")));
        opts.tls = true;
        assert!(build(&opts).is_ok(), "files are read when connecting");
        let mut opts = default_options();
        opts.sasl_username = c"alice".as_ptr();
        assert!(
            matches!(build(&opts), Err(Error::InvalidArgument(m)) if m.contains("sasl_password"))
        );
        opts.sasl_password = c"secret".as_ptr();
        assert!(build(&opts).is_ok());
        opts.sasl_mechanism = c"PLAIN".as_ptr();
        assert!(matches!(build(&opts), Err(Error::InvalidArgument(m)) if m.contains("DIGEST-MD5")));
        let mut opts = default_options();
        opts.sasl_mechanism = c"DIGEST-MD5".as_ptr();
        assert!(build(&opts).is_err(), "a mechanism without a user");
        let entry = [zkr_acl {
            perms: ZKR_PERM_READ,
            scheme: c"world".as_ptr(),
            id: c"anyone".as_ptr(),
        }];
        let rules = [zkr_acl_rule {
            prefix: c"/app".as_ptr(),
            acl: entry.as_ptr(),
            acl_len: 1,
        }];
        let mut opts = default_options();
        opts.acl_rules = rules.as_ptr();
        opts.acl_rules_len = 1;
        assert!(build(&opts).is_ok());
        let rules = [zkr_acl_rule {
            prefix: c"relative".as_ptr(),
            ..rules[0]
        }];
        opts.acl_rules = rules.as_ptr();
        assert!(
            build(&opts).is_ok(),
            "the core checks rules when connecting"
        );
    }

    #[test]
    fn acl_and_auth_entries_are_checked() {
        let scheme = c"world";
        let id = c"anyone";
        let mut entries = [zkr_acl {
            perms: ZKR_PERM_ALL,
            scheme: scheme.as_ptr(),
            id: id.as_ptr(),
        }];
        let mut opts = default_options();
        opts.acl = entries.as_ptr();
        opts.acl_len = 1;
        assert!(build(&opts).is_ok());
        for bad in [0, 32, 64] {
            entries[0].perms = bad;
            opts.acl = entries.as_ptr();
            assert!(matches!(build(&opts), Err(Error::InvalidArgument(_))));
        }
        entries[0].perms = ZKR_PERM_READ;
        entries[0].id = std::ptr::null();
        opts.acl = entries.as_ptr();
        assert!(build(&opts).is_err());
        let mut opts = default_options();
        opts.acl_len = 1; // NULL with a length
        assert!(build(&opts).is_err());
        let mut opts = default_options();
        opts.acl = entries.as_ptr(); // a pointer with length 0
        assert!(build(&opts).is_err());
        let auth = [zkr_auth {
            scheme: c"".as_ptr(),
            credentials: std::ptr::null(),
            credentials_len: 0,
        }];
        let mut opts = default_options();
        opts.auth = auth.as_ptr();
        opts.auth_len = 1;
        assert!(build(&opts).is_err());
    }

    #[test]
    fn uninitialized_or_newer_options_are_refused() {
        let mut opts = default_options();
        opts.size = 0;
        assert!(matches!(read(&opts), Err(Error::InvalidArgument(_))));
        let mut opts = default_options();
        opts.version = ZKR_CLIENT_OPTIONS_VERSION + 1;
        assert!(matches!(read(&opts), Err(Error::InvalidArgument(_))));
        // SAFETY: NULL means the defaults.
        let defaults = unsafe { read_options(std::ptr::null()) }.unwrap();
        assert_eq!(defaults.session_timeout_ms, 60_000);
    }

    #[test]
    fn retry_policies_map_to_curators() {
        let p = zkr_retry_n_times(3, 10).to_core().unwrap();
        assert_eq!(
            p,
            RetryPolicy::NTimes {
                n: 3,
                sleep: Duration::from_millis(10)
            }
        );
        assert!(zkr_retry_forever(-1).to_core().is_err());
        assert!(zkr_retry_exponential_backoff(10, 30, 0).to_core().is_err());
        let b = zkr_retry_bounded_exponential_backoff(100, 50, 3).to_core();
        assert!(b.is_err(), "max below base is refused");
    }
}
