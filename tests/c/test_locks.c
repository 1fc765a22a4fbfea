/* The rest of the lock family through the C API: read/write lock (sharing, exclusion,
 * downgrade), semaphore mutex (not reentrant, not owned), semaphore with leases (and the wait
 * for their loss), multi lock (all or nothing). */
#include "testutil.h"

static size_t node_count(zkr_mutex *m) {
    zkr_string_list *nodes = NULL;
    if (zkr_mutex_participant_nodes(m, &nodes) != ZKR_OK) return 999;
    size_t n = nodes->len;
    zkr_string_list_free(nodes);
    return n;
}

static void test_rwlock_readers_share_writer_excludes_and_downgrade(void) {
    char path[128];
    zt_path(path, sizeof path, "rwlock");
    zkr_client *c = NULL;
    zkr_rwlock *rw = NULL;
    zkr_mutex *r = NULL, *w = NULL;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_rwlock_new(c, path, &rw));
    CHECK_OK(zkr_rwlock_read_lock(rw, &r));
    CHECK_OK(zkr_rwlock_write_lock(rw, &w));
    zkr_rwlock_free(rw); /* the halves stay valid */
    zkr_owner r1 = zkr_owner_new(), r2 = zkr_owner_new(), wr = zkr_owner_new();
    bool ok = false;
    CHECK_OK(zkr_mutex_acquire_as(r, r1, 5000, &ok));
    CHECK(ok);
    CHECK_OK(zkr_mutex_acquire_as(r, r2, 5000, &ok));
    CHECK_MSG(ok, "two readers share the lock");
    CHECK_OK(zkr_mutex_acquire_as(w, wr, 100, &ok));
    CHECK_MSG(!ok, "a writer waits for readers");
    zkr_string_list *nodes = NULL;
    CHECK_OK(zkr_mutex_participant_nodes(r, &nodes));
    CHECK(nodes->len == 2 && strstr(nodes->items[0], "__READ__") != NULL);
    zkr_string_list_free(nodes);
    CHECK_OK(zkr_mutex_release_as(r, r1));
    CHECK_OK(zkr_mutex_release_as(r, r2));
    CHECK_OK(zkr_mutex_acquire_as(w, wr, 5000, &ok));
    CHECK(ok);
    CHECK_OK(zkr_mutex_acquire_as(r, r1, 100, &ok));
    CHECK_MSG(!ok, "a reader waits for an earlier writer");
    /* Downgrade: the writer takes the read lock at once, then lets the write lock go. */
    CHECK_OK(zkr_mutex_acquire_as(r, wr, 0, &ok));
    CHECK_MSG(ok, "the write holder may take the read lock");
    CHECK_OK(zkr_mutex_release_as(w, wr));
    CHECK_OK(zkr_mutex_acquire_as(r, r1, 5000, &ok));
    CHECK_MSG(ok, "after the downgrade other readers share");
    CHECK_OK(zkr_mutex_release_as(r, r1));
    CHECK_OK(zkr_mutex_release_as(r, wr));
    CHECK_STATUS(zkr_mutex_release_as(w, wr), ZKR_NOT_OWNER, "zkr_mutex_release_as");
    CHECK(node_count(r) == 0 && node_count(w) == 0);
    zkr_mutex_free(r);
    zkr_mutex_free(w);
    zkr_client_free(c);
}

typedef struct release_arg {
    zkr_semaphore_mutex *m;
    zkr_status status;
} release_arg;

static void *release_semaphore_mutex(void *p) {
    release_arg *a = (release_arg *)p;
    a->status = zkr_semaphore_mutex_release(a->m);
    return NULL;
}

static void test_semaphore_mutex_is_not_reentrant_and_not_owned(void) {
    char path[128];
    zt_path(path, sizeof path, "semaphore-mutex");
    zkr_client *c = NULL;
    zkr_semaphore_mutex *m = NULL;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_semaphore_mutex_new(c, path, &m));
    bool ok = false;
    CHECK_OK(zkr_semaphore_mutex_acquire(m, -1, &ok));
    CHECK(ok);
    CHECK_OK(zkr_semaphore_mutex_acquire(m, 100, &ok));
    CHECK_MSG(!ok, "a semaphore mutex is not reentrant");
    CHECK_OK(zkr_semaphore_mutex_is_acquired_in_this_process(m, &ok));
    CHECK(ok);
    release_arg a = {m, ZKR_INTERNAL};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, release_semaphore_mutex, &a) == 0);
    pthread_join(t, NULL);
    CHECK_MSG(a.status == ZKR_OK, "any thread may release it (%s)", zkr_status_name(a.status));
    CHECK_STATUS(zkr_semaphore_mutex_release(m), ZKR_NOT_OWNER, "zkr_semaphore_mutex_release");
    CHECK_OK(zkr_semaphore_mutex_acquire(m, 5000, &ok));
    CHECK(ok);
    zkr_semaphore_mutex_free(m); /* still held: returned in the background */
    zkr_semaphore_mutex_free(NULL);
    zkr_client_free(c);
}

static void test_semaphore_leases_all_or_nothing_and_returned(void) {
    char path[128];
    zt_path(path, sizeof path, "semaphore");
    zkr_client *c1 = NULL, *c2 = NULL;
    zkr_semaphore *s1 = NULL, *s2 = NULL;
    CHECK_OK(zt_connect_client(&c1));
    CHECK_OK(zt_connect_client(&c2));
    zkr_semaphore *bad = (zkr_semaphore *)0x1;
    CHECK_STATUS(zkr_semaphore_new(c1, path, 0, &bad), ZKR_INVALID_ARGUMENT, "zkr_semaphore_new");
    CHECK_OK(zkr_semaphore_new(c1, path, 2, &s1));
    CHECK_OK(zkr_semaphore_new(c2, path, 2, &s2));
    zkr_leases *two = NULL, *one = (zkr_leases *)0x1;
    CHECK_OK(zkr_semaphore_acquire(s1, 2, -1, &two));
    CHECK(two != NULL);
    size_t n = 0;
    CHECK_OK(zkr_leases_count(two, &n));
    CHECK(n == 2);
    zkr_string_list *paths = NULL;
    CHECK_OK(zkr_leases_paths(two, &paths));
    CHECK(paths->len == 2 && strstr(paths->items[0], "/leases/_c_") != NULL && strstr(paths->items[0], "-lease-"));
    zkr_string_list_free(paths);
    CHECK_OK(zkr_semaphore_acquire(s2, 1, 200, &one));
    CHECK_MSG(one == NULL, "a third lease must wait (timeout gives NULL)");
    CHECK_OK(zkr_semaphore_return_leases(s1, two));
    CHECK_OK(zkr_leases_count(two, &n));
    CHECK(n == 0);
    CHECK_OK(zkr_semaphore_return_leases(s1, two)); /* empty: fine */
    zkr_leases_free(two);
    CHECK_OK(zkr_semaphore_acquire(s2, 1, 5000, &one));
    CHECK(one != NULL);
    zkr_string_list *nodes = NULL;
    CHECK_OK(zkr_semaphore_participant_nodes(s1, &nodes));
    CHECK(nodes->len == 1);
    zkr_string_list_free(nodes);
    zkr_leases_free(one); /* not returned: returned in the background */
    double deadline = zt_now_ms() + 10000;
    size_t left = 1;
    while (left > 0 && zt_now_ms() < deadline) {
        CHECK_OK(zkr_semaphore_participant_nodes(s1, &nodes));
        left = nodes->len;
        zkr_string_list_free(nodes);
    }
    CHECK_MSG(left == 0, "a freed lease set must return its leases");
    CHECK_STATUS(zkr_semaphore_acquire(s1, 0, 10, &one), ZKR_INVALID_ARGUMENT, "zkr_semaphore_acquire");
    zkr_semaphore_free(s1);
    zkr_semaphore_free(s2);
    zkr_leases_free(NULL);
    zkr_semaphore_free(NULL);
    zkr_client_free(c1);
    zkr_client_free(c2);
}

/* More leases than the semaphore has could never be granted (Curator would wait forever): the
 * acquire is refused at once, leaves its out-parameter alone and creates no node. */
static void test_semaphore_acquire_more_than_max_leases_is_invalid_argument(void) {
    char path[128];
    zt_path(path, sizeof path, "semaphore-too-many");
    zkr_client *c = NULL;
    zkr_semaphore *s = NULL;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_semaphore_new(c, path, 2, &s));
    zkr_leases *leases = (zkr_leases *)0x1;
    double t0 = zt_now_ms();
    CHECK_STATUS(zkr_semaphore_acquire(s, 3, -1, &leases), ZKR_INVALID_ARGUMENT, "zkr_semaphore_acquire");
    CHECK_MSG(zt_now_ms() - t0 < 5000, "refused only after %.0f ms", zt_now_ms() - t0);
    const char *m = zkr_last_error_message();
    CHECK_MSG(strstr(m, "3 leases") != NULL && strstr(m, "only 2") != NULL && strstr(m, path) != NULL, "%s", m);
    CHECK(leases == (zkr_leases *)0x1);
    zkr_string_list *nodes = NULL;
    CHECK_OK(zkr_semaphore_participant_nodes(s, &nodes));
    CHECK_MSG(nodes->len == 0, "a refused acquire must create no lease node");
    zkr_string_list_free(nodes);
    /* Exactly max_leases is fine. */
    CHECK_OK(zkr_semaphore_acquire(s, 2, 5000, &leases));
    CHECK(leases != NULL);
    CHECK_OK(zkr_semaphore_return_leases(s, leases));
    zkr_leases_free(leases);
    zkr_semaphore_free(s);
    zkr_client_free(c);
}

static void test_multi_lock_is_all_or_nothing(void) {
    char a[128], b[128];
    zt_path(a, sizeof a, "multi-a");
    zt_path(b, sizeof b, "multi-b");
    const char *paths[] = {a, b};
    zkr_client *c = NULL;
    zkr_multi_lock *ml = NULL;
    zkr_mutex *mb = NULL, *ma = NULL;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_multi_lock_new(c, paths, 2, &ml));
    CHECK_OK(zkr_mutex_new(c, a, &ma));
    CHECK_OK(zkr_mutex_new(c, b, &mb));
    zkr_owner other = zkr_owner_new();
    bool ok = false;
    /* b is held by another owner: the multi lock times out and holds nothing. */
    CHECK_OK(zkr_mutex_acquire_as(mb, other, -1, &ok));
    CHECK_OK(zkr_multi_lock_acquire(ml, 200, &ok));
    CHECK(!ok);
    CHECK_OK(zkr_multi_lock_is_acquired_in_this_process(ml, &ok));
    CHECK(!ok);
    CHECK_MSG(node_count(ma) == 0, "the lock taken first must be released after the timeout");
    CHECK_OK(zkr_mutex_release_as(mb, other));
    zkr_owner me = zkr_owner_new();
    CHECK_OK(zkr_multi_lock_acquire_as(ml, me, 5000, &ok));
    CHECK(ok);
    CHECK_OK(zkr_mutex_acquire_as(mb, other, 100, &ok));
    CHECK(!ok);
    CHECK_OK(zkr_multi_lock_release_as(ml, me));
    CHECK_STATUS(zkr_multi_lock_release_as(ml, me), ZKR_NOT_OWNER, "zkr_multi_lock_release_as");
    CHECK_STATUS(zkr_multi_lock_release(ml), ZKR_NOT_OWNER, "zkr_multi_lock_release");
    zkr_multi_lock *bad = (zkr_multi_lock *)0x1;
    const char *dup[] = {a, a};
    CHECK_STATUS(zkr_multi_lock_new(c, dup, 2, &bad), ZKR_INVALID_ARGUMENT, "zkr_multi_lock_new");
    CHECK_STATUS(zkr_multi_lock_new(c, NULL, 2, &bad), ZKR_INVALID_ARGUMENT, "zkr_multi_lock_new");
    CHECK_STATUS(zkr_multi_lock_new(c, paths, 0, &bad), ZKR_INVALID_ARGUMENT, "zkr_multi_lock_new");
    const char *with_null[] = {a, NULL};
    CHECK_STATUS(zkr_multi_lock_new(c, with_null, 2, &bad), ZKR_INVALID_ARGUMENT, "zkr_multi_lock_new");
    CHECK(strstr(zkr_last_error_message(), "paths[1] is NULL") != NULL);
    CHECK(bad == (zkr_multi_lock *)0x1);
    zkr_mutex_free(ma);
    zkr_mutex_free(mb);
    zkr_multi_lock_free(ml);
    zkr_multi_lock_free(NULL);
    zkr_client_free(c);
}

typedef struct revoked {
    zkr_mutex *m;
    zt_event event;
    zkr_status release_status;
} revoked;

static void release_on_revoke(zkr_owner owner, void *user_data) {
    revoked *r = (revoked *)user_data;
    r->release_status = zkr_mutex_release_as(r->m, owner);
    zt_event_signal(&r->event, 1);
}

static void test_revocation_asks_the_holder_to_release(void) {
    char path[128];
    zt_path(path, sizeof path, "revocable");
    zkr_client *c1 = NULL, *c2 = NULL;
    zkr_mutex *m1 = NULL, *m2 = NULL;
    CHECK_OK(zt_connect_client(&c1));
    CHECK_OK(zt_connect_client(&c2));
    CHECK_OK(zkr_mutex_new(c1, path, &m1));
    CHECK_OK(zkr_mutex_new(c2, path, &m2));
    revoked r;
    memset(&r, 0, sizeof r);
    r.m = m1;
    r.release_status = ZKR_INTERNAL;
    zt_event_init(&r.event);
    CHECK_OK(zkr_mutex_make_revocable(m1, release_on_revoke, &r));
    zkr_owner o = zkr_owner_new();
    bool ok = false;
    CHECK_OK(zkr_mutex_acquire_as(m1, o, -1, &ok));
    CHECK(ok);
    zkr_string_list *nodes = NULL;
    CHECK_OK(zkr_mutex_participant_nodes(m2, &nodes));
    CHECK(nodes->len == 1);
    CHECK_OK(zkr_lock_attempt_revoke(c2, nodes->items[0]));
    zkr_string_list_free(nodes);
    CHECK_MSG(zt_event_wait(&r.event, 1, 10000), "the holder was not asked to release");
    CHECK_OK(r.release_status);
    CHECK_OK(zkr_mutex_acquire(m2, 10000, &ok));
    CHECK(ok);
    CHECK_OK(zkr_mutex_release(m2));
    CHECK_OK(zkr_lock_attempt_revoke(c2, "/c-tests/no/such/node"));
    zkr_mutex_free(m1);
    zkr_mutex_free(m2);
    zkr_client_free(c1);
    zkr_client_free(c2);
    zt_event_destroy(&r.event);
}

/* zkr_leases_wait_lost: a thread waiting for a set's loss, and what it got. */
typedef struct lost_wait {
    zkr_leases *leases;
    zkr_lock_lost_policy policy;
    int64_t timeout_ms;
    zt_event started;
    zkr_status status;
    zkr_lease_lost reason;
    zkr_connection_state state;
} lost_wait;

#define STATE_UNTOUCHED ((zkr_connection_state)77)

static void *wait_lost_thread(void *p) {
    lost_wait *w = (lost_wait *)p;
    zt_event_signal(&w->started, 1);
    w->status = zkr_leases_wait_lost(w->leases, w->policy, w->timeout_ms, &w->reason, &w->state);
    return NULL;
}

static void lost_wait_start(lost_wait *w, pthread_t *t, zkr_leases *leases, zkr_lock_lost_policy policy,
                            int64_t timeout_ms) {
    memset(w, 0, sizeof *w);
    w->leases = leases;
    w->policy = policy;
    w->timeout_ms = timeout_ms;
    w->status = ZKR_INTERNAL;
    w->reason = 99;
    w->state = STATE_UNTOUCHED;
    zt_event_init(&w->started);
    if (pthread_create(t, NULL, wait_lost_thread, w) != 0) abort();
    zt_event_wait(&w->started, 1, 10000);
}

static void test_leases_wait_lost_not_while_good_nor_when_returned(void) {
    char path[128];
    zt_path(path, sizeof path, "wait-lost-good");
    zkr_client *c = NULL;
    zkr_semaphore *s = NULL;
    zkr_leases *two = NULL;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_semaphore_new(c, path, 2, &s));
    CHECK_OK(zkr_semaphore_acquire(s, 2, 5000, &two));
    CHECK(two != NULL);
    zkr_lease_lost reason = 99;
    zkr_connection_state state = STATE_UNTOUCHED;
    CHECK_OK(zkr_leases_wait_lost(two, ZKR_LOCK_LOST_ON_SUSPENDED, 0, &reason, &state));
    CHECK(reason == ZKR_LEASE_LOST_NONE && state == STATE_UNTOUCHED);
    CHECK_OK(zkr_leases_wait_lost(two, ZKR_LOCK_LOST_ON_SESSION_LOSS, 300, &reason, NULL));
    CHECK(reason == ZKR_LEASE_LOST_NONE);
    /* A wait in progress while the leases are returned: returning them does not end it. */
    lost_wait w;
    pthread_t t;
    lost_wait_start(&w, &t, two, ZKR_LOCK_LOST_ON_SUSPENDED, 1500);
    reason = 99;
    CHECK_OK(zkr_leases_wait_lost(two, ZKR_LOCK_LOST_ON_SUSPENDED, 300, &reason, &state));
    CHECK_MSG(reason == ZKR_LEASE_LOST_NONE, "a good lease set is not lost");
    CHECK_OK(zkr_semaphore_return_leases(s, two));
    pthread_join(t, NULL);
    zt_event_destroy(&w.started);
    CHECK_MSG(w.status == ZKR_OK && w.reason == ZKR_LEASE_LOST_NONE && w.state == STATE_UNTOUCHED,
              "returned leases must not end a wait: %s, reason %s", zkr_status_name(w.status),
              zkr_lease_lost_name(w.reason));
    /* A set emptied before the call has nothing left to lose: refused, outputs untouched. */
    reason = 99;
    CHECK_STATUS(zkr_leases_wait_lost(two, ZKR_LOCK_LOST_ON_SUSPENDED, 0, &reason, &state), ZKR_CLOSED,
                 "zkr_leases_wait_lost");
    CHECK(strstr(zkr_last_error_message(), "returned") != NULL);
    CHECK(reason == 99 && state == STATE_UNTOUCHED);
    zkr_leases_free(two);
    zkr_semaphore_free(s);
    zkr_client_free(c);
}

/* A client, a one-lease semaphore at a fresh path named after `what`, and its one lease. */
static void one_lease(const char *what, zkr_client **c, zkr_semaphore **s, zkr_leases **one) {
    char path[128];
    zt_path(path, sizeof path, what);
    CHECK_OK(zt_connect_client(c));
    CHECK_OK(zkr_semaphore_new(*c, path, 1, s));
    CHECK_OK(zkr_semaphore_acquire(*s, 1, 5000, one));
    CHECK(*one != NULL);
}

static void test_leases_wait_lost_on_session_expiry(void) {
    zkr_client *c = NULL;
    zkr_semaphore *s = NULL;
    zkr_leases *one = NULL;
    one_lease("wait-lost-expiry", &c, &s, &one);
    int64_t old_session = 0;
    CHECK_OK(zkr_client_session_id(c, &old_session));
    lost_wait standard, session;
    pthread_t t1, t2;
    lost_wait_start(&standard, &t1, one, ZKR_LOCK_LOST_ON_SUSPENDED, 60000);
    lost_wait_start(&session, &t2, one, ZKR_LOCK_LOST_ON_SESSION_LOSS, 60000);
    zkr_lease_lost reason = 99;
    CHECK_OK(zkr_leases_wait_lost(one, ZKR_LOCK_LOST_ON_SUSPENDED, 300, &reason, NULL));
    CHECK_MSG(reason == ZKR_LEASE_LOST_NONE, "no loss before the expiry");
    CHECK_OK(zkr_client_expire_session_for_testing(c));
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    zt_event_destroy(&standard.started);
    zt_event_destroy(&session.started);
    CHECK_OK(standard.status);
    CHECK_OK(session.status);
    /* ON_SUSPENDED: SUSPENDED (the connection dropped), LOST, or already the new session. */
    CHECK_MSG((standard.reason == ZKR_LEASE_LOST_STATE &&
               (standard.state == ZKR_STATE_SUSPENDED || standard.state == ZKR_STATE_LOST)) ||
                  (standard.reason == ZKR_LEASE_LOST_SESSION_CHANGED && standard.state == STATE_UNTOUCHED),
              "standard policy: %s / %s", zkr_lease_lost_name(standard.reason),
              zkr_connection_state_name(standard.state));
    /* ON_SESSION_LOSS: only the session's loss counts. */
    CHECK_MSG((session.reason == ZKR_LEASE_LOST_STATE && session.state == ZKR_STATE_LOST) ||
                  (session.reason == ZKR_LEASE_LOST_SESSION_CHANGED && session.state == STATE_UNTOUCHED),
              "session policy: %s / %s", zkr_lease_lost_name(session.reason),
              zkr_connection_state_name(session.state));
    /* On the new session a wait answers at once, even with no time to wait. */
    CHECK_MSG(zt_wait_new_session(c, old_session, 20000), "no new session within 20 s");
    zkr_connection_state state = STATE_UNTOUCHED;
    CHECK_OK(zkr_leases_wait_lost(one, ZKR_LOCK_LOST_ON_SESSION_LOSS, 0, &reason, &state));
    CHECK_MSG(reason == ZKR_LEASE_LOST_SESSION_CHANGED && state == STATE_UNTOUCHED, "got %s",
              zkr_lease_lost_name(reason));
    CHECK_OK(zkr_semaphore_return_leases(s, one)); /* returning a lost lease is clean */
    zkr_leases_free(one);
    zkr_semaphore_free(s);
    zkr_client_free(c);
}

static void test_leases_wait_lost_closed_when_the_client_closes(void) {
    zkr_client *c = NULL;
    zkr_semaphore *s = NULL;
    zkr_leases *one = NULL;
    one_lease("wait-lost-closed", &c, &s, &one);
    lost_wait w;
    pthread_t t;
    lost_wait_start(&w, &t, one, ZKR_LOCK_LOST_ON_SESSION_LOSS, -1);
    zkr_lease_lost reason = 99;
    CHECK_OK(zkr_leases_wait_lost(one, ZKR_LOCK_LOST_ON_SUSPENDED, 300, &reason, NULL));
    CHECK(reason == ZKR_LEASE_LOST_NONE);
    CHECK_OK(zkr_client_close(c));
    pthread_join(t, NULL);
    zt_event_destroy(&w.started);
    CHECK_OK(w.status);
    CHECK_MSG(w.reason == ZKR_LEASE_LOST_CLOSED && w.state == STATE_UNTOUCHED, "got %s",
              zkr_lease_lost_name(w.reason));
    CHECK(strcmp(zkr_lease_lost_name(w.reason), "CLOSED") == 0);
    zkr_connection_state state = STATE_UNTOUCHED;
    CHECK_OK(zkr_leases_wait_lost(one, ZKR_LOCK_LOST_ON_SUSPENDED, 0, &reason, &state));
    CHECK_MSG(reason == ZKR_LEASE_LOST_CLOSED && state == STATE_UNTOUCHED, "after the close: %s",
              zkr_lease_lost_name(reason));
    zkr_leases_free(one);
    zkr_semaphore_free(s);
    zkr_client_free(c);
}

static void test_leases_wait_lost_bad_input(void) {
    zkr_client *c = NULL;
    zkr_semaphore *s = NULL;
    zkr_leases *one = NULL;
    one_lease("wait-lost-bad", &c, &s, &one);
    zkr_lease_lost reason = 99;
    zkr_connection_state state = STATE_UNTOUCHED;
    CHECK_STATUS(zkr_leases_wait_lost(NULL, ZKR_LOCK_LOST_ON_SUSPENDED, 0, &reason, &state), ZKR_INVALID_ARGUMENT,
                 "zkr_leases_wait_lost");
    CHECK(strstr(zkr_last_error_message(), "NULL") != NULL);
    CHECK_STATUS(zkr_leases_wait_lost(one, ZKR_LOCK_LOST_ON_SUSPENDED, 0, NULL, &state), ZKR_INVALID_ARGUMENT,
                 "zkr_leases_wait_lost");
    CHECK(strstr(zkr_last_error_message(), "reason is NULL") != NULL);
    CHECK_STATUS(zkr_leases_wait_lost(one, 7, 0, &reason, &state), ZKR_INVALID_ARGUMENT, "zkr_leases_wait_lost");
    CHECK(strstr(zkr_last_error_message(), "ZKR_LOCK_LOST_") != NULL);
    CHECK_STATUS(zkr_leases_wait_lost(one, ZKR_LOCK_LOST_ON_SUSPENDED, -2, &reason, &state), ZKR_INVALID_ARGUMENT,
                 "zkr_leases_wait_lost");
    /* A handle of another type is caught by its tag. */
    CHECK_STATUS(zkr_leases_wait_lost((const zkr_leases *)s, ZKR_LOCK_LOST_ON_SUSPENDED, 0, &reason, &state),
                 ZKR_INVALID_ARGUMENT, "zkr_leases_wait_lost");
    CHECK_MSG(reason == 99 && state == STATE_UNTOUCHED, "a failed call writes no out-parameter");
    CHECK(strcmp(zkr_lease_lost_name(ZKR_LEASE_LOST_NONE), "NONE") == 0);
    CHECK(strcmp(zkr_lease_lost_name(ZKR_LEASE_LOST_STATE), "STATE") == 0);
    CHECK(strcmp(zkr_lease_lost_name(ZKR_LEASE_LOST_SESSION_CHANGED), "SESSION_CHANGED") == 0);
    CHECK(strcmp(zkr_lease_lost_name(ZKR_LEASE_LOST_NODE_GONE), "NODE_GONE") == 0);
    CHECK(strcmp(zkr_lease_lost_name(12345), "UNKNOWN") == 0);
    CHECK_OK(zkr_leases_wait_lost(one, ZKR_LOCK_LOST_ON_SUSPENDED, 0, &reason, NULL));
    CHECK_MSG(reason == ZKR_LEASE_LOST_NONE, "the set is untouched");
    CHECK_OK(zkr_semaphore_return_leases(s, one));
    zkr_leases_free(one);
    zkr_semaphore_free(s);
    zkr_client_free(c);
}

int main(int argc, char **argv) {
    zt_begin(argc, argv);
    RUN(test_rwlock_readers_share_writer_excludes_and_downgrade);
    RUN(test_semaphore_mutex_is_not_reentrant_and_not_owned);
    RUN(test_semaphore_leases_all_or_nothing_and_returned);
    RUN(test_semaphore_acquire_more_than_max_leases_is_invalid_argument);
    RUN(test_multi_lock_is_all_or_nothing);
    RUN(test_revocation_asks_the_holder_to_release);
    RUN(test_leases_wait_lost_not_while_good_nor_when_returned);
    RUN(test_leases_wait_lost_on_session_expiry);
    RUN(test_leases_wait_lost_closed_when_the_client_closes);
    RUN(test_leases_wait_lost_bad_input);
    return zt_end("test_locks");
}
