//! The client: options, connect/close/free, connection-state callbacks, the plain operations.

use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::ptr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zkrecipes::client::{Acl, NodeEventKind, Permission, Watch};
use zkrecipes::{
    Client, ClientBuilder, ConnectionState, CreateMode, CreateOptions, DeleteOptions, Error,
    Result, RetryPolicy,
};

use crate::boundary::{
    arg_bytes, arg_opt_str, arg_out, arg_out_opt, arg_positive_ms, arg_ref, arg_str, block_on,
    ffi_boundary, ffi_call, non_null,
};
use crate::callback::{CallbackThread, Registration, UserData};
use crate::status::zkr_status;
use crate::types::{c_string, zkr_buffer, zkr_stat, zkr_string_list};

/// A ZooKeeper client (Curator's CuratorFramework): one session at a time, renewed by itself
/// after LOST. Thread-safe: any thread may use it, and recipes made from it, concurrently.
/// Made by zkr_client_connect, freed by zkr_client_free.
pub struct zkr_client {
    pub(crate) client: Client,
    callbacks: Arc<CallbackThread>,
    /// Listener id (the core's) → its registration.
    listeners: Mutex<HashMap<u64, Arc<Registration>>>,
    /// The one registration of every watch callback of this client (disabled by free).
    watches: Arc<Registration>,
}

// ---------------------------------------------------------------------------------------------
// Retry policies and options

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

const NO_RETRY_FIELDS: zkr_retry_policy = zkr_retry_policy {
    kind: 0,
    max_retries: 0,
    base_sleep_ms: 0,
    max_sleep_ms: 0,
    sleep_ms: 0,
    max_elapsed_ms: 0,
};

/// Curator's ExponentialBackoffRetry(base_sleep_ms, max_retries, max_sleep_ms); max_sleep_ms 0 =
/// no cap. The default is (1000, 3, 0).
#[no_mangle]
pub extern "C" fn zkr_retry_exponential_backoff(
    base_sleep_ms: i64,
    max_retries: u32,
    max_sleep_ms: i64,
) -> zkr_retry_policy {
    ffi_boundary("zkr_retry_exponential_backoff", NO_RETRY_FIELDS, || {
        zkr_retry_policy {
            kind: ZKR_RETRY_EXPONENTIAL_BACKOFF,
            base_sleep_ms,
            max_retries,
            max_sleep_ms,
            ..NO_RETRY_FIELDS
        }
    })
}

/// Curator's BoundedExponentialBackoffRetry(base_sleep_ms, max_sleep_ms, max_retries).
#[no_mangle]
pub extern "C" fn zkr_retry_bounded_exponential_backoff(
    base_sleep_ms: i64,
    max_sleep_ms: i64,
    max_retries: u32,
) -> zkr_retry_policy {
    ffi_boundary(
        "zkr_retry_bounded_exponential_backoff",
        NO_RETRY_FIELDS,
        || zkr_retry_policy {
            kind: ZKR_RETRY_BOUNDED_EXPONENTIAL_BACKOFF,
            base_sleep_ms,
            max_sleep_ms,
            max_retries,
            ..NO_RETRY_FIELDS
        },
    )
}

/// Curator's RetryNTimes(n, sleep_ms).
#[no_mangle]
pub extern "C" fn zkr_retry_n_times(n: u32, sleep_ms: i64) -> zkr_retry_policy {
    ffi_boundary("zkr_retry_n_times", NO_RETRY_FIELDS, || zkr_retry_policy {
        kind: ZKR_RETRY_N_TIMES,
        max_retries: n,
        sleep_ms,
        ..NO_RETRY_FIELDS
    })
}

/// Curator's RetryOneTime(sleep_ms).
#[no_mangle]
pub extern "C" fn zkr_retry_one_time(sleep_ms: i64) -> zkr_retry_policy {
    ffi_boundary("zkr_retry_one_time", NO_RETRY_FIELDS, || zkr_retry_policy {
        kind: ZKR_RETRY_ONE_TIME,
        sleep_ms,
        ..NO_RETRY_FIELDS
    })
}

/// Curator's RetryUntilElapsed(max_elapsed_ms, sleep_ms).
#[no_mangle]
pub extern "C" fn zkr_retry_until_elapsed(max_elapsed_ms: i64, sleep_ms: i64) -> zkr_retry_policy {
    ffi_boundary("zkr_retry_until_elapsed", NO_RETRY_FIELDS, || {
        zkr_retry_policy {
            kind: ZKR_RETRY_UNTIL_ELAPSED,
            max_elapsed_ms,
            sleep_ms,
            ..NO_RETRY_FIELDS
        }
    })
}

/// Curator's RetryForever(sleep_ms).
#[no_mangle]
pub extern "C" fn zkr_retry_forever(sleep_ms: i64) -> zkr_retry_policy {
    ffi_boundary("zkr_retry_forever", NO_RETRY_FIELDS, || zkr_retry_policy {
        kind: ZKR_RETRY_FOREVER,
        sleep_ms,
        ..NO_RETRY_FIELDS
    })
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
        let policy = match self.kind {
            ZKR_RETRY_EXPONENTIAL_BACKOFF => {
                let mut p = RetryPolicy::exponential_backoff(
                    non_negative_ms(self.base_sleep_ms, "base_sleep_ms")?,
                    0,
                );
                if let RetryPolicy::ExponentialBackoff {
                    max_retries,
                    max_sleep,
                    ..
                } = &mut p
                {
                    // Not clamped silently: a number above Curator's limit is reported by validate().
                    *max_retries = self.max_retries;
                    if self.max_sleep_ms != 0 {
                        *max_sleep = non_negative_ms(self.max_sleep_ms, "max_sleep_ms")?;
                    }
                }
                p
            }
            ZKR_RETRY_BOUNDED_EXPONENTIAL_BACKOFF => RetryPolicy::BoundedExponentialBackoff {
                base_sleep: non_negative_ms(self.base_sleep_ms, "base_sleep_ms")?,
                max_sleep: non_negative_ms(self.max_sleep_ms, "max_sleep_ms")?,
                max_retries: self.max_retries,
            },
            ZKR_RETRY_N_TIMES => RetryPolicy::NTimes {
                n: self.max_retries,
                sleep: non_negative_ms(self.sleep_ms, "sleep_ms")?,
            },
            ZKR_RETRY_ONE_TIME => RetryPolicy::OneTime {
                sleep: non_negative_ms(self.sleep_ms, "sleep_ms")?,
            },
            ZKR_RETRY_UNTIL_ELAPSED => RetryPolicy::UntilElapsed {
                max_elapsed: non_negative_ms(self.max_elapsed_ms, "max_elapsed_ms")?,
                sleep: non_negative_ms(self.sleep_ms, "sleep_ms")?,
            },
            ZKR_RETRY_FOREVER => RetryPolicy::Forever {
                sleep: non_negative_ms(self.sleep_ms, "sleep_ms")?,
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

/// The layout version of zkr_client_options this header describes. Version 2 added `acl`,
/// `acl_len`, `auth` and `auth_len` at the end; programs built with version 1 keep working (the
/// new fields take their defaults).
pub const ZKR_CLIENT_OPTIONS_VERSION: u32 = 2;

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
}

fn default_options() -> zkr_client_options {
    zkr_client_options {
        size: std::mem::size_of::<zkr_client_options>(),
        version: ZKR_CLIENT_OPTIONS_VERSION,
        can_be_read_only: false,
        session_timeout_ms: 60_000,
        connection_timeout_ms: 15_000,
        retry: zkr_retry_policy {
            kind: ZKR_RETRY_EXPONENTIAL_BACKOFF,
            max_retries: 3,
            base_sleep_ms: 1000,
            ..NO_RETRY_FIELDS
        },
        namespace_name: ptr::null(),
        auth_scheme: ptr::null(),
        auth_credentials: ptr::null(),
        auth_credentials_len: 0,
        acl: ptr::null(),
        acl_len: 0,
        auth: ptr::null(),
        auth_len: 0,
    }
}

/// Fills `opts` with the defaults (API.md's): session timeout 60 s, connection timeout 15 s,
/// exponential backoff 1 s × 3 retries, no namespace, no authentication, not read-only, the ACL
/// world:anyone (all permissions).
///
/// `opts` may point to uninitialized memory.
#[no_mangle]
pub unsafe extern "C" fn zkr_client_options_init(opts: *mut zkr_client_options) -> zkr_status {
    ffi_call("zkr_client_options_init", || {
        arg_out(opts, "opts")?.write(default_options());
        Ok(())
    })
}

/// Reads the caller's options, taking only the bytes its `size` covers.
unsafe fn read_options(opts: *const zkr_client_options) -> Result<zkr_client_options> {
    let mut merged = default_options();
    if opts.is_null() {
        return Ok(merged);
    }
    // `size` is the first field: readable whatever version the caller was built with.
    let size = ptr::read_unaligned(opts.cast::<usize>());
    let header = std::mem::size_of::<usize>() + std::mem::size_of::<u32>();
    let version = ptr::read_unaligned(
        opts.cast::<u8>()
            .add(std::mem::size_of::<usize>())
            .cast::<u32>(),
    );
    if size < header || version == 0 {
        return Err(Error::InvalidArgument(
            "opts is not initialized: call zkr_client_options_init(&opts) first".into(),
        ));
    }
    if version > ZKR_CLIENT_OPTIONS_VERSION || size > std::mem::size_of::<zkr_client_options>() {
        return Err(Error::InvalidArgument(format!(
            "opts come from a newer zkrecipes header (options version {version}, {size} bytes) than this \
             library {} (version {ZKR_CLIENT_OPTIONS_VERSION}); link the matching library",
            zkrecipes::VERSION
        ).into()));
    }
    // A version-1 program knows nothing past auth_credentials_len, whatever its `size` says.
    let size = if version < 2 {
        size.min(std::mem::offset_of!(zkr_client_options, acl))
    } else {
        size
    };
    ptr::copy_nonoverlapping(
        opts.cast::<u8>(),
        (&mut merged as *mut zkr_client_options).cast::<u8>(),
        size,
    );
    Ok(merged)
}

unsafe fn builder(hosts: &str, o: &zkr_client_options) -> Result<ClientBuilder> {
    let mut b = ClientBuilder::new(hosts)
        .session_timeout(arg_positive_ms(
            o.session_timeout_ms,
            "opts.session_timeout_ms",
        )?)
        .connection_timeout(arg_positive_ms(
            o.connection_timeout_ms,
            "opts.connection_timeout_ms",
        )?)
        .retry_policy(o.retry.to_core()?)
        .can_be_read_only(o.can_be_read_only);
    if let Some(ns) = arg_opt_str(o.namespace_name, "opts.namespace_name")? {
        b = b.namespace(ns);
    }
    if let Some(scheme) = arg_opt_str(o.auth_scheme, "opts.auth_scheme")? {
        let cred = arg_bytes(
            o.auth_credentials,
            o.auth_credentials_len,
            "opts.auth_credentials",
        )?;
        b = b.auth(scheme, cred.to_vec());
    }
    for (i, a) in arg_array(o.auth, o.auth_len, "opts.auth")?
        .iter()
        .enumerate()
    {
        let scheme = arg_str(a.scheme, &format!("opts.auth[{i}].scheme"))?;
        if scheme.is_empty() {
            return Err(Error::InvalidArgument(
                format!("opts.auth[{i}].scheme is empty").into(),
            ));
        }
        let cred = arg_bytes(
            a.credentials,
            a.credentials_len,
            &format!("opts.auth[{i}].credentials"),
        )?;
        b = b.auth(scheme, cred.to_vec());
    }
    if !o.acl.is_null() || o.acl_len != 0 {
        let entries = arg_array(o.acl, o.acl_len, "opts.acl")?;
        if entries.is_empty() {
            return Err(Error::InvalidArgument(
                "opts.acl is set with acl_len 0: give at least one entry, or NULL for the default"
                    .into(),
            ));
        }
        let mut list = Vec::with_capacity(entries.len());
        for (i, e) in entries.iter().enumerate() {
            let scheme = arg_str(e.scheme, &format!("opts.acl[{i}].scheme"))?;
            let id = arg_str(e.id, &format!("opts.acl[{i}].id"))?;
            if scheme.is_empty() {
                return Err(Error::InvalidArgument(
                    format!("opts.acl[{i}].scheme is empty").into(),
                ));
            }
            list.push(Acl::new(permission(e.perms, i)?, scheme, id));
        }
        b = b.acl(list);
    }
    Ok(b)
}

/// `len` elements at `ptr` (NULL allowed only with 0).
unsafe fn arg_array<'a, T>(ptr: *const T, len: usize, what: &str) -> Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    let p = non_null(ptr, what)?;
    Ok(std::slice::from_raw_parts(p.as_ptr(), len))
}

/// ZooKeeper's permission bits as a `Permission`.
fn permission(bits: u32, i: usize) -> Result<Permission> {
    Permission::from_bits(bits).map_err(|_| {
        Error::InvalidArgument(
            format!("opts.acl[{i}].perms is {bits}: use a combination of ZKR_PERM_* (1..31)")
                .into(),
        )
    })
}

// ---------------------------------------------------------------------------------------------
// Connect, close, free

/// Connects to ZooKeeper: `hosts` is "host:port[,host:port...][/chroot]"; `opts` may be NULL for
/// the defaults. Waits up to the connection timeout for a session; on success `*out` is a new
/// client (free it with zkr_client_free).
///
/// Errors: ZKR_INVALID_ARGUMENT (bad connect string or option), ZKR_TIMEOUT (no server answered
/// within the connection timeout).
#[no_mangle]
pub unsafe extern "C" fn zkr_client_connect(
    hosts: *const c_char,
    opts: *const zkr_client_options,
    out: *mut *mut zkr_client,
) -> zkr_status {
    ffi_call("zkr_client_connect", || {
        let hosts = arg_str(hosts, "hosts")?;
        let out = arg_out(out, "out")?;
        let options = read_options(opts)?;
        let client = block_on(builder(hosts, &options)?.connect())??;
        out.write(Box::into_raw(Box::new(zkr_client {
            client,
            callbacks: CallbackThread::new("zkr-cb-client"),
            listeners: Mutex::new(HashMap::new()),
            watches: Registration::new(),
        })));
        Ok(())
    })
}

/// Closes the session: ephemeral nodes (held locks, latch nodes) vanish at once, waiters in
/// recipes of this client return ZKR_CLOSED, and every later call on the client or its recipes
/// returns ZKR_CLOSED. The handles stay valid, to be freed. Closing twice is ZKR_OK.
#[no_mangle]
pub unsafe extern "C" fn zkr_client_close(c: *mut zkr_client) -> zkr_status {
    ffi_call("zkr_client_close", || {
        let c = arg_ref(c, "client")?;
        block_on(c.client.close())?;
        Ok(())
    })
}

/// Frees a client: unregisters its state callbacks (waiting for a running one to return, unless
/// called from inside it), closes the session if still open, and releases the handle. Recipe
/// handles made from it stay valid (their calls return ZKR_CLOSED) and must still be freed.
/// NULL does nothing. The client must not be in use by another thread.
///
/// Do not use it after this call.
#[no_mangle]
pub unsafe extern "C" fn zkr_client_free(c: *mut zkr_client) {
    ffi_boundary("zkr_client_free", (), || {
        if c.is_null() {
            return;
        }
        let c = Box::from_raw(c);
        let listeners: Vec<(u64, Arc<Registration>)> = c
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .collect();
        for (id, reg) in listeners {
            c.client.remove_state_listener(id);
            reg.disable();
        }
        c.watches.disable();
        c.callbacks.shutdown();
        let _ = block_on(c.client.close());
    })
}

// ---------------------------------------------------------------------------------------------
// Connection states

/// Curator's connection states.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum zkr_connection_state {
    /// The first successful connection.
    ZKR_STATE_CONNECTED = 1,
    /// The connection was lost; the session may still be alive. Treat locks and leadership as
    /// uncertain.
    ZKR_STATE_SUSPENDED = 2,
    /// Connected again after SUSPENDED or LOST (after LOST, with a new session).
    ZKR_STATE_RECONNECTED = 3,
    /// The session is gone (expired, or SUSPENDED for a whole session timeout); its ephemeral
    /// nodes are gone. The client opens a new session by itself.
    ZKR_STATE_LOST = 4,
    /// Connected to a read-only server.
    ZKR_STATE_READ_ONLY = 5,
}

impl From<ConnectionState> for zkr_connection_state {
    fn from(s: ConnectionState) -> Self {
        match s {
            ConnectionState::Connected => zkr_connection_state::ZKR_STATE_CONNECTED,
            ConnectionState::Suspended => zkr_connection_state::ZKR_STATE_SUSPENDED,
            ConnectionState::Reconnected => zkr_connection_state::ZKR_STATE_RECONNECTED,
            ConnectionState::Lost => zkr_connection_state::ZKR_STATE_LOST,
            ConnectionState::ReadOnly => zkr_connection_state::ZKR_STATE_READ_ONLY,
        }
    }
}

/// Curator's name of a state ("CONNECTED", "SUSPENDED", "RECONNECTED", "LOST", "READ_ONLY"), or
/// "UNKNOWN". A static string: never NULL, never freed.
#[no_mangle]
pub extern "C" fn zkr_connection_state_name(state: u32) -> *const c_char {
    ffi_boundary(
        "zkr_connection_state_name",
        c"UNKNOWN".as_ptr(),
        || match state {
            1 => c"CONNECTED".as_ptr(),
            2 => c"SUSPENDED".as_ptr(),
            3 => c"RECONNECTED".as_ptr(),
            4 => c"LOST".as_ptr(),
            5 => c"READ_ONLY".as_ptr(),
            _ => c"UNKNOWN".as_ptr(),
        },
    )
}

/// The current connection state.
#[no_mangle]
pub unsafe extern "C" fn zkr_client_state(
    c: *const zkr_client,
    state: *mut zkr_connection_state,
) -> zkr_status {
    ffi_call("zkr_client_state", || {
        let c = arg_ref(c, "client")?;
        let out = arg_out(state, "state")?;
        if c.client.is_closed() {
            return Err(Error::Closed("the client is closed".into()));
        }
        out.write(c.client.state().into());
        Ok(())
    })
}

/// The current session id (it changes after LOST → RECONNECTED).
#[no_mangle]
pub unsafe extern "C" fn zkr_client_session_id(
    c: *const zkr_client,
    session_id: *mut i64,
) -> zkr_status {
    ffi_call("zkr_client_session_id", || {
        let c = arg_ref(c, "client")?;
        let out = arg_out(session_id, "session_id")?;
        if c.client.is_closed() {
            return Err(Error::Closed("the client is closed".into()));
        }
        out.write(c.client.session_id());
        Ok(())
    })
}

/// A connection-state callback. It runs on a thread of the library dedicated to this client's
/// callbacks (never the thread that registered it), one call at a time, in the order the states
/// happened. Inside it any zkr_ function may be called, including blocking ones and freeing this
/// client; it should return soon, since later states wait for it. It must not throw (C++) or
/// longjmp out.
pub type zkr_state_callback =
    Option<unsafe extern "C" fn(state: zkr_connection_state, user_data: *mut c_void)>;

/// Registers a connection-state callback; `*listener_id` identifies it for
/// zkr_client_remove_state_listener. `user_data` is passed back untouched and must stay valid
/// until the callback is removed or the client freed.
///
/// The callback is called on another thread (see its type).
#[no_mangle]
pub unsafe extern "C" fn zkr_client_add_state_listener(
    c: *mut zkr_client,
    callback: zkr_state_callback,
    user_data: *mut c_void,
    listener_id: *mut u64,
) -> zkr_status {
    ffi_call("zkr_client_add_state_listener", || {
        let c = arg_ref(c, "client")?;
        let callback = callback.ok_or_else(|| Error::InvalidArgument("callback is NULL".into()))?;
        let out = arg_out(listener_id, "listener_id")?;
        if c.client.is_closed() {
            return Err(Error::Closed("the client is closed".into()));
        }
        let reg = Registration::new();
        let thread = c.callbacks.clone();
        let ud = UserData(user_data);
        let job_reg = reg.clone();
        // Hold the map's lock across registration so that free() cannot miss this listener.
        let mut listeners = c.listeners.lock().unwrap_or_else(|e| e.into_inner());
        let id = c.client.add_state_listener(move |state| {
            if !job_reg.is_enabled() {
                return;
            }
            let reg = job_reg.clone();
            let state = zkr_connection_state::from(state);
            thread.post(Box::new(move || {
                let ud = ud;
                reg.run(|| callback(state, ud.0))
            }));
        });
        listeners.insert(id, reg);
        out.write(id);
        Ok(())
    })
}

/// Removes a state callback. When this returns, the callback is not running (unless this is
/// called from inside it) and will not run again, so its user_data may be freed.
/// ZKR_INVALID_ARGUMENT if the id is not registered on this client.
#[no_mangle]
pub unsafe extern "C" fn zkr_client_remove_state_listener(
    c: *mut zkr_client,
    listener_id: u64,
) -> zkr_status {
    ffi_call("zkr_client_remove_state_listener", || {
        let c = arg_ref(c, "client")?;
        let reg = c
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&listener_id);
        match reg {
            Some(reg) => {
                c.client.remove_state_listener(listener_id);
                reg.disable();
                Ok(())
            }
            None => Err(Error::InvalidArgument(
                format!("no state listener with id {listener_id} on this client").into(),
            )),
        }
    })
}

/// Expires this client's session on the server, as Curator's tests do (a second connection joins
/// the session and closes it). For tests of session loss: the client then reports LOST and
/// RECONNECTED with a new session. Only in builds with the `testing` feature (declared when
/// ZKR_TESTING is defined).
#[cfg(feature = "testing")]
#[no_mangle]
pub unsafe extern "C" fn zkr_client_expire_session_for_testing(c: *mut zkr_client) -> zkr_status {
    ffi_call("zkr_client_expire_session_for_testing", || {
        let c = arg_ref(c, "client")?;
        // Owned: the wait holds no handle to the client, which a LOST callback may free.
        let expire = zkrecipes_testing::expire_client_session(&c.client);
        block_on(expire)?.map_err(|e| Error::Timeout(e.into()))
    })
}

// ---------------------------------------------------------------------------------------------
// Plain operations

/// ZooKeeper node types for zkr_client_create.
pub type zkr_create_mode = u32;
/// A node that lives until deleted.
pub const ZKR_PERSISTENT: zkr_create_mode = 0;
/// A persistent node whose name gets a 10-digit sequence number.
pub const ZKR_PERSISTENT_SEQUENTIAL: zkr_create_mode = 1;
/// A node deleted when the session ends.
pub const ZKR_EPHEMERAL: zkr_create_mode = 2;
/// An ephemeral node whose name gets a 10-digit sequence number.
pub const ZKR_EPHEMERAL_SEQUENTIAL: zkr_create_mode = 3;
/// A node the server deletes once its last child is gone.
pub const ZKR_CONTAINER: zkr_create_mode = 4;

/// zkr_client_create flag: create missing parents (as container nodes).
pub const ZKR_CREATE_PARENTS: u32 = 1;
/// zkr_client_create flag: Curator's protected mode (`_c_<uuid>-` name prefix, so the node is
/// found again instead of created twice after a connection loss).
pub const ZKR_CREATE_PROTECTED: u32 = 2;

/// zkr_client_delete flag: keep retrying in the background after a connection loss until the
/// node is gone (Curator's guaranteed()).
pub const ZKR_DELETE_GUARANTEED: u32 = 1;
/// zkr_client_delete flag: delete the children first.
pub const ZKR_DELETE_RECURSIVE: u32 = 2;

fn create_mode(mode: zkr_create_mode) -> Result<CreateMode> {
    Ok(match mode {
        ZKR_PERSISTENT => CreateMode::Persistent,
        ZKR_PERSISTENT_SEQUENTIAL => CreateMode::PersistentSequential,
        ZKR_EPHEMERAL => CreateMode::Ephemeral,
        ZKR_EPHEMERAL_SEQUENTIAL => CreateMode::EphemeralSequential,
        ZKR_CONTAINER => CreateMode::Container,
        other => {
            return Err(Error::InvalidArgument(
                format!("mode {other} is not a ZKR_* create mode").into(),
            ))
        }
    })
}

fn check_flags(flags: u32, known: u32, what: &str) -> Result<()> {
    if flags & !known != 0 {
        Err(Error::InvalidArgument(
            format!("{what}: unknown flag bits {:#x}", flags & !known).into(),
        ))
    } else {
        Ok(())
    }
}

/// Creates a node with `data_len` bytes of `data` (`data` may be NULL when `data_len` is 0).
/// `flags` is 0 or ZKR_CREATE_PARENTS | ZKR_CREATE_PROTECTED. If `created_path` is not NULL it
/// receives the actual path (with sequence number and protected prefix), freed with
/// zkr_string_free.
#[no_mangle]
pub unsafe extern "C" fn zkr_client_create(
    c: *mut zkr_client,
    path: *const c_char,
    data: *const u8,
    data_len: usize,
    mode: zkr_create_mode,
    flags: u32,
    created_path: *mut *mut c_char,
) -> zkr_status {
    ffi_call("zkr_client_create", || {
        let c = arg_ref(c, "client")?;
        let path = arg_str(path, "path")?;
        let data = arg_bytes(data, data_len, "data")?;
        check_flags(flags, ZKR_CREATE_PARENTS | ZKR_CREATE_PROTECTED, "flags")?;
        let mut options = CreateOptions::new(create_mode(mode)?);
        options.create_parents = flags & ZKR_CREATE_PARENTS != 0;
        options.protected = flags & ZKR_CREATE_PROTECTED != 0;
        let out = arg_out_opt(created_path);
        let created = block_on(c.client.create(path, data, options))??;
        if let Some(out) = out {
            out.write(c_string(&created.path)?);
        }
        Ok(())
    })
}

/// Reads a node's data into `*data` (free with zkr_buffer_free) and, if `stat` is not NULL, its
/// stat. ZKR_NO_NODE if it does not exist.
#[no_mangle]
pub unsafe extern "C" fn zkr_client_get_data(
    c: *mut zkr_client,
    path: *const c_char,
    data: *mut *mut zkr_buffer,
    stat: *mut zkr_stat,
) -> zkr_status {
    ffi_call("zkr_client_get_data", || {
        let c = arg_ref(c, "client")?;
        let path = arg_str(path, "path")?;
        let out = arg_out(data, "data")?;
        let stat_out = arg_out_opt(stat);
        let (bytes, s) = block_on(c.client.get_data(path))??;
        if let Some(o) = stat_out {
            o.write(zkr_stat::from(&s));
        }
        out.write(zkr_buffer::from_vec(bytes));
        Ok(())
    })
}

/// Sets a node's data; `version` -1 for any version, else the expected version (ZKR_BAD_VERSION
/// if it differs). If `stat` is not NULL it receives the new stat.
#[no_mangle]
pub unsafe extern "C" fn zkr_client_set_data(
    c: *mut zkr_client,
    path: *const c_char,
    data: *const u8,
    data_len: usize,
    version: i32,
    stat: *mut zkr_stat,
) -> zkr_status {
    ffi_call("zkr_client_set_data", || {
        let c = arg_ref(c, "client")?;
        let path = arg_str(path, "path")?;
        let data = arg_bytes(data, data_len, "data")?;
        let version = match version {
            -1 => None,
            v if v < 0 => {
                return Err(Error::InvalidArgument(
                    format!("version is {v}: use -1 for any version").into(),
                ))
            }
            v => Some(v),
        };
        let stat_out = arg_out_opt(stat);
        let s = block_on(c.client.set_data(path, data, version))??;
        if let Some(o) = stat_out {
            o.write(zkr_stat::from(&s));
        }
        Ok(())
    })
}

/// Deletes a node; `version` -1 for any version. `flags` is 0 or ZKR_DELETE_GUARANTEED |
/// ZKR_DELETE_RECURSIVE.
#[no_mangle]
pub unsafe extern "C" fn zkr_client_delete(
    c: *mut zkr_client,
    path: *const c_char,
    version: i32,
    flags: u32,
) -> zkr_status {
    ffi_call("zkr_client_delete", || {
        let c = arg_ref(c, "client")?;
        let path = arg_str(path, "path")?;
        check_flags(flags, ZKR_DELETE_GUARANTEED | ZKR_DELETE_RECURSIVE, "flags")?;
        let version = match version {
            -1 => None,
            v if v < 0 => {
                return Err(Error::InvalidArgument(
                    format!("version is {v}: use -1 for any version").into(),
                ))
            }
            v => Some(v),
        };
        let options = DeleteOptions {
            version,
            guaranteed: flags & ZKR_DELETE_GUARANTEED != 0,
            recursive: flags & ZKR_DELETE_RECURSIVE != 0,
        };
        block_on(c.client.delete(path, options))?
    })
}

/// Whether a node exists; if it does and `stat` is not NULL, `*stat` receives its stat.
#[no_mangle]
pub unsafe extern "C" fn zkr_client_exists(
    c: *mut zkr_client,
    path: *const c_char,
    exists: *mut bool,
    stat: *mut zkr_stat,
) -> zkr_status {
    ffi_call("zkr_client_exists", || {
        let c = arg_ref(c, "client")?;
        let path = arg_str(path, "path")?;
        let out = arg_out(exists, "exists")?;
        let stat_out = arg_out_opt(stat);
        let found = block_on(c.client.exists(path))??;
        if let (Some(s), Some(o)) = (&found, stat_out) {
            o.write(zkr_stat::from(s));
        }
        out.write(found.is_some());
        Ok(())
    })
}

/// The names of a node's children (unsorted), in `*children` (free with zkr_string_list_free).
#[no_mangle]
pub unsafe extern "C" fn zkr_client_get_children(
    c: *mut zkr_client,
    path: *const c_char,
    children: *mut *mut zkr_string_list,
) -> zkr_status {
    ffi_call("zkr_client_get_children", || {
        let c = arg_ref(c, "client")?;
        let path = arg_str(path, "path")?;
        let out = arg_out(children, "children")?;
        let names = block_on(c.client.get_children(path))??;
        out.write(zkr_string_list::from_vec(names)?);
        Ok(())
    })
}

// ---------------------------------------------------------------------------------------------
// One-shot watches

/// What a one-shot watch saw.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum zkr_watch_event_type {
    /// The node was created (zkr_client_exists_watch on a missing node).
    ZKR_WATCH_CREATED = 1,
    /// The node was deleted.
    ZKR_WATCH_DELETED = 2,
    /// The node's data changed.
    ZKR_WATCH_CHANGED = 3,
    /// A child was added or removed (zkr_client_get_children_watch).
    ZKR_WATCH_CHILD = 4,
    /// The session ended (expired, or the client was closed) before the node changed.
    ZKR_WATCH_SESSION_ENDED = 5,
}

/// A one-shot watch callback: called once with what happened and the node's path (relative to
/// the namespace; valid only during the call). It runs on this client's callback thread (the
/// one state callbacks use), where any zkr_ function may be called. It must not throw (C++) or
/// longjmp out.
pub type zkr_watch_callback = Option<
    unsafe extern "C" fn(event: zkr_watch_event_type, path: *const c_char, user_data: *mut c_void),
>;

/// Calls `callback` once, on the client's callback thread, when `watch` fires.
fn arm(c: &zkr_client, watch: Watch, callback: WatchFn, ud: UserData) {
    let callbacks = c.callbacks.clone();
    let reg = c.watches.clone();
    zkrecipes::runtime::spawn(async move {
        let e = watch.changed().await;
        let kind = match e.kind {
            NodeEventKind::Created => zkr_watch_event_type::ZKR_WATCH_CREATED,
            NodeEventKind::Deleted => zkr_watch_event_type::ZKR_WATCH_DELETED,
            NodeEventKind::DataChanged => zkr_watch_event_type::ZKR_WATCH_CHANGED,
            NodeEventKind::ChildrenChanged => zkr_watch_event_type::ZKR_WATCH_CHILD,
            NodeEventKind::SessionEnded => zkr_watch_event_type::ZKR_WATCH_SESSION_ENDED,
            #[allow(unreachable_patterns)]
            _ => zkr_watch_event_type::ZKR_WATCH_SESSION_ENDED,
        };
        let Ok(path) = std::ffi::CString::new(e.path) else {
            return;
        };
        callbacks.post(Box::new(move || {
            let ud = ud;
            reg.run(|| unsafe { callback(kind, path.as_ptr(), ud.0) });
        }));
    });
}

type WatchFn =
    unsafe extern "C" fn(event: zkr_watch_event_type, path: *const c_char, user_data: *mut c_void);

fn watch_callback(callback: zkr_watch_callback) -> Result<WatchFn> {
    callback.ok_or_else(|| Error::InvalidArgument("callback is NULL".into()))
}

/// zkr_client_get_data that also leaves a one-shot watch on the node: `callback(event, path,
/// user_data)` is called once when its data changes or it is deleted (ZKR_WATCH_CHANGED,
/// ZKR_WATCH_DELETED), or ZKR_WATCH_SESSION_ENDED if the session ends first. `user_data` must
/// stay valid until then. No watch is left when the call fails. After zkr_client_free returns,
/// no watch callback of the client runs (a pending one never will: free its user_data then).
#[no_mangle]
pub unsafe extern "C" fn zkr_client_get_data_watch(
    c: *mut zkr_client,
    path: *const c_char,
    data: *mut *mut zkr_buffer,
    stat: *mut zkr_stat,
    callback: zkr_watch_callback,
    user_data: *mut c_void,
) -> zkr_status {
    ffi_call("zkr_client_get_data_watch", || {
        let c = arg_ref(c, "client")?;
        let path = arg_str(path, "path")?;
        let out = arg_out(data, "data")?;
        let stat_out = arg_out_opt(stat);
        let callback = watch_callback(callback)?;
        let (bytes, s, w) = block_on(c.client.get_data_watch(path))??;
        arm(c, w, callback, UserData(user_data));
        if let Some(o) = stat_out {
            o.write(zkr_stat::from(&s));
        }
        out.write(zkr_buffer::from_vec(bytes));
        Ok(())
    })
}

/// zkr_client_exists that also leaves a one-shot watch: ZKR_WATCH_CREATED (the node did not
/// exist), ZKR_WATCH_DELETED, ZKR_WATCH_CHANGED, or ZKR_WATCH_SESSION_ENDED. See
/// zkr_client_get_data_watch for the callback's rules.
#[no_mangle]
pub unsafe extern "C" fn zkr_client_exists_watch(
    c: *mut zkr_client,
    path: *const c_char,
    exists: *mut bool,
    stat: *mut zkr_stat,
    callback: zkr_watch_callback,
    user_data: *mut c_void,
) -> zkr_status {
    ffi_call("zkr_client_exists_watch", || {
        let c = arg_ref(c, "client")?;
        let path = arg_str(path, "path")?;
        let out = arg_out(exists, "exists")?;
        let stat_out = arg_out_opt(stat);
        let callback = watch_callback(callback)?;
        let (found, w) = block_on(c.client.exists_watch(path))??;
        arm(c, w, callback, UserData(user_data));
        if let (Some(s), Some(o)) = (&found, stat_out) {
            o.write(zkr_stat::from(s));
        }
        out.write(found.is_some());
        Ok(())
    })
}

/// zkr_client_get_children that also leaves a one-shot watch on the children:
/// ZKR_WATCH_CHILD, ZKR_WATCH_DELETED, or ZKR_WATCH_SESSION_ENDED. See
/// zkr_client_get_data_watch for the callback's rules.
#[no_mangle]
pub unsafe extern "C" fn zkr_client_get_children_watch(
    c: *mut zkr_client,
    path: *const c_char,
    children: *mut *mut zkr_string_list,
    callback: zkr_watch_callback,
    user_data: *mut c_void,
) -> zkr_status {
    ffi_call("zkr_client_get_children_watch", || {
        let c = arg_ref(c, "client")?;
        let path = arg_str(path, "path")?;
        let out = arg_out(children, "children")?;
        let callback = watch_callback(callback)?;
        let (names, w) = block_on(c.client.get_children_watch(path))??;
        let list = zkr_string_list::from_vec(names)?;
        arm(c, w, callback, UserData(user_data));
        out.write(list);
        Ok(())
    })
}

/// For recipes: the client behind a handle argument.
pub(crate) unsafe fn client_arg<'a>(c: *const zkr_client, what: &str) -> Result<&'a Client> {
    Ok(&non_null(c, what)?.as_ref().client)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_from_an_older_smaller_struct_take_defaults_for_the_rest() {
        let mut opts = default_options();
        opts.session_timeout_ms = 1234;
        opts.retry.kind = 99; // beyond the older program's size: must be ignored
        opts.size = std::mem::offset_of!(zkr_client_options, retry);
        let read = unsafe { read_options(&opts) }.unwrap();
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
        let read = unsafe { read_options(&opts) }.unwrap();
        assert!(read.acl.is_null() && read.acl_len == 0);
        assert!(read.auth.is_null() && read.auth_len == 0);
        assert!(unsafe { builder("127.0.0.1:2181", &read) }.is_ok());
        // Version 1 with the whole struct's size: still only version 1's fields.
        opts.size = std::mem::size_of::<zkr_client_options>();
        let read = unsafe { read_options(&opts) }.unwrap();
        assert!(read.acl.is_null() && read.auth_len == 0);
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
        assert!(unsafe { builder("127.0.0.1:2181", &opts) }.is_ok());
        for bad in [0, 32, 64] {
            entries[0].perms = bad;
            opts.acl = entries.as_ptr();
            assert!(matches!(
                unsafe { builder("127.0.0.1:2181", &opts) },
                Err(Error::InvalidArgument(_))
            ));
        }
        entries[0].perms = ZKR_PERM_READ;
        entries[0].id = std::ptr::null();
        opts.acl = entries.as_ptr();
        assert!(unsafe { builder("127.0.0.1:2181", &opts) }.is_err());
        let mut opts = default_options();
        opts.acl_len = 1; // NULL with a length
        assert!(unsafe { builder("127.0.0.1:2181", &opts) }.is_err());
        let mut opts = default_options();
        opts.acl = entries.as_ptr(); // a pointer with length 0
        assert!(unsafe { builder("127.0.0.1:2181", &opts) }.is_err());
        let auth = [zkr_auth {
            scheme: c"".as_ptr(),
            credentials: std::ptr::null(),
            credentials_len: 0,
        }];
        let mut opts = default_options();
        opts.auth = auth.as_ptr();
        opts.auth_len = 1;
        assert!(unsafe { builder("127.0.0.1:2181", &opts) }.is_err());
    }

    #[test]
    fn uninitialized_or_newer_options_are_refused() {
        let mut opts = default_options();
        opts.size = 0;
        assert!(matches!(
            unsafe { read_options(&opts) },
            Err(Error::InvalidArgument(_))
        ));
        let mut opts = default_options();
        opts.version = ZKR_CLIENT_OPTIONS_VERSION + 1;
        assert!(matches!(
            unsafe { read_options(&opts) },
            Err(Error::InvalidArgument(_))
        ));
        assert_eq!(
            unsafe { read_options(std::ptr::null()) }
                .unwrap()
                .session_timeout_ms,
            60_000
        );
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
