//! Queues: SimpleDistributedQueue and the DistributedQueue family (one handle type, made by
//! the constructor of its variant).

use std::ffi::{c_char, c_void, CString};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zkrecipes::queue::{
    DistributedQueue, ErrorMode, Item, ItemKey, PutEvent, QueueKind, QueueOptions, QueueSharder,
    SharderOptions, SharderPolicies, SimpleDistributedQueue,
};
use zkrecipes::{Error, ListenerId, Result};

use crate::boundary::{
    arg_callback, arg_opt_str, arg_out, arg_slice, arg_str, arg_timeout, handle_call, handle_out,
    recipe_new, wait,
};
use crate::callback::{lock, CCallback, CallbackType, Closing, Listeners, Listening, UserData};
use crate::client::{zkr_client, zkr_connection_state};
use crate::handle::{free_handle, handle, new_handle};
use crate::status::zkr_status;
use crate::types::{zkr_buffer, zkr_string_list};

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
    listeners: Listeners<zkr_queue_state_callback>,
    puts: Listeners<zkr_queue_put_callback>,
}

handle!(zkr_queue, "queue", |q| {
    q.remove_listeners();
});

impl zkr_queue {
    fn new(queue: DistributedQueue) -> zkr_queue {
        zkr_queue {
            queue,
            listeners: Listeners::default(),
            puts: Listeners::default(),
        }
    }

    fn remove_listeners(&self) {
        self.unregister_all();
        self.puts.clear(|id| self.queue.remove_put_listener(id));
    }
}

/// A queue's connection-state callback (Curator's consumers are never told: CURATOR-336), as
/// zkr_state_callback: on a library thread, one call at a time, in the order of the states.
pub type zkr_queue_state_callback =
    Option<unsafe extern "C" fn(state: zkr_connection_state, user_data: *mut c_void)>;

type StateFn = <zkr_queue_state_callback as CallbackType>::Fn;

impl Listening for zkr_queue {
    type Callback = zkr_queue_state_callback;

    fn listeners(&self) -> &Listeners<zkr_queue_state_callback> {
        &self.listeners
    }

    fn register(&self, cb: Arc<CCallback<StateFn>>) -> Result<ListenerId> {
        Ok(self.queue.add_listener(move |s| {
            cb.call((zkr_connection_state::of(s),));
        }))
    }

    fn unregister(&self, id: ListenerId) -> Result<bool> {
        self.queue.remove_listener(id)
    }
}

impl Closing for zkr_queue {
    fn close_handle(&self) -> Result<()> {
        self.remove_listeners();
        Ok(())
    }
}

/// Bytes passed in (and, in a zkr_queue_put_event, out for the length of a callback): `len`
/// bytes at `data` (NULL only with 0). The library never keeps the pointer.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct zkr_bytes {
    /// The bytes.
    pub data: *const u8,
    /// How many.
    pub len: usize,
}

/// A completed put (Curator's QueuePutListener): valid during the callback only.
#[repr(C)]
pub struct zkr_queue_put_event {
    /// The item's node path (with its sequence number), NUL-terminated.
    pub node: *const c_char,
    /// The messages put: one for a put, every one of a put_multi.
    pub messages: *const zkr_bytes,
    /// How many messages.
    pub count: usize,
    /// Whether it was a put_multi (Curator's putMultiCompleted; else putCompleted).
    pub multi: bool,
}

/// A put listener: called after each put or put_multi through this queue handle (or another
/// handle of the same queue object, e.g. one zkr_queue_sharder_get_queue returned twice) that
/// succeeded, on a library thread, one call at a time, in the order of the puts. `event` and
/// everything it points to are valid during the call only. Any zkr_ function may be called
/// inside it.
pub type zkr_queue_put_callback =
    Option<unsafe extern "C" fn(event: *const zkr_queue_put_event, user_data: *mut c_void)>;

fn call_put(cb: &CCallback<<zkr_queue_put_callback as CallbackType>::Fn>, e: &PutEvent) {
    let Ok(node) = CString::new(e.node.as_str()) else {
        return; // paths never hold NUL
    };
    let messages: Vec<zkr_bytes> = e
        .messages
        .iter()
        .map(|m| zkr_bytes {
            data: if m.is_empty() {
                std::ptr::null()
            } else {
                m.as_ptr()
            },
            len: m.len(),
        })
        .collect();
    let event = zkr_queue_put_event {
        node: node.as_ptr(),
        messages: messages.as_ptr(),
        count: messages.len(),
        multi: e.multi,
    };
    cb.call((std::ptr::from_ref(&event),));
}

/// Adds a put listener (Curator's QueuePutListener); `*listener_id` identifies it for
/// zkr_queue_remove_put_listener. `user_data` is passed back untouched and must stay valid
/// until the listener is removed or the queue closed or freed.
#[no_mangle]
pub extern "C" fn zkr_queue_add_put_listener(
    q: *mut zkr_queue,
    callback: zkr_queue_put_callback,
    user_data: *mut c_void,
    listener_id: *mut u64,
) -> zkr_status {
    handle_out(
        "zkr_queue_add_put_listener",
        q,
        listener_id,
        "listener_id",
        |q| {
            let f = arg_callback(callback, "callback")?;
            q.puts.add(f, UserData(user_data), |cb| {
                Ok(q.queue.add_put_listener(move |e| call_put(&cb, e)))
            })
        },
    )
}

/// Removes a put listener. When this returns, the callback is not running (unless this is
/// called from inside it) and will not run again. ZKR_INVALID_ARGUMENT for an id that is not
/// one of this queue's put listeners.
#[no_mangle]
pub extern "C" fn zkr_queue_remove_put_listener(q: *mut zkr_queue, listener_id: u64) -> zkr_status {
    handle_call("zkr_queue_remove_put_listener", q, |q| {
        q.puts
            .remove(listener_id, "queue", |id| q.queue.remove_put_listener(id))
    })
}

/// What zkr_queue_item_fail does with an item on a queue with a lock path (Curator's
/// ErrorMode).
pub type zkr_error_mode = u32;
/// The item goes back into the queue at the tail, keeping its key (Curator's default).
pub const ZKR_ERROR_MODE_REQUEUE: zkr_error_mode = 0;
/// The item is deleted.
pub const ZKR_ERROR_MODE_DELETE: zkr_error_mode = 1;

/// Sets what zkr_queue_item_fail does (Curator's setErrorMode): ZKR_ERROR_MODE_REQUEUE (the
/// default) or ZKR_ERROR_MODE_DELETE. ZKR_INVALID_ARGUMENT for a queue without a lock path or
/// another value.
#[no_mangle]
pub extern "C" fn zkr_queue_set_error_mode(q: *mut zkr_queue, mode: zkr_error_mode) -> zkr_status {
    handle_call("zkr_queue_set_error_mode", q, |q| {
        let mode = ErrorMode::ALL.get(mode as usize).copied().ok_or_else(|| {
            Error::InvalidArgument(
                format!("mode is {mode}: expected ZKR_ERROR_MODE_REQUEUE (0) or ZKR_ERROR_MODE_DELETE (1)")
                    .into(),
            )
        })?;
        q.queue.set_error_mode(mode)
    })
}

/// The queue's error mode in `*mode`.
#[no_mangle]
pub extern "C" fn zkr_queue_error_mode(q: *mut zkr_queue, mode: *mut zkr_error_mode) -> zkr_status {
    handle_out("zkr_queue_error_mode", q, mode, "mode", |q| {
        let m = q.queue.error_mode();
        Ok(ErrorMode::ALL.iter().position(|x| *x == m).unwrap_or(0) as zkr_error_mode)
    })
}

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
            error_mode: None,
        };
        Ok(zkr_queue::new(DistributedQueue::with_kind(
            c, path, kind, options,
        )?))
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

/// Every put_multi of the family.
fn queue_put_multi(
    function: &str,
    q: *mut zkr_queue,
    messages: *const zkr_bytes,
    count: usize,
    timeout_ms: i64,
    put: *mut bool,
    key: ItemKey<'static>,
) -> zkr_status {
    handle_out(function, q, put, "put", |q| {
        let views = arg_slice(messages, count, "messages")?;
        let mut slices = Vec::with_capacity(views.len());
        for (i, m) in views.iter().enumerate() {
            slices.push(arg_slice(m.data, m.len, &format!("messages[{i}].data"))?);
        }
        let timeout = arg_timeout(timeout_ms)?;
        wait(q.queue.put_multi_with(&slices, key, timeout))
    })
}

/// Puts the `count` messages at `messages` (at least one) as one item (Curator's putMulti:
/// one node, consumed together; zkr_queue_item_message reads them), on a DistributedQueue.
/// Waits for room as zkr_queue_put.
#[no_mangle]
pub extern "C" fn zkr_queue_put_multi(
    q: *mut zkr_queue,
    messages: *const zkr_bytes,
    count: usize,
    timeout_ms: i64,
    put: *mut bool,
) -> zkr_status {
    queue_put_multi(
        "zkr_queue_put_multi",
        q,
        messages,
        count,
        timeout_ms,
        put,
        ItemKey::None,
    )
}

/// As zkr_queue_put_multi, with a priority (lower first) on a DistributedPriorityQueue.
#[no_mangle]
pub extern "C" fn zkr_queue_put_multi_with_priority(
    q: *mut zkr_queue,
    messages: *const zkr_bytes,
    count: usize,
    priority: i32,
    timeout_ms: i64,
    put: *mut bool,
) -> zkr_status {
    queue_put_multi(
        "zkr_queue_put_multi_with_priority",
        q,
        messages,
        count,
        timeout_ms,
        put,
        ItemKey::Priority(priority),
    )
}

/// As zkr_queue_put_multi, handed out from `delay_until_epoch_ms` on, on a
/// DistributedDelayQueue.
#[no_mangle]
pub extern "C" fn zkr_queue_put_multi_with_delay(
    q: *mut zkr_queue,
    messages: *const zkr_bytes,
    count: usize,
    delay_until_epoch_ms: i64,
    timeout_ms: i64,
    put: *mut bool,
) -> zkr_status {
    queue_put_multi(
        "zkr_queue_put_multi_with_delay",
        q,
        messages,
        count,
        timeout_ms,
        put,
        ItemKey::DelayUntil(delay_until_epoch_ms),
    )
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
/// complete it with zkr_queue_item_done (or give it back with zkr_queue_item_release or
/// zkr_queue_item_give_back) first.
pub struct zkr_queue_item {
    item: Mutex<Option<Item>>,
    data: Vec<u8>,
    messages: Vec<Vec<u8>>,
    token: i64,
}

fn item_handle(item: Option<Item>) -> *mut zkr_queue_item {
    item.map_or(std::ptr::null_mut(), |item| {
        new_handle(zkr_queue_item {
            data: item.data().to_vec(),
            messages: item.messages().to_vec(),
            token: item.fencing_token(),
            item: Mutex::new(Some(item)),
        })
    })
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
        Ok(item_handle(got))
    })
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

/// The number of messages of the item in `*count` (several for a put_multi; 1 for a put).
#[no_mangle]
pub extern "C" fn zkr_queue_item_message_count(
    item: *const zkr_queue_item,
    count: *mut usize,
) -> zkr_status {
    handle_out("zkr_queue_item_message_count", item, count, "count", |i| {
        Ok(i.messages.len())
    })
}

/// Message `index` of the item (0 is the one zkr_queue_item_data gives): `*data` points at
/// `*len` bytes owned by the item, valid until zkr_queue_item_free (NULL when empty).
/// ZKR_INVALID_ARGUMENT for an index past the last.
#[no_mangle]
pub extern "C" fn zkr_queue_item_message(
    item: *const zkr_queue_item,
    index: usize,
    data: *mut *const u8,
    len: *mut usize,
) -> zkr_status {
    handle_out("zkr_queue_item_message", item, data, "data", |i| {
        let len = arg_out(len, "len")?;
        let m = i.messages.get(index).ok_or_else(|| {
            Error::InvalidArgument(
                format!("index {index}: the item has {} messages", i.messages.len()).into(),
            )
        })?;
        len.write(m.len());
        Ok(if m.is_empty() {
            std::ptr::null()
        } else {
            m.as_ptr()
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
            format!("{function}: the item was already completed, released or given back").into(),
        )
    })
}

/// Completes the item (with a lock path: one transaction checks our lock, deletes the item and
/// the lock). An error means it was not completed by us: ZKR_SESSION_EXPIRED (our lock went
/// with the session; another consumer may take it), ZKR_NO_NODE (removed by someone else);
/// except ZKR_OUTCOME_UNKNOWN: a reply was lost and the item is gone, so it may have been
/// completed by us.
#[no_mangle]
pub extern "C" fn zkr_queue_item_done(item: *mut zkr_queue_item) -> zkr_status {
    handle_call("zkr_queue_item_done", item, |i| {
        wait(taken(i, "zkr_queue_item_done")?.done())
    })
}

/// The consumer failed the item (Curator's consumer threw): with a lock path, the queue's error
/// mode puts it back at the tail (ZKR_ERROR_MODE_REQUEUE, the default) or deletes it
/// (ZKR_ERROR_MODE_DELETE), in one transaction that checks our lock; the errors are
/// zkr_queue_item_done's (ZKR_SESSION_EXPIRED: the item stays for another consumer). Without a
/// lock path the item was removed when taken: ZKR_OK, nothing to do.
#[no_mangle]
pub extern "C" fn zkr_queue_item_fail(item: *mut zkr_queue_item) -> zkr_status {
    handle_call("zkr_queue_item_fail", item, |i| {
        wait(taken(i, "zkr_queue_item_fail")?.fail())
    })
}

/// With a lock path, gives the item back without completing it (another consumer takes it
/// again). Without one the take removed the item and this does nothing: see
/// zkr_queue_item_give_back.
#[no_mangle]
pub extern "C" fn zkr_queue_item_release(item: *mut zkr_queue_item) -> zkr_status {
    handle_call("zkr_queue_item_release", item, |i| {
        wait(taken(i, "zkr_queue_item_release")?.release())
    })
}

/// Gives the item back for another take without completing it, whatever the queue: with a lock
/// path it is zkr_queue_item_release (our lock node is deleted; the item stayed in the queue);
/// without one the item was removed when it was taken, so it is put back at the tail with its
/// messages and its key (priority, delay, id), as a failed item is requeued. For a consumer that
/// will not process an item nobody else has seen: consumption stays at most once. A put-back
/// whose reply is lost is not resent: ZKR_OUTCOME_UNKNOWN. An item already completed, released
/// or given back: ZKR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn zkr_queue_item_give_back(item: *mut zkr_queue_item) -> zkr_status {
    handle_call("zkr_queue_item_give_back", item, |i| {
        wait(taken(i, "zkr_queue_item_give_back")?.give_back())
    })
}

/// Frees an item; one neither completed nor released has its lock released in the background
/// (with a lock path; without one the take removed the item: zkr_queue_item_give_back first). NULL
/// does nothing.
#[no_mangle]
pub extern "C" fn zkr_queue_item_free(item: *mut zkr_queue_item) {
    free_handle("zkr_queue_item_free", item)
}

/// Curator's QueueSharder: DistributedQueue shards `queue_path/queue-<UUID>`, a new one added by
/// the sharders' leader (a LeaderLatch at `leader_path`) when a shard holds the threshold.
/// Thread-safe.
pub struct zkr_queue_sharder {
    sharder: QueueSharder,
}

handle!(zkr_queue_sharder, "sharder", |s| {
    let _ = wait(s.sharder.close());
});

/// Makes a sharder of the DistributedQueue shards under `queue_path`, electing its leader at
/// `leader_path` (outside `queue_path`). `lock_path` (or NULL) is the parent of the shards' lock
/// paths (shard S locks under lock_path/S: exactly-once consumption). Curator's policies, 0 for
/// Curator's default: `new_queue_threshold` (items in a shard that make the leader add one;
/// 10000), `threshold_check_ms` (how often shards are counted; 30000), `max_queues` (10). No
/// server call is made yet. Free with zkr_queue_sharder_free.
#[no_mangle]
pub extern "C" fn zkr_queue_sharder_new(
    c: *mut zkr_client,
    queue_path: *const c_char,
    leader_path: *const c_char,
    lock_path: *const c_char,
    new_queue_threshold: u32,
    threshold_check_ms: u32,
    max_queues: u32,
    out: *mut *mut zkr_queue_sharder,
) -> zkr_status {
    recipe_new("zkr_queue_sharder_new", c, queue_path, out, |c, path| {
        let leader = arg_str(leader_path, "leader_path")?;
        let lock = arg_opt_str(lock_path, "lock_path")?;
        let d = SharderPolicies::default();
        let or = |v: u32, default: usize| if v == 0 { default } else { v as usize };
        let options = SharderOptions {
            kind: QueueKind::Queue,
            queue: QueueOptions {
                lock_path: lock.map(str::to_string),
                ..QueueOptions::default()
            },
            policies: SharderPolicies {
                new_queue_threshold: or(new_queue_threshold, d.new_queue_threshold),
                threshold_check: if threshold_check_ms == 0 {
                    d.threshold_check
                } else {
                    Duration::from_millis(threshold_check_ms.into())
                },
                max_queues: or(max_queues, d.max_queues),
            },
        };
        Ok(zkr_queue_sharder {
            sharder: QueueSharder::new(c, path, leader, options)?,
        })
    })
}

/// Starts: makes the queue path, takes up its shards (or adds the first), joins the election.
/// Once only.
#[no_mangle]
pub extern "C" fn zkr_queue_sharder_start(s: *mut zkr_queue_sharder) -> zkr_status {
    handle_call("zkr_queue_sharder_start", s, |s| wait(s.sharder.start()))
}

/// Stops counting and leaves the election (shards and items stay; queue handles from
/// zkr_queue_sharder_get_queue still work). Closing twice is ZKR_OK.
#[no_mangle]
pub extern "C" fn zkr_queue_sharder_close(s: *mut zkr_queue_sharder) -> zkr_status {
    handle_call("zkr_queue_sharder_close", s, |s| wait(s.sharder.close()))
}

/// A shard for puts (Curator's getQueue: one under the threshold, at random) as a new queue
/// handle in `*out` (free with zkr_queue_free). ZKR_INVALID_ARGUMENT before start, ZKR_CLOSED
/// after close.
#[no_mangle]
pub extern "C" fn zkr_queue_sharder_get_queue(
    s: *mut zkr_queue_sharder,
    out: *mut *mut zkr_queue,
) -> zkr_status {
    handle_out("zkr_queue_sharder_get_queue", s, out, "out", |s| {
        Ok(new_handle(zkr_queue::new(s.sharder.get_queue()?)))
    })
}

/// Takes the next item of any shard, waiting at most `timeout_ms` (-1: no limit). `*item`
/// receives it (free with zkr_queue_item_free), or NULL if the timeout passed first.
#[no_mangle]
pub extern "C" fn zkr_queue_sharder_take(
    s: *mut zkr_queue_sharder,
    timeout_ms: i64,
    item: *mut *mut zkr_queue_item,
) -> zkr_status {
    handle_out("zkr_queue_sharder_take", s, item, "item", |s| {
        Ok(item_handle(wait(s.sharder.take(arg_timeout(timeout_ms)?))?))
    })
}

/// The number of shards this sharder knows, in `*qty` (Curator's getShardQty).
#[no_mangle]
pub extern "C" fn zkr_queue_sharder_shard_qty(
    s: *mut zkr_queue_sharder,
    qty: *mut usize,
) -> zkr_status {
    handle_out("zkr_queue_sharder_shard_qty", s, qty, "qty", |s| {
        Ok(s.sharder.shard_qty())
    })
}

/// The shards' paths, sorted, in `*paths` (free with zkr_string_list_free).
#[no_mangle]
pub extern "C" fn zkr_queue_sharder_queue_paths(
    s: *mut zkr_queue_sharder,
    paths: *mut *mut zkr_string_list,
) -> zkr_status {
    handle_out("zkr_queue_sharder_queue_paths", s, paths, "paths", |s| {
        zkr_string_list::from_vec(s.sharder.queue_paths())
    })
}

/// Whether this sharder leads (adds shards), in `*leader`.
#[no_mangle]
pub extern "C" fn zkr_queue_sharder_is_leader(
    s: *mut zkr_queue_sharder,
    leader: *mut bool,
) -> zkr_status {
    handle_out("zkr_queue_sharder_is_leader", s, leader, "leader", |s| {
        Ok(s.sharder.is_leader())
    })
}

/// Frees a sharder, closing it first. NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_queue_sharder_free(s: *mut zkr_queue_sharder) {
    free_handle("zkr_queue_sharder_free", s)
}
