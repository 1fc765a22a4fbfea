//! Value types shared by every part of the C API: owners, returned strings, string lists, byte
//! buffers and node stats.

use std::ffi::{c_char, CString};
use std::ptr;

use zkrecipes::{Error, Owner, Result, Stat};

use crate::boundary::ffi_boundary;

/// Who holds a lock: a plain value (copy it freely; there is nothing to free).
///
/// Plain calls (`zkr_mutex_acquire`) use the calling OS thread's owner, as Curator ties a lock to
/// a Java thread. The `_as` twins (`zkr_mutex_acquire_as`) take an explicit owner, made by
/// zkr_owner_new(), so that a hold can be acquired on one thread and released on another, or
/// several owners can share a thread. An owner whose `id` is 0 (a zeroed struct) is
/// ZKR_INVALID_ARGUMENT.
///
/// Inside a callback (a listener, a lost-lock or leadership callback) each call is an owner of
/// its own, not its thread's: the library's threads run the callbacks of every handle of the
/// process one after another, so by thread a hold kept after one callback returned would let any
/// later callback on that thread in as a re-entry. A plain call there must release in the same
/// callback call; to keep a hold across callbacks, use the `_as` calls with a zkr_owner_new().
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct zkr_owner {
    /// Opaque identity; two owners are the same exactly when their ids are equal.
    pub id: u64,
}

impl zkr_owner {
    /// The owner an `_as` call was given.
    pub(crate) fn to_core(self) -> Result<Owner> {
        if self.id == 0 {
            Err(Error::InvalidArgument(
                "owner is not initialized (id 0): use zkr_owner_new() or zkr_owner_current_thread()".into(),
            ))
        } else {
            Ok(Owner::from_raw(self.id))
        }
    }
}

/// The owner of a plain (non-`_as`) call: the calling thread.
pub(crate) fn thread_owner() -> Result<Owner> {
    Ok(Owner::current_thread())
}

impl From<Owner> for zkr_owner {
    fn from(owner: Owner) -> zkr_owner {
        zkr_owner { id: owner.as_raw() }
    }
}

/// A new owner, distinct from every other owner in this process (including every thread's).
#[no_mangle]
pub extern "C" fn zkr_owner_new() -> zkr_owner {
    ffi_boundary("zkr_owner_new", zkr_owner { id: 0 }, || {
        zkr_owner::from(Owner::new())
    })
}

/// The calling OS thread's owner: the owner the plain (non-`_as`) lock calls use. The same value
/// for the thread's whole life, except inside a callback, where it is that callback call's own.
#[no_mangle]
pub extern "C" fn zkr_owner_current_thread() -> zkr_owner {
    ffi_boundary("zkr_owner_current_thread", zkr_owner { id: 0 }, || {
        zkr_owner::from(Owner::current_thread())
    })
}

/// Copies a Rust string into a C string owned by the caller (freed with zkr_string_free). An
/// interior NUL (impossible in ZooKeeper paths) is reported, not truncated silently.
pub(crate) fn c_string(s: &str) -> Result<*mut c_char> {
    CString::new(s).map(CString::into_raw).map_err(|_| {
        Error::Internal(format!("a returned string contains a NUL byte: {s:?}").into())
    })
}

/// A Vec handed to C as pointer and length (NULL for an empty one), for [`take_array`].
pub(crate) fn give_array<T>(items: Vec<T>) -> (*mut T, usize) {
    let len = items.len();
    if len == 0 {
        return (ptr::null_mut(), 0);
    }
    (Box::into_raw(items.into_boxed_slice()).cast(), len)
}

/// The Vec given by [`give_array`], back (empty for NULL).
///
/// # Safety
/// `items` and `len` come from one call of `give_array::<T>`, and are taken back once.
pub(crate) unsafe fn take_array<T>(items: *mut T, len: usize) -> Vec<T> {
    if items.is_null() {
        return Vec::new();
    }
    // SAFETY: this function's contract: a boxed slice of `len` items, owned by us again.
    unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(items, len)) }.into_vec()
}

/// `_free` of a value this library returned in a `Box`: NULL does nothing; `free_parts`
/// releases what the value owns.
pub(crate) fn free_returned<T>(function: &str, ptr: *mut T, free_parts: impl FnOnce(T)) {
    ffi_boundary(function, (), || {
        if !ptr.is_null() {
            // SAFETY: the C caller's contract 5 (`boundary`): a `Box<T>` this library returned,
            // freed once.
            free_parts(*unsafe { Box::from_raw(ptr) });
        }
    })
}

/// Frees a string returned by this library. NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_string_free(s: *mut c_char) {
    ffi_boundary("zkr_string_free", (), || {
        if !s.is_null() {
            // SAFETY: the C caller's contract 5: a string this library made with
            // `CString::into_raw`, freed once.
            drop(unsafe { CString::from_raw(s) });
        }
    })
}

/// A list of strings returned by this library (node names, participant ids). Read it, then free
/// it with zkr_string_list_free; never free its parts yourself.
#[repr(C)]
pub struct zkr_string_list {
    /// `len` NUL-terminated UTF-8 strings (NULL when `len` is 0).
    pub items: *mut *mut c_char,
    /// How many strings `items` holds.
    pub len: usize,
}

impl zkr_string_list {
    pub(crate) fn from_vec(strings: Vec<String>) -> Result<*mut zkr_string_list> {
        let owned = strings
            .into_iter()
            .map(CString::new)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| {
                Error::Internal(format!("a returned string contains a NUL byte: {e}").into())
            })?;
        let (items, len) = give_array(owned.into_iter().map(CString::into_raw).collect());
        Ok(Box::into_raw(Box::new(zkr_string_list { items, len })))
    }
}

/// Frees a string list and its strings. NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_string_list_free(list: *mut zkr_string_list) {
    free_returned("zkr_string_list_free", list, |l| {
        // SAFETY: the parts of a list `from_vec` made: an array from `give_array` of strings
        // from `CString::into_raw`, taken back once with the list.
        unsafe { take_array(l.items, l.len) }
            .into_iter()
            .for_each(|s| drop(unsafe { CString::from_raw(s) }))
    })
}

/// Bytes returned by this library (node data). Free with zkr_buffer_free.
#[repr(C)]
pub struct zkr_buffer {
    /// `len` bytes (NULL when `len` is 0).
    pub data: *mut u8,
    /// How many bytes `data` holds.
    pub len: usize,
}

impl zkr_buffer {
    pub(crate) fn from_vec(bytes: Vec<u8>) -> *mut zkr_buffer {
        let (data, len) = give_array(bytes);
        Box::into_raw(Box::new(zkr_buffer { data, len }))
    }
}

/// Frees a buffer and its bytes. NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_buffer_free(buffer: *mut zkr_buffer) {
    free_returned("zkr_buffer_free", buffer, |b| {
        // SAFETY: the bytes of a buffer `from_vec` made with `give_array`, taken back once.
        drop(unsafe { take_array(b.data, b.len) })
    })
}

/// A node's metadata (ZooKeeper's Stat), filled by the plain operations.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct zkr_stat {
    /// The zxid of the change that created the node.
    pub czxid: i64,
    /// The zxid of the change that last modified the node's data.
    pub mzxid: i64,
    /// The zxid of the change that last modified the node's children.
    pub pzxid: i64,
    /// Creation time, milliseconds since the epoch.
    pub ctime: i64,
    /// Last modification time, milliseconds since the epoch.
    pub mtime: i64,
    /// The session id owning the node if it is ephemeral, else 0.
    pub ephemeral_owner: i64,
    /// The number of changes to the data (the version for zkr_client_set_data).
    pub version: i32,
    /// The number of changes to the children.
    pub cversion: i32,
    /// The number of changes to the ACL.
    pub aversion: i32,
    /// The length of the data in bytes.
    pub data_length: i32,
    /// The number of children.
    pub num_children: i32,
}

impl From<&Stat> for zkr_stat {
    fn from(s: &Stat) -> zkr_stat {
        zkr_stat {
            czxid: s.czxid,
            mzxid: s.mzxid,
            pzxid: s.pzxid,
            ctime: s.ctime,
            mtime: s.mtime,
            ephemeral_owner: s.ephemeral_owner,
            version: s.version,
            cversion: s.cversion,
            aversion: s.aversion,
            data_length: s.data_length,
            num_children: s.num_children,
        }
    }
}
