//! The framework operations beyond the plain ones: create with a TTL, persistent parents or
//! compression (zkr_client_create_ex), compressed reads and writes, and transactions
//! (Curator's `transaction()`, ZooKeeper's multi).

use std::ffi::c_char;
use std::ptr;
use std::sync::Mutex;

use zkrecipes::client::{CreateOptions, Op, OpResult};
use zkrecipes::{timeout, Client, Result};

use crate::boundary::ffi_call;
use crate::boundary::{arg_out, arg_out_opt, arg_slice, arg_str, handle_call, handle_out, wait};
use crate::callback::lock;
use crate::client::{
    flags_arg, put_stat, version_arg, zkr_client, zkr_create_mode, CREATE_MODES,
    ZKR_CREATE_PARENTS, ZKR_CREATE_PROTECTED,
};
use crate::handle::{free_handle, handle, new_handle};
use crate::status::zkr_status;
use crate::types::{c_string, free_returned, give_array, take_array, zkr_buffer, zkr_stat};

/// zkr_client_create_ex flag: create missing parents as PERSISTENT nodes (Curator's
/// creatingParentsIfNeeded); wins over ZKR_CREATE_PARENTS (container parents).
pub const ZKR_CREATE_PERSISTENT_PARENTS: u32 = 4;
/// zkr_client_create_ex flag: store the data GZIP-compressed, byte for byte as Curator's
/// default compression provider (`.compressed()`); read it with
/// zkr_client_get_data_decompressed.
pub const ZKR_CREATE_COMPRESSED: u32 = 8;

/// A TTL in milliseconds: 0 for none, else 1 to 2^40 - 1 (the core checks it against the mode).
pub(crate) fn ttl_arg(ttl_ms: i64) -> Result<Option<std::time::Duration>> {
    if ttl_ms == 0 {
        return Ok(None);
    }
    timeout::positive_millis(ttl_ms, "ttl_ms").map(Some)
}

/// zkr_client_create with more: `flags` is 0 or any of ZKR_CREATE_PARENTS,
/// ZKR_CREATE_PROTECTED, ZKR_CREATE_PERSISTENT_PARENTS, ZKR_CREATE_COMPRESSED; `ttl_ms` is the
/// time to live of ZKR_PERSISTENT_WITH_TTL and ZKR_PERSISTENT_SEQUENTIAL_WITH_TTL nodes
/// (required there, 1 ms to 2^40 - 1 ms; 0 for every other mode, or ZKR_INVALID_ARGUMENT).
/// TTL nodes need a server with zookeeper.extendedTypesEnabled=true. `created_path` as in
/// zkr_client_create.
#[no_mangle]
pub extern "C" fn zkr_client_create_ex(
    c: *mut zkr_client,
    path: *const c_char,
    data: *const u8,
    data_len: usize,
    mode: zkr_create_mode,
    flags: u32,
    ttl_ms: i64,
    created_path: *mut *mut c_char,
) -> zkr_status {
    handle_call("zkr_client_create_ex", c, |c| {
        let path = arg_str(path, "path")?;
        let data = arg_slice(data, data_len, "data")?;
        let known = ZKR_CREATE_PARENTS
            | ZKR_CREATE_PROTECTED
            | ZKR_CREATE_PERSISTENT_PARENTS
            | ZKR_CREATE_COMPRESSED;
        let flag = flags_arg(flags, known)?;
        let mut options = CreateOptions::new(CREATE_MODES.parse(mode, "mode")?);
        options.create_parents = flag(ZKR_CREATE_PARENTS);
        options.protected = flag(ZKR_CREATE_PROTECTED);
        options.persistent_parents = flag(ZKR_CREATE_PERSISTENT_PARENTS);
        options.compressed = flag(ZKR_CREATE_COMPRESSED);
        options.ttl = ttl_arg(ttl_ms)?;
        let out = arg_out_opt(created_path);
        let created = wait(c.client.create(path, data, options))?;
        if let Some(out) = out {
            out.write(c_string(&created.path)?);
        }
        Ok(())
    })
}

/// zkr_client_get_data of data stored compressed (Curator's `getData().decompressed()`):
/// `*data` gets the plain bytes (free with zkr_buffer_free). Data that is not Curator's GZIP
/// is ZKR_CORRUPTED_DATA.
#[no_mangle]
pub extern "C" fn zkr_client_get_data_decompressed(
    c: *mut zkr_client,
    path: *const c_char,
    data: *mut *mut zkr_buffer,
    stat: *mut zkr_stat,
) -> zkr_status {
    handle_out("zkr_client_get_data_decompressed", c, data, "data", |c| {
        let path = arg_str(path, "path")?;
        let (bytes, s) = wait(c.client.get_data_decompressed(path))?;
        put_stat(stat, Some(&s));
        Ok(zkr_buffer::from_vec(bytes))
    })
}

/// zkr_client_set_data storing the data compressed (Curator's `setData().compressed()`).
#[no_mangle]
pub extern "C" fn zkr_client_set_data_compressed(
    c: *mut zkr_client,
    path: *const c_char,
    data: *const u8,
    data_len: usize,
    version: i32,
    stat: *mut zkr_stat,
) -> zkr_status {
    handle_call("zkr_client_set_data_compressed", c, |c| {
        let path = arg_str(path, "path")?;
        let data = arg_slice(data, data_len, "data")?;
        let version = version_arg(version)?;
        let s = wait(c.client.set_data_compressed(path, data, version))?;
        put_stat(stat, Some(&s));
        Ok(())
    })
}

// ---------------------------------------------------------------------------------------------
// Transactions

/// Operations committed all together or not at all (Curator's `transaction()`, ZooKeeper's
/// multi). Add operations, then zkr_transaction_commit. Thread-safe; free with
/// zkr_transaction_free.
pub struct zkr_transaction {
    client: Client,
    ops: Mutex<Vec<Op>>,
    failed: Mutex<Option<usize>>,
}

handle!(zkr_transaction, "transaction");

/// What one operation of a transaction is (zkr_op_result.type).
pub type zkr_op_type = u32;
/// A create.
pub const ZKR_OP_CREATE: zkr_op_type = 0;
/// A delete.
pub const ZKR_OP_DELETE: zkr_op_type = 1;
/// A set data.
pub const ZKR_OP_SET_DATA: zkr_op_type = 2;
/// A version check.
pub const ZKR_OP_CHECK: zkr_op_type = 3;

/// What one operation of a committed transaction did.
#[repr(C)]
pub struct zkr_op_result {
    /// ZKR_OP_CREATE, ZKR_OP_DELETE, ZKR_OP_SET_DATA or ZKR_OP_CHECK.
    pub type_: zkr_op_type,
    /// ZKR_OP_CREATE: the created node's actual path (with its sequence number); else NULL.
    pub path: *mut c_char,
    /// ZKR_OP_CREATE and ZKR_OP_SET_DATA: the node's new stat; else zeros.
    pub stat: zkr_stat,
}

/// The results of a committed transaction, one per operation in order. Free with
/// zkr_op_result_list_free.
#[repr(C)]
pub struct zkr_op_result_list {
    /// `len` results (NULL when `len` is 0).
    pub items: *mut zkr_op_result,
    /// How many results `items` holds.
    pub len: usize,
}

/// Frees a result list and everything in it. NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_op_result_list_free(list: *mut zkr_op_result_list) {
    free_returned("zkr_op_result_list_free", list, |l| {
        // SAFETY: the items of a list zkr_transaction_commit made with `give_array`, taken back
        // once with the list.
        for r in unsafe { take_array(l.items, l.len) } {
            crate::types::zkr_string_free(r.path);
        }
    })
}

/// A new, empty transaction on the client.
#[no_mangle]
pub extern "C" fn zkr_transaction_new(
    c: *mut zkr_client,
    out: *mut *mut zkr_transaction,
) -> zkr_status {
    ffi_call("zkr_transaction_new", || {
        let c = crate::handle::handle_ref(c)?;
        let out = arg_out(out, "out")?;
        if c.client.is_closed() {
            return Err(zkrecipes::Error::Closed("the client is closed".into()));
        }
        out.write(new_handle(zkr_transaction {
            client: c.client.clone(),
            ops: Mutex::new(Vec::new()),
            failed: Mutex::new(None),
        }));
        Ok(())
    })
}

/// Adds one operation (checked when committed: a bad one fails the commit with its index).
fn add(function: &str, t: *mut zkr_transaction, op: impl FnOnce() -> Result<Op>) -> zkr_status {
    handle_call(function, t, |t| {
        let op = op()?;
        lock(&t.ops).push(op);
        Ok(())
    })
}

/// Adds a create of `path` with `data_len` bytes of `data` and `mode`; `ttl_ms` as in
/// zkr_client_create_ex (0 unless a TTL mode). Parents are not created.
#[no_mangle]
pub extern "C" fn zkr_transaction_create(
    t: *mut zkr_transaction,
    path: *const c_char,
    data: *const u8,
    data_len: usize,
    mode: zkr_create_mode,
    ttl_ms: i64,
) -> zkr_status {
    add("zkr_transaction_create", t, || {
        Ok(Op::Create {
            path: arg_str(path, "path")?.to_string(),
            data: arg_slice(data, data_len, "data")?.to_vec(),
            mode: CREATE_MODES.parse(mode, "mode")?,
            ttl: ttl_arg(ttl_ms)?,
            acl: None,
        })
    })
}

/// zkr_transaction_create with the node's own ACL (`acl_len` entries of `acl`) instead of the
/// client's.
#[no_mangle]
pub extern "C" fn zkr_transaction_create_with_acl(
    t: *mut zkr_transaction,
    path: *const c_char,
    data: *const u8,
    data_len: usize,
    mode: zkr_create_mode,
    acl: *const crate::options::zkr_acl,
    acl_len: usize,
) -> zkr_status {
    add("zkr_transaction_create_with_acl", t, || {
        Ok(Op::Create {
            path: arg_str(path, "path")?.to_string(),
            data: arg_slice(data, data_len, "data")?.to_vec(),
            mode: CREATE_MODES.parse(mode, "mode")?,
            ttl: None,
            acl: Some(crate::options::acl_list(acl, acl_len, "acl")?),
        })
    })
}

/// Adds a delete of `path`; `version` -1 for any.
#[no_mangle]
pub extern "C" fn zkr_transaction_delete(
    t: *mut zkr_transaction,
    path: *const c_char,
    version: i32,
) -> zkr_status {
    add("zkr_transaction_delete", t, || {
        Ok(Op::Delete {
            path: arg_str(path, "path")?.to_string(),
            version: version_arg(version)?,
        })
    })
}

/// Adds a set data of `path`; `version` -1 for any.
#[no_mangle]
pub extern "C" fn zkr_transaction_set_data(
    t: *mut zkr_transaction,
    path: *const c_char,
    data: *const u8,
    data_len: usize,
    version: i32,
) -> zkr_status {
    add("zkr_transaction_set_data", t, || {
        Ok(Op::SetData {
            path: arg_str(path, "path")?.to_string(),
            data: arg_slice(data, data_len, "data")?.to_vec(),
            version: version_arg(version)?,
        })
    })
}

/// Adds a check that `path` is at data `version` (the whole transaction fails otherwise).
#[no_mangle]
pub extern "C" fn zkr_transaction_check(
    t: *mut zkr_transaction,
    path: *const c_char,
    version: i32,
) -> zkr_status {
    add("zkr_transaction_check", t, || {
        Ok(Op::Check {
            path: arg_str(path, "path")?.to_string(),
            version,
        })
    })
}

fn op_result(r: OpResult) -> Result<zkr_op_result> {
    Ok(match r {
        OpResult::Created { path, stat } => zkr_op_result {
            type_: ZKR_OP_CREATE,
            path: c_string(&path)?,
            stat: zkr_stat::from(&stat),
        },
        OpResult::Deleted => zkr_op_result {
            type_: ZKR_OP_DELETE,
            path: ptr::null_mut(),
            stat: zkr_stat::default(),
        },
        OpResult::DataSet { stat } => zkr_op_result {
            type_: ZKR_OP_SET_DATA,
            path: ptr::null_mut(),
            stat: zkr_stat::from(&stat),
        },
        OpResult::Checked => zkr_op_result {
            type_: ZKR_OP_CHECK,
            path: ptr::null_mut(),
            stat: zkr_stat::default(),
        },
    })
}

/// Commits the operations added so far: every one applied, in order, or none. On success
/// `*results` (if not NULL) gets one result per operation (free with zkr_op_result_list_free).
/// On failure nothing was applied; the status is the failing operation's (ZKR_BAD_VERSION,
/// ZKR_NO_NODE, ZKR_NODE_EXISTS, ZKR_INVALID_ARGUMENT...) and zkr_transaction_failed_op gives
/// its index. A reply lost with the connection is ZKR_OUTCOME_UNKNOWN (never resent). The
/// operations stay in the transaction.
#[no_mangle]
pub extern "C" fn zkr_transaction_commit(
    t: *mut zkr_transaction,
    results: *mut *mut zkr_op_result_list,
) -> zkr_status {
    handle_call("zkr_transaction_commit", t, |t| {
        let out = arg_out_opt(results);
        let ops = lock(&t.ops).clone();
        let txn = ops
            .into_iter()
            .fold(t.client.transaction(), |txn, op| txn.op(op));
        let committed = wait(txn.commit());
        *lock(&t.failed) = committed.as_ref().err().and_then(|e| e.failed_op());
        let list = committed?
            .into_iter()
            .map(op_result)
            .collect::<Result<Vec<_>>>()?;
        if let Some(out) = out {
            let (items, len) = give_array(list);
            out.write(Box::into_raw(Box::new(zkr_op_result_list { items, len })));
        }
        Ok(())
    })
}

/// After a failed zkr_transaction_commit: the index of the operation that failed in `*index`
/// (-1 when the failure was not one operation's: a connection loss, a closed client).
#[no_mangle]
pub extern "C" fn zkr_transaction_failed_op(
    t: *const zkr_transaction,
    index: *mut i64,
) -> zkr_status {
    handle_out("zkr_transaction_failed_op", t, index, "index", |t| {
        Ok(lock(&t.failed).map_or(-1, |i| i as i64))
    })
}

/// Frees a transaction (uncommitted operations are dropped). NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_transaction_free(t: *mut zkr_transaction) {
    free_handle("zkr_transaction_free", t)
}
