/*
 * Network faults seen from the C API, through `zk-harness proxy` (a fault proxy run as a child
 * process and driven through its stdin): a cut or a short blackhole makes the client SUSPENDED,
 * then RECONNECTED on the same session with its lock still held; a blackhole longer than the
 * session timeout makes it LOST, its calls fail in bounded time, and it comes back on a new
 * session.
 *
 *   test_faults HOST:PORT ZK_HARNESS     (scripts/test-c passes target/debug/zk-harness)
 */
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "testutil.h"

static const char *zt_harness; /* argv[2] */

/* `zk-harness proxy` in front of the test server, as a child process. */
typedef struct zt_proxy {
    pid_t pid;
    FILE *commands; /* its stdin: one control command per line */
    FILE *answers;  /* its stdout: the connect string, then one answer line per command */
    char connect[128];
} zt_proxy;

static bool zt_proxy_start(zt_proxy *p, const char *upstream) {
    int in[2], out[2];
    if (pipe(in) != 0) return false;
    if (pipe(out) != 0) {
        close(in[0]);
        close(in[1]);
        return false;
    }
    p->pid = fork();
    if (p->pid < 0) return false;
    if (p->pid == 0) {
        dup2(in[0], STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        execl(zt_harness, zt_harness, "proxy", "--upstream", upstream, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    p->commands = fdopen(in[1], "w");
    p->answers = fdopen(out[0], "r");
    if (p->commands == NULL || p->answers == NULL) return false;
    if (fgets(p->connect, sizeof p->connect, p->answers) == NULL) return false;
    p->connect[strcspn(p->connect, "\n")] = '\0';
    return strncmp(p->connect, "127.0.0.1:", 10) == 0;
}

/* Sends one command; true if the proxy answered `expected`. */
static bool zt_proxy_do(zt_proxy *p, const char *command, const char *expected) {
    char answer[256];
    if (fprintf(p->commands, "%s\n", command) < 0 || fflush(p->commands) != 0) return false;
    if (fgets(answer, sizeof answer, p->answers) == NULL) return false;
    answer[strcspn(answer, "\n")] = '\0';
    if (strcmp(answer, expected) != 0) {
        fprintf(stderr, "  proxy: %s -> %s (expected %s)\n", command, answer, expected);
        return false;
    }
    return true;
}

/* Closes its stdin (the proxy ends) and reaps it; true if it exited cleanly. */
static bool zt_proxy_stop(zt_proxy *p) {
    fclose(p->commands);
    fclose(p->answers);
    int status = 0;
    if (waitpid(p->pid, &status, 0) != p->pid) return false;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* A client connected through its own proxy, with a state listener: what every test sets up. */
typedef struct faulty {
    zt_proxy proxy;
    zkr_client *c;
    zt_states s;
    uint64_t listener;
    int64_t session; /* the session id right after connecting */
} faulty;

/* Starts the proxy and connects through it (session and connection timeouts in ms). */
static bool faulty_open(faulty *f, int64_t session_ms, int64_t connection_ms) {
    memset(f, 0, sizeof *f);
    zt_states_init(&f->s);
    if (!zt_proxy_start(&f->proxy, zt_connect)) {
        fprintf(stderr, "  zk-harness proxy did not start (%s)\n", zt_harness);
        return false;
    }
    zkr_client_options opts;
    if (zkr_client_options_init(&opts) != ZKR_OK) return false;
    opts.session_timeout_ms = session_ms;
    opts.connection_timeout_ms = connection_ms;
    opts.retry = zkr_retry_exponential_backoff(100, 3, 500);
    return zkr_client_connect(f->proxy.connect, &opts, &f->c) == ZKR_OK &&
           zkr_client_add_state_listener(f->c, zt_record_state, &f->s, &f->listener) == ZKR_OK &&
           zkr_client_session_id(f->c, &f->session) == ZKR_OK;
}

/* Closes the client and the proxy; true if both ended cleanly. */
static bool faulty_close(faulty *f) {
    bool ok = zkr_client_remove_state_listener(f->c, f->listener) == ZKR_OK;
    ok = zkr_client_close(f->c) == ZKR_OK && ok;
    zkr_client_free(f->c);
    ok = zt_proxy_stop(&f->proxy) && ok;
    zt_states_destroy(&f->s);
    return ok;
}

/* The client's session id now. */
static int64_t faulty_session(faulty *f) {
    int64_t id = 0;
    return zkr_client_session_id(f->c, &id) == ZKR_OK ? id : -1;
}

/* Applies `fault` (a proxy command) and waits (bounded) until the client is SUSPENDED; the
 * index of that state in the listener's record, or -1. */
static int fault_until_suspended(faulty *f, const char *fault, int timeout_ms) {
    int from = zt_event_count(&f->s.event);
    if (!zt_proxy_do(&f->proxy, fault, "ok")) return -1;
    return zt_states_wait(&f->s, from, ZKR_STATE_SUSPENDED, timeout_ms);
}

/* A cut: SUSPENDED, then RECONNECTED on the same session after restore; the held lock is still
 * held (no other client can take it meanwhile) and releases normally. */
static void test_cut_suspends_and_restore_reconnects_keeping_the_lock(void) {
    char path[128];
    zt_path(path, sizeof path, "cut-lock");
    faulty f;
    CHECK(faulty_open(&f, 10000, 2000));
    zkr_client *other = NULL;
    zkr_mutex *m = NULL, *m2 = NULL;
    CHECK_OK(zt_connect_client(&other));
    CHECK_OK(zkr_mutex_new(f.c, path, &m));
    CHECK_OK(zkr_mutex_new(other, path, &m2));
    bool acquired = false;
    CHECK_OK(zkr_mutex_acquire(m, 10000, &acquired));
    CHECK(acquired);

    int suspended = fault_until_suspended(&f, "cut", 10000);
    CHECK_MSG(suspended >= 0, "no SUSPENDED within 10 s of the cut");
    CHECK(zt_proxy_do(&f.proxy, "connections", "0"));
    /* Meanwhile the session lives on the server: another client cannot take the lock. */
    bool taken = true;
    CHECK_OK(zkr_mutex_acquire(m2, 300, &taken));
    CHECK_MSG(!taken, "another client acquired a lock whose holder was only cut off");

    CHECK(zt_proxy_do(&f.proxy, "restore", "ok"));
    CHECK_MSG(zt_states_wait(&f.s, suspended + 1, ZKR_STATE_RECONNECTED, 15000) >= 0,
              "no RECONNECTED within 15 s of the restore");
    CHECK_MSG(faulty_session(&f) == f.session, "the session changed");
    bool held = false;
    CHECK_OK(zkr_mutex_is_acquired_in_this_process(m, &held));
    CHECK(held);
    CHECK_OK(zkr_mutex_release(m));
    CHECK_OK(zkr_mutex_acquire(m2, 10000, &taken));
    CHECK_MSG(taken, "the lock was not free after its holder released it");
    CHECK_OK(zkr_mutex_release(m2));
    zkr_mutex_free(m);
    zkr_mutex_free(m2);
    CHECK_OK(zkr_client_close(other));
    zkr_client_free(other);
    CHECK_MSG(faulty_close(&f), "the client or the proxy did not end cleanly");
}

/* A short blackhole (bytes swallowed, connection open): the client notices the silence by
 * itself (SUSPENDED) and after restore is RECONNECTED on the same session. */
static void test_a_short_blackhole_keeps_the_session(void) {
    faulty f;
    CHECK(faulty_open(&f, 20000, 1000));
    int suspended = fault_until_suspended(&f, "blackhole", 15000);
    CHECK_MSG(suspended >= 0, "no SUSPENDED within 15 s of the blackhole");
    CHECK(zt_proxy_do(&f.proxy, "restore", "ok"));
    CHECK_MSG(zt_states_wait(&f.s, suspended + 1, ZKR_STATE_RECONNECTED, 15000) >= 0,
              "no RECONNECTED within 15 s of the restore");
    CHECK_MSG(faulty_session(&f) == f.session, "the session changed");
    CHECK_MSG(faulty_close(&f), "the client or the proxy did not end cleanly");
}

/* A blackhole longer than the session timeout: SUSPENDED, then LOST (the session is given up
 * after a whole session timeout without the server); a call made meanwhile fails in bounded
 * time instead of hanging; after restore the client is RECONNECTED on a new session and works. */
static void test_a_blackhole_past_the_session_timeout_loses_the_session(void) {
    char path[128];
    zt_path(path, sizeof path, "after-lost");
    faulty f;
    CHECK(faulty_open(&f, 4000, 1000));
    int suspended = fault_until_suspended(&f, "blackhole", 15000);
    CHECK_MSG(suspended >= 0, "no SUSPENDED within 15 s of the blackhole");
    int lost = zt_states_wait(&f.s, suspended + 1, ZKR_STATE_LOST, 20000);
    CHECK_MSG(lost >= 0, "no LOST within 20 s of SUSPENDED (session timeout 4 s)");
    double t0 = zt_now_ms();
    zkr_status st = zkr_client_create(f.c, path, (const uint8_t *)"x", 1, ZKR_PERSISTENT, ZKR_CREATE_PARENTS, NULL);
    double took = zt_now_ms() - t0;
    CHECK_MSG(st == ZKR_CONNECTION_LOSS || st == ZKR_SESSION_EXPIRED,
              "a create through a blackhole returned %s", zkr_status_name(st));
    CHECK_MSG(took < 60000, "a create through a blackhole took %.0f ms", took);

    CHECK(zt_proxy_do(&f.proxy, "restore", "ok"));
    CHECK_MSG(zt_states_wait(&f.s, lost + 1, ZKR_STATE_RECONNECTED, 20000) >= 0,
              "no RECONNECTED within 20 s of the restore");
    CHECK_MSG(faulty_session(&f) != f.session, "still on the lost session");
    CHECK_OK(zkr_client_create(f.c, path, (const uint8_t *)"y", 1, ZKR_PERSISTENT, ZKR_CREATE_PARENTS, NULL));
    CHECK_MSG(faulty_close(&f), "the client or the proxy did not end cleanly");
}

/* ---- A cache's close while its listener waits on the cache ---- */

/* A listener that, on its first event of `type`, waits (timeout -1) for the cache to catch up
 * with that event's zxid once the server is out of reach: a wait only the cache's close can end. */
typedef struct blocked_wait {
    void *cache;       /* the zkr_cache or zkr_service_cache */
    int type;          /* the event that starts the wait */
    zt_event entered;  /* the listener runs */
    zt_event cut;      /* the server is out of reach now */
    zt_event waited;   /* its wait returned */
    zkr_status status; /* what the wait returned */
} blocked_wait;

static void blocked_wait_init(blocked_wait *b, void *cache, int type) {
    memset(b, 0, sizeof *b);
    b->cache = cache;
    b->type = type;
    zt_event_init(&b->entered);
    zt_event_init(&b->cut);
    zt_event_init(&b->waited);
}

static void blocked_wait_destroy(blocked_wait *b) {
    zt_event_destroy(&b->entered);
    zt_event_destroy(&b->cut);
    zt_event_destroy(&b->waited);
}

/* The listener's part up to the wait: false if this event does not start it. */
static bool blocked_wait_enter(blocked_wait *b, int type) {
    if (type != b->type || zt_event_count(&b->entered) > 0) return false;
    zt_event_signal(&b->entered, 1);
    (void)zt_event_wait(&b->cut, 1, 30000);
    return true;
}

static void cache_listener_waits(const zkr_cache_event *e, void *user_data) {
    blocked_wait *b = (blocked_wait *)user_data;
    if (!blocked_wait_enter(b, (int)e->type)) return;
    bool reached = false;
    b->status = zkr_cache_await_zxid((zkr_cache *)b->cache, e->new_node->stat.mzxid, -1, &reached);
    zt_event_signal(&b->waited, 1);
}

static void service_cache_listener_waits(const zkr_service_cache_event *e, void *user_data) {
    blocked_wait *b = (blocked_wait *)user_data;
    if (!blocked_wait_enter(b, (int)e->type)) return;
    bool reached = false;
    b->status = zkr_service_cache_await_zxid((zkr_service_cache *)b->cache, 1, -1, &reached);
    zt_event_signal(&b->waited, 1);
}

/* A close run on a thread of its own, so that the test can bound it. */
typedef struct closer {
    zkr_status (*close)(void *handle);
    void *handle;
    zkr_status status;
    zt_event done;
} closer;

static void *close_in_background(void *arg) {
    closer *c = (closer *)arg;
    c->status = c->close(c->handle);
    zt_event_signal(&c->done, 1);
    return NULL;
}

static zkr_status close_cache(void *cache) { return zkr_cache_close((zkr_cache *)cache); }
static zkr_status close_service_cache(void *cache) { return zkr_service_cache_close((zkr_service_cache *)cache); }

/* With the listener in its event (b->entered): cuts the client off the server, lets the listener
 * wait, and closes the cache from another thread. The close must end the wait (ZKR_CLOSED) and
 * return, instead of waiting for the listener that waits for it. Then restores the server. */
static void close_while_listener_waits(faulty *f, blocked_wait *b, zkr_status (*close)(void *), const char *name) {
    int suspended = fault_until_suspended(f, "cut", 10000);
    CHECK_MSG(suspended >= 0, "no SUSPENDED within 10 s of the cut");
    zt_event_signal(&b->cut, 1);
    closer c;
    memset(&c, 0, sizeof c);
    c.close = close;
    c.handle = b->cache;
    c.status = ZKR_INTERNAL;
    zt_event_init(&c.done);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, close_in_background, &c) == 0);
    CHECK_MSG(zt_event_wait(&c.done, 1, 15000),
              "%s did not return within 15 s: it waits for a listener blocked in a wait of this cache, "
              "which only the close ends",
              name);
    CHECK(pthread_join(t, NULL) == 0);
    zt_event_destroy(&c.done);
    CHECK_MSG(c.status == ZKR_OK, "%s returned %s", name, zkr_status_name(c.status));
    CHECK_MSG(zt_event_count(&b->waited) == 1, "%s returned while its listener still ran", name);
    CHECK_MSG(b->status == ZKR_CLOSED, "the listener's wait returned %s, expected ZKR_CLOSED",
              zkr_status_name(b->status));
    CHECK(zt_proxy_do(&f->proxy, "restore", "ok"));
    CHECK_MSG(zt_states_wait(&f->s, suspended + 1, ZKR_STATE_RECONNECTED, 15000) >= 0,
              "no RECONNECTED within 15 s of the restore");
}

static void test_cache_close_ends_the_wait_of_its_own_listener(void) {
    char path[128];
    zt_path(path, sizeof path, "cache-close-wait");
    faulty f;
    CHECK(faulty_open(&f, 20000, 1000));
    zkr_client *other = NULL;
    CHECK_OK(zt_connect_client(&other));
    CHECK_OK(zkr_client_create(other, path, (const uint8_t *)"a", 1, ZKR_PERSISTENT, ZKR_CREATE_PARENTS, NULL));
    zkr_cache *cache = NULL;
    CHECK_OK(zkr_curator_cache_new(f.c, path, &cache));
    blocked_wait b;
    blocked_wait_init(&b, cache, ZKR_CACHE_CHANGED);
    uint64_t id = 0;
    CHECK_OK(zkr_cache_add_listener(cache, cache_listener_waits, &b, &id));
    CHECK_OK(zkr_cache_start(cache));
    bool initialized = false;
    CHECK_OK(zkr_cache_await_initialized(cache, 10000, &initialized));
    CHECK(initialized);
    CHECK_OK(zkr_client_set_data(other, path, (const uint8_t *)"b", 1, -1, NULL));
    CHECK_MSG(zt_event_wait(&b.entered, 1, 10000), "the listener did not hear the change");
    close_while_listener_waits(&f, &b, close_cache, "zkr_cache_close");
    if (zt_failed_in_test) return;
    bool reached = true;
    CHECK_STATUS(zkr_cache_await_zxid(cache, 1, -1, &reached), ZKR_CLOSED, "zkr_cache_await_zxid");
    zkr_cache_free(cache);
    blocked_wait_destroy(&b);
    CHECK_OK(zkr_client_close(other));
    zkr_client_free(other);
    CHECK_MSG(faulty_close(&f), "the client or the proxy did not end cleanly");
}

static void test_service_cache_close_ends_the_wait_of_its_own_listener(void) {
    char base[128];
    zt_path(base, sizeof base, "service-close-wait");
    faulty f;
    CHECK(faulty_open(&f, 20000, 1000));
    zkr_client *other = NULL;
    zkr_discovery *ours = NULL, *theirs = NULL;
    CHECK_OK(zt_connect_client(&other));
    CHECK_OK(zkr_discovery_new(f.c, base, &ours));
    CHECK_OK(zkr_discovery_new(other, base, &theirs));
    zkr_service_cache *cache = NULL;
    CHECK_OK(zkr_service_cache_new(ours, "s", &cache));
    blocked_wait b;
    blocked_wait_init(&b, cache, ZKR_SERVICE_ADDED);
    uint64_t id = 0;
    CHECK_OK(zkr_service_cache_add_listener(cache, service_cache_listener_waits, &b, &id));
    CHECK_OK(zkr_service_cache_start(cache));
    bool initialized = false;
    CHECK_OK(zkr_service_cache_await_initialized(cache, 10000, &initialized));
    CHECK(initialized);
    zkr_registration *r = NULL;
    CHECK_OK(zkr_discovery_register(theirs, "{\"name\":\"s\",\"id\":\"i1\",\"port\":1}", &r));
    CHECK_MSG(zt_event_wait(&b.entered, 1, 10000), "the listener did not hear the new instance");
    close_while_listener_waits(&f, &b, close_service_cache, "zkr_service_cache_close");
    if (zt_failed_in_test) return;
    zkr_service_cache_free(cache);
    blocked_wait_destroy(&b);
    zkr_registration_free(r);
    zkr_discovery_free(ours);
    zkr_discovery_free(theirs);
    CHECK_OK(zkr_client_close(other));
    zkr_client_free(other);
    CHECK_MSG(faulty_close(&f), "the client or the proxy did not end cleanly");
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s HOST:PORT ZK_HARNESS (scripts/test-c runs it)\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    zt_harness = argv[2];
    zt_begin(argc, argv);
    RUN(test_cut_suspends_and_restore_reconnects_keeping_the_lock);
    RUN(test_a_short_blackhole_keeps_the_session);
    RUN(test_a_blackhole_past_the_session_timeout_loses_the_session);
    RUN(test_cache_close_ends_the_wait_of_its_own_listener);
    RUN(test_service_cache_close_ends_the_wait_of_its_own_listener);
    return zt_end("test_faults");
}
