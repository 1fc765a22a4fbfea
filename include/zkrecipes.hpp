// zkrecipes.hpp — a header-only C++17 RAII layer over the zkrecipes C API (zkrecipes.h).
//
// Handles are std::unique_ptr with the matching zkr_*_free deleter; failures throw zkr::error,
// which carries the zkr_status and zkr_last_error_message(). zkr::mutex is TimedLockable, so the
// standard guards work:
//
//     zkr::client client("127.0.0.1:2181");
//     zkr::mutex m(client, "/locks/orders");
//     {
//         std::lock_guard<zkr::mutex> hold(m);                  // waits forever
//         use(m.fencing_token());
//     }
//     std::unique_lock<zkr::mutex> lk(m, std::chrono::seconds(5));  // try_lock_for
//     if (lk) { ... }
//
// Semaphores: zkr::semaphore::acquire returns zkr::leases, empty (false) when the timeout passed
// first; leases still held are returned when the value goes (in the background).
//
// Dynamic ensembles: zkr::client_options() gives initialized options (set track_ensemble to
// follow the members); client::get_config(), reconfig(), reconfig_members() and
// current_connect_string() give zkr::ensemble_config values (std::string, std::vector).
//
// Owners: as in C, a hold belongs to the calling thread; the *_as methods take a zkr::owner.
// unlock() is noexcept (it runs in guards' destructors): a failed release there is ignored; call
// release() to see the error.
//
// SPDX-License-Identifier: Apache-2.0
#ifndef ZKRECIPES_HPP
#define ZKRECIPES_HPP

#include <zkrecipes.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace zkr {

/// A failed zkr_ call: the status and the library's message.
class error : public std::runtime_error {
public:
    error(zkr_status status, const char *message) : std::runtime_error(message ? message : ""), status_(status) {}
    /// The status code (ZKR_NOT_OWNER, ZKR_CLOSED, ...).
    zkr_status status() const noexcept { return status_; }
    /// The status code's name ("ZKR_NOT_OWNER").
    const char *status_name() const noexcept { return zkr_status_name(status_); }

private:
    zkr_status status_;
};

/// Throws zkr::error unless `status` is ZKR_OK.
inline void check(zkr_status status) {
    if (status != ZKR_OK) throw error(status, zkr_last_error_message());
}

/// Deleters for std::unique_ptr.
struct deleter {
    void operator()(zkr_client *p) const noexcept { zkr_client_free(p); }
    void operator()(zkr_mutex *p) const noexcept { zkr_mutex_free(p); }
    void operator()(zkr_leader_latch *p) const noexcept { zkr_leader_latch_free(p); }
    void operator()(zkr_atomic_long *p) const noexcept { zkr_atomic_long_free(p); }
    void operator()(zkr_atomic_int *p) const noexcept { zkr_atomic_int_free(p); }
    void operator()(zkr_shared_count *p) const noexcept { zkr_shared_count_free(p); }
    void operator()(zkr_rwlock *p) const noexcept { zkr_rwlock_free(p); }
    void operator()(zkr_semaphore_mutex *p) const noexcept { zkr_semaphore_mutex_free(p); }
    void operator()(zkr_semaphore *p) const noexcept { zkr_semaphore_free(p); }
    void operator()(zkr_leases *p) const noexcept { zkr_leases_free(p); }
    void operator()(zkr_multi_lock *p) const noexcept { zkr_multi_lock_free(p); }
    void operator()(zkr_leader_selector *p) const noexcept { zkr_leader_selector_free(p); }
    void operator()(zkr_leader_observer *p) const noexcept { zkr_leader_observer_free(p); }
    void operator()(char *p) const noexcept { zkr_string_free(p); }
    void operator()(zkr_string_list *p) const noexcept { zkr_string_list_free(p); }
    void operator()(zkr_buffer *p) const noexcept { zkr_buffer_free(p); }
    void operator()(zkr_participant *p) const noexcept { zkr_participant_free(p); }
    void operator()(zkr_participant_list *p) const noexcept { zkr_participant_list_free(p); }
    void operator()(zkr_ensemble_config *p) const noexcept { zkr_ensemble_config_free(p); }
};

template <typename T>
using handle = std::unique_ptr<T, deleter>;

/// A lock owner (see zkr_owner). zkr::owner::current_thread() is what the plain calls use.
struct owner {
    zkr_owner raw;
    static owner make() noexcept { return owner{zkr_owner_new()}; }
    static owner current_thread() noexcept { return owner{zkr_owner_current_thread()}; }
};

/// Client options with every default (zkr_client_options_init): change the fields you need,
/// e.g. `opts.track_ensemble = true` to follow the ensemble's members (Curator's
/// EnsembleTracker), then pass them to zkr::client.
inline zkr_client_options client_options() {
    zkr_client_options opts;
    check(zkr_client_options_init(&opts));
    return opts;
}

/// One member of the ensemble (zkr_ensemble_member), as values.
struct ensemble_member {
    uint64_t id = 0;
    /// The host of its quorum address.
    std::string host;
    uint16_t quorum_port = 0;
    uint16_t election_port = 0;
    /// ZKR_SERVER_PARTICIPANT or ZKR_SERVER_OBSERVER.
    zkr_server_role role = ZKR_SERVER_PARTICIPANT;
    /// The address it serves clients on as written; empty when its line has no client port.
    std::string client_host;
    /// Its plaintext client port; 0 when its line has none.
    uint16_t client_port = 0;
    /// Where a client reaches it ("host:port"); empty without a client port.
    std::string client_address;
    /// Its whole "server.ID=..." line: what reconfig() takes to add it.
    std::string server_line;
};

/// The ensemble's configuration (zkr_ensemble_config), as values: members by id, version.
struct ensemble_config {
    std::vector<ensemble_member> members;
    /// The zxid of the reconfiguration that made it (0 if never changed): reconfig()'s
    /// `from_version`.
    int64_t version = 0;
    /// The members' client addresses as a connect string ("" if none has a client port).
    std::string connect_string;
    /// /zookeeper/config's text as read.
    std::string data;
};

namespace detail {
inline std::string str(const char *s) { return s ? std::string(s) : std::string(); }

/// Copies a configuration into values and frees it.
inline ensemble_config config(zkr_ensemble_config *raw) {
    handle<zkr_ensemble_config> owned(raw);
    ensemble_config out;
    out.version = raw->version;
    out.connect_string = str(raw->connect_string);
    out.data = str(raw->data);
    out.members.reserve(raw->len);
    for (size_t i = 0; i < raw->len; i++) {
        const zkr_ensemble_member &m = raw->members[i];
        ensemble_member e;
        e.id = m.id;
        e.host = str(m.host);
        e.quorum_port = m.quorum_port;
        e.election_port = m.election_port;
        e.role = m.role;
        e.client_host = str(m.client_host);
        e.client_port = m.client_port;
        e.client_address = str(m.client_address);
        e.server_line = str(m.server_line);
        out.members.push_back(std::move(e));
    }
    return out;
}

inline std::vector<const char *> c_strs(const std::vector<std::string> &v) {
    std::vector<const char *> out;
    out.reserve(v.size());
    for (const auto &s : v) out.push_back(s.c_str());
    return out;
}

inline int64_t to_ms(std::chrono::milliseconds d) { return d.count() < 0 ? 0 : static_cast<int64_t>(d.count()); }

inline std::vector<std::string> strings(zkr_string_list *list) {
    handle<zkr_string_list> owned(list);
    std::vector<std::string> out;
    out.reserve(list->len);
    for (size_t i = 0; i < list->len; i++) out.emplace_back(list->items[i]);
    return out;
}
}  // namespace detail

/// A ZooKeeper client (zkr_client). Closing happens in the destructor if not done before.
class client {
public:
    explicit client(const std::string &hosts, const zkr_client_options *opts = nullptr) {
        zkr_client *raw = nullptr;
        check(zkr_client_connect(hosts.c_str(), opts, &raw));
        handle_.reset(raw);
    }
    client(const std::string &hosts, const zkr_client_options &opts) : client(hosts, &opts) {}

    /// Ends the session; recipe calls return ZKR_CLOSED afterwards.
    void close() { check(zkr_client_close(handle_.get())); }
    zkr_connection_state state() const {
        zkr_connection_state s = ZKR_STATE_CONNECTED;
        check(zkr_client_state(handle_.get(), &s));
        return s;
    }
    int64_t session_id() const {
        int64_t id = 0;
        check(zkr_client_session_id(handle_.get(), &id));
        return id;
    }
    /// Creates a node; returns its actual path.
    std::string create(const std::string &path, const std::string &data = std::string(),
                       zkr_create_mode mode = ZKR_PERSISTENT, uint32_t flags = 0) {
        char *created = nullptr;
        check(zkr_client_create(handle_.get(), path.c_str(), reinterpret_cast<const uint8_t *>(data.data()),
                                data.size(), mode, flags, &created));
        handle<char> owned(created);
        return std::string(created);
    }
    std::string get_data(const std::string &path, zkr_stat *stat = nullptr) {
        zkr_buffer *buf = nullptr;
        check(zkr_client_get_data(handle_.get(), path.c_str(), &buf, stat));
        handle<zkr_buffer> owned(buf);
        return std::string(reinterpret_cast<const char *>(buf->data), buf->len);
    }
    void set_data(const std::string &path, const std::string &data, int32_t version = -1) {
        check(zkr_client_set_data(handle_.get(), path.c_str(), reinterpret_cast<const uint8_t *>(data.data()),
                                  data.size(), version, nullptr));
    }
    bool exists(const std::string &path) {
        bool found = false;
        check(zkr_client_exists(handle_.get(), path.c_str(), &found, nullptr));
        return found;
    }
    std::vector<std::string> get_children(const std::string &path) {
        zkr_string_list *list = nullptr;
        check(zkr_client_get_children(handle_.get(), path.c_str(), &list));
        return detail::strings(list);
    }
    void remove(const std::string &path, int32_t version = -1, uint32_t flags = 0) {
        check(zkr_client_delete(handle_.get(), path.c_str(), version, flags));
    }

    /// The ensemble's configuration (zkr_client_get_config). A standalone server has no
    /// members and version 0.
    ensemble_config get_config() {
        zkr_ensemble_config *raw = nullptr;
        check(zkr_client_get_config(handle_.get(), &raw));
        return detail::config(raw);
    }
    /// An incremental reconfiguration (zkr_client_reconfig): `joining` "server.ID=..." lines
    /// are added, `leaving` member ids removed; `from_version` -1: whatever is current,
    /// otherwise only if still that version (zkr::error ZKR_BAD_VERSION). Returns the new
    /// configuration.
    ensemble_config reconfig(const std::vector<std::string> &joining, const std::vector<uint64_t> &leaving,
                             int64_t from_version = -1) {
        std::vector<const char *> lines = detail::c_strs(joining);
        zkr_ensemble_config *raw = nullptr;
        check(zkr_client_reconfig(handle_.get(), lines.empty() ? nullptr : lines.data(), lines.size(),
                                  leaving.empty() ? nullptr : leaving.data(), leaving.size(), nullptr, 0,
                                  from_version, &raw));
        return detail::config(raw);
    }
    /// A reconfiguration to exactly these members ("server.ID=..." lines, not empty).
    ensemble_config reconfig_members(const std::vector<std::string> &new_members, int64_t from_version = -1) {
        std::vector<const char *> lines = detail::c_strs(new_members);
        // Never NULL: an empty list is refused (ZKR_INVALID_ARGUMENT), not taken as incremental.
        static const char *const none[1] = {nullptr};
        zkr_ensemble_config *raw = nullptr;
        check(zkr_client_reconfig(handle_.get(), nullptr, 0, nullptr, 0, lines.empty() ? none : lines.data(),
                                  lines.size(), from_version, &raw));
        return detail::config(raw);
    }
    /// The servers the client connects to now (zkr_client_current_connect_string): its hosts,
    /// or with track_ensemble the members as last read.
    std::string current_connect_string() const {
        char *hosts = nullptr;
        check(zkr_client_current_connect_string(handle_.get(), &hosts));
        handle<char> owned(hosts);
        return std::string(hosts);
    }
    zkr_client *get() const noexcept { return handle_.get(); }

private:
    handle<zkr_client> handle_;
};

/// A wide fencing token (zkr_mutex_fencing_token_wide): the lock node's czxid, then the
/// in-memory handoffs on that node before this hold; ordered as a pair.
struct wide_token {
    int64_t zxid = 0;
    uint32_t handoff = 0;
    friend bool operator<(const wide_token &a, const wide_token &b) noexcept {
        return a.zxid < b.zxid || (a.zxid == b.zxid && a.handoff < b.handoff);
    }
    friend bool operator==(const wide_token &a, const wide_token &b) noexcept {
        return a.zxid == b.zxid && a.handoff == b.handoff;
    }
};

/// Curator's InterProcessMutex (zkr_mutex), reentrant per owner. TimedLockable.
class mutex {
public:
    /// A mutex whose threads hand the lock over in memory behind one lock node
    /// (zkr_mutex_new_cohort): fence with wide_fencing_token().
    static mutex cohort(client &c, const std::string &path, uint32_t max_handoffs = 64,
                        std::chrono::milliseconds max_hold = std::chrono::milliseconds(20)) {
        zkr_mutex *raw = nullptr;
        check(zkr_mutex_new_cohort(c.get(), path.c_str(), max_handoffs, detail::to_ms(max_hold), &raw));
        return mutex(raw);
    }

    mutex(client &c, const std::string &path) {
        zkr_mutex *raw = nullptr;
        check(zkr_mutex_new(c.get(), path.c_str(), &raw));
        handle_.reset(raw);
    }
    /// Takes ownership of a handle (from zkr_rwlock_read_lock, say).
    explicit mutex(zkr_mutex *adopted) noexcept : handle_(adopted) {}

    void lock() { (void)acquire(-1); }
    bool try_lock() { return acquire(0); }
    template <typename Rep, typename Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d) {
        return acquire(detail::to_ms(std::chrono::duration_cast<std::chrono::milliseconds>(d)));
    }
    /// Releases; errors are ignored (see release()).
    void unlock() noexcept { (void)zkr_mutex_release(handle_.get()); }
    /// Releases, throwing on failure (ZKR_NOT_OWNER, ZKR_CLOSED, ...).
    void release() { check(zkr_mutex_release(handle_.get())); }

    /// Acquires for `timeout_ms` (-1: forever); whether it was acquired.
    bool acquire(int64_t timeout_ms) {
        bool ok = false;
        check(zkr_mutex_acquire(handle_.get(), timeout_ms, &ok));
        return ok;
    }
    bool acquire_as(owner o, int64_t timeout_ms) {
        bool ok = false;
        check(zkr_mutex_acquire_as(handle_.get(), o.raw, timeout_ms, &ok));
        return ok;
    }
    void release_as(owner o) { check(zkr_mutex_release_as(handle_.get(), o.raw)); }
    bool is_owned() const {
        bool b = false;
        check(zkr_mutex_is_owned(handle_.get(), &b));
        return b;
    }
    int64_t fencing_token() const {
        int64_t t = 0;
        check(zkr_mutex_fencing_token(handle_.get(), &t));
        return t;
    }
    /// The calling thread's wide fencing token (strictly increasing across cohort handoffs).
    wide_token wide_fencing_token() const {
        wide_token t;
        check(zkr_mutex_fencing_token_wide(handle_.get(), &t.zxid, &t.handoff));
        return t;
    }
    /// Owners waiting in this object's cohort queue (0 without cohort handoffs).
    size_t local_waiters() const {
        size_t n = 0;
        check(zkr_mutex_local_waiters(handle_.get(), &n));
        return n;
    }
    std::vector<std::string> participant_nodes() {
        zkr_string_list *list = nullptr;
        check(zkr_mutex_participant_nodes(handle_.get(), &list));
        return detail::strings(list);
    }
    zkr_mutex *get() const noexcept { return handle_.get(); }

private:
    handle<zkr_mutex> handle_;
};

/// Curator's InterProcessReadWriteLock: read() and write() are zkr::mutex objects.
class read_write_lock {
public:
    read_write_lock(client &c, const std::string &path) {
        zkr_rwlock *raw = nullptr;
        check(zkr_rwlock_new(c.get(), path.c_str(), &raw));
        handle<zkr_rwlock> rw(raw);
        zkr_mutex *r = nullptr, *w = nullptr;
        check(zkr_rwlock_read_lock(raw, &r));
        read_ = std::make_unique<mutex>(r);
        check(zkr_rwlock_write_lock(raw, &w));
        write_ = std::make_unique<mutex>(w);
    }
    mutex &read() noexcept { return *read_; }
    mutex &write() noexcept { return *write_; }

private:
    std::unique_ptr<mutex> read_, write_;
};

/// Curator's InterProcessSemaphoreMutex: not reentrant, not owned. Lockable.
class semaphore_mutex {
public:
    semaphore_mutex(client &c, const std::string &path) {
        zkr_semaphore_mutex *raw = nullptr;
        check(zkr_semaphore_mutex_new(c.get(), path.c_str(), &raw));
        handle_.reset(raw);
    }
    void lock() { (void)acquire(-1); }
    bool try_lock() { return acquire(0); }
    template <typename Rep, typename Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d) {
        return acquire(detail::to_ms(std::chrono::duration_cast<std::chrono::milliseconds>(d)));
    }
    void unlock() noexcept { (void)zkr_semaphore_mutex_release(handle_.get()); }
    bool acquire(int64_t timeout_ms) {
        bool ok = false;
        check(zkr_semaphore_mutex_acquire(handle_.get(), timeout_ms, &ok));
        return ok;
    }
    void release() { check(zkr_semaphore_mutex_release(handle_.get())); }

private:
    handle<zkr_semaphore_mutex> handle_;
};

/// Curator's LeaderSelector running a C++ callable as take_leadership. The destructor closes the
/// selector, waiting for a running take_leadership to return, before the callable goes.
class leader_selector {
public:
    using take_leadership = std::function<void(zkr_leadership_context *)>;

    leader_selector(client &c, const std::string &path, const std::string &id, take_leadership f)
        : fn_(std::make_unique<take_leadership>(std::move(f))) {
        zkr_leader_selector *raw = nullptr;
        check(zkr_leader_selector_new(c.get(), path.c_str(), id.c_str(), &leader_selector::trampoline, fn_.get(), &raw));
        handle_.reset(raw);
    }
    void auto_requeue(bool on = true) { check(zkr_leader_selector_set_auto_requeue(handle_.get(), on)); }
    void start() { check(zkr_leader_selector_start(handle_.get())); }
    void interrupt_leadership() { check(zkr_leader_selector_interrupt_leadership(handle_.get())); }
    bool has_leadership() const {
        bool b = false;
        check(zkr_leader_selector_has_leadership(handle_.get(), &b));
        return b;
    }
    void close() { check(zkr_leader_selector_close(handle_.get())); }
    zkr_leader_selector *get() const noexcept { return handle_.get(); }

private:
    static void trampoline(zkr_leadership_context *ctx, void *user_data) {
        try {
            (*static_cast<take_leadership *>(user_data))(ctx);
        } catch (...) {
            // An exception must not cross the C boundary; leadership simply ends.
        }
    }
    // Declared first so it is destroyed last: the selector (which calls it) goes first.
    std::unique_ptr<take_leadership> fn_;
    handle<zkr_leader_selector> handle_;
};

/// Curator's LeaderLatch (zkr_leader_latch). The destructor closes it.
class leader_latch {
public:
    leader_latch(client &c, const std::string &path, const std::string &id = std::string()) {
        zkr_leader_latch *raw = nullptr;
        check(zkr_leader_latch_new(c.get(), path.c_str(), id.c_str(), &raw));
        handle_.reset(raw);
    }
    void start() { check(zkr_leader_latch_start(handle_.get())); }
    /// Waits for leadership at most `timeout_ms` (-1: forever); whether this participant leads.
    bool await(int64_t timeout_ms = -1) {
        bool leader = false;
        check(zkr_leader_latch_await(handle_.get(), timeout_ms, &leader));
        return leader;
    }
    bool has_leadership() const {
        bool leader = false;
        check(zkr_leader_latch_has_leadership(handle_.get(), &leader));
        return leader;
    }
    int64_t leadership_epoch() const {
        int64_t e = 0;
        check(zkr_leader_latch_leadership_epoch(handle_.get(), &e));
        return e;
    }
    void close() { check(zkr_leader_latch_close(handle_.get())); }
    zkr_leader_latch *get() const noexcept { return handle_.get(); }

private:
    handle<zkr_leader_latch> handle_;
};

/// Curator's DistributedAtomicLong (zkr_atomic_long).
class atomic_long {
public:
    atomic_long(client &c, const std::string &path) {
        zkr_atomic_long *raw = nullptr;
        check(zkr_atomic_long_new(c.get(), path.c_str(), &raw));
        handle_.reset(raw);
    }
    zkr_atomic_value get() {
        zkr_atomic_value v{};
        check(zkr_atomic_long_get(handle_.get(), &v));
        return v;
    }
    zkr_atomic_value add(int64_t delta) {
        zkr_atomic_value v{};
        check(zkr_atomic_long_add(handle_.get(), delta, &v));
        return v;
    }
    /// Adds and returns the new value; never fails silently.
    int64_t add_and_get(int64_t delta, int64_t timeout_ms = -1) {
        int64_t v = 0;
        check(zkr_atomic_long_add_and_get(handle_.get(), delta, timeout_ms, &v));
        return v;
    }
    zkr_atomic_long *get_handle() const noexcept { return handle_.get(); }

private:
    handle<zkr_atomic_long> handle_;
};

/// Curator's SharedCount (zkr_shared_count).
class shared_count {
public:
    shared_count(client &c, const std::string &path, int32_t seed) {
        zkr_shared_count *raw = nullptr;
        check(zkr_shared_count_new(c.get(), path.c_str(), seed, &raw));
        handle_.reset(raw);
    }
    void start() { check(zkr_shared_count_start(handle_.get())); }
    int32_t get_count() const {
        int32_t n = 0;
        check(zkr_shared_count_get_count(handle_.get(), &n));
        return n;
    }
    void set_count(int32_t n) { check(zkr_shared_count_set_count(handle_.get(), n)); }
    zkr_shared_count *get() const noexcept { return handle_.get(); }

private:
    handle<zkr_shared_count> handle_;
};

/// The leases one semaphore acquire took (zkr_leases). Empty (false) when the acquire's timeout
/// passed first. The destructor returns the leases still held, in the background; return them
/// with semaphore::return_leases to see the outcome.
class leases {
public:
    leases() = default;
    /// Takes ownership of `raw` (NULL: empty).
    explicit leases(zkr_leases *raw) noexcept : handle_(raw) {}
    /// Whether the acquire took the leases.
    explicit operator bool() const noexcept { return handle_ != nullptr; }
    /// How many leases are still held (0 once returned, or when empty).
    size_t size() const {
        if (!handle_) return 0;
        size_t n = 0;
        check(zkr_leases_count(handle_.get(), &n));
        return n;
    }
    /// The lease nodes' paths.
    std::vector<std::string> paths() const {
        if (!handle_) return {};
        zkr_string_list *list = nullptr;
        check(zkr_leases_paths(handle_.get(), &list));
        return detail::strings(list);
    }
    /// Waits until a lease can no longer be counted on, at most `timeout_ms` (-1: no limit; 0:
    /// looks once): why (ZKR_LEASE_LOST_STATE, _CLOSED, _SESSION_CHANGED, _NODE_GONE; name them
    /// with zkr_lease_lost_name), or ZKR_LEASE_LOST_NONE when the timeout passed first. `state`,
    /// if given, gets the state that was the loss (with ZKR_LEASE_LOST_STATE). Throws with
    /// ZKR_CLOSED for leases already returned (or empty): no wait could end.
    zkr_lease_lost wait_lost(int64_t timeout_ms = -1, zkr_lock_lost_policy policy = ZKR_LOCK_LOST_ON_SUSPENDED,
                             zkr_connection_state *state = nullptr) const {
        if (!handle_) throw error(ZKR_CLOSED, "no leases: the acquire timed out");
        zkr_lease_lost reason = ZKR_LEASE_LOST_NONE;
        zkr_connection_state seen = ZKR_STATE_CONNECTED;
        check(zkr_leases_wait_lost(handle_.get(), policy, timeout_ms, &reason, &seen));
        if (state && reason == ZKR_LEASE_LOST_STATE) *state = seen;
        return reason;
    }
    zkr_leases *get() const noexcept { return handle_.get(); }

private:
    handle<zkr_leases> handle_;
};

/// Curator's InterProcessSemaphoreV2 (zkr_semaphore): at most max_leases leases held at once
/// across every process on `path`.
class semaphore {
public:
    semaphore(client &c, const std::string &path, uint32_t max_leases) {
        zkr_semaphore *raw = nullptr;
        check(zkr_semaphore_new(c.get(), path.c_str(), max_leases, &raw));
        handle_.reset(raw);
    }
    /// Max leases read live from `count` (Curator's SharedCountReader constructor).
    semaphore(client &c, const std::string &path, const shared_count &count) {
        zkr_semaphore *raw = nullptr;
        check(zkr_semaphore_new_with_count(c.get(), path.c_str(), count.get(), &raw));
        handle_.reset(raw);
    }
    /// Acquires `qty` leases, all or nothing, waiting at most `timeout_ms` (-1: forever); empty
    /// leases when the timeout passed first.
    leases acquire(uint32_t qty = 1, int64_t timeout_ms = -1) {
        zkr_leases *raw = nullptr;
        check(zkr_semaphore_acquire(handle_.get(), qty, timeout_ms, &raw));
        return leases(raw);
    }
    template <typename Rep, typename Period>
    leases try_acquire_for(uint32_t qty, const std::chrono::duration<Rep, Period> &d) {
        return acquire(qty, detail::to_ms(std::chrono::duration_cast<std::chrono::milliseconds>(d)));
    }
    /// Returns every lease still in `l` (empty leases: nothing to do).
    void return_leases(leases &l) {
        if (l) check(zkr_semaphore_return_leases(handle_.get(), l.get()));
    }
    /// The lease nodes, full paths in sequence order.
    std::vector<std::string> participant_nodes() const {
        zkr_string_list *list = nullptr;
        check(zkr_semaphore_participant_nodes(handle_.get(), &list));
        return detail::strings(list);
    }
    zkr_semaphore *get() const noexcept { return handle_.get(); }

private:
    handle<zkr_semaphore> handle_;
};

}  // namespace zkr

#endif  // ZKRECIPES_HPP
