//! Queues: SimpleDistributedQueue and the DistributedQueue family (one handle type, made by
//! the constructor of its variant).

use std::ffi::c_char;
use std::sync::Mutex;

use zkrecipes::queue::{
    DistributedQueue, Item, ItemKey, QueueKind, QueueOptions, SimpleDistributedQueue,
};
use zkrecipes::{Error, Result};

use crate::boundary::{
    arg_opt_str, arg_slice, arg_str, arg_timeout, handle_call, handle_out, recipe_new, wait,
};
use crate::callback::lock;
use crate::client::zkr_client;
use crate::handle::{free_handle, handle, new_handle};
use crate::status::zkr_status;
use crate::types::zkr_buffer;

/// Curator's SimpleDistributedQueue: `qn-<seq>` nodes holding raw bytes; at-most-once
/// delivery. Thread-safe.
pub struct zkr_simple_queue {
    queue: SimpleDistributedQueue,
}

handle!(zkr_simple_queue, "queue");

/// Makes a simple queue on `path`. No server call is made yet. Free with zkr_simple_queue_free.
#[no_mangle]
pub extern "C" fn zkr_simple_queue_new(
    c: *mut zkr_client,
    path: *const c_char,
    out: *mut *mut zkr_simple_queue,
) -> zkr_status {
    recipe_new("zkr_simple_queue_new", c, path, out, |c, path| {
        Ok(zkr_simple_queue {
            queue: SimpleDistributedQueue::new(c, path)?,
        })
    })
}

/// Adds `len` bytes at `data` (NULL only with 0) at the tail. A lost reply is
/// ZKR_OUTCOME_UNKNOWN (the item may be in the queue; it was not put twice).
#[no_mangle]
pub extern "C" fn zkr_simple_queue_offer(
    q: *mut zkr_simple_queue,
    data: *const u8,
    len: usize,
) -> zkr_status {
    handle_call("zkr_simple_queue_offer", q, |q| {
        let data = arg_slice(data, len, "data")?;
        wait(q.queue.offer(data)).map(drop)
    })
}

/// Removes the head, waiting at most `timeout_ms` (-1: no limit; 0: look once). `*data`
/// receives its bytes (free with zkr_buffer_free), or NULL if the timeout passed first.
#[no_mangle]
pub extern "C" fn zkr_simple_queue_take(
    q: *mut zkr_simple_queue,
    timeout_ms: i64,
    data: *mut *mut zkr_buffer,
) -> zkr_status {
    handle_out("zkr_simple_queue_take", q, data, "data", |q| {
        let got = wait(q.queue.take(arg_timeout(timeout_ms)?))?;
        Ok(got.map_or(std::ptr::null_mut(), zkr_buffer::from_vec))
    })
}

/// The head's bytes without removing it in `*data` (free with zkr_buffer_free), or NULL when
/// the queue is empty.
#[no_mangle]
pub extern "C" fn zkr_simple_queue_peek(
    q: *mut zkr_simple_queue,
    data: *mut *mut zkr_buffer,
) -> zkr_status {
    handle_out("zkr_simple_queue_peek", q, data, "data", |q| {
        let got = wait(q.queue.peek())?;
        Ok(got.map_or(std::ptr::null_mut(), zkr_buffer::from_vec))
    })
}

/// Frees a simple queue handle (its items stay). NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_simple_queue_free(q: *mut zkr_simple_queue) {
    free_handle("zkr_simple_queue_free", q)
}

/// Curator's DistributedQueue, DistributedIdQueue, DistributedPriorityQueue or
/// DistributedDelayQueue (as made): `queue-` nodes in Curator's item framing. With a lock path,
/// every item is completed exactly once (zkr_queue_item_done). Thread-safe.
pub struct zkr_queue {
    queue: DistributedQueue,
}

handle!(zkr_queue, "queue");

/// A constructor of the family.
fn queue_new(
    function: &str,
    c: *mut zkr_client,
    path: *const c_char,
    lock_path: *const c_char,
    max_items: u32,
    out: *mut *mut zkr_queue,
    kind: QueueKind,
) -> zkr_status {
    recipe_new(function, c, path, out, |c, path| {
        let lock_path = arg_opt_str(lock_path, "lock_path")?;
        let options = QueueOptions {
            lock_path: lock_path.map(str::to_string),
            max_items: (max_items > 0).then_some(max_items as usize),
        };
        Ok(zkr_queue {
            queue: DistributedQueue::with_kind(c, path, kind, options)?,
        })
    })
}

/// Makes a DistributedQueue on `path`. `lock_path` (or NULL) is Curator's lock path: with one,
/// consumption is exactly once; without, an item is removed when taken. `max_items` bounds the
/// queue (0: unbounded). No server call is made yet. Free with zkr_queue_free.
#[no_mangle]
pub extern "C" fn zkr_queue_new(
    c: *mut zkr_client,
    path: *const c_char,
    lock_path: *const c_char,
    max_items: u32,
    out: *mut *mut zkr_queue,
) -> zkr_status {
    queue_new(
        "zkr_queue_new",
        c,
        path,
        lock_path,
        max_items,
        out,
        QueueKind::Queue,
    )
}

/// As zkr_queue_new, for a DistributedIdQueue (put with zkr_queue_put_with_id).
#[no_mangle]
pub extern "C" fn zkr_id_queue_new(
    c: *mut zkr_client,
    path: *const c_char,
    lock_path: *const c_char,
    max_items: u32,
    out: *mut *mut zkr_queue,
) -> zkr_status {
    queue_new(
        "zkr_id_queue_new",
        c,
        path,
        lock_path,
        max_items,
        out,
        QueueKind::Id,
    )
}

/// As zkr_queue_new, for a DistributedPriorityQueue (put with zkr_queue_put_with_priority).
#[no_mangle]
pub extern "C" fn zkr_priority_queue_new(
    c: *mut zkr_client,
    path: *const c_char,
    lock_path: *const c_char,
    max_items: u32,
    out: *mut *mut zkr_queue,
) -> zkr_status {
    let kind = QueueKind::Priority;
    queue_new(
        "zkr_priority_queue_new",
        c,
        path,
        lock_path,
        max_items,
        out,
        kind,
    )
}

/// As zkr_queue_new, for a DistributedDelayQueue (put with zkr_queue_put_with_delay).
#[no_mangle]
pub extern "C" fn zkr_delay_queue_new(
    c: *mut zkr_client,
    path: *const c_char,
    lock_path: *const c_char,
    max_items: u32,
    out: *mut *mut zkr_queue,
) -> zkr_status {
    queue_new(
        "zkr_delay_queue_new",
        c,
        path,
        lock_path,
        max_items,
        out,
        QueueKind::Delay,
    )
}

/// Every put of the family: `key` makes the item's key (the kind's, or the core refuses it).
fn queue_put(
    function: &str,
    q: *mut zkr_queue,
    data: *const u8,
    len: usize,
    timeout_ms: i64,
    put: *mut bool,
    key: impl FnOnce() -> Result<ItemKey<'static>>,
) -> zkr_status {
    handle_out(function, q, put, "put", |q| {
        let (data, timeout) = (arg_slice(data, len, "data")?, arg_timeout(timeout_ms)?);
        wait(q.queue.put_with(data, key()?, timeout))
    })
}

/// Puts `len` bytes at `data` (NULL only with 0) as one item (on a DistributedQueue; the
/// variants have their own put). With max_items, waits at most `timeout_ms` (-1: no limit) for
/// room: `*put` is false if there was none in time. A lost reply is ZKR_OUTCOME_UNKNOWN.
#[no_mangle]
pub extern "C" fn zkr_queue_put(
    q: *mut zkr_queue,
    data: *const u8,
    len: usize,
    timeout_ms: i64,
    put: *mut bool,
) -> zkr_status {
    queue_put("zkr_queue_put", q, data, len, timeout_ms, put, || {
        Ok(ItemKey::None)
    })
}

/// As zkr_queue_put, with an item id (not empty) on a DistributedIdQueue.
#[no_mangle]
pub extern "C" fn zkr_queue_put_with_id(
    q: *mut zkr_queue,
    data: *const u8,
    len: usize,
    id: *const c_char,
    timeout_ms: i64,
    put: *mut bool,
) -> zkr_status {
    queue_put(
        "zkr_queue_put_with_id",
        q,
        data,
        len,
        timeout_ms,
        put,
        || arg_str(id, "id").map(ItemKey::Id),
    )
}

/// Removes the items with `id` that no consumer holds, from a DistributedIdQueue; `*removed`
/// says how many.
#[no_mangle]
pub extern "C" fn zkr_queue_remove_id(
    q: *mut zkr_queue,
    id: *const c_char,
    removed: *mut usize,
) -> zkr_status {
    handle_out("zkr_queue_remove_id", q, removed, "removed", |q| {
        wait(q.queue.remove_id(arg_str(id, "id")?))
    })
}

/// As zkr_queue_put, with a priority (lower first) on a DistributedPriorityQueue.
#[no_mangle]
pub extern "C" fn zkr_queue_put_with_priority(
    q: *mut zkr_queue,
    data: *const u8,
    len: usize,
    priority: i32,
    timeout_ms: i64,
    put: *mut bool,
) -> zkr_status {
    let key = || Ok(ItemKey::Priority(priority));
    queue_put(
        "zkr_queue_put_with_priority",
        q,
        data,
        len,
        timeout_ms,
        put,
        key,
    )
}

/// As zkr_queue_put, handed out from `delay_until_epoch_ms` (milliseconds since the Unix epoch,
/// > 0) on, on a DistributedDelayQueue.
#[no_mangle]
pub extern "C" fn zkr_queue_put_with_delay(
    q: *mut zkr_queue,
    data: *const u8,
    len: usize,
    delay_until_epoch_ms: i64,
    timeout_ms: i64,
    put: *mut bool,
) -> zkr_status {
    let key = || Ok(ItemKey::DelayUntil(delay_until_epoch_ms));
    queue_put(
        "zkr_queue_put_with_delay",
        q,
        data,
        len,
        timeout_ms,
        put,
        key,
    )
}

/// The number of items in the queue now, in `*len`.
#[no_mangle]
pub extern "C" fn zkr_queue_len(q: *mut zkr_queue, len: *mut usize) -> zkr_status {
    handle_out("zkr_queue_len", q, len, "len", |q| wait(q.queue.len()))
}

/// One taken item. Its data and fencing token stay readable until zkr_queue_item_free;
/// complete it with zkr_queue_item_done (or give it back with zkr_queue_item_release) first.
pub struct zkr_queue_item {
    item: Mutex<Option<Item>>,
    data: Vec<u8>,
    token: i64,
}

handle!(zkr_queue_item, "item");

/// Takes the next item, waiting at most `timeout_ms` (-1: no limit). `*item` receives it (free
/// with zkr_queue_item_free), or NULL if the timeout passed first.
#[no_mangle]
pub extern "C" fn zkr_queue_take(
    q: *mut zkr_queue,
    timeout_ms: i64,
    item: *mut *mut zkr_queue_item,
) -> zkr_status {
    handle_out("zkr_queue_take", q, item, "item", |q| {
        let got = wait(q.queue.take(arg_timeout(timeout_ms)?))?;
        Ok(got.map_or(std::ptr::null_mut(), |item| {
            new_handle(zkr_queue_item {
                data: item.data().to_vec(),
                token: item.fencing_token(),
                item: Mutex::new(Some(item)),
            })
        }))
    })
}

/// Frees a queue handle (its items stay). NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_queue_free(q: *mut zkr_queue) {
    free_handle("zkr_queue_free", q)
}

/// The item's (first) message: `*data` points at `*len` bytes owned by the item, valid until
/// zkr_queue_item_free (NULL when empty).
#[no_mangle]
pub extern "C" fn zkr_queue_item_data(
    item: *const zkr_queue_item,
    data: *mut *const u8,
    len: *mut usize,
) -> zkr_status {
    handle_out("zkr_queue_item_data", item, data, "data", |i| {
        crate::boundary::arg_out(len, "len")?.write(i.data.len());
        Ok(if i.data.is_empty() {
            std::ptr::null()
        } else {
            i.data.as_ptr()
        })
    })
}

/// The item's fencing token in `*token`: with a lock path, a later taker of the same item always
/// gets a larger one. Pass it to the sink, which refuses tokens lower than one it has seen.
#[no_mangle]
pub extern "C" fn zkr_queue_item_fencing_token(
    item: *const zkr_queue_item,
    token: *mut i64,
) -> zkr_status {
    handle_out("zkr_queue_item_fencing_token", item, token, "token", |i| {
        Ok(i.token)
    })
}

fn taken(item: &zkr_queue_item, function: &str) -> Result<Item> {
    lock(&item.item).take().ok_or_else(|| {
        Error::InvalidArgument(
            format!("{function}: the item was already completed or released").into(),
        )
    })
}

/// Completes the item (with a lock path: one transaction checks our lock, deletes the item and
/// the lock). An error means it was not completed by us: ZKR_SESSION_EXPIRED (our lock went
/// with the session; another consumer may take it), ZKR_NO_NODE (removed by someone else).
#[no_mangle]
pub extern "C" fn zkr_queue_item_done(item: *mut zkr_queue_item) -> zkr_status {
    handle_call("zkr_queue_item_done", item, |i| {
        wait(taken(i, "zkr_queue_item_done")?.done())
    })
}

/// Gives the item back without completing it (another consumer takes it again).
#[no_mangle]
pub extern "C" fn zkr_queue_item_release(item: *mut zkr_queue_item) -> zkr_status {
    handle_call("zkr_queue_item_release", item, |i| {
        wait(taken(i, "zkr_queue_item_release")?.release())
    })
}

/// Frees an item; one neither completed nor released is given back in the background. NULL
/// does nothing.
#[no_mangle]
pub extern "C" fn zkr_queue_item_free(item: *mut zkr_queue_item) {
    free_handle("zkr_queue_item_free", item)
}
