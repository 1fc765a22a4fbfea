/* Cohort handoffs through the C API (zkr_mutex_new_cohort): 16 threads of one handle against a
 * plain mutex on another client (no overlap, wide fencing tokens strictly increasing in hold
 * order, the other client served, fewer nodes than holds), one lock node for the whole local
 * queue, a timed-out acquire in the local queue, releases by a non-owner, and bad arguments.
 * Every wait on another thread is bounded and waits on a condition, never on time alone. */
#include "testutil.h"

/* A wide token as one comparable pair. */
typedef struct wide_token {
    int64_t zxid;
    uint32_t handoff;
} wide_token;

static int wide_cmp(wide_token a, wide_token b) {
    if (a.zxid != b.zxid) return a.zxid < b.zxid ? -1 : 1;
    if (a.handoff != b.handoff) return a.handoff < b.handoff ? -1 : 1;
    return 0;
}

/* Polls (1 ms apart, `timeout_ms` at most) until the handle's local queue has `n` owners. */
static bool wait_local_waiters(zkr_mutex *m, size_t n, int timeout_ms) {
    double deadline = zt_now_ms() + timeout_ms;
    for (;;) {
        size_t waiting = 0;
        if (zkr_mutex_local_waiters(m, &waiting) != ZKR_OK) return false;
        if (waiting >= n) return true;
        if (zt_now_ms() >= deadline) return false;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

/* Polls (1 ms apart, `timeout_ms` at most) until the lock path has `n` nodes. */
static bool wait_nodes(zkr_mutex *m, size_t n, int timeout_ms) {
    double deadline = zt_now_ms() + timeout_ms;
    for (;;) {
        zkr_string_list *nodes = NULL;
        if (zkr_mutex_participant_nodes(m, &nodes) != ZKR_OK) return false;
        size_t len = nodes->len;
        zkr_string_list_free(nodes);
        if (len >= n) return true;
        if (zt_now_ms() >= deadline) return false;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

static size_t node_count(zkr_mutex *m) {
    zkr_string_list *nodes = NULL;
    if (zkr_mutex_participant_nodes(m, &nodes) != ZKR_OK) return (size_t)-1;
    size_t len = nodes->len;
    zkr_string_list_free(nodes);
    return len;
}

/* ---- 16 threads × 25 on one cohort handle, a plain mutex on another client at the same time ---- */

#define COHORT_THREADS 16
#define COHORT_ITERATIONS 25
#define PLAIN_ITERATIONS 10
#define MAX_HOLDS (1 + COHORT_THREADS * COHORT_ITERATIONS + PLAIN_ITERATIONS)

typedef struct hold {
    wide_token token;
    int plain; /* taken by the plain mutex of the other client */
} hold;

typedef struct contend_shared {
    zkr_mutex *cohort, *plain;
    int inside;   /* holders inside right now (atomic) */
    int overlaps; /* times a holder found another inside (atomic) */
    int errors;   /* failed calls (atomic) */
    int shared_token_mismatch; /* plain token != the wide token's zxid (atomic) */
    int holds;    /* the next hold's index (atomic) */
    hold order[MAX_HOLDS];
} contend_shared;

/* Runs one critical section: checks for overlap, records the token under the hold. */
static void critical_section(contend_shared *s, wide_token t, int plain) {
    if (__atomic_fetch_add(&s->inside, 1, __ATOMIC_SEQ_CST) != 0) __atomic_fetch_add(&s->overlaps, 1, __ATOMIC_SEQ_CST);
    int i = __atomic_fetch_add(&s->holds, 1, __ATOMIC_SEQ_CST);
    if (i < MAX_HOLDS) {
        s->order[i].token = t;
        s->order[i].plain = plain;
    } else {
        __atomic_fetch_add(&s->errors, 1, __ATOMIC_SEQ_CST);
    }
    /* Widen the window so that an overlap, if the lock allowed one, would be seen. */
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
    __atomic_fetch_sub(&s->inside, 1, __ATOMIC_SEQ_CST);
}

static void count_error(contend_shared *s, const char *what) {
    fprintf(stderr, "    %s failed: %s\n", what, zkr_last_error_message());
    __atomic_fetch_add(&s->errors, 1, __ATOMIC_SEQ_CST);
}

static void *cohort_worker(void *p) {
    contend_shared *s = (contend_shared *)p;
    for (int i = 0; i < COHORT_ITERATIONS; i++) {
        bool ok = false;
        if (zkr_mutex_acquire(s->cohort, 60000, &ok) != ZKR_OK || !ok) {
            count_error(s, "cohort acquire");
            return NULL;
        }
        wide_token t = {0, 0};
        int64_t plain_token = 0;
        if (zkr_mutex_fencing_token_wide(s->cohort, &t.zxid, &t.handoff) != ZKR_OK) count_error(s, "wide token");
        if (zkr_mutex_fencing_token(s->cohort, &plain_token) != ZKR_OK) count_error(s, "plain token");
        if (plain_token != t.zxid) __atomic_fetch_add(&s->shared_token_mismatch, 1, __ATOMIC_SEQ_CST);
        critical_section(s, t, 0);
        if (zkr_mutex_release(s->cohort) != ZKR_OK) count_error(s, "cohort release");
    }
    return NULL;
}

static void *plain_worker(void *p) {
    contend_shared *s = (contend_shared *)p;
    for (int i = 0; i < PLAIN_ITERATIONS; i++) {
        bool ok = false;
        if (zkr_mutex_acquire(s->plain, 60000, &ok) != ZKR_OK || !ok) {
            count_error(s, "plain acquire (the other client starved?)");
            return NULL;
        }
        wide_token t = {0, 1};
        if (zkr_mutex_fencing_token_wide(s->plain, &t.zxid, &t.handoff) != ZKR_OK) count_error(s, "plain wide token");
        if (t.handoff != 0) __atomic_fetch_add(&s->shared_token_mismatch, 1, __ATOMIC_SEQ_CST);
        critical_section(s, t, 1);
        if (zkr_mutex_release(s->plain) != ZKR_OK) count_error(s, "plain release");
    }
    return NULL;
}

static void test_16_threads_and_a_plain_client_never_overlap_and_tokens_increase(void) {
    char path[128];
    zt_path(path, sizeof path, "cohort-contend");
    zkr_client *c1 = NULL, *c2 = NULL;
    contend_shared *s = calloc(1, sizeof *s);
    CHECK(s != NULL);
    CHECK_OK(zt_connect_client(&c1));
    CHECK_OK(zt_connect_client(&c2));
    CHECK_OK(zkr_mutex_new_cohort(c1, path, 8, 20, &s->cohort));
    CHECK_OK(zkr_mutex_new(c2, path, &s->plain));

    /* Hold the cohort's node first, so that every contender is in line before the run starts. */
    zkr_owner first = zkr_owner_new();
    bool ok = false;
    CHECK_OK(zkr_mutex_acquire_as(s->cohort, first, 10000, &ok));
    CHECK(ok);
    wide_token t0 = {0, 1};
    CHECK_OK(zkr_mutex_fencing_token_wide_as(s->cohort, first, &t0.zxid, &t0.handoff));
    CHECK_MSG(t0.handoff == 0, "the node's first holder has handoff %u", t0.handoff);
    critical_section(s, t0, 0);

    pthread_t threads[COHORT_THREADS], plain;
    for (int i = 0; i < COHORT_THREADS; i++) CHECK(pthread_create(&threads[i], NULL, cohort_worker, s) == 0);
    CHECK(pthread_create(&plain, NULL, plain_worker, s) == 0);
    bool lined_up = wait_local_waiters(s->cohort, COHORT_THREADS, 30000) && wait_nodes(s->cohort, 2, 30000);
    CHECK_OK(zkr_mutex_release_as(s->cohort, first));
    for (int i = 0; i < COHORT_THREADS; i++) pthread_join(threads[i], NULL);
    pthread_join(plain, NULL);
    CHECK_MSG(lined_up, "the 16 threads and the other client were not in line within 30 s");

    int holds = s->holds;
    CHECK_MSG(s->errors == 0, "%d calls failed", s->errors);
    CHECK_MSG(s->overlaps == 0, "%d overlaps", s->overlaps);
    CHECK_MSG(s->shared_token_mismatch == 0, "%d plain/wide token mismatches", s->shared_token_mismatch);
    CHECK_MSG(holds == MAX_HOLDS, "%d holds, expected %d", holds, MAX_HOLDS);
    int distinct = 1, plain_holds = 0, first_plain = -1, last_cohort = -1;
    for (int i = 0; i < holds; i++) {
        if (i > 0) {
            CHECK_MSG(wide_cmp(s->order[i - 1].token, s->order[i].token) < 0,
                      "hold %d's token (%" PRId64 ", %u) is not above hold %d's (%" PRId64 ", %u)", i,
                      s->order[i].token.zxid, s->order[i].token.handoff, i - 1, s->order[i - 1].token.zxid,
                      s->order[i - 1].token.handoff);
            if (s->order[i].token.zxid != s->order[i - 1].token.zxid) distinct++;
        }
        if (s->order[i].plain) {
            plain_holds++;
            if (first_plain < 0) first_plain = i;
        } else {
            last_cohort = i;
        }
    }
    CHECK_MSG(plain_holds == PLAIN_ITERATIONS, "the other client held %d of %d times", plain_holds, PLAIN_ITERATIONS);
    CHECK_MSG(first_plain >= 0 && first_plain < last_cohort,
              "the other client was first served at hold %d, after the cohort's last (%d)", first_plain, last_cohort);
    CHECK_MSG(distinct < holds, "%d distinct zxids for %d holds: no handoff happened", distinct, holds);
    printf("    %d holds, %d distinct lock nodes, the other client first served at hold %d\n", holds, distinct,
           first_plain);
    CHECK_MSG(node_count(s->cohort) == 0, "lock nodes left behind");
    size_t waiting = 1;
    CHECK_OK(zkr_mutex_local_waiters(s->cohort, &waiting));
    CHECK(waiting == 0);
    zkr_mutex_free(s->plain);
    zkr_mutex_free(s->cohort);
    zkr_client_free(c2);
    zkr_client_free(c1);
    free(s);
}

/* ---- one node for the whole local queue ---- */

#define QUEUE_THREADS 6

typedef struct queue_shared {
    zkr_mutex *m;
    int errors;                       /* atomic */
    int n;                            /* holds recorded (under the hold) */
    wide_token tokens[QUEUE_THREADS]; /* in hold order */
} queue_shared;

static void *queue_worker(void *p) {
    queue_shared *s = (queue_shared *)p;
    bool ok = false;
    if (zkr_mutex_acquire(s->m, 60000, &ok) != ZKR_OK || !ok) {
        __atomic_fetch_add(&s->errors, 1, __ATOMIC_SEQ_CST);
        return NULL;
    }
    wide_token t = {0, 0};
    if (zkr_mutex_fencing_token_wide(s->m, &t.zxid, &t.handoff) != ZKR_OK) __atomic_fetch_add(&s->errors, 1, __ATOMIC_SEQ_CST);
    int i = __atomic_fetch_add(&s->n, 1, __ATOMIC_SEQ_CST);
    if (i < QUEUE_THREADS) s->tokens[i] = t;
    if (zkr_mutex_release(s->m) != ZKR_OK) __atomic_fetch_add(&s->errors, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void test_the_local_queue_has_one_lock_node(void) {
    char path[128];
    zt_path(path, sizeof path, "cohort-one-node");
    zkr_client *c = NULL;
    queue_shared s;
    memset(&s, 0, sizeof s);
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_mutex_new_cohort(c, path, 64, 20, &s.m));
    zkr_owner o = zkr_owner_new();
    bool ok = false;
    CHECK_OK(zkr_mutex_acquire_as(s.m, o, 10000, &ok));
    CHECK(ok);
    wide_token first = {0, 1};
    CHECK_OK(zkr_mutex_fencing_token_wide_as(s.m, o, &first.zxid, &first.handoff));
    CHECK(first.handoff == 0);
    pthread_t threads[QUEUE_THREADS];
    for (int i = 0; i < QUEUE_THREADS; i++) CHECK(pthread_create(&threads[i], NULL, queue_worker, &s) == 0);
    /* All of them (at least 5), so that the queue does not run dry before the last one is in it. */
    bool queued = wait_local_waiters(s.m, QUEUE_THREADS, 30000);
    size_t nodes = node_count(s.m), waiting = 0;
    zkr_status waiting_status = zkr_mutex_local_waiters(s.m, &waiting);
    CHECK_OK(zkr_mutex_release_as(s.m, o));
    for (int i = 0; i < QUEUE_THREADS; i++) pthread_join(threads[i], NULL);
    CHECK_MSG(queued, "%d threads were not in the local queue within 30 s", QUEUE_THREADS);
    CHECK_OK(waiting_status);
    CHECK_MSG(waiting >= 5 && waiting <= QUEUE_THREADS, "%zu local waiters", waiting);
    CHECK_MSG(nodes == 1, "%zu lock nodes while %zu owners waited locally (expected 1)", nodes, waiting);
    CHECK_MSG(s.errors == 0, "%d calls failed", s.errors);
    CHECK(s.n == QUEUE_THREADS);
    /* Nobody else waited on the path: the whole queue was served on the first holder's node. */
    for (int i = 0; i < QUEUE_THREADS; i++) {
        CHECK_MSG(s.tokens[i].zxid == first.zxid && s.tokens[i].handoff == (uint32_t)i + 1,
                  "hold %d: token (%" PRId64 ", %u), expected (%" PRId64 ", %d)", i + 1, s.tokens[i].zxid,
                  s.tokens[i].handoff, first.zxid, i + 1);
    }
    CHECK_MSG(node_count(s.m) == 0, "lock nodes left behind");
    zkr_mutex_free(s.m);
    zkr_client_free(c);
}

/* ---- a timed-out acquire in the local queue, releases by a non-owner ---- */

typedef struct other_thread {
    zkr_mutex *m;
    zkr_status release_status;
    char message[512];
} other_thread;

static void *release_plain(void *p) {
    other_thread *a = (other_thread *)p;
    a->release_status = zkr_mutex_release(a->m);
    snprintf(a->message, sizeof a->message, "%s", zkr_last_error_message());
    return NULL;
}

static void test_timed_out_local_acquire_and_release_by_a_non_owner(void) {
    char path[128];
    zt_path(path, sizeof path, "cohort-timeout");
    zkr_client *c = NULL;
    zkr_mutex *m = NULL;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_mutex_new_cohort(c, path, 8, 5, &m));
    bool ok = false;
    CHECK_OK(zkr_mutex_acquire(m, 10000, &ok));
    CHECK(ok);
    /* Reentrant per owner: the same hold, the same token. */
    wide_token a = {0, 0}, b = {0, 0};
    CHECK_OK(zkr_mutex_fencing_token_wide(m, &a.zxid, &a.handoff));
    CHECK_OK(zkr_mutex_acquire(m, 0, &ok));
    CHECK(ok);
    CHECK_OK(zkr_mutex_fencing_token_wide(m, &b.zxid, &b.handoff));
    CHECK(wide_cmp(a, b) == 0);
    CHECK_OK(zkr_mutex_release(m));

    /* Another owner of the same handle waits in the local queue and times out. */
    zkr_owner other = zkr_owner_new();
    double t0 = zt_now_ms();
    ok = true;
    CHECK_OK(zkr_mutex_acquire_as(m, other, 300, &ok));
    double waited = zt_now_ms() - t0;
    CHECK_MSG(!ok, "a second owner got a held cohort mutex");
    CHECK_MSG(waited >= 290 && waited < 5000, "waited %.0f ms for a 300 ms timeout", waited);
    ok = true;
    CHECK_OK(zkr_mutex_acquire_as(m, other, 0, &ok));
    CHECK(!ok);
    size_t waiting = 1;
    CHECK_OK(zkr_mutex_local_waiters(m, &waiting));
    CHECK_MSG(waiting == 0, "%zu owners still in the local queue after their timeouts", waiting);
    CHECK_MSG(node_count(m) == 1, "the timed-out owners must not add nodes");

    /* Non-owners cannot release it or read its token: the other owner, another thread. */
    int64_t zxid = 7;
    uint32_t handoff = 7;
    CHECK_STATUS(zkr_mutex_release_as(m, other), ZKR_NOT_OWNER, "zkr_mutex_release_as");
    CHECK_STATUS(zkr_mutex_fencing_token_wide_as(m, other, &zxid, &handoff), ZKR_NOT_OWNER,
                 "zkr_mutex_fencing_token_wide_as");
    CHECK(zxid == 7 && handoff == 7);
    other_thread t;
    memset(&t, 0, sizeof t);
    t.m = m;
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, release_plain, &t) == 0);
    pthread_join(thread, NULL);
    CHECK_MSG(t.release_status == ZKR_NOT_OWNER, "got %s", zkr_status_name(t.release_status));
    CHECK_MSG(strstr(t.message, "zkr_mutex_release") && strstr(t.message, "ZKR_NOT_OWNER"), "message: %s", t.message);
    bool owned = false;
    CHECK_OK(zkr_mutex_is_owned(m, &owned));
    CHECK_MSG(owned, "a refused release must not touch the hold");

    CHECK_OK(zkr_mutex_release(m));
    CHECK_STATUS(zkr_mutex_release(m), ZKR_NOT_OWNER, "zkr_mutex_release");
    CHECK_STATUS(zkr_mutex_fencing_token_wide(m, &zxid, &handoff), ZKR_NOT_OWNER, "zkr_mutex_fencing_token_wide");
    CHECK(zxid == 7 && handoff == 7);
    CHECK_MSG(node_count(m) == 0, "the last release must give the node back");

    /* The next hold is on a new node: a greater zxid, handoff 0. */
    CHECK_OK(zkr_mutex_acquire_as(m, other, 10000, &ok));
    CHECK(ok);
    CHECK_OK(zkr_mutex_fencing_token_wide_as(m, other, &b.zxid, &b.handoff));
    CHECK_MSG(b.zxid > a.zxid && b.handoff == 0, "(%" PRId64 ", %u) after (%" PRId64 ", %u)", b.zxid, b.handoff,
              a.zxid, a.handoff);
    CHECK_OK(zkr_mutex_release_as(m, other));
    zkr_mutex_free(m);
    zkr_client_free(c);
}

/* ---- bad arguments ---- */

#define SENTINEL ((void *)0x5e5e5e5e)

static void never_revoked(zkr_owner owner, void *user_data) {
    (void)owner;
    (void)user_data;
}

static void test_bad_arguments_are_invalid_argument(void) {
    zkr_client *c = NULL;
    CHECK_OK(zt_connect_client(&c));
    zkr_mutex *m = (zkr_mutex *)SENTINEL;
    CHECK_STATUS(zkr_mutex_new_cohort(NULL, "/x", 8, 5, &m), ZKR_INVALID_ARGUMENT, "zkr_mutex_new_cohort");
    CHECK(strstr(zkr_last_error_message(), "client is NULL") != NULL);
    CHECK_STATUS(zkr_mutex_new_cohort(c, NULL, 8, 5, &m), ZKR_INVALID_ARGUMENT, "zkr_mutex_new_cohort");
    CHECK(strstr(zkr_last_error_message(), "path is NULL") != NULL);
    CHECK_STATUS(zkr_mutex_new_cohort(c, "/x", 8, 5, NULL), ZKR_INVALID_ARGUMENT, "zkr_mutex_new_cohort");
    CHECK(strstr(zkr_last_error_message(), "out is NULL") != NULL);
    CHECK_STATUS(zkr_mutex_new_cohort(c, "/a\xff", 8, 5, &m), ZKR_INVALID_ARGUMENT, "zkr_mutex_new_cohort");
    CHECK(strstr(zkr_last_error_message(), "not valid UTF-8") != NULL);
    CHECK_STATUS(zkr_mutex_new_cohort(c, "no-slash", 8, 5, &m), ZKR_INVALID_ARGUMENT, "zkr_mutex_new_cohort");
    CHECK_STATUS(zkr_mutex_new_cohort(c, "/x", 0, 5, &m), ZKR_INVALID_ARGUMENT, "zkr_mutex_new_cohort");
    CHECK_MSG(strstr(zkr_last_error_message(), "max_handoffs") != NULL, "%s", zkr_last_error_message());
    CHECK_STATUS(zkr_mutex_new_cohort(c, "/x", 8, -1, &m), ZKR_INVALID_ARGUMENT, "zkr_mutex_new_cohort");
    CHECK_MSG(strstr(zkr_last_error_message(), "max_hold_ms") != NULL, "%s", zkr_last_error_message());
    CHECK_STATUS(zkr_mutex_new_cohort(c, "/x", 8, INT64_MIN, &m), ZKR_INVALID_ARGUMENT, "zkr_mutex_new_cohort");
    CHECK(m == (zkr_mutex *)SENTINEL);
    /* The extremes that are allowed: one handoff, no hold time, the largest values. */
    CHECK_OK(zkr_mutex_new_cohort(c, "/c-tests/cohort-bad/a", 1, 0, &m));
    zkr_mutex_free(m);
    CHECK_OK(zkr_mutex_new_cohort(c, "/c-tests/cohort-bad/b", UINT32_MAX, INT64_MAX, &m));

    int64_t zxid = 7;
    uint32_t handoff = 7;
    size_t n = 7;
    CHECK_STATUS(zkr_mutex_fencing_token_wide(NULL, &zxid, &handoff), ZKR_INVALID_ARGUMENT,
                 "zkr_mutex_fencing_token_wide");
    CHECK(strstr(zkr_last_error_message(), "mutex is NULL") != NULL);
    CHECK_STATUS(zkr_mutex_fencing_token_wide(m, NULL, &handoff), ZKR_INVALID_ARGUMENT, "zkr_mutex_fencing_token_wide");
    CHECK(strstr(zkr_last_error_message(), "zxid is NULL") != NULL);
    CHECK_STATUS(zkr_mutex_fencing_token_wide(m, &zxid, NULL), ZKR_INVALID_ARGUMENT, "zkr_mutex_fencing_token_wide");
    CHECK(strstr(zkr_last_error_message(), "handoff is NULL") != NULL);
    CHECK_STATUS(zkr_mutex_fencing_token_wide_as(NULL, zkr_owner_new(), &zxid, &handoff), ZKR_INVALID_ARGUMENT,
                 "zkr_mutex_fencing_token_wide_as");
    zkr_owner zeroed = {0};
    CHECK_STATUS(zkr_mutex_fencing_token_wide_as(m, zeroed, &zxid, &handoff), ZKR_INVALID_ARGUMENT,
                 "zkr_mutex_fencing_token_wide_as");
    CHECK(strstr(zkr_last_error_message(), "owner is not initialized") != NULL);
    CHECK(zxid == 7 && handoff == 7);
    CHECK_STATUS(zkr_mutex_local_waiters(NULL, &n), ZKR_INVALID_ARGUMENT, "zkr_mutex_local_waiters");
    CHECK_STATUS(zkr_mutex_local_waiters(m, NULL), ZKR_INVALID_ARGUMENT, "zkr_mutex_local_waiters");
    CHECK(strstr(zkr_last_error_message(), "n is NULL") != NULL);
    CHECK(n == 7);
    CHECK_OK(zkr_mutex_local_waiters(m, &n));
    CHECK(n == 0);

    /* One node serves every local owner: a cohort mutex is not revocable, and says so. */
    CHECK_STATUS(zkr_mutex_make_revocable(m, never_revoked, NULL), ZKR_INVALID_ARGUMENT,
                 "zkr_mutex_make_revocable");
    CHECK(strstr(zkr_last_error_message(), "not revocable") != NULL);
    /* With a NULL callback too, as the header says (it answered ZKR_OK). */
    CHECK_STATUS(zkr_mutex_make_revocable(m, NULL, NULL), ZKR_INVALID_ARGUMENT,
                 "zkr_mutex_make_revocable");
    CHECK(strstr(zkr_last_error_message(), "not revocable") != NULL);

    /* A freed cohort handle is refused like any other. */
    zkr_mutex_free(m);
    CHECK_STATUS(zkr_mutex_local_waiters(m, &n), ZKR_INVALID_ARGUMENT, "zkr_mutex_local_waiters");
    CHECK_STATUS(zkr_mutex_fencing_token_wide(m, &zxid, &handoff), ZKR_INVALID_ARGUMENT,
                 "zkr_mutex_fencing_token_wide");
    CHECK(zxid == 7 && handoff == 7 && n == 0);
    zkr_client_free(c);
}

/* ---- the new calls on a plain mutex ---- */

static void test_a_plain_mutex_has_handoff_0_and_no_local_waiters(void) {
    char path[128];
    zt_path(path, sizeof path, "cohort-plain");
    zkr_client *c = NULL;
    zkr_mutex *m = NULL;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_mutex_new(c, path, &m));
    bool ok = false;
    CHECK_OK(zkr_mutex_acquire(m, 10000, &ok));
    CHECK(ok);
    int64_t plain = 0, zxid = 0;
    uint32_t handoff = 7;
    size_t n = 7;
    CHECK_OK(zkr_mutex_fencing_token(m, &plain));
    CHECK_OK(zkr_mutex_fencing_token_wide(m, &zxid, &handoff));
    CHECK_MSG(zxid == plain && handoff == 0, "wide (%" PRId64 ", %u), plain %" PRId64, zxid, handoff, plain);
    CHECK_OK(zkr_mutex_local_waiters(m, &n));
    CHECK(n == 0);
    CHECK_OK(zkr_mutex_release(m));
    zkr_mutex_free(m);
    zkr_client_free(c);
}

int main(int argc, char **argv) {
    zt_begin(argc, argv);
    RUN(test_16_threads_and_a_plain_client_never_overlap_and_tokens_increase);
    RUN(test_the_local_queue_has_one_lock_node);
    RUN(test_timed_out_local_acquire_and_release_by_a_non_owner);
    RUN(test_bad_arguments_are_invalid_argument);
    RUN(test_a_plain_mutex_has_handoff_0_and_no_local_waiters);
    return zt_end("test_cohort");
}
