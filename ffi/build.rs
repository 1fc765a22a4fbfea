//! Generates `include/zkrecipes.h` from `src/` with the pinned cbindgen (see Cargo.toml).
//!
//! The header is committed: `scripts/test-c` and CI rebuild this crate and fail if the header
//! changed (`git diff --exit-code include/zkrecipes.h`). cbindgen only rewrites the file when its
//! content differs, so an unchanged build does not touch it.
//!
//! It also writes the listener exports of every handle that has listeners — `_add_listener`,
//! `_remove_listener`, `_close`, `_free` — from the one table [`LISTENING`] into
//! `$OUT_DIR/listener_exports.rs`, which `src/lib.rs` includes and cbindgen reads too (so the
//! header declares them, with their documentation). A new recipe with listeners adds a row.

use std::env;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A handle whose C callbacks are listeners of the core (`callback::Listening`) and that can be
/// closed (`callback::Closing`): its four exports are generated.
struct Listening {
    /// The C type, also the prefix of its functions: `zkr_shared_count`.
    handle: &'static str,
    /// The module of `src/` that defines the handle and its callback type.
    module: &'static str,
    /// The callback type.
    callback: &'static str,
    /// The handle argument's name.
    arg: &'static str,
    /// The names after the prefix of the add and remove functions.
    add: &'static str,
    remove: &'static str,
    /// What a listener is, for the documentation: "a change listener".
    what: &'static str,
    /// What the handle is called in the documentation: "count".
    noun: &'static str,
    /// More about adding, or "".
    add_more: &'static str,
    /// What `_close` does.
    close: &'static str,
    /// What `_free` does besides removing the listeners and releasing the handle.
    free: &'static str,
}

/// The handles with listeners (the client's are its connection-state callbacks).
const LISTENING: &[Listening] = &[
    Listening {
        handle: "zkr_client",
        module: "client",
        callback: "zkr_state_callback",
        arg: "c",
        add: "add_state_listener",
        remove: "remove_state_listener",
        what: "a connection-state callback",
        noun: "client",
        add_more: "",
        close: "Closes the session: ephemeral nodes (held locks, latch nodes) vanish at once, waiters in \
                recipes of this client return ZKR_CLOSED, and every later call on the client returns \
                ZKR_CLOSED (but zkr_client_remove_state_listener and zkr_client_max_request_bytes), as \
                does every later call of its recipes that needs the session; a recipe's getters of \
                what it holds in memory still answer. The handles stay valid, to be freed. Closing \
                twice is ZKR_OK.",
        free: "stops its watch callbacks, closes the session if still open. Recipe handles made from \
               it stay valid (their calls return ZKR_CLOSED) and must still be freed. The client must \
               not be in use by another thread. A client already freed is detected in most cases \
               (see docs/C_API.md): nothing is done and zkr_last_error_message() says so",
    },
    Listening {
        handle: "zkr_shared_count",
        module: "atomic",
        callback: "zkr_shared_count_callback",
        arg: "sc",
        add: "add_listener",
        remove: "remove_listener",
        what: "a change listener",
        noun: "count",
        add_more: "",
        close: "Stops watching and drops the listeners (the node stays). Closing twice is ZKR_OK; later \
                calls other than the getters, the listener calls and zkr_shared_count_set_error_callback \
                return ZKR_CLOSED (a listener or callback set now hears nothing).",
        free: "closes it",
    },
    Listening {
        handle: "zkr_shared_value",
        module: "values",
        callback: "zkr_shared_value_callback",
        arg: "sv",
        add: "add_listener",
        remove: "remove_listener",
        what: "a change listener",
        noun: "value",
        add_more: "",
        close: "Stops watching and drops the listeners (the node stays). Closing twice is ZKR_OK; later \
                calls other than zkr_shared_value_get_value and the listener calls return ZKR_CLOSED (a \
                listener added now hears nothing).",
        free: "closes it",
    },
    Listening {
        handle: "zkr_leader_latch",
        module: "leader",
        callback: "zkr_leadership_callback",
        arg: "l",
        add: "add_listener",
        remove: "remove_listener",
        what: "a leadership listener (Curator's LeaderLatchListener)",
        noun: "latch",
        add_more: "",
        close: "Leaves the election with the close mode: leadership ends first, then our node is deleted \
                (so the next participant takes over at once). Closing again, or closing a latch never \
                started, is ZKR_OK.",
        free: "closes it silently if still open (its node is deleted before this returns while \
               connected; when disconnected, after the reconnection or with the session). The latch \
               must not be in use by another thread",
    },
    Listening {
        handle: "zkr_leader_observer",
        module: "observer",
        callback: "zkr_leader_observer_callback",
        arg: "o",
        add: "add_listener",
        remove: "remove_listener",
        what: "a listener called with each new leader",
        noun: "observer",
        add_more: "",
        close: "Stops observing (its watch is removed from the server); waiters get ZKR_CLOSED. Closing \
                twice is ZKR_OK.",
        free: "closes it",
    },
    Listening {
        handle: "zkr_persistent_node",
        module: "nodes",
        callback: "zkr_node_callback",
        arg: "n",
        add: "add_listener",
        remove: "remove_listener",
        what: "a registration listener",
        noun: "node",
        add_more: "",
        close: "Stops keeping the node and deletes it (our own node only). Closing again, or closing a \
                node never started, is ZKR_OK.",
        free: "closes it if still open (its node is deleted before this returns)",
    },
    Listening {
        handle: "zkr_group_member",
        module: "nodes",
        callback: "zkr_members_callback",
        arg: "m",
        add: "add_listener",
        remove: "remove_listener",
        what: "a membership listener (see zkr_members_callback)",
        noun: "member",
        add_more: "",
        close: "Leaves the group (deletes this member's node, ours only). Closing again is ZKR_OK.",
        free: "leaves the group if still in it",
    },
    Listening {
        handle: "zkr_cache",
        module: "cache",
        callback: "zkr_cache_callback",
        arg: "cache",
        add: "add_listener",
        remove: "remove_listener",
        what: "a listener",
        noun: "cache",
        add_more: "It hears what happens after this returns (no replay: see \
                   zkr_cache_add_listener_with_replay).",
        close: "Stops the cache and removes its listeners: a wait on this cache in progress (in a \
                listener too) returns ZKR_CLOSED, and when this returns no listener runs (unless this \
                is called from inside it) or will run. The last snapshot stays readable. Closing \
                twice is ZKR_OK; zkr_cache_start and the waits return ZKR_CLOSED afterwards.",
        free: "closes it",
    },
    Listening {
        handle: "zkr_watcher",
        module: "watcher",
        callback: "zkr_watcher_callback",
        arg: "watcher",
        add: "add_listener",
        remove: "remove_listener",
        what: "a listener",
        noun: "watcher",
        add_more: "It hears the events that arrive after this returns.",
        close: "Removes the watch and the listeners. Closing twice is ZKR_OK; zkr_watcher_start \
                returns ZKR_CLOSED afterwards.",
        free: "removes the watch",
    },
    Listening {
        handle: "zkr_queue",
        module: "queue",
        callback: "zkr_queue_state_callback",
        arg: "q",
        add: "add_listener",
        remove: "remove_listener",
        what: "a connection-state listener (Curator's consumers hear none: CURATOR-336)",
        noun: "queue",
        add_more: "",
        close: "Removes the queue's state and put listeners. The queue stays usable (its items live in \
                ZooKeeper; taken items are completed or freed as before). Closing twice is ZKR_OK.",
        free: "removes its put listeners (its items stay)",
    },
    Listening {
        handle: "zkr_service_cache",
        module: "discovery",
        callback: "zkr_service_cache_callback",
        arg: "c",
        add: "add_listener",
        remove: "remove_listener",
        what: "a service cache listener",
        noun: "service cache",
        add_more: "Added before zkr_service_cache_start, it hears the initial load.",
        close: "Stops the cache and removes its listeners: a wait on this cache in progress (in a \
                listener too) returns ZKR_CLOSED, and when this returns no listener runs (unless this \
                is called from inside it) or will run. The last instances stay readable. Closing \
                twice is ZKR_OK; the waits return ZKR_CLOSED afterwards.",
        free: "closes it",
    },
    Listening {
        handle: "zkr_set_partitioner",
        module: "partition",
        callback: "zkr_partition_callback",
        arg: "p",
        add: "add_listener",
        remove: "remove_listener",
        what: "a state listener",
        noun: "partitioner",
        add_more: "",
        close: "kazoo's finish (zkr_set_partitioner_finish): ZKR_PARTITION_FAILURE at once, then the \
                partitions' locks are released and the party left. Closing twice is ZKR_OK.",
        free: "finishes it if not finished (its locks released, the party left, before this returns)",
    },
];

/// Doc comment lines for `text`, wrapped at 100 columns.
fn doc(out: &mut String, text: &str) {
    let mut line = String::from("///");
    for word in text.split_whitespace() {
        if line.len() + 1 + word.len() > 100 {
            out.push_str(&line);
            out.push('\n');
            line = String::from("///");
        }
        line.push(' ');
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
}

/// The listener exports of [`LISTENING`], as Rust source.
fn listener_exports() -> String {
    let mut out = String::from(
        "// Generated by ffi/build.rs from its LISTENING table: do not edit, change the table.\n\n\
         use std::ffi::c_void;\n\n\
         use crate::callback::{add_listener, close_handle, remove_listener};\n\
         use crate::handle::free_handle;\n\
         use crate::status::zkr_status;\n",
    );
    for l in LISTENING {
        let _ = writeln!(
            out,
            "use crate::{}::{{{}, {}}};",
            l.module, l.handle, l.callback
        );
    }
    for l in LISTENING {
        let (h, a) = (l.handle, l.arg);
        let (add, remove) = (format!("{h}_{}", l.add), format!("{h}_{}", l.remove));
        out.push('\n');
        doc(
            &mut out,
            &format!(
                "Adds {}; `*listener_id` identifies it for {remove}. {} `user_data` is passed back \
                 untouched and must stay valid until the listener is removed or the {} freed. The \
                 callback is called on another thread (see its type).",
                l.what, l.add_more, l.noun
            ),
        );
        let _ = write!(
            out,
            "#[no_mangle]\npub extern \"C\" fn {add}(\n    {a}: *mut {h},\n    callback: {},\n    \
             user_data: *mut c_void,\n    listener_id: *mut u64,\n) -> zkr_status {{\n    \
             add_listener(\"{add}\", {a}, callback, user_data, listener_id)\n}}\n\n",
            l.callback
        );
        doc(
            &mut out,
            &format!(
                "Removes {} added with {add}. When this returns, the callback is not running (unless \
                 this is called from inside it) and will not run again, so its user_data may be \
                 freed. ZKR_INVALID_ARGUMENT for an id that is not one of this {}'s listeners \
                 (listener ids are unique in the process).",
                l.what, l.noun
            ),
        );
        let _ = write!(
            out,
            "#[no_mangle]\npub extern \"C\" fn {remove}({a}: *mut {h}, listener_id: u64) -> zkr_status {{\n    \
             remove_listener(\"{remove}\", {a}, listener_id)\n}}\n\n"
        );
        doc(&mut out, l.close);
        let _ = write!(
            out,
            "#[no_mangle]\npub extern \"C\" fn {h}_close({a}: *mut {h}) -> zkr_status {{\n    \
             close_handle(\"{h}_close\", {a})\n}}\n\n"
        );
        doc(
            &mut out,
            &format!(
                "Frees a {}: {}. No listener of it starts once this is called; a running one is waited \
                 for (unless this is called from inside it), after what could end its waits is \
                 closed; then the handle is released. No other thread may be using the handle: end \
                 another thread's wait with {}_close first. NULL does nothing.",
                l.noun, l.free, h
            ),
        );
        let _ = write!(
            out,
            "#[no_mangle]\npub extern \"C\" fn {h}_free({a}: *mut {h}) {{\n    \
             free_handle(\"{h}_free\", {a})\n}}\n"
        );
    }
    out
}

/// Writes `content` to `path` unless it holds that already (so that nothing rebuilds for it).
fn write_if_changed(path: &Path, content: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(content) {
        std::fs::write(path, content)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    }
}

fn main() {
    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=build.rs");

    let mut config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("ffi/cbindgen.toml is unreadable");
    // The version macros come from the workspace version, the one source of truth.
    let version =
        |part: &str| env::var(format!("CARGO_PKG_VERSION_{part}")).expect("CARGO_PKG_VERSION_*");
    let macros = format!(
        "/** The version of this header (compare with zkr_version() at run time). */\n\
         #define ZKR_VERSION_MAJOR {}\n#define ZKR_VERSION_MINOR {}\n#define ZKR_VERSION_PATCH {}\n\
         #define ZKR_VERSION_STRING \"{}\"\n",
        version("MAJOR"),
        version("MINOR"),
        version("PATCH"),
        env::var("CARGO_PKG_VERSION").expect("CARGO_PKG_VERSION"),
    );
    config.after_includes = Some(match config.after_includes.take() {
        Some(extra) => format!("\n{macros}\n{extra}"),
        None => format!("\n{macros}"),
    });

    let out = crate_dir.join("..").join("include").join("zkrecipes.h");
    // A soname, so that programs record the ABI they were linked against (0.x: every minor may
    // break it). scripts/install-c installs the matching links.
    let major = version("MAJOR");
    let soname = if major == "0" {
        format!("libzkrecipes.so.0.{}", version("MINOR"))
    } else {
        format!("libzkrecipes.so.{major}")
    };
    if env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
    }

    let exports = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR")).join("listener_exports.rs");
    write_if_changed(&exports, &listener_exports());

    // Failing here (rather than warning) keeps a stale committed header from passing the check.
    let bindings = cbindgen::Builder::new()
        .with_src(&exports)
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .unwrap_or_else(|e| panic!("cbindgen could not generate include/zkrecipes.h: {e}"));
    bindings.write_to_file(&out);
}
