/* InterProcessMutex through the C API, with pthreads: the seed scenario (100 threads, overlap
 * check), reentrancy per thread and per explicit owner, release by a non-owner, timeouts that
 * leave nothing behind, fencing tokens, the lost callback after a real session expiry, and a
 * waiter woken by close. */
#include "testutil.h"

#include <sys/wait.h>
#include <unistd.h>

/* ---- seed: 100 threads on one mutex, never two inside at once ---- */

#define SEED_THREADS 100
#define SEED_CLIENTS 10

typedef struct seed_shared {
    zkr_mutex *mutexes[SEED_CLIENTS];
    int inside;         /* threads inside the critical section right now (atomic) */
    int overlaps;       /* times a thread found someone else inside (atomic) */
    int completed;      /* critical sections run (atomic) */
    int errors;         /* failed calls (atomic) */
    int64_t last_token; /* written only under the lock */
    int token_regressions;
} seed_shared;

typedef struct seed_arg {
    seed_shared *shared;
    int index;
} seed_arg;

static void *seed_worker(void *p) {
    seed_arg *a = (seed_arg *)p;
    seed_shared *s = a->shared;
    zkr_mutex *m = s->mutexes[a->index % SEED_CLIENTS];
    bool acquired = false;
    if (zkr_mutex_acquire(m, -1, &acquired) != ZKR_OK || !acquired) {
        fprintf(stderr, "    worker %d: acquire failed: %s\n", a->index, zkr_last_error_message());
        __atomic_fetch_add(&s->errors, 1, __ATOMIC_SEQ_CST);
        return NULL;
    }
    if (__atomic_fetch_add(&s->inside, 1, __ATOMIC_SEQ_CST) != 0) __atomic_fetch_add(&s->overlaps, 1, __ATOMIC_SEQ_CST);
    int64_t token = 0;
    if (zkr_mutex_fencing_token(m, &token) != ZKR_OK) __atomic_fetch_add(&s->errors, 1, __ATOMIC_SEQ_CST);
    if (token <= s->last_token) s->token_regressions++;
    s->last_token = token;
    /* Widen the window so that an overlap, if the lock allowed one, would be seen. */
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
    __atomic_fetch_sub(&s->inside, 1, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&s->completed, 1, __ATOMIC_SEQ_CST);
    if (zkr_mutex_release(m) != ZKR_OK) {
        fprintf(stderr, "    worker %d: release failed: %s\n", a->index, zkr_last_error_message());
        __atomic_fetch_add(&s->errors, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

static void test_seed_100_threads_never_overlap(void) {
    char path[128];
    zt_path(path, sizeof path, "seed-mutex");
    zkr_client *clients[SEED_CLIENTS];
    seed_shared s;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < SEED_CLIENTS; i++) {
        CHECK_OK(zt_connect_client(&clients[i]));
        CHECK_OK(zkr_mutex_new(clients[i], path, &s.mutexes[i]));
    }
    pthread_t threads[SEED_THREADS];
    seed_arg args[SEED_THREADS];
    for (int i = 0; i < SEED_THREADS; i++) {
        args[i].shared = &s;
        args[i].index = i;
        CHECK(pthread_create(&threads[i], NULL, seed_worker, &args[i]) == 0);
    }
    for (int i = 0; i < SEED_THREADS; i++) pthread_join(threads[i], NULL);
    CHECK_MSG(s.errors == 0, "%d calls failed", s.errors);
    CHECK_MSG(s.overlaps == 0, "%d overlaps", s.overlaps);
    CHECK_MSG(s.completed == SEED_THREADS, "%d of %d completed", s.completed, SEED_THREADS);
    CHECK_MSG(s.token_regressions == 0, "fencing tokens went backwards %d times", s.token_regressions);
    zkr_string_list *nodes = NULL;
    CHECK_OK(zkr_mutex_participant_nodes(s.mutexes[0], &nodes));
    CHECK_MSG(nodes->len == 0, "%zu lock nodes left behind", nodes->len);
    zkr_string_list_free(nodes);
    for (int i = 0; i < SEED_CLIENTS; i++) {
        zkr_mutex_free(s.mutexes[i]);
        zkr_client_free(clients[i]);
    }
}

/* ---- reentrancy ---- */

static void test_reentrant_per_thread(void) {
    zkr_client *c = NULL;
    zkr_mutex *m = NULL;
    char path[128];
    zt_path(path, sizeof path, "reentrant-thread");
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_mutex_new(c, path, &m));
    bool ok = false, owned = false;
    CHECK_OK(zkr_mutex_acquire(m, -1, &ok));
    CHECK(ok);
    CHECK_OK(zkr_mutex_acquire(m, 0, &ok));
    CHECK(ok);
    zkr_string_list *nodes = NULL;
    CHECK_OK(zkr_mutex_participant_nodes(m, &nodes));
    CHECK_MSG(nodes->len == 1, "a re-entry must not create a second node (%zu)", nodes->len);
    zkr_string_list_free(nodes);
    CHECK_OK(zkr_mutex_release(m));
    CHECK_OK(zkr_mutex_is_owned(m, &owned));
    CHECK_MSG(owned, "still held once after one of two releases");
    CHECK_OK(zkr_mutex_release(m));
    CHECK_OK(zkr_mutex_is_owned(m, &owned));
    CHECK(!owned);
    CHECK_STATUS(zkr_mutex_release(m), ZKR_NOT_OWNER, "zkr_mutex_release");
    CHECK_OK(zkr_mutex_participant_nodes(m, &nodes));
    CHECK(nodes->len == 0);
    zkr_string_list_free(nodes);
    zkr_mutex_free(m);
    zkr_client_free(c);
}

typedef struct owner_arg {
    zkr_mutex *m;
    zkr_owner owner;
    zkr_status acquire_status, release_status, plain_release_status;
    bool acquired;
    char message[512];
} owner_arg;

static void *reenter_as_owner_then_release_plain(void *p) {
    owner_arg *a = (owner_arg *)p;
    a->acquire_status = zkr_mutex_acquire_as(a->m, a->owner, 0, &a->acquired);
    /* This thread's own owner holds nothing. */
    a->plain_release_status = zkr_mutex_release(a->m);
    snprintf(a->message, sizeof a->message, "%s", zkr_last_error_message());
    return NULL;
}

static void test_reentrant_per_explicit_owner_across_threads(void) {
    zkr_client *c = NULL;
    zkr_mutex *m = NULL;
    char path[128];
    zt_path(path, sizeof path, "reentrant-owner");
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_mutex_new(c, path, &m));
    zkr_owner o = zkr_owner_new();
    zkr_owner me = zkr_owner_current_thread();
    CHECK(o.id != 0 && o.id != me.id);
    CHECK(zkr_owner_current_thread().id == me.id);
    bool ok = false, owned = false;
    CHECK_OK(zkr_mutex_acquire_as(m, o, -1, &ok));
    CHECK(ok);
    CHECK_OK(zkr_mutex_is_owned_as(m, o, &owned));
    CHECK(owned);
    CHECK_OK(zkr_mutex_is_owned(m, &owned));
    CHECK_MSG(!owned, "the calling thread is not the explicit owner");

    /* Another thread re-enters as the same owner at once (timeout 0), so the hold is the owner's,
     * not the thread's; its own plain release is refused. */
    owner_arg a;
    memset(&a, 0, sizeof a);
    a.m = m;
    a.owner = o;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, reenter_as_owner_then_release_plain, &a) == 0);
    pthread_join(t, NULL);
    CHECK_OK(a.acquire_status);
    CHECK(a.acquired);
    CHECK_MSG(a.plain_release_status == ZKR_NOT_OWNER, "got %s", zkr_status_name(a.plain_release_status));
    CHECK_MSG(strstr(a.message, "zkr_mutex_release") && strstr(a.message, "ZKR_NOT_OWNER"), "message: %s", a.message);

    /* A different explicit owner contends, in the same process. */
    zkr_owner other = zkr_owner_new();
    CHECK_OK(zkr_mutex_acquire_as(m, other, 100, &ok));
    CHECK_MSG(!ok, "a second owner must not get a held mutex");

    CHECK_OK(zkr_mutex_release_as(m, o));
    CHECK_OK(zkr_mutex_release_as(m, o));
    CHECK_STATUS(zkr_mutex_release_as(m, o), ZKR_NOT_OWNER, "zkr_mutex_release_as");
    CHECK_OK(zkr_mutex_acquire_as(m, other, 5000, &ok));
    CHECK(ok);
    CHECK_OK(zkr_mutex_release_as(m, other));
    zkr_mutex_free(m);
    zkr_client_free(c);
}

static void *release_from_other_thread(void *p) {
    owner_arg *a = (owner_arg *)p;
    a->release_status = zkr_mutex_release(a->m);
    snprintf(a->message, sizeof a->message, "%s", zkr_last_error_message());
    return NULL;
}

static void *release_as_from_other_thread(void *p) {
    owner_arg *a = (owner_arg *)p;
    a->release_status = zkr_mutex_release_as(a->m, a->owner);
    return NULL;
}

static void test_release_from_another_thread_is_not_owner(void) {
    zkr_client *c = NULL;
    zkr_mutex *m = NULL;
    char path[128];
    zt_path(path, sizeof path, "release-other-thread");
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_mutex_new(c, path, &m));
    bool ok = false, owned = false;
    CHECK_OK(zkr_mutex_acquire(m, -1, &ok));
    CHECK(ok);
    owner_arg a;
    memset(&a, 0, sizeof a);
    a.m = m;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, release_from_other_thread, &a) == 0);
    pthread_join(t, NULL);
    CHECK_MSG(a.release_status == ZKR_NOT_OWNER, "got %s", zkr_status_name(a.release_status));
    CHECK_MSG(strstr(a.message, "ZKR_NOT_OWNER") && strstr(a.message, path), "message: %s", a.message);
    CHECK_OK(zkr_mutex_is_owned(m, &owned));
    CHECK_MSG(owned, "a refused release must not touch the hold");
    CHECK_OK(zkr_mutex_release(m));

    /* With an explicit owner, the release may come from any thread. */
    a.owner = zkr_owner_new();
    CHECK_OK(zkr_mutex_acquire_as(m, a.owner, -1, &ok));
    CHECK(pthread_create(&t, NULL, release_as_from_other_thread, &a) == 0);
    pthread_join(t, NULL);
    CHECK_OK(a.release_status);
    CHECK_OK(zkr_mutex_is_acquired_in_this_process(m, &owned));
    CHECK(!owned);
    zkr_mutex_free(m);
    zkr_client_free(c);
}

/* ---- timeouts, tokens ---- */

static void test_timed_out_acquire_returns_false_and_leaves_no_node(void) {
    zkr_client *c1 = NULL, *c2 = NULL;
    zkr_mutex *m1 = NULL, *m2 = NULL;
    char path[128];
    zt_path(path, sizeof path, "timeout");
    CHECK_OK(zt_connect_client(&c1));
    CHECK_OK(zt_connect_client(&c2));
    CHECK_OK(zkr_mutex_new(c1, path, &m1));
    CHECK_OK(zkr_mutex_new(c2, path, &m2));
    bool ok = false;
    CHECK_OK(zkr_mutex_acquire(m1, -1, &ok));
    CHECK(ok);
    double t0 = zt_now_ms();
    ok = true;
    CHECK_OK(zkr_mutex_acquire(m2, 300, &ok));
    double waited = zt_now_ms() - t0;
    CHECK(!ok);
    CHECK_MSG(waited >= 290 && waited < 5000, "waited %.0f ms for a 300 ms timeout", waited);
    CHECK_OK(zkr_mutex_acquire(m2, 0, &ok));
    CHECK(!ok);
    zkr_string_list *nodes = NULL;
    CHECK_OK(zkr_mutex_participant_nodes(m1, &nodes));
    CHECK_MSG(nodes->len == 1, "%zu nodes: the timed-out waiters must have removed theirs", nodes->len);
    zkr_string_list_free(nodes);
    int64_t t1 = 0, t2 = 0;
    CHECK_OK(zkr_mutex_fencing_token(m1, &t1));
    CHECK_STATUS(zkr_mutex_fencing_token(m2, &t2), ZKR_NOT_OWNER, "zkr_mutex_fencing_token");
    CHECK_OK(zkr_mutex_release(m1));
    CHECK_OK(zkr_mutex_acquire(m2, 5000, &ok));
    CHECK(ok);
    CHECK_OK(zkr_mutex_fencing_token(m2, &t2));
    CHECK_MSG(t2 > t1, "fencing tokens must increase (%" PRId64 " then %" PRId64 ")", t1, t2);
    CHECK_OK(zkr_mutex_release(m2));
    zkr_mutex_free(m1);
    zkr_mutex_free(m2);
    zkr_client_free(c1);
    zkr_client_free(c2);
}

/* ---- the lost callback ---- */

typedef struct lost_seen {
    zt_event event;
    zkr_owner owner;
    pthread_t acquiring_thread;
    int on_acquiring_thread;
    zkr_mutex *m;
    zkr_status release_inside;
} lost_seen;

static void on_lost_release(zkr_owner owner, void *user_data) {
    lost_seen *s = (lost_seen *)user_data;
    s->owner = owner;
    s->on_acquiring_thread = pthread_equal(pthread_self(), s->acquiring_thread);
    /* Calling back into the library from the callback is allowed: release the lost hold. */
    s->release_inside = zkr_mutex_release_as(s->m, owner);
    zt_event_signal(&s->event, 1);
}

static void test_lost_callback_fires_on_session_expiry_and_may_release_inside(void) {
    zkr_client *c = NULL;
    zkr_mutex *m = NULL;
    char path[128];
    zt_path(path, sizeof path, "lost");
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_mutex_new(c, path, &m));
    lost_seen s;
    memset(&s, 0, sizeof s);
    zt_event_init(&s.event);
    s.acquiring_thread = pthread_self();
    s.m = m;
    s.release_inside = ZKR_INTERNAL;
    CHECK_OK(zkr_mutex_set_lost_callback(m, on_lost_release, &s));
    zkr_owner o = zkr_owner_new();
    bool ok = false, valid = false;
    CHECK_OK(zkr_mutex_acquire_as(m, o, -1, &ok));
    CHECK(ok);
    CHECK_OK(zkr_mutex_is_held_valid_as(m, o, &valid));
    CHECK(valid);
    int64_t old_session = 0;
    CHECK_OK(zkr_client_session_id(c, &old_session));
    CHECK_OK(zkr_client_expire_session_for_testing(c));
    CHECK_MSG(zt_event_wait(&s.event, 1, 20000), "no lost callback within 20 s");
    CHECK(s.owner.id == o.id);
    CHECK(!s.on_acquiring_thread);
    CHECK_MSG(s.release_inside == ZKR_OK, "release inside the callback: %s", zkr_status_name(s.release_inside));
    CHECK_OK(zkr_mutex_is_owned_as(m, o, &ok));
    CHECK(!ok);
    /* The client renews its session; the mutex works again. */
    CHECK_MSG(zt_wait_new_session(c, old_session, 20000), "no new session within 20 s");
    CHECK_OK(zkr_mutex_acquire_as(m, o, 15000, &ok));
    CHECK(ok);
    CHECK_OK(zkr_mutex_release_as(m, o));
    zkr_mutex_free(m);
    zkr_client_free(c);
    zt_event_destroy(&s.event);
}

/* ---- a request too large for the server is refused before it is sent ---- */

static void count_lost_calls(zkr_owner owner, void *user_data) {
    (void)owner;
    __atomic_fetch_add((int *)user_data, 1, __ATOMIC_SEQ_CST);
}

/* A create or set of path (~1000 characters) + data (near 1 MiB) above the server's
 * jute.maxbuffer would make the server drop the connection, and with it every hold of the
 * session. The library refuses it at once with ZKR_INVALID_ARGUMENT naming the sizes; a mutex
 * held on the same client stays held and valid, and its lost callback never runs. */
static void test_oversized_request_fails_at_once_and_a_held_mutex_stays_valid(void) {
    char lock_path[128], base[128], path[1200];
    zt_path(lock_path, sizeof lock_path, "oversized-lock");
    zt_path(base, sizeof base, "oversized");
    int n = snprintf(path, sizeof path, "%s/", base);
    memset(path + n, 'p', 1000 - (size_t)n);
    path[1000] = '\0';
    size_t len = 1024 * 1024 - 512, big = 1024 * 1024 + 1024; /* near 1 MiB; over it alone */
    uint8_t *data = calloc(1, big);
    CHECK(data != NULL);

    zkr_client *c = NULL;
    zkr_mutex *m = NULL;
    int lost = 0;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_mutex_new(c, lock_path, &m));
    CHECK_OK(zkr_mutex_set_lost_callback(m, count_lost_calls, &lost));
    bool ok = false;
    CHECK_OK(zkr_mutex_acquire(m, 10000, &ok));
    CHECK(ok);
    int64_t session = 0, after = 0;
    CHECK_OK(zkr_client_session_id(c, &session));

    double t0 = zt_now_ms();
    CHECK_STATUS(zkr_client_create(c, path, data, len, ZKR_PERSISTENT, ZKR_CREATE_PARENTS, NULL), ZKR_INVALID_ARGUMENT,
                 "zkr_client_create");
    CHECK_MSG(zt_now_ms() - t0 < 2000, "refused only after %.0f ms", zt_now_ms() - t0);
    char sizes[64];
    snprintf(sizes, sizeof sizes, "data %zu", len);
    const char *msg = zkr_last_error_message();
    CHECK_MSG(strstr(msg, "path 1000") != NULL && strstr(msg, sizes) != NULL && strstr(msg, "limit") != NULL,
              "the message does not name the sizes: %s", msg);
    zkr_status made = zkr_client_create(c, base, NULL, 0, ZKR_PERSISTENT, ZKR_CREATE_PARENTS, NULL);
    CHECK_MSG(made == ZKR_OK || made == ZKR_NODE_EXISTS, "%s", zkr_last_error_message());
    CHECK_STATUS(zkr_client_set_data(c, base, data, big, -1, NULL), ZKR_INVALID_ARGUMENT, "zkr_client_set_data");

    /* The session and the hold are untouched: a round trip succeeds on the same session. */
    bool exists = false;
    CHECK_OK(zkr_client_exists(c, base, &exists, NULL));
    CHECK(exists);
    CHECK_OK(zkr_client_session_id(c, &after));
    CHECK(after == session);
    CHECK_OK(zkr_mutex_is_owned(m, &ok));
    CHECK_MSG(ok, "the mutex is no longer held");
    CHECK_OK(zkr_mutex_is_held_valid(m, &ok));
    CHECK_MSG(ok, "the hold is no longer valid");
    CHECK_MSG(__atomic_load_n(&lost, __ATOMIC_SEQ_CST) == 0, "the lost callback ran");
    zkr_string_list *nodes = NULL;
    CHECK_OK(zkr_mutex_participant_nodes(m, &nodes));
    CHECK(nodes->len == 1);
    zkr_string_list_free(nodes);

    CHECK_OK(zkr_mutex_release(m));
    CHECK_OK(zkr_client_delete(c, base, -1, 0));
    zkr_mutex_free(m);
    zkr_client_free(c);
    free(data);
}

/* ---- a lock node deleted by someone else is a lost hold ---- */

/* Another client (an operator, a buggy peer) deletes our lock node while we hold it: the hold is
 * lost (someone else may take the lock now), the lost callback hears it with the owner and may
 * release it there, and the other client can take the lock. */
static void test_lock_node_deleted_by_another_client_is_a_lost_hold(void) {
    char path[128];
    zt_path(path, sizeof path, "deleted-node");
    zkr_client *c = NULL, *other = NULL;
    zkr_mutex *m = NULL, *theirs = NULL;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zt_connect_client(&other));
    CHECK_OK(zkr_mutex_new(c, path, &m));
    CHECK_OK(zkr_mutex_new(other, path, &theirs));
    lost_seen *s = calloc(1, sizeof *s);
    CHECK(s != NULL);
    zt_event_init(&s->event);
    s->m = m;
    s->release_inside = ZKR_INTERNAL;
    CHECK_OK(zkr_mutex_set_lost_callback(m, on_lost_release, s));
    zkr_owner o = zkr_owner_new();
    bool ok = false;
    CHECK_OK(zkr_mutex_acquire_as(m, o, 10000, &ok));
    CHECK(ok);
    zkr_string_list *nodes = NULL;
    CHECK_OK(zkr_mutex_participant_nodes(m, &nodes));
    CHECK(nodes->len == 1);
    zkr_status deleted = zkr_client_delete(other, nodes->items[0], -1, 0);
    zkr_string_list_free(nodes);
    CHECK_MSG(deleted == ZKR_OK, "%s", zkr_last_error_message());
    CHECK_MSG(zt_event_wait(&s->event, 1, 10000), "no lost callback within 10 s");
    CHECK(s->owner.id == o.id);
    CHECK_MSG(s->release_inside == ZKR_OK, "release inside the callback: %s", zkr_status_name(s->release_inside));
    CHECK_OK(zkr_mutex_is_owned_as(m, o, &ok));
    CHECK(!ok);
    CHECK_OK(zkr_mutex_acquire(theirs, 10000, &ok));
    CHECK_MSG(ok, "the other client could not take the lock");
    CHECK_OK(zkr_mutex_release(theirs));
    CHECK_OK(zkr_mutex_set_lost_callback(m, NULL, NULL));
    zt_event_destroy(&s->event);
    free(s);
    zkr_mutex_free(theirs);
    zkr_mutex_free(m);
    zkr_client_free(other);
    zkr_client_free(c);
}

/* ---- close wakes a waiter ---- */

typedef struct waiter_arg {
    zkr_mutex *m;
    zkr_status status;
    zt_event started;
} waiter_arg;

static void *wait_forever(void *p) {
    waiter_arg *w = (waiter_arg *)p;
    bool ok = false;
    zt_event_signal(&w->started, 1);
    w->status = zkr_mutex_acquire(w->m, -1, &ok);
    return NULL;
}

static void test_close_wakes_a_waiter_with_closed(void) {
    zkr_client *holder = NULL, *c = NULL;
    zkr_mutex *mh = NULL;
    waiter_arg w;
    memset(&w, 0, sizeof w);
    zt_event_init(&w.started);
    char path[128];
    zt_path(path, sizeof path, "close-wakes");
    CHECK_OK(zt_connect_client(&holder));
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_mutex_new(holder, path, &mh));
    CHECK_OK(zkr_mutex_new(c, path, &w.m));
    bool ok = false;
    CHECK_OK(zkr_mutex_acquire(mh, -1, &ok));
    pthread_t t;
    CHECK(pthread_create(&t, NULL, wait_forever, &w) == 0);
    CHECK(zt_event_wait(&w.started, 1, 5000));
    /* Wait until the waiter's node is in line, then close its client under it. */
    double deadline = zt_now_ms() + 10000;
    size_t in_line = 0;
    while (in_line < 2 && zt_now_ms() < deadline) {
        zkr_string_list *nodes = NULL;
        CHECK_OK(zkr_mutex_participant_nodes(mh, &nodes));
        in_line = nodes->len;
        zkr_string_list_free(nodes);
    }
    CHECK(in_line == 2);
    CHECK_OK(zkr_client_close(c));
    pthread_join(t, NULL);
    CHECK_MSG(w.status == ZKR_CLOSED, "the waiter got %s", zkr_status_name(w.status));
    CHECK_STATUS(zkr_mutex_acquire(w.m, 0, &ok), ZKR_CLOSED, "zkr_mutex_acquire");
    CHECK_OK(zkr_mutex_release(mh));
    zkr_mutex_free(w.m);
    zkr_mutex_free(mh);
    zkr_client_free(c);
    zkr_client_free(holder);
    zt_event_destroy(&w.started);
}

/* A forked child's copies of the parent's client and mutex are closed: before, the copied hold
 * looked held and valid in the child too (a re-entry there acquired at once: two processes in
 * the critical section), and the child's free ended the parent's session. */
static void test_a_forked_child_finds_the_parents_handles_closed(void) {
    char path[128];
    zt_path(path, sizeof path, "forked");
    zkr_client *c = NULL;
    zkr_mutex *m = NULL;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_mutex_new(c, path, &m));
    bool ok = false;
    CHECK_OK(zkr_mutex_acquire(m, 10000, &ok));
    CHECK(ok);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        int code = 0;
        bool again = false, valid = true;
        if (zkr_mutex_acquire(m, 0, &again) != ZKR_CLOSED) code |= 1;
        if (zkr_mutex_is_held_valid(m, &valid) != ZKR_CLOSED) code |= 2;
        if (strstr(zkr_last_error_message(), "fork") == NULL) code |= 4;
        zkr_mutex_free(m);
        zkr_client_free(c);
        _exit(code);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child saw the parent's handles open (%d)", status);
    bool valid = false;
    CHECK_OK(zkr_mutex_is_held_valid(m, &valid));
    CHECK(valid);
    zkr_string_list *nodes = NULL;
    CHECK_OK(zkr_client_get_children(c, path, &nodes)); /* the parent's session answers */
    CHECK_MSG(nodes->len == 1, "the lock node went with the child's free");
    zkr_string_list_free(nodes);
    CHECK_OK(zkr_mutex_release(m));
    zkr_mutex_free(m);
    zkr_client_free(c);
}

int main(int argc, char **argv) {
    zt_begin(argc, argv);
    RUN(test_seed_100_threads_never_overlap);
    RUN(test_reentrant_per_thread);
    RUN(test_reentrant_per_explicit_owner_across_threads);
    RUN(test_release_from_another_thread_is_not_owner);
    RUN(test_timed_out_acquire_returns_false_and_leaves_no_node);
    RUN(test_lost_callback_fires_on_session_expiry_and_may_release_inside);
    RUN(test_oversized_request_fails_at_once_and_a_held_mutex_stays_valid);
    RUN(test_lock_node_deleted_by_another_client_is_a_lost_hold);
    RUN(test_close_wakes_a_waiter_with_closed);
    RUN(test_a_forked_child_finds_the_parents_handles_closed);
    return zt_end("test_mutex");
}
