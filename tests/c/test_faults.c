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
    return zt_end("test_faults");
}
