//! kazoo's recipes: SetPartitioner, NonBlockingLease and MultiNonBlockingLease (on kazoo's node
//! layout, shared with kazoo processes; docs/PARTITIONER.md).

use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;
use std::time::Duration;

use zkrecipes::partition::{
    LeaseOptions, MultiNonBlockingLease, NonBlockingLease, PartitionState, PartitionerOptions,
    SetPartitioner,
};
use zkrecipes::{Error, ListenerId, Result};

use crate::boundary::{
    arg_callback, arg_opt_str, arg_out, arg_out_opt, arg_slice, arg_str, arg_timeout, handle_call,
    handle_out, recipe_new, wait,
};
use crate::callback::{
    call_share, CCallback, CallbackType, Closing, Gate, Listeners, Listening, ShareFn, UserData,
};
use crate::client::zkr_client;
use crate::handle::handle;
use crate::status::zkr_status;
use crate::types::{c_string, zkr_string_list};
use crate::vocab::CList;

/// Where a set partitioner is (kazoo's PartitionState; the core's list, in order).
pub type zkr_partition_state = u32;
/// Dividing the set: waiting for the party to be stable, then taking the partitions' locks.
pub const ZKR_PARTITION_ALLOCATING: zkr_partition_state = 0;
/// This member holds the lock of each of its partitions (zkr_set_partitioner_partitions).
pub const ZKR_PARTITION_ACQUIRED: zkr_partition_state = 1;
/// The party or the connection changed: stop working on the partitions and call
/// zkr_set_partitioner_release_set soon.
pub const ZKR_PARTITION_RELEASE: zkr_partition_state = 2;
/// For good (session lost, client closed, an error, or finish): make a new partitioner.
pub const ZKR_PARTITION_FAILURE: zkr_partition_state = 3;

/// kazoo's default time boundary: how long the party must be unchanged before dividing.
pub const ZKR_PARTITIONER_TIME_BOUNDARY_MS: i64 = 30_000;
/// kazoo's default reaction time: how long one attempt at a partition's lock waits before
/// checking whether the party changed.
pub const ZKR_PARTITIONER_MAX_REACTION_TIME_MS: i64 = 1_000;

/// The core's partition states in C (zkr_partition_state).
pub(crate) const PARTITION_STATES: CList<PartitionState> = CList {
    all: PartitionState::ALL,
    first: ZKR_PARTITION_ALLOCATING,
    prefix: "ZKR_PARTITION_",
    name: PartitionState::name,
};

/// Called with each new state of a set partitioner. It runs on a library thread (never the
/// caller's, never one of the library's async workers), one call at a time, in order; any zkr_
/// function may be called inside, including blocking ones (zkr_set_partitioner_release_set).
/// It must not throw (C++) or longjmp out.
pub type zkr_partition_callback =
    Option<unsafe extern "C" fn(state: zkr_partition_state, user_data: *mut c_void)>;

type PartitionFn = <zkr_partition_callback as CallbackType>::Fn;

/// kazoo's `partition_func` (zkr_set_partitioner_new_with_func): decides which partitions this
/// member takes. It gets this member's `identifier`, the party's identifiers (`members`, in the
/// server's listing order) and the whole set as given at creation (`set`), and sets
/// `take[i] = true` for each `set[i]` this member takes (`take` comes all false, `set_len`
/// flags); it returns true, or false if it cannot answer. Every member of a party must compute
/// the same division (a kazoo member without one computes kazoo's default, which
/// zkr_set_partitioner_new uses): a member that disagrees waits for locks another keeps, and no
/// partition is ever held twice. False makes the partitioner ZKR_PARTITION_FAILURE (it leaves
/// the party). It is called once per division on a library thread (as its own lock owner, see
/// zkr_owner), where any zkr_ function may be called; every pointer is valid during the call
/// only. It is not called once zkr_set_partitioner_free has returned. It must not throw (C++)
/// or longjmp out.
pub type zkr_partition_func = Option<
    unsafe extern "C" fn(
        identifier: *const c_char,
        members: *const *const c_char,
        members_len: usize,
        set: *const *const c_char,
        set_len: usize,
        take: *mut bool,
        user_data: *mut c_void,
    ) -> bool,
>;

/// kazoo's SetPartitioner: the members of a party divide a set of partitions among themselves,
/// each partition to exactly one member, and divide it again when members come or go. kazoo
/// processes on the same path take part. Thread-safe.
pub struct zkr_set_partitioner {
    partitioner: SetPartitioner,
    listeners: Listeners<zkr_partition_callback>,
    /// The partition function's gate (zkr_set_partitioner_new_with_func): shut and waited for
    /// by free.
    func: Option<Arc<Gate>>,
}

// No listener starts once the free begins; the partitioner finishes, and only then are running
// listeners waited for (one blocked in a zkr_set_partitioner_wait_for_*, which FAILURE ends,
// would otherwise hold the free for good).
handle!(zkr_set_partitioner, "p", |p| {
    p.shut_all();
    if let Some(gate) = &p.func {
        gate.shut();
    }
    let _ = wait(p.partitioner.finish());
    p.unregister_all();
    if let Some(gate) = &p.func {
        gate.disable();
    }
});

impl Closing for zkr_set_partitioner {
    fn close_handle(&self) -> Result<()> {
        wait(self.partitioner.finish())
    }
}

impl Listening for zkr_set_partitioner {
    type Callback = zkr_partition_callback;

    fn listeners(&self) -> &Listeners<zkr_partition_callback> {
        &self.listeners
    }

    fn register(&self, cb: Arc<CCallback<PartitionFn>>) -> Result<ListenerId> {
        Ok(self
            .partitioner
            .add_listener(move |state| cb.call((PARTITION_STATES.to_c(*state),))))
    }

    fn unregister(&self, id: ListenerId) -> Result<bool> {
        self.partitioner.remove_listener(id)
    }
}

fn duration_ms(ms: i64, what: &str) -> Result<Duration> {
    if ms <= 0 {
        return Err(Error::InvalidArgument(
            format!("{what} is {ms} ms: it must be more than 0").into(),
        ));
    }
    Ok(Duration::from_millis(ms as u64))
}

/// Makes a member of the set partitioner at `path`, dividing the `count` partition names at
/// `set` (node names, no duplicates), as `identifier` (NULL: `<hostname>-<pid>`). The party must
/// be unchanged for `time_boundary_ms` before the set is divided
/// (ZKR_PARTITIONER_TIME_BOUNDARY_MS is kazoo's default); each attempt at a partition's lock
/// waits `max_reaction_time_ms` (ZKR_PARTITIONER_MAX_REACTION_TIME_MS). Nothing happens on the
/// server before zkr_set_partitioner_start. Free with zkr_set_partitioner_free.
#[no_mangle]
pub extern "C" fn zkr_set_partitioner_new(
    c: *mut zkr_client,
    path: *const c_char,
    set: *const *const c_char,
    count: usize,
    identifier: *const c_char,
    time_boundary_ms: i64,
    max_reaction_time_ms: i64,
    out: *mut *mut zkr_set_partitioner,
) -> zkr_status {
    let args = (
        set,
        count,
        identifier,
        time_boundary_ms,
        max_reaction_time_ms,
    );
    new_partitioner("zkr_set_partitioner_new", c, path, args, None, out)
}

/// zkr_set_partitioner_new with a partition function (see zkr_partition_func) instead of
/// kazoo's default: `func(identifier, members, members_len, set, set_len, take, user_data)`
/// divides the set. `user_data` must stay valid until zkr_set_partitioner_free returns. NULL
/// `func` is ZKR_INVALID_ARGUMENT.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn zkr_set_partitioner_new_with_func(
    c: *mut zkr_client,
    path: *const c_char,
    set: *const *const c_char,
    count: usize,
    identifier: *const c_char,
    time_boundary_ms: i64,
    max_reaction_time_ms: i64,
    func: zkr_partition_func,
    user_data: *mut c_void,
    out: *mut *mut zkr_set_partitioner,
) -> zkr_status {
    let args = (
        set,
        count,
        identifier,
        time_boundary_ms,
        max_reaction_time_ms,
    );
    let func = Some((func, UserData(user_data)));
    new_partitioner(
        "zkr_set_partitioner_new_with_func",
        c,
        path,
        args,
        func,
        out,
    )
}

/// The two constructors' arguments: set, count, identifier, time boundary, reaction time.
type PartitionerArgs = (*const *const c_char, usize, *const c_char, i64, i64);

/// The two constructors: `func` (with_func's, NULL refused) or kazoo's default.
fn new_partitioner(
    function: &str,
    c: *mut zkr_client,
    path: *const c_char,
    (set, count, identifier, time_boundary_ms, max_reaction_time_ms): PartitionerArgs,
    func: Option<(zkr_partition_func, UserData)>,
    out: *mut *mut zkr_set_partitioner,
) -> zkr_status {
    recipe_new(function, c, path, out, |c, path| {
        let func = match func {
            Some((f, ud)) => Some((arg_callback(f, "func")?, ud)),
            None => None,
        };
        let (parts, mut options) = partitioner_args(
            set,
            count,
            identifier,
            time_boundary_ms,
            max_reaction_time_ms,
        )?;
        let gate = func.map(|(f, ud)| {
            let gate = Arc::new(Gate::new());
            options = std::mem::take(&mut options).partition_func(c_share(f, ud, gate.clone()));
            gate
        });
        Ok(zkr_set_partitioner {
            partitioner: SetPartitioner::new(c, path, &parts, options)?,
            listeners: Listeners::default(),
            func: gate,
        })
    })
}

/// The core's partition function over the C one, called through `open` (shut by free).
fn c_share(
    f: ShareFn,
    ud: UserData,
    open: Arc<Gate>,
) -> impl Fn(&str, &[String], &[String]) -> Result<Vec<String>> + Send + Sync + 'static {
    move |me, members, set| {
        let ud = ud;
        let strings = |what: &str, all: &[String]| {
            all.iter()
                .map(|s| {
                    CString::new(s.as_str()).map_err(|_| {
                        Error::Internal(format!("a {what} name holds a NUL byte").into())
                    })
                })
                .collect::<Result<Vec<CString>>>()
        };
        let me = CString::new(me)
            .map_err(|_| Error::Internal("the identifier holds a NUL byte".into()))?;
        let (members_c, set_c) = (strings("member", members)?, strings("partition", set)?);
        let member_ptrs: Vec<*const c_char> = members_c.iter().map(|s| s.as_ptr()).collect();
        let set_ptrs: Vec<*const c_char> = set_c.iter().map(|s| s.as_ptr()).collect();
        let mut take = vec![0u8; set.len()];
        let mut answered = None;
        open.run(|| {
            answered = Some(call_share(
                f,
                me.as_ptr(),
                &member_ptrs,
                &set_ptrs,
                &mut take,
                ud.0,
            ))
        });
        match answered {
            None => Err(Error::Closed("the set partitioner is being freed".into())),
            Some(false) => Err(Error::InvalidArgument(
                "the partition function answered false".into(),
            )),
            Some(true) => Ok(set
                .iter()
                .zip(&take)
                .filter(|(_, t)| **t != 0)
                .map(|(p, _)| p.clone())
                .collect()),
        }
    }
}

/// The set and options of the two constructors, checked.
fn partitioner_args<'a>(
    set: *const *const c_char,
    count: usize,
    identifier: *const c_char,
    time_boundary_ms: i64,
    max_reaction_time_ms: i64,
) -> Result<(Vec<&'a str>, PartitionerOptions)> {
    // The slice first: it checks `count` before anything is sized by it.
    let set = arg_slice(set, count, "set")?;
    let mut parts = Vec::with_capacity(set.len());
    for (i, p) in set.iter().enumerate() {
        parts.push(arg_str(*p, &format!("set[{i}]"))?);
    }
    let options = PartitionerOptions {
        identifier: arg_opt_str(identifier, "identifier")?.map(str::to_string),
        time_boundary: duration_ms(time_boundary_ms, "time_boundary_ms")?,
        max_reaction_time: duration_ms(max_reaction_time_ms, "max_reaction_time_ms")?,
        partition_func: None,
    };
    Ok((parts, options))
}

/// Joins the party and starts allocating in the background (state ZKR_PARTITION_ALLOCATING).
/// Once only (ZKR_INVALID_ARGUMENT the second time; ZKR_CLOSED after finish).
#[no_mangle]
pub extern "C" fn zkr_set_partitioner_start(p: *mut zkr_set_partitioner) -> zkr_status {
    handle_call("zkr_set_partitioner_start", p, |p| {
        wait(p.partitioner.start())
    })
}

/// The state now, in `*state`.
#[no_mangle]
pub extern "C" fn zkr_set_partitioner_state(
    p: *const zkr_set_partitioner,
    state: *mut zkr_partition_state,
) -> zkr_status {
    handle_out("zkr_set_partitioner_state", p, state, "state", |p| {
        Ok(PARTITION_STATES.to_c(p.partitioner.state()))
    })
}

/// The partitions this member holds, sorted, in `*partitions` (free with
/// zkr_string_list_free): its share while ZKR_PARTITION_ACQUIRED, empty in any other state.
/// `state` (may be NULL) gets the state of the same reading.
#[no_mangle]
pub extern "C" fn zkr_set_partitioner_partitions(
    p: *const zkr_set_partitioner,
    state: *mut zkr_partition_state,
    partitions: *mut *mut zkr_string_list,
) -> zkr_status {
    handle_out(
        "zkr_set_partitioner_partitions",
        p,
        partitions,
        "partitions",
        |p| {
            let (now, parts) = p.partitioner.snapshot();
            let list = zkr_string_list::from_vec(parts)?;
            if let Some(out) = arg_out_opt(state) {
                out.write(PARTITION_STATES.to_c(now));
            }
            Ok(list)
        },
    )
}

/// This member's identifier in `*identifier` (free with zkr_string_free).
#[no_mangle]
pub extern "C" fn zkr_set_partitioner_identifier(
    p: *const zkr_set_partitioner,
    identifier: *mut *mut c_char,
) -> zkr_status {
    handle_out(
        "zkr_set_partitioner_identifier",
        p,
        identifier,
        "identifier",
        |p| c_string(p.partitioner.identifier()),
    )
}

/// kazoo's wait_for_acquire: waits while ZKR_PARTITION_ALLOCATING, at most `timeout_ms` (-1:
/// no limit); `*acquired` tells whether it is ZKR_PARTITION_ACQUIRED then (false in RELEASE or
/// FAILURE, and when the time ran out). ZKR_INVALID_ARGUMENT before start.
#[no_mangle]
pub extern "C" fn zkr_set_partitioner_wait_for_acquire(
    p: *mut zkr_set_partitioner,
    timeout_ms: i64,
    acquired: *mut bool,
) -> zkr_status {
    handle_out(
        "zkr_set_partitioner_wait_for_acquire",
        p,
        acquired,
        "acquired",
        |p| wait(p.partitioner.wait_for_acquire(arg_timeout(timeout_ms)?)),
    )
}

/// Waits until the state differs from `seen`, at most `timeout_ms` (-1: no limit); `*state`
/// gets the state then (`seen` when the time ran out).
#[no_mangle]
pub extern "C" fn zkr_set_partitioner_wait_for_change(
    p: *mut zkr_set_partitioner,
    seen: zkr_partition_state,
    timeout_ms: i64,
    state: *mut zkr_partition_state,
) -> zkr_status {
    handle_out(
        "zkr_set_partitioner_wait_for_change",
        p,
        state,
        "state",
        |p| {
            let seen = PARTITION_STATES.parse(seen, "seen")?;
            let timeout = arg_timeout(timeout_ms)?;
            let now = wait(async { Ok(p.partitioner.wait_for_change(seen, timeout).await) })?;
            Ok(PARTITION_STATES.to_c(now))
        },
    )
}

/// kazoo's release_set: releases the partitions' locks and allocates again
/// (ZKR_PARTITION_ALLOCATING). Call it in ZKR_PARTITION_RELEASE (other members wait for it).
/// An error means a lock could not be released (its delete goes on in the background) and the
/// partitioner is ZKR_PARTITION_FAILURE. ZKR_INVALID_ARGUMENT before start.
#[no_mangle]
pub extern "C" fn zkr_set_partitioner_release_set(p: *mut zkr_set_partitioner) -> zkr_status {
    handle_call("zkr_set_partitioner_release_set", p, |p| {
        wait(p.partitioner.release_set())
    })
}

/// kazoo's finish: ZKR_PARTITION_FAILURE at once, then releases the locks and leaves the
/// party. Finishing twice is ZKR_OK. (zkr_set_partitioner_close does the same.)
#[no_mangle]
pub extern "C" fn zkr_set_partitioner_finish(p: *mut zkr_set_partitioner) -> zkr_status {
    handle_call("zkr_set_partitioner_finish", p, |p| {
        wait(p.partitioner.finish())
    })
}

fn lease_options(identifier: *const c_char, timeout_ms: i64) -> Result<LeaseOptions> {
    Ok(LeaseOptions {
        identifier: arg_opt_str(identifier, "identifier")?.map(str::to_string),
        now: None,
        lock_timeout: arg_timeout(timeout_ms)?,
    })
}

fn lease_duration(duration_ms: i64) -> Result<Duration> {
    u64::try_from(duration_ms)
        .map(Duration::from_millis)
        .map_err(|_| {
            Error::InvalidArgument(
                format!("duration_ms is {duration_ms}: it must not be negative").into(),
            )
        })
}

/// kazoo's NonBlockingLease: takes the lease at `path` for `duration_ms` unless another
/// identifier holds an unexpired one (holding it ourselves renews it); `*obtained` tells
/// whether it did. `identifier` NULL is this host's name (kazoo's default). Waits at most
/// `timeout_ms` (-1: no limit) for the lease's lock (ZKR_TIMEOUT). A holder node that cannot be
/// read is ZKR_CORRUPTED_DATA (left as it is). `*end_unix_ms` (may be NULL) gets the end of our
/// lease in milliseconds since 1970 (whole seconds, as stored), when obtained.
#[no_mangle]
pub extern "C" fn zkr_non_blocking_lease(
    c: *mut zkr_client,
    path: *const c_char,
    duration_ms: i64,
    identifier: *const c_char,
    timeout_ms: i64,
    obtained: *mut bool,
    end_unix_ms: *mut i64,
) -> zkr_status {
    handle_call("zkr_non_blocking_lease", c, |c| {
        let out = arg_out(obtained, "obtained")?;
        let path = arg_str(path, "path")?;
        let duration = lease_duration(duration_ms)?;
        let options = lease_options(identifier, timeout_ms)?;
        let lease = wait(NonBlockingLease::obtain(&c.client, path, duration, options))?;
        write_end(lease.end(), end_unix_ms);
        out.write(lease.obtained());
        Ok(())
    })
}

fn write_end(end: Option<std::time::SystemTime>, out: *mut i64) {
    let ms = end
        .and_then(|e| e.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64);
    if let (Some(ms), Some(out)) = (ms, arg_out_opt(out)) {
        out.write(ms);
    }
}

/// kazoo's MultiNonBlockingLease: tries the leases `path/0` … `path/count-1` in order (as
/// zkr_non_blocking_lease) until one is obtained; `*obtained` tells whether one was, and
/// `*index` and `*end_unix_ms` (each may be NULL) which one and when it ends (both untouched
/// when none).
#[no_mangle]
pub extern "C" fn zkr_multi_non_blocking_lease(
    c: *mut zkr_client,
    count: u32,
    path: *const c_char,
    duration_ms: i64,
    identifier: *const c_char,
    timeout_ms: i64,
    obtained: *mut bool,
    index: *mut u32,
    end_unix_ms: *mut i64,
) -> zkr_status {
    handle_call("zkr_multi_non_blocking_lease", c, |c| {
        let out = arg_out(obtained, "obtained")?;
        let path = arg_str(path, "path")?;
        let duration = lease_duration(duration_ms)?;
        let options = lease_options(identifier, timeout_ms)?;
        let lease = wait(MultiNonBlockingLease::obtain(
            &c.client, count, path, duration, options,
        ))?;
        if let (Some(i), Some(index)) = (lease.index(), arg_out_opt(index)) {
            index.write(i);
        }
        write_end(lease.lease().and_then(|l| l.end()), end_unix_ms);
        out.write(lease.obtained());
        Ok(())
    })
}
