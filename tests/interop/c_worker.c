/* The C worker of the interop runner (tests/interop/run), built against an installed
 * zkrecipes (pkg-config):
 *   c_worker --role ROLE --connect HOST:PORT --path P --iterations N --id ID --log FILE [--go FILE]
 *            [--expect K] [--peers DIR] [--max-leases M]
 *            [--tls-ca F --tls-cert F --tls-key F] [--sasl-user U --sasl-password P] [--whoami DIR]
 * Secured servers (the tls scenario): zkr_client_options version 3 (mutual TLS, SASL DIGEST-MD5);
 * --whoami DIR creates DIR/ID with CREATOR_ALL_ACL (an ACL-provider rule for that one path), so
 * that its ACL names the identities the session authenticated as.
 * ROLE: mutex, cohort, counter, latch, selector, sharedcount, rwlock, semaphore, semcount, cache, watch,
 * discovery (instances as Curator's JSON in and out: "registered c c/ID JSON" and "found c SVC/ID
 * JSON" carry that JSON as the face returns it; the runner reads its fields).
 * partition, lease (the loops of py_worker.py and kazoo_worker.py on zkr_set_partitioner_* and
 * zkr_multi_non_blocking_lease; tests/interop/README.md).
 * queue, simplequeue, doublebarrier, group, gzip, putmulti, sharder, values.
 * values: a zkr_shared_value at P/value, zkr_atomic_bytes at P/atomic and P/atomic-set (promoted to
 * a lock at P/atomic-lock) and a zkr_cached_atomic_long at P/ids, the workload of Values.java (see
 * values_start/values_run): "set c ID PRE POST PROMOTED", "value c ID V", "atomic c ID V", "id c
 * ID V", then "retries c ID VALUE ATOMIC SET ID".
 * putmulti: puts "c:i" three to a node (zkr_queue_put_multi) into a DistributedQueue (lock path
 * P-locks), then consumes until idle: "got c ID ITEM TOKEN" per message. sharder: a
 * zkr_queue_sharder (P/queues, leader P/leader, lock paths P-locks/SHARD, threshold 3, checks
 * every 200 ms, at most 4 shards): puts through zkr_queue_sharder_get_queue, consumes from every
 * shard, then "shards c ID K".
 * ensemble: opts.track_ensemble (options version 5) on a reconfigurable ensemble; "session c ID SID"
 * before the barrier, then mutex sections stamped like mutex's until the file GO.changed exists
 * ("changed c ID K" after K sections), then N more; then "session c ID SID" again and "hosts c ID
 * CONNECT" (zkr_client_current_connect_string).
 * Same log lines as every worker: "start c ID TOKEN NS" / "end c ID TOKEN NS" (CLOCK_MONOTONIC;
 * rwlock/semaphore: TOKEN is the tag read|write|lease), "inc c ID VALUE" / "fail c ID",
 * "lead"/"unlead c ID NS", then "done c ID COUNT".
 * cohort: 4 threads share one mutex handle with cohort handoffs (zkr_mutex_new_cohort, 8
 * handoffs, 5 ms) and take it N times in all (thread k: N/4, one more for k < N%4); their
 * sections log like the mutex role's under one ID, TOKEN being the wide fencing token as one
 * decimal integer, (zxid << 32) | handoff; then one "done c ID N". */
#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zkrecipes.h>

/* the start barrier's poll: every worker waits for the runner's go file (about 120 workers at once; 1 ms polls starved the servers on 2 cores) */
#define BARRIER_POLL_MS 20

static long long mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void check(zkr_status st, const char *what) {
    if (st != ZKR_OK) {
        fprintf(stderr, "c_worker: %s failed: %s (%s)\n", what, zkr_status_name(st), zkr_last_error_message());
        exit(2);
    }
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The wide fencing token (zxid << 32) | handoff in decimal, exactly: the value has at most 95
 * bits (zxid >= 0), taken as three 32-bit limbs and divided by 10^9 with 64-bit arithmetic. */
static void format_wide_token(int64_t zxid, uint32_t handoff, char *out, size_t len) {
    uint64_t hi = (uint64_t)zxid;
    uint32_t limbs[3] = {(uint32_t)(hi >> 32), (uint32_t)hi, handoff};
    uint32_t groups[4]; /* base-10^9 digits, least significant first */
    int n = 0;
    do {
        uint64_t rem = 0;
        for (int i = 0; i < 3; i++) {
            uint64_t cur = (rem << 32) | limbs[i];
            limbs[i] = (uint32_t)(cur / 1000000000u);
            rem = cur % 1000000000u;
        }
        groups[n++] = (uint32_t)rem;
    } while ((limbs[0] | limbs[1] | limbs[2]) != 0 && n < 4);
    int w = snprintf(out, len, "%u", groups[n - 1]);
    for (int i = n - 2; i >= 0 && w > 0 && (size_t)w < len; i--) w += snprintf(out + w, len - (size_t)w, "%09u", groups[i]);
}

/* The values scenario (tests/interop/README.md), as Curator's worker runs it (Values.java): P/value
 * a shared value (seed "0") counting in decimal text with get_value / try_set_value; P/atomic an
 * atomic value (initialized "0") with get / compare_and_set; P/atomic-set one with
 * zkr_retry_n_times(0, 0) (one optimistic try) promoted to a lock at P/atomic-lock (one try under
 * it, Curator's default; waiting without limit), initialized "seed", written with try_set("ID:i");
 * P/ids a cached atomic long (cache factor 5) over a counter with zkr_retry_n_times(50, 10). */
struct values {
    zkr_shared_value *value;
    zkr_atomic_bytes *atomic, *set;
    zkr_cached_atomic_long *ids;
};

static void values_start(zkr_client *client, const char *path, struct values *v) {
    char p[1024], lock[1024];
    bool created;
    zkr_retry_policy one_try = zkr_retry_n_times(0, 0), fifty = zkr_retry_n_times(50, 10);
    snprintf(p, sizeof p, "%s/value", path);
    check(zkr_shared_value_new(client, p, (const uint8_t *)"0", 1, &v->value), "zkr_shared_value_new");
    check(zkr_shared_value_start(v->value), "zkr_shared_value_start");
    snprintf(p, sizeof p, "%s/atomic", path);
    check(zkr_atomic_bytes_new_with(client, p, &one_try, NULL, -1, &v->atomic), "zkr_atomic_bytes_new_with");
    check(zkr_atomic_bytes_initialize(v->atomic, (const uint8_t *)"0", 1, &created), "zkr_atomic_bytes_initialize");
    snprintf(p, sizeof p, "%s/atomic-set", path);
    snprintf(lock, sizeof lock, "%s/atomic-lock", path);
    check(zkr_atomic_bytes_new_with(client, p, &one_try, lock, -1, &v->set), "zkr_atomic_bytes_new_with");
    check(zkr_atomic_bytes_initialize(v->set, (const uint8_t *)"seed", 4, &created), "zkr_atomic_bytes_initialize");
    snprintf(p, sizeof p, "%s/ids", path);
    zkr_atomic_long *counter = NULL;
    check(zkr_atomic_long_new_with(client, p, &fifty, NULL, -1, &counter), "zkr_atomic_long_new_with");
    check(zkr_cached_atomic_long_new(counter, 5, &v->ids), "zkr_cached_atomic_long_new");
    zkr_atomic_long_free(counter);
}

/* A buffer as text ("null" for NULL) in `out`. */
static const char *buffer_text(const zkr_buffer *b, char *out, size_t len) {
    if (b == NULL) return "null";
    snprintf(out, len, "%.*s", (int)b->len, b->len ? (const char *)b->data : "");
    return out;
}

static void values_run(struct values *v, FILE *log, const char *id, long n) {
    long value_retries = 0, atomic_retries = 0, set_fails = 0, id_fails = 0;
    char token[256], pre[256], post[256];
    for (long i = 0; i < n; i++) {
        for (;;) {
            zkr_atomic_bytes_result *r = NULL;
            snprintf(token, sizeof token, "%s:%ld", id, i);
            check(zkr_atomic_bytes_try_set(v->set, (const uint8_t *)token, strlen(token), &r), "zkr_atomic_bytes_try_set");
            bool ok = r->succeeded;
            if (ok)
                fprintf(log, "set c %s %s %s %u\n", id, buffer_text(r->pre_value, pre, sizeof pre),
                        buffer_text(r->post_value, post, sizeof post), r->stats.promoted_lock_tries);
            zkr_atomic_bytes_result_free(r);
            if (ok) break;
            set_fails++;
        }
    }
    for (long i = 0; i < n; i++) {
        for (;;) {
            zkr_buffer *b = NULL;
            int32_t version = 0;
            check(zkr_shared_value_get_value(v->value, &b, &version), "zkr_shared_value_get_value");
            long long next = atoll(buffer_text(b, pre, sizeof pre)) + 1;
            snprintf(post, sizeof post, "%lld", next);
            bool set = false;
            check(zkr_shared_value_try_set_value(v->value, version, b->data, b->len, (const uint8_t *)post,
                                                 strlen(post), &set),
                  "zkr_shared_value_try_set_value");
            zkr_buffer_free(b);
            if (set) {
                fprintf(log, "value c %s %lld\n", id, next);
                break;
            }
            value_retries++;
        }
        for (;;) {
            zkr_atomic_bytes_result *g = NULL, *r = NULL;
            check(zkr_atomic_bytes_get(v->atomic, &g), "zkr_atomic_bytes_get");
            if (g->post_value == NULL) { fprintf(stderr, "c_worker: %s/atomic is missing\n", id); exit(2); }
            long long next = atoll(buffer_text(g->post_value, pre, sizeof pre)) + 1;
            snprintf(post, sizeof post, "%lld", next);
            check(zkr_atomic_bytes_compare_and_set(v->atomic, g->post_value->data, g->post_value->len,
                                                   (const uint8_t *)post, strlen(post), &r),
                  "zkr_atomic_bytes_compare_and_set");
            bool ok = r->succeeded;
            zkr_atomic_bytes_result_free(g);
            zkr_atomic_bytes_result_free(r);
            if (ok) {
                fprintf(log, "atomic c %s %lld\n", id, next);
                break;
            }
            atomic_retries++;
        }
        for (;;) {
            zkr_atomic_value r;
            check(zkr_cached_atomic_long_next(v->ids, &r), "zkr_cached_atomic_long_next");
            if (r.succeeded) {
                fprintf(log, "id c %s %lld\n", id, (long long)r.post_value);
                break;
            }
            id_fails++;
        }
        fflush(log);
    }
    fprintf(log, "retries c %s %ld %ld %ld %ld\n", id, value_retries, atomic_retries, set_fails, id_fails);
    fprintf(log, "done c %s %ld\n", id, n);
    check(zkr_shared_value_close(v->value), "zkr_shared_value_close");
    zkr_shared_value_free(v->value);
    zkr_atomic_bytes_free(v->atomic);
    zkr_atomic_bytes_free(v->set);
    zkr_cached_atomic_long_free(v->ids);
}

/* The cohort role's threads: one handle, one log, lines written under one mutex. */
#define COHORT_THREADS 4
struct cohort_state {
    zkr_mutex *m;
    FILE *log;
    const char *id;
    long share;
    pthread_mutex_t *log_mu;
};

static void cohort_log(struct cohort_state *s, const char *what, const char *token) {
    pthread_mutex_lock(s->log_mu);
    fprintf(s->log, "%s c %s %s %lld\n", what, s->id, token, mono_ns());
    fflush(s->log);
    pthread_mutex_unlock(s->log_mu);
}

static void *cohort_thread(void *p) {
    struct cohort_state *s = p;
    for (long i = 0; i < s->share; i++) {
        bool ok = false;
        check(zkr_mutex_acquire(s->m, -1, &ok), "zkr_mutex_acquire (cohort)");
        if (!ok) { fprintf(stderr, "c_worker: acquire returned false\n"); exit(2); }
        int64_t zxid = 0;
        uint32_t handoff = 0;
        check(zkr_mutex_fencing_token_wide(s->m, &zxid, &handoff), "zkr_mutex_fencing_token_wide");
        char token[48];
        format_wide_token(zxid, handoff, token, sizeof token);
        cohort_log(s, "start", token);
        struct timespec pause = {0, 200000};
        nanosleep(&pause, NULL);
        cohort_log(s, "end", token);
        check(zkr_mutex_release(s->m), "zkr_mutex_release (cohort)");
    }
    return NULL;
}

/* Queue scenarios: consume once Curator took one of our items (GO.ROLE.java-took), or after 30 s. */
static void wait_for_curator_consumer(const char *go, const char *role) {
    char marker[4096];
    if (!go) return;
    snprintf(marker, sizeof marker, "%s.%s.java-took", go, role);
    for (int i = 0; i < 6000 && access(marker, F_OK) != 0; i++) sleep_ms(5);
}

static void wait_for_file(const char *go) {
    while (go && access(go, F_OK) != 0) sleep_ms(BARRIER_POLL_MS);
}

/* Marks our first section in PEERS/ID and waits (30 s at most) for another worker's mark. */
static void wait_for_peer(const char *peers, const char *id) {
    if (!peers) return;
    char mark[4096];
    snprintf(mark, sizeof mark, "%s/%s", peers, id);
    FILE *f = fopen(mark, "w");
    if (!f) { perror("c_worker: peer mark"); exit(2); }
    fclose(f);
    long long t = mono_ns();
    while (mono_ns() - t < 30000000000LL) {
        DIR *d = opendir(peers);
        if (!d) { perror("c_worker: peers"); exit(2); }
        int other = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, id)) other = 1;
        closedir(d);
        if (other) return;
        sleep_ms(1);
    }
}

static void semcount_section(zkr_semaphore *sem, const char *id, const char *tag, const char *mark,
                             FILE *log) {
    zkr_leases *leases = NULL;
    check(zkr_semaphore_acquire(sem, 1, -1, &leases), "zkr_semaphore_acquire");
    if (!leases) { fprintf(stderr, "c_worker: no lease without a timeout\n"); exit(2); }
    fprintf(log, "start c %s %s %lld\n", id, tag, mono_ns());
    fflush(log);
    if (mark) {
        FILE *f = fopen(mark, "w");
        if (!f) { perror("c_worker: p2 mark"); exit(2); }
        fclose(f);
    }
    sleep_ms(1);
    fprintf(log, "end c %s %s %lld\n", id, tag, mono_ns());
    fflush(log);
    check(zkr_semaphore_return_leases(sem, leases), "zkr_semaphore_return_leases");
    zkr_leases_free(leases);
}

/* semcount: a semaphore whose limit is the SharedCount at P-count (1): N sections at limit 1
 * (lease1); then PEERS/p1/ID, wait for the Rust worker's PEERS/raised (it set the count to 3 and
 * holds a lease until every other worker marked PEERS/p2/ID inside its first lease2 section), and
 * N sections (lease2). */
static void semcount(zkr_client *client, const char *path, const char *id, long iterations,
                     const char *peers, FILE *log) {
    char buf[4096], p2[4096];
    snprintf(buf, sizeof buf, "%s-count", path);
    zkr_shared_count *count = NULL;
    check(zkr_shared_count_new(client, buf, 1, &count), "zkr_shared_count_new");
    check(zkr_shared_count_start(count), "zkr_shared_count_start");
    zkr_semaphore *sem = NULL;
    check(zkr_semaphore_new_with_count(client, path, count, &sem), "zkr_semaphore_new_with_count");
    for (long i = 0; i < iterations; i++) semcount_section(sem, id, "lease1", NULL, log);
    snprintf(buf, sizeof buf, "%s/p1", peers);
    mkdir(buf, 0755);
    snprintf(p2, sizeof p2, "%s/p2", peers);
    mkdir(p2, 0755);
    snprintf(p2, sizeof p2, "%s/p2/%s", peers, id);
    snprintf(buf, sizeof buf, "%s/p1/%s", peers, id);
    FILE *f = fopen(buf, "w");
    if (!f) { perror("c_worker: phase mark"); exit(2); }
    fclose(f);
    snprintf(buf, sizeof buf, "%s/raised", peers);
    long long t = mono_ns();
    while (access(buf, F_OK) != 0) {
        if (mono_ns() - t > 120000000000LL) { fprintf(stderr, "c_worker: the count was never raised\n"); exit(2); }
        sleep_ms(2);
    }
    for (long i = 0; i < iterations; i++) semcount_section(sem, id, "lease2", i == 0 ? p2 : NULL, log);
    fprintf(log, "done c %s %ld\n", id, 2 * iterations);
    zkr_semaphore_free(sem);
    zkr_shared_count_free(count);
}

static long files_in(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) { perror("c_worker: peers"); exit(2); }
    long n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

/* The partition scenario's set (every worker's, sorted) and how long a round's member stays
 * ACQUIRED before it leaves. */
static const char *const PARTS[] = {"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"};
#define NPARTS 8
#define HOLD_NS 400000000LL

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Whether the party at PATH/party is `expect` distinct identifiers, us among them, and `held` is
 * kazoo's share of PARTS for us in it (kazoo's default partition_func: identifiers sorted, member
 * i of n takes i, i + n, ...). */
static bool held_is_kazoos_share(zkr_client *client, const char *path, const char *me, long expect,
                                 const zkr_string_list *held) {
    char party[4096];
    snprintf(party, sizeof party, "%s/party", path);
    zkr_string_list *kids = NULL;
    check(zkr_client_get_children(client, party, &kids), "zkr_client_get_children (party)");
    size_t n = kids->len;
    const char **ids = calloc(n ? n : 1, sizeof *ids);
    if (!ids) exit(2);
    for (size_t i = 0; i < n; i++) {
        const char *dash = strchr(kids->items[i], '-');
        ids[i] = dash ? dash + 1 : kids->items[i];
    }
    qsort(ids, n, sizeof *ids, cmp_str);
    bool ok = (long)n == expect;
    size_t mine = n;
    for (size_t i = 0; i < n; i++) {
        if (i && !strcmp(ids[i], ids[i - 1])) ok = false;
        if (!strcmp(ids[i], me)) mine = i;
    }
    if (mine == n) ok = false;
    size_t k = 0;
    for (size_t j = mine; ok && j < NPARTS; j += n, k++)
        if (k >= held->len || strcmp(held->items[k], PARTS[j])) ok = false;
    if (ok && k != held->len) ok = false;
    free(ids);
    zkr_string_list_free(kids);
    return ok;
}

static void stamp_all(FILE *log, const char *what, const char *me, const zkr_string_list *parts) {
    for (size_t i = 0; parts && i < parts->len; i++)
        fprintf(log, "%s c %s %s %lld\n", what, me, parts->items[i], mono_ns());
    fflush(log);
}

/* One member, kazoo's loop, stamping `start/end c ID PARTITION NS` around each hold (start once
 * ACQUIRED, end before release_set or finish). A round's member leaves after HOLD_NS ACQUIRED;
 * the final one logs `final c ID p,q,...` once its share is kazoo's for the whole party, and
 * leaves once every worker did (a mark per worker in `peers`). */
static void partition_member(zkr_client *client, const char *path, const char *me, long expect,
                             const char *peers, FILE *log, bool final) {
    zkr_set_partitioner *p = NULL;
    check(zkr_set_partitioner_new(client, path, PARTS, NPARTS, me, 200, 100, &p), "zkr_set_partitioner_new");
    check(zkr_set_partitioner_start(p), "zkr_set_partitioner_start");
    zkr_string_list *held = NULL;
    long long since = 0, deadline = mono_ns() + 120000000000LL;
    long long hold = HOLD_NS + (mono_ns() % 200) * 1000000LL; /* jittered, so that members leave apart */
    bool logged = false;
    for (;;) {
        zkr_partition_state state;
        zkr_string_list *parts = NULL;
        check(zkr_set_partitioner_partitions(p, &state, &parts), "zkr_set_partitioner_partitions");
        if (state == ZKR_PARTITION_ACQUIRED && !held) {
            since = mono_ns();
            stamp_all(log, "start", me, parts);
            held = parts;
            parts = NULL;
        }
        zkr_string_list_free(parts);
        bool stop;
        if (!final) {
            stop = (state == ZKR_PARTITION_ACQUIRED && mono_ns() - since >= hold) || mono_ns() > deadline;
        } else {
            if (state == ZKR_PARTITION_ACQUIRED && !logged && held_is_kazoos_share(client, path, me, expect, held)) {
                fprintf(log, "final c %s ", me);
                for (size_t i = 0; i < held->len; i++) fprintf(log, "%s%s", i ? "," : "", held->items[i]);
                fprintf(log, "%s\n", held->len ? "" : "-");
                fflush(log);
                char mark[4096];
                snprintf(mark, sizeof mark, "%s/%s", peers, me);
                FILE *f = fopen(mark, "w");
                if (!f) { perror("c_worker: peer mark"); exit(2); }
                fclose(f);
                logged = true;
            }
            stop = files_in(peers) >= expect || mono_ns() > deadline;
        }
        if (stop) break;
        if (state == ZKR_PARTITION_RELEASE) {
            stamp_all(log, "end", me, held);
            zkr_string_list_free(held);
            held = NULL;
            check(zkr_set_partitioner_release_set(p), "zkr_set_partitioner_release_set");
        } else if (state == ZKR_PARTITION_FAILURE) {
            fprintf(stderr, "c_worker: partitioner FAILURE\n");
            exit(2);
        } else {
            zkr_partition_state now;
            check(zkr_set_partitioner_wait_for_change(p, state, 50, &now), "zkr_set_partitioner_wait_for_change");
        }
    }
    if (!final && !held) { fprintf(stderr, "c_worker: a round never ACQUIRED\n"); exit(2); }
    stamp_all(log, "end", me, held);
    zkr_string_list_free(held);
    check(zkr_set_partitioner_finish(p), "zkr_set_partitioner_finish");
    zkr_set_partitioner_free(p);
}

static void partition(zkr_client *client, const char *path, const char *me, long rounds, long expect,
                      const char *peers, FILE *log) {
    /* After the Rust worker's first round (py_worker.py's wait_for_first). */
    char first[4096];
    snprintf(first, sizeof first, "%s.first", peers);
    long long until = mono_ns() + 120000000000LL;
    while (access(first, F_OK) != 0) {
        if (mono_ns() > until) { fprintf(stderr, "c_worker: no %s after 120 s\n", first); exit(2); }
        sleep_ms(5);
    }
    for (long r = 0; r < rounds; r++) {
        partition_member(client, path, me, expect, peers, log, false);
        fprintf(log, "round c %s %ld\n", me, r);
        fflush(log);
        sleep_ms(300 + (long)(mono_ns() % 200)); /* > time boundary: the rest divide without us */
    }
    partition_member(client, path, me, expect, peers, log, true);
    fprintf(log, "done c %s %ld\n", me, rounds);
}

static long long wall_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The lease scenario: tries for one of 2 leases of 1 s (every 0.1 s) until it held one `leases`
 * times (60 s at most); a holder renews once within its lease, then waits for its end. Logs
 * `lease c ID SLOT START_NS END_NS` (wall clock) per hold and `renew c ID ok|lost RETURNED_NS END_NS`. */
static void lease(zkr_client *client, const char *path, const char *me, long leases, FILE *log) {
    long got = 0;
    long long deadline = mono_ns() + 60000000000LL;
    while (got < leases && mono_ns() < deadline) {
        bool ok = false;
        uint32_t slot = 0;
        int64_t end_ms = 0;
        check(zkr_multi_non_blocking_lease(client, 2, path, 1000, me, -1, &ok, &slot, &end_ms),
              "zkr_multi_non_blocking_lease");
        if (!ok) {
            sleep_ms(100);
            continue;
        }
        got++;
        long long end = (long long)end_ms * 1000000LL;
        fprintf(log, "lease c %s %u %lld %lld\n", me, slot, wall_ns(), end);
        fflush(log);
        sleep_ms(200);
        if (wall_ns() < end - 500000000LL) {
            check(zkr_multi_non_blocking_lease(client, 2, path, 1000, me, -1, &ok, &slot, &end_ms),
                  "zkr_multi_non_blocking_lease (renew)");
            fprintf(log, "renew c %s %s %lld %lld\n", me, ok ? "ok" : "lost", wall_ns(), end);
            if (ok) {
                end = (long long)end_ms * 1000000LL;
                fprintf(log, "lease c %s %u %lld %lld\n", me, slot, wall_ns(), end);
            }
            fflush(log);
        }
        long long left = end - wall_ns();
        sleep_ms((left > 0 ? (long)(left / 1000000) : 0) + 50 + (long)(mono_ns() % 100));
    }
    fprintf(log, "done c %s %ld\n", me, got);
}

struct selector_state {
    FILE *log;
    const char *id, *go;
    long rounds, terms;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

static void take_leadership(zkr_leadership_context *ctx, void *user_data) {
    struct selector_state *s = user_data;
    wait_for_file(s->go);
    pthread_mutex_lock(&s->mu);
    long terms = s->terms;
    pthread_mutex_unlock(&s->mu);
    if (terms >= s->rounds) return; /* our share is done; main closes the selector */
    pthread_mutex_lock(&s->mu);
    fprintf(s->log, "lead c %s %lld\n", s->id, mono_ns());
    fflush(s->log);
    pthread_mutex_unlock(&s->mu);
    sleep_ms(10);
    if (zkr_leadership_cancelled(ctx)) { fprintf(stderr, "c_worker: leadership cancelled while leading\n"); exit(2); }
    pthread_mutex_lock(&s->mu);
    fprintf(s->log, "unlead c %s %lld\n", s->id, mono_ns());
    fflush(s->log);
    s->terms++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Whether the group has `expect` members whose payloads are "P-<id>" for a P of `phases`
 * (NULL-terminated); `keys` (if not NULL) gets the ids, comma-separated. */
static bool members_at(zkr_group_member *m, long expect, const char *const *phases, char *keys, size_t keys_len) {
    zkr_member_list *list = NULL;
    check(zkr_group_member_current_members(m, &list), "zkr_group_member_current_members");
    bool ok = (long)list->len >= expect;
    if (keys) keys[0] = '\0';
    for (size_t i = 0; i < list->len; i++) {
        const zkr_member *x = &list->items[i];
        bool any = false;
        for (const char *const *p = phases; *p; p++) {
            char want[512];
            snprintf(want, sizeof want, "%s-%s", *p, x->id);
            any = any || (x->len == strlen(want) && memcmp(x->data, want, x->len) == 0);
        }
        ok = ok && any;
        if (keys && strlen(keys) + strlen(x->id) + 2 < keys_len) {
            if (i) strcat(keys, ",");
            strcat(keys, x->id);
        }
    }
    zkr_member_list_free(list);
    return ok;
}

static bool has_member(zkr_group_member *m, const char *id) {
    zkr_member_list *list = NULL;
    check(zkr_group_member_current_members(m, &list), "zkr_group_member_current_members");
    bool found = false;
    for (size_t i = 0; i < list->len; i++) found = found || !strcmp(list->items[i].id, id);
    zkr_member_list_free(list);
    return found;
}

/* The group scenario (tests/interop/README.md): join, see all, set p1, see all p1, mark, then
 * see rust-group leave. Each wait polls every 20 ms for 60 s at most. */
static void group(zkr_client *client, const char *path, const char *id, long expect, const char *peers, FILE *log) {
    char payload[256], keys[1024];
    snprintf(payload, sizeof payload, "p0-%s", id);
    zkr_group_member *m = NULL;
    check(zkr_group_member_new(client, path, id, (const uint8_t *)payload, strlen(payload), &m), "zkr_group_member_new");
    check(zkr_group_member_start(m), "zkr_group_member_start");
    fprintf(log, "joined c %s\n", id);
    static const char *const any_phase[] = {"p0", "p1", NULL}, *const p1[] = {"p1", NULL};
    int i;
    for (i = 0; i < 3000 && !members_at(m, expect, any_phase, keys, sizeof keys); i++) sleep_ms(20);
    if (i < 3000) fprintf(log, "saw-all c %s %s\n", id, keys);
    snprintf(payload, sizeof payload, "p1-%s", id);
    check(zkr_group_member_set_this_data(m, (const uint8_t *)payload, strlen(payload)), "zkr_group_member_set_this_data");
    for (i = 0; i < 3000 && !members_at(m, expect, p1, keys, sizeof keys); i++) sleep_ms(20);
    if (i < 3000) fprintf(log, "saw-data c %s %s\n", id, keys);
    fflush(log);
    char mark[1024];
    snprintf(mark, sizeof mark, "%s/%s", peers, id);
    FILE *f = fopen(mark, "w");
    if (f) fclose(f);
    for (i = 0; i < 3000 && has_member(m, "rust-group"); i++) sleep_ms(20);
    if (i < 3000) fprintf(log, "saw-leave c %s\n", id);
    check(zkr_group_member_close(m), "zkr_group_member_close");
    zkr_group_member_free(m);
    fprintf(log, "done c %s 1\n", id);
}

static void gzip_payload(const char *id, char *out, size_t len) {
    out[0] = '\0';
    for (int i = 0; i < 20; i++) {
        size_t n = strlen(out);
        snprintf(out + n, len - n, "gzip payload of %s ", id);
    }
}

/* The gzip scenario: write ours compressed, read every runtime's back decompressed. */
static void gzip(zkr_client *client, const char *path, const char *id, long expect, FILE *log) {
    char node[512], payload[4096];
    snprintf(node, sizeof node, "%s/%s", path, id);
    gzip_payload(id, payload, sizeof payload);
    check(zkr_client_create_ex(client, node, (const uint8_t *)payload, strlen(payload), ZKR_PERSISTENT,
                               ZKR_CREATE_PERSISTENT_PARENTS | ZKR_CREATE_COMPRESSED, 0, NULL),
          "zkr_client_create_ex");
    fprintf(log, "wrote c %s\n", id);
    zkr_string_list *children = NULL;
    for (int i = 0; i < 3000; i++) {
        check(zkr_client_get_children(client, path, &children), "zkr_client_get_children");
        if ((long)children->len >= expect) break;
        zkr_string_list_free(children);
        children = NULL;
        sleep_ms(20);
    }
    size_t n = children ? children->len : 0;
    for (size_t i = 0; i < n; i++) {
        const char *other = children->items[i];
        snprintf(node, sizeof node, "%s/%s", path, other);
        gzip_payload(other, payload, sizeof payload);
        zkr_buffer *b = NULL;
        bool ok = zkr_client_get_data_decompressed(client, node, &b, NULL) == ZKR_OK && b->len == strlen(payload) &&
                  memcmp(b->data, payload, b->len) == 0;
        zkr_buffer_free(b);
        fprintf(log, "read c %s %s %s\n", id, other, ok ? "ok" : "bad");
    }
    zkr_string_list_free(children);
    fprintf(log, "done c %s %zu\n", id, n);
}

/* The cache role's event count: Σcreated − Σdeleted. */
static long long cache_net;
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;

static void count_cache_event(const zkr_cache_event *e, void *user_data) {
    (void)user_data;
    pthread_mutex_lock(&cache_mu);
    if (e->type == ZKR_CACHE_CREATED) cache_net++;
    if (e->type == ZKR_CACHE_DELETED) cache_net--;
    pthread_mutex_unlock(&cache_mu);
}

static long long cache_events(void) {
    pthread_mutex_lock(&cache_mu);
    long long n = cache_net;
    pthread_mutex_unlock(&cache_mu);
    return n;
}

/* The watch role's events (node events below the root), kept until the end. */
#define MAX_HEARD 20000
static char *heard_lines[MAX_HEARD];
static size_t heard_n;
static const char *watch_root;

static void record_watch_event(zkr_watcher_event_type t, const char *p, void *user_data) {
    (void)user_data;
    if (p == NULL || !strcmp(p, watch_root)) return;
    char line[4200];
    snprintf(line, sizeof line, "%s %s", zkr_watcher_event_type_name((uint32_t)t), p);
    pthread_mutex_lock(&cache_mu);
    if (heard_n < MAX_HEARD) heard_lines[heard_n++] = strdup(line);
    pthread_mutex_unlock(&cache_mu);
}

static size_t heard_count(void) {
    pthread_mutex_lock(&cache_mu);
    size_t n = heard_n;
    pthread_mutex_unlock(&cache_mu);
    return n;
}

static size_t cache_size_of(void *cache) {
    size_t size = 0;
    check(zkr_cache_size((zkr_cache *)cache, &size), "zkr_cache_size");
    return size;
}

static size_t heard_of(void *unused) {
    (void)unused;
    return heard_count();
}

/* Polls count(arg) every 5 ms until it reaches want, giving up only after 60 s in which it did not
 * grow: a slow peer on a loaded machine (the long run's 120 workers on 2 CPUs) is still waited
 * for, a stuck one is not; the count last seen. */
static size_t wait_count(size_t want, size_t (*count)(void *), void *arg) {
    size_t seen = count(arg);
    long long since = mono_ns();
    while (seen < want && mono_ns() - since < 60000000000LL) {
        sleep_ms(5);
        size_t now = count(arg);
        if (now != seen) {
            seen = now;
            since = mono_ns();
        }
    }
    return seen;
}

/* The discovery scenario (tests/interop/README.md). */
#define DISCOVERY_SERVICES 5
static const char *const discovery_services[DISCOVERY_SERVICES] = {"java", "rust", "c", "python", "node"};
static zkr_discovery *disco, *disco_full;
static zkr_service_cache *disco_caches[DISCOVERY_SERVICES];
static zkr_service_provider *disco_providers[DISCOVERY_SERVICES];

/* The instance id in Curator's JSON (the ids here are plain ASCII). */
static void json_id(const char *json, char *out, size_t len) {
    const char *p = strstr(json, "\"id\":\"");
    size_t n = 0;
    if (p)
        for (p += 6; *p && *p != '"' && n + 1 < len; p++) out[n++] = *p;
    out[n] = '\0';
}

static void discovery_start(zkr_client *client, const char *base) {
    check(zkr_discovery_new(client, base, &disco), "zkr_discovery_new");
    check(zkr_discovery_new(client, base, &disco_full), "zkr_discovery_new");
    check(zkr_discovery_set_write_enabled(disco_full, true), "zkr_discovery_set_write_enabled");
    for (int s = 0; s < DISCOVERY_SERVICES; s++) {
        bool loaded = false;
        check(zkr_service_cache_new(disco, discovery_services[s], &disco_caches[s]), "zkr_service_cache_new");
        check(zkr_service_cache_start(disco_caches[s]), "zkr_service_cache_start");
        check(zkr_service_cache_await_initialized(disco_caches[s], 60000, &loaded), "await_initialized");
        if (!loaded) { fprintf(stderr, "c_worker: service cache not loaded\n"); exit(2); }
        check(zkr_service_provider_new(disco, discovery_services[s], "round_robin", &disco_providers[s]),
              "zkr_service_provider_new");
        check(zkr_service_provider_start(disco_providers[s]), "zkr_service_provider_start");
    }
}

static size_t discovery_cached(int s) {
    zkr_string_list *l = NULL;
    check(zkr_service_cache_instances(disco_caches[s], &l), "zkr_service_cache_instances");
    size_t n = l->len;
    zkr_string_list_free(l);
    return n;
}

/* Every service's cached instances (a wait_count counter). */
static size_t discovery_cached_all(void *unused) {
    (void)unused;
    size_t n = 0;
    for (int s = 0; s < DISCOVERY_SERVICES; s++) n += discovery_cached(s);
    return n;
}

/* Each provider has a cache of its own, which may lag the worker's (seen under the load of the
 * long run): true once provider s offers every enabled instance of the worker's cache (all but
 * the service's "-off"). */
static bool discovery_provider_caught_up(int s) {
    zkr_string_list *l = NULL;
    size_t enabled = 0;
    check(zkr_service_cache_instances(disco_caches[s], &l), "zkr_service_cache_instances");
    for (size_t i = 0; i < l->len; i++) {
        char iid[256];
        json_id(l->items[i], iid, sizeof iid);
        size_t len = strlen(iid);
        enabled += !(len >= 4 && strcmp(iid + len - 4, "-off") == 0);
    }
    zkr_string_list_free(l);
    check(zkr_service_provider_get_all_instances(disco_providers[s], &l), "get_all_instances");
    size_t usable = l->len;
    zkr_string_list_free(l);
    return usable == enabled;
}

/* This worker's instances under service "c" as Curator's JSON (map, pojo, list, none, full through
 * the write-enabled discovery, the disabled "off", K extras); the payloads are written as Jackson
 * writes them (the face keeps a payload's text as given). */
static void discovery_run(const char *id, long extras, long expect, const char *peers, FILE *log) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    long long ms = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    const char *map = "{\"@class\":\"java.util.LinkedHashMap\",\"region\":\"eu-west\",\"weight\":1.5,"
                      "\"ratio\":2.5E-4,\"big\":10000000000,\"tags\":[\"a\",\"b\"],\"nested\":{\"k\":\"v\"},"
                      "\"note\":\"say \\\"hi\\\"\\t\xc3\xa9\xc3\xbc/\\u0001\"}";
    char fixed[6][1024];
    snprintf(fixed[0], sizeof fixed[0], "{\"name\":\"c\",\"id\":\"c-map\",\"address\":\"10.0.0.1\",\"port\":8080,"
             "\"payload\":%s,\"registrationTimeUTC\":%lld,\"serviceType\":\"DYNAMIC\","
             "\"uriSpec\":{\"parts\":[{\"value\":\"scheme\",\"variable\":true},{\"value\":\"://\",\"variable\":false},"
             "{\"value\":\"address\",\"variable\":true},{\"value\":\":\",\"variable\":false},"
             "{\"value\":\"port\",\"variable\":true},{\"value\":\"/map\",\"variable\":false}]}}", map, ms);
    snprintf(fixed[1], sizeof fixed[1], "{\"name\":\"c\",\"id\":\"c-pojo\",\"address\":\"10.0.0.2\",\"port\":8081,"
             "\"sslPort\":8443,\"payload\":{\"@class\":\"zkrecipes.interop.Discovery$Details\",\"region\":\"us\","
             "\"weight\":3,\"primary\":true},\"registrationTimeUTC\":%lld,\"serviceType\":\"STATIC\","
             "\"uriSpec\":{\"parts\":[{\"value\":\"scheme\",\"variable\":true},{\"value\":\"://\",\"variable\":false},"
             "{\"value\":\"address\",\"variable\":true},{\"value\":\":\",\"variable\":false},"
             "{\"value\":\"ssl-port\",\"variable\":true},{\"value\":\"/pojo\",\"variable\":false}]}}", ms);
    snprintf(fixed[2], sizeof fixed[2], "{\"name\":\"c\",\"id\":\"c-list\",\"address\":\"10.0.0.3\",\"port\":8082,"
             "\"payload\":[\"java.util.ArrayList\",[\"x\",1,2.5,true,null]],\"registrationTimeUTC\":%lld,"
             "\"uriSpec\":{\"parts\":[{\"value\":\"scheme\",\"variable\":true},{\"value\":\"://\",\"variable\":false},"
             "{\"value\":\"address\",\"variable\":true},{\"value\":\":\",\"variable\":false},"
             "{\"value\":\"port\",\"variable\":true},{\"value\":\"/\",\"variable\":false},"
             "{\"value\":\"[\",\"variable\":true},{\"value\":\"list\",\"variable\":false},"
             "{\"value\":\"]\",\"variable\":true}]}}", ms);
    snprintf(fixed[3], sizeof fixed[3], "{\"name\":\"c\",\"id\":\"c-none\",\"address\":\"10.0.0.4\",\"port\":8083,"
             "\"registrationTimeUTC\":%lld}", ms);
    snprintf(fixed[4], sizeof fixed[4], "{\"name\":\"c\",\"id\":\"c-full\",\"address\":\"10.0.0.6\",\"port\":8085,"
             "\"payload\":%s,\"registrationTimeUTC\":%lld,"
             "\"uriSpec\":{\"parts\":[{\"value\":\"scheme\",\"variable\":true},{\"value\":\"://\",\"variable\":false},"
             "{\"value\":\"address\",\"variable\":true},{\"value\":\":\",\"variable\":false},"
             "{\"value\":\"port\",\"variable\":true},{\"value\":\"/full\",\"variable\":false}]}}", map, ms);
    snprintf(fixed[5], sizeof fixed[5], "{\"name\":\"c\",\"id\":\"c-off\",\"address\":\"10.0.0.5\",\"port\":8084,"
             "\"registrationTimeUTC\":%lld,\"enabled\":false}", ms);
    long total = 6 + extras;
    zkr_registration **regs = calloc((size_t)total, sizeof *regs);
    for (long k = 0; k < total; k++) {
        char extra[512];
        const char *json = fixed[k < 6 ? k : 0];
        if (k >= 6) {
            snprintf(extra, sizeof extra, "{\"name\":\"c\",\"id\":\"c-e%ld\",\"address\":\"10.1.0.%ld\",\"port\":%ld,"
                     "\"payload\":{\"@class\":\"java.util.LinkedHashMap\",\"i\":%ld},\"registrationTimeUTC\":%lld}",
                     k - 6, (k - 6) % 250, 9000 + k - 6, k - 6, ms);
            json = extra;
        }
        check(zkr_discovery_register(k == 4 ? disco_full : disco, json, &regs[k]), "zkr_discovery_register");
        char *back = NULL, iid[256];
        check(zkr_registration_instance(regs[k], &back), "zkr_registration_instance");
        json_id(back, iid, sizeof iid);
        fprintf(log, "registered c c/%s %s\n", iid, back);
        zkr_string_free(back);
    }
    fflush(log);
    long long t = mono_ns();
    wait_count((size_t)expect, discovery_cached_all, NULL);
    long long t1 = mono_ns();
    bool all = false;
    for (;;) {
        all = true;
        for (int s = 0; s < DISCOVERY_SERVICES && all; s++) all = discovery_provider_caught_up(s);
        if (all || mono_ns() - t1 > 60000000000LL) break;
        sleep_ms(20);
    }
    fprintf(log, "waited c %lld %lld %s\n", (t1 - t) / 1000000, (mono_ns() - t1) / 1000000, all ? "true" : "false");
    for (int s = 0; s < DISCOVERY_SERVICES; s++) {
        zkr_string_list *l = NULL;
        check(zkr_service_cache_instances(disco_caches[s], &l), "zkr_service_cache_instances");
        for (size_t i = 0; i < l->len; i++) {
            char iid[256];
            json_id(l->items[i], iid, sizeof iid);
            fprintf(log, "found c %s/%s %s\n", discovery_services[s], iid, l->items[i]);
        }
        zkr_string_list_free(l);
    }
    for (int s = 0; s < DISCOVERY_SERVICES; s++) {
        size_t n = discovery_cached(s);
        for (size_t k = 0; k < 2 * n; k++) {
            char *json = NULL, iid[256] = "-";
            check(zkr_service_provider_get_instance(disco_providers[s], &json), "get_instance");
            if (json) json_id(json, iid, sizeof iid);
            fprintf(log, "picked c %s/%s\n", discovery_services[s], iid);
            zkr_string_free(json);
        }
        zkr_string_list *l = NULL;
        check(zkr_service_provider_get_all_instances(disco_providers[s], &l), "get_all_instances");
        fprintf(log, "usable c %s ", discovery_services[s]);
        for (size_t i = 0; i < l->len; i++) {
            char iid[256];
            json_id(l->items[i], iid, sizeof iid);
            fprintf(log, "%s%s", i ? "," : "", iid);
        }
        fprintf(log, "\n");
        zkr_string_list_free(l);
    }
    fflush(log);
    char mark[4096];
    snprintf(mark, sizeof mark, "%s/%s", peers, id);
    FILE *f = fopen(mark, "w");
    if (f) fclose(f);
    t = mono_ns();
    for (;;) {
        int n = 0;
        DIR *d = opendir(peers);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d))) n += e->d_name[0] != '.';
            closedir(d);
        }
        /* Our instances stay registered until every peer has picked and marked (the runner marks a
         * peer that exited; it kills every worker at its deadline). */
        if (n >= DISCOVERY_SERVICES || mono_ns() - t > 600000000000LL) break;
        sleep_ms(20);
    }
    for (int s = 0; s < DISCOVERY_SERVICES; s++) {
        zkr_service_provider_free(disco_providers[s]);
        check(zkr_service_cache_close(disco_caches[s]), "zkr_service_cache_close");
        zkr_service_cache_free(disco_caches[s]);
    }
    for (long k = 0; k < total; k++) zkr_registration_free(regs[k]);
    free(regs);
    check(zkr_discovery_close(disco_full), "zkr_discovery_close");
    check(zkr_discovery_close(disco), "zkr_discovery_close");
    zkr_discovery_free(disco_full);
    zkr_discovery_free(disco);
    fprintf(log, "done c %s %ld\n", id, total);
}

int main(int argc, char **argv) {
    const char *role = "", *connect = NULL, *path = NULL, *id = "c", *log_path = NULL, *go = NULL,
               *peers = NULL, *tls_ca = NULL, *tls_cert = NULL, *tls_key = NULL, *sasl_user = NULL,
               *sasl_password = NULL, *whoami = NULL;
    long iterations = 20, expect = 5, max_leases = 2;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--role")) role = argv[i + 1];
        else if (!strcmp(argv[i], "--connect")) connect = argv[i + 1];
        else if (!strcmp(argv[i], "--path")) path = argv[i + 1];
        else if (!strcmp(argv[i], "--iterations")) iterations = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--id")) id = argv[i + 1];
        else if (!strcmp(argv[i], "--log")) log_path = argv[i + 1];
        else if (!strcmp(argv[i], "--go")) go = argv[i + 1];
        else if (!strcmp(argv[i], "--expect")) expect = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--peers")) peers = argv[i + 1];
        else if (!strcmp(argv[i], "--max-leases")) max_leases = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--tls-ca")) tls_ca = argv[i + 1];
        else if (!strcmp(argv[i], "--tls-cert")) tls_cert = argv[i + 1];
        else if (!strcmp(argv[i], "--tls-key")) tls_key = argv[i + 1];
        else if (!strcmp(argv[i], "--sasl-user")) sasl_user = argv[i + 1];
        else if (!strcmp(argv[i], "--sasl-password")) sasl_password = argv[i + 1];
        else if (!strcmp(argv[i], "--whoami")) whoami = argv[i + 1];
        else { fprintf(stderr, "c_worker: unknown option %s\n", argv[i]); return 2; }
    }
    if (!connect || !path) { fprintf(stderr, "c_worker: --connect and --path are required\n"); return 2; }
    FILE *log = log_path ? fopen(log_path, "a") : fopen("/dev/null", "w");
    if (!log) { perror("c_worker: log"); return 2; }

    zkr_client *client = NULL;
    zkr_client_options opts;
    zkr_client_options_init(&opts);
    opts.tls = tls_ca != NULL;
    /* Every scenario's workers (17 JVMs among ~85 processes) connect at once on a 2-core machine,
     * and a TLS handshake on the Java server takes seconds more: a minute for every connection (a
     * 15 s plaintext connect timed out in CI); the runner's ready barrier waits 90 s. */
    opts.connection_timeout_ms = 60000;
    opts.tls_ca = tls_ca;
    opts.tls_cert = tls_cert;
    opts.tls_key = tls_key;
    opts.sasl_username = sasl_user;
    opts.sasl_password = sasl_password;
    char whoami_path[512] = "";
    zkr_acl creator_all[] = {{ZKR_PERM_ALL, "auth", ""}}; /* CREATOR_ALL_ACL */
    zkr_acl_rule whoami_rule = {whoami_path, creator_all, 1};
    if (whoami) {
        snprintf(whoami_path, sizeof whoami_path, "%s/%s", whoami, id);
        opts.acl_rules = &whoami_rule;
        opts.acl_rules_len = 1;
    }
    /* ensemble: follow the members as they change (Curator's EnsembleTracker). */
    opts.track_ensemble = !strcmp(role, "ensemble");
    check(zkr_client_connect(connect, &opts, &client), "zkr_client_connect");
    if (opts.track_ensemble) {
        int64_t sid = 0;
        check(zkr_client_session_id(client, &sid), "zkr_client_session_id");
        fprintf(log, "session c %s %lld\n", id, (long long)sid);
    }
    if (whoami) /* a node whose ACL is the session's own identities */
        check(zkr_client_create(client, whoami_path, NULL, 0, ZKR_PERSISTENT, ZKR_CREATE_PARENTS, NULL),
              "zkr_client_create (whoami)");
    zkr_leader_latch *latch = NULL;
    if (!strcmp(role, "latch")) { /* join, then wait until every runtime's participant is listed */
        check(zkr_leader_latch_new(client, path, id, &latch), "zkr_leader_latch_new");
        check(zkr_leader_latch_start(latch), "zkr_leader_latch_start");
        zkr_participant_list *list = NULL;
        for (int tries = 0; tries < 3000; tries++) {
            check(zkr_leader_latch_get_participants(latch, &list), "zkr_leader_latch_get_participants");
            if ((long)list->len >= expect) break;
            zkr_participant_list_free(list);
            list = NULL;
            struct timespec ms20 = {0, 20000000};
            nanosleep(&ms20, NULL);
        }
        /* ids sorted by the runner; here in node order */
        fprintf(log, "participants c %s ", id);
        for (size_t i = 0; list && i < list->len; i++) fprintf(log, "%s%s", i ? "," : "", list->items[i].id);
        fprintf(log, "\n");
        zkr_participant_list_free(list);
    }
    struct selector_state sel = {log, id, go, iterations, 0, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};
    zkr_leader_selector *selector = NULL;
    if (!strcmp(role, "selector")) { /* queue, then wait until every runtime's participant is listed */
        check(zkr_leader_selector_new(client, path, id, take_leadership, &sel, &selector), "zkr_leader_selector_new");
        check(zkr_leader_selector_set_auto_requeue(selector, true), "zkr_leader_selector_set_auto_requeue");
        check(zkr_leader_selector_start(selector), "zkr_leader_selector_start");
        zkr_participant_list *list = NULL;
        for (int tries = 0; tries < 3000; tries++) {
            check(zkr_leader_selector_get_participants(selector, &list), "zkr_leader_selector_get_participants");
            if ((long)list->len >= expect) break;
            zkr_participant_list_free(list);
            list = NULL;
            sleep_ms(20);
        }
        pthread_mutex_lock(&sel.mu);
        fprintf(log, "participants c %s ", id);
        for (size_t i = 0; list && i < list->len; i++) fprintf(log, "%s%s", i ? "," : "", list->items[i].id);
        fprintf(log, "\n");
        fflush(log);
        pthread_mutex_unlock(&sel.mu);
        zkr_participant_list_free(list);
    }
    zkr_cache *cache = NULL;
    if (!strcmp(role, "cache")) { /* a CuratorCache counting its events, loaded before the barrier */
        uint64_t lid;
        bool loaded = false;
        check(zkr_curator_cache_new(client, path, &cache), "zkr_curator_cache_new");
        check(zkr_cache_add_listener(cache, count_cache_event, NULL, &lid), "zkr_cache_add_listener");
        check(zkr_cache_start(cache), "zkr_cache_start");
        check(zkr_cache_await_initialized(cache, 60000, &loaded), "zkr_cache_await_initialized");
        if (!loaded) { fprintf(stderr, "c_worker: cache not loaded\n"); return 2; }
    }
    zkr_watcher *watcher = NULL;
    if (!strcmp(role, "watch")) { /* a recursive PersistentWatcher, set before the barrier */
        uint64_t lid;
        watch_root = path;
        check(zkr_persistent_watcher_new(client, path, true, &watcher), "zkr_persistent_watcher_new");
        check(zkr_watcher_add_listener(watcher, record_watch_event, NULL, &lid), "zkr_watcher_add_listener");
        check(zkr_watcher_start(watcher), "zkr_watcher_start");
    }
    if (!strcmp(role, "discovery")) discovery_start(client, path); /* before the barrier */
    struct values values = {0};
    if (!strcmp(role, "values")) values_start(client, path, &values); /* before the barrier */
    if (go) { /* start barrier: ready, then wait for the runner's go file */
        fprintf(log, "ready c %s\n", id);
        fflush(log);
        wait_for_file(go);
    }
    if (!strcmp(role, "mutex")) {
        zkr_mutex *m = NULL;
        check(zkr_mutex_new(client, path, &m), "zkr_mutex_new");
        for (long i = 0; i < iterations; i++) {
            bool ok = false;
            check(zkr_mutex_acquire(m, -1, &ok), "zkr_mutex_acquire");
            if (!ok) { fprintf(stderr, "c_worker: acquire returned false\n"); return 2; }
            int64_t token = 0;
            check(zkr_mutex_fencing_token(m, &token), "zkr_mutex_fencing_token");
            fprintf(log, "start c %s %lld %lld\n", id, (long long)token, mono_ns());
            fflush(log);
            struct timespec pause = {0, 200000};
            nanosleep(&pause, NULL);
            fprintf(log, "end c %s %lld %lld\n", id, (long long)token, mono_ns());
            fflush(log);
            check(zkr_mutex_release(m), "zkr_mutex_release");
        }
        fprintf(log, "done c %s %ld\n", id, iterations);
        zkr_mutex_free(m);
    } else if (!strcmp(role, "ensemble")) { /* sections until the runner changed the ensemble, then N more */
        zkr_mutex *m = NULL;
        check(zkr_mutex_new(client, path, &m), "zkr_mutex_new");
        char changed[1024];
        snprintf(changed, sizeof changed, "%s.changed", go ? go : "");
        long count = 0, after = -1;
        while (after < 0 || count < after + iterations) {
            if (after < 0 && access(changed, F_OK) == 0) {
                fprintf(log, "changed c %s %ld\n", id, count);
                after = count;
            }
            bool ok = false;
            check(zkr_mutex_acquire(m, -1, &ok), "zkr_mutex_acquire");
            if (!ok) { fprintf(stderr, "c_worker: acquire returned false\n"); return 2; }
            int64_t token = 0;
            check(zkr_mutex_fencing_token(m, &token), "zkr_mutex_fencing_token");
            fprintf(log, "start c %s %lld %lld\n", id, (long long)token, mono_ns());
            fflush(log);
            struct timespec pause = {0, 200000};
            nanosleep(&pause, NULL);
            fprintf(log, "end c %s %lld %lld\n", id, (long long)token, mono_ns());
            fflush(log);
            check(zkr_mutex_release(m), "zkr_mutex_release");
            count++;
        }
        int64_t sid = 0;
        char *hosts = NULL;
        check(zkr_client_session_id(client, &sid), "zkr_client_session_id");
        check(zkr_client_current_connect_string(client, &hosts), "zkr_client_current_connect_string");
        fprintf(log, "session c %s %lld\nhosts c %s %s\ndone c %s %ld\n", id, (long long)sid, id, hosts, id, count);
        zkr_string_free(hosts);
        zkr_mutex_free(m);
    } else if (!strcmp(role, "cohort")) {
        zkr_mutex *m = NULL;
        check(zkr_mutex_new_cohort(client, path, 8, 5, &m), "zkr_mutex_new_cohort");
        pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
        struct cohort_state states[COHORT_THREADS];
        pthread_t threads[COHORT_THREADS];
        for (int k = 0; k < COHORT_THREADS; k++) {
            states[k] = (struct cohort_state){m, log, id, iterations / COHORT_THREADS + (k < iterations % COHORT_THREADS),
                                              &log_mu};
            if (pthread_create(&threads[k], NULL, cohort_thread, &states[k]) != 0) {
                fprintf(stderr, "c_worker: pthread_create failed\n");
                return 2;
            }
        }
        for (int k = 0; k < COHORT_THREADS; k++) pthread_join(threads[k], NULL);
        fprintf(log, "done c %s %ld\n", id, iterations);
        zkr_mutex_free(m);
    } else if (!strcmp(role, "latch")) {
        for (long round = 0; round < iterations; round++) {
            if (round > 0) {
                check(zkr_leader_latch_new(client, path, id, &latch), "zkr_leader_latch_new");
                check(zkr_leader_latch_start(latch), "zkr_leader_latch_start");
            }
            bool leads = false;
            check(zkr_leader_latch_await(latch, 60000, &leads), "zkr_leader_latch_await");
            if (!leads) { fprintf(stderr, "c_worker: never led\n"); return 2; }
            fprintf(log, "lead c %s %lld\n", id, mono_ns());
            fflush(log);
            struct timespec ms20 = {0, 20000000};
            nanosleep(&ms20, NULL);
            check(zkr_leader_latch_has_leadership(latch, &leads), "zkr_leader_latch_has_leadership");
            if (!leads) { fprintf(stderr, "c_worker: lost leadership while leading\n"); return 2; }
            fprintf(log, "unlead c %s %lld\n", id, mono_ns());
            fflush(log);
            check(zkr_leader_latch_close(latch), "zkr_leader_latch_close");
            zkr_leader_latch_free(latch);
            latch = NULL;
        }
        fprintf(log, "done c %s %ld\n", id, iterations);
    } else if (!strcmp(role, "counter")) {
        zkr_atomic_long *a = NULL;
        check(zkr_atomic_long_new(client, path, &a), "zkr_atomic_long_new");
        long ok = 0;
        for (long i = 0; i < iterations; i++) {
            int64_t v = 0;
            zkr_status st = zkr_atomic_long_add_and_get(a, 1, 30000, &v);
            if (st == ZKR_OK) {
                ok++;
                fprintf(log, "inc c %s %lld\n", id, (long long)v);
            } else {
                fprintf(log, "fail c %s %s\n", id, zkr_status_name(st));
            }
        }
        fprintf(log, "done c %s %ld\n", id, ok);
        zkr_atomic_long_free(a);
    } else if (!strcmp(role, "selector")) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 120;
        pthread_mutex_lock(&sel.mu);
        while (sel.terms < iterations)
            if (pthread_cond_timedwait(&sel.cv, &sel.mu, &until) != 0) {
                fprintf(stderr, "c_worker: led only %ld times\n", sel.terms);
                return 2;
            }
        long led = sel.terms;
        pthread_mutex_unlock(&sel.mu);
        check(zkr_leader_selector_close(selector), "zkr_leader_selector_close");
        zkr_leader_selector_free(selector);
        fprintf(log, "done c %s %ld\n", id, led);
    } else if (!strcmp(role, "values")) {
        values_run(&values, log, id, iterations);
    } else if (!strcmp(role, "sharedcount")) {
        zkr_shared_count *sc = NULL;
        check(zkr_shared_count_new(client, path, 0, &sc), "zkr_shared_count_new");
        check(zkr_shared_count_start(sc), "zkr_shared_count_start");
        long ok = 0, retries = 0;
        for (long i = 0; i < iterations; i++) {
            for (;;) {
                zkr_versioned_value v;
                check(zkr_shared_count_get_versioned_value(sc, &v), "zkr_shared_count_get_versioned_value");
                bool set = false;
                check(zkr_shared_count_try_set_count(sc, v, v.value + 1, &set), "zkr_shared_count_try_set_count");
                if (set) {
                    ok++;
                    fprintf(log, "inc c %s %d\n", id, v.value + 1);
                    break;
                }
                retries++;
            }
        }
        fprintf(log, "retries c %s %ld\n", id, retries);
        fprintf(log, "done c %s %ld\n", id, ok);
        check(zkr_shared_count_close(sc), "zkr_shared_count_close");
        zkr_shared_count_free(sc);
    } else if (!strcmp(role, "rwlock")) {
        zkr_rwlock *rw = NULL;
        zkr_mutex *rd = NULL, *wr = NULL;
        check(zkr_rwlock_new(client, path, &rw), "zkr_rwlock_new");
        check(zkr_rwlock_read_lock(rw, &rd), "zkr_rwlock_read_lock");
        check(zkr_rwlock_write_lock(rw, &wr), "zkr_rwlock_write_lock");
        for (long i = 0; i < iterations; i++) {
            bool write = i % 3 == 1, ok = false;
            const char *tag = write ? "write" : "read";
            zkr_mutex *m = write ? wr : rd;
            check(zkr_mutex_acquire(m, -1, &ok), "zkr_mutex_acquire (rwlock)");
            if (!ok) { fprintf(stderr, "c_worker: acquire returned false\n"); return 2; }
            fprintf(log, "start c %s %s %lld\n", id, tag, mono_ns());
            fflush(log);
            if (i == 0) wait_for_peer(peers, id);
            sleep_ms(write ? 1 : 2);
            fprintf(log, "end c %s %s %lld\n", id, tag, mono_ns());
            fflush(log);
            check(zkr_mutex_release(m), "zkr_mutex_release (rwlock)");
        }
        fprintf(log, "done c %s %ld\n", id, iterations);
        zkr_mutex_free(rd);
        zkr_mutex_free(wr);
        zkr_rwlock_free(rw);
    } else if (!strcmp(role, "semaphore")) {
        zkr_semaphore *sem = NULL;
        check(zkr_semaphore_new(client, path, (uint32_t)max_leases, &sem), "zkr_semaphore_new");
        for (long i = 0; i < iterations; i++) {
            zkr_leases *leases = NULL;
            check(zkr_semaphore_acquire(sem, 1, -1, &leases), "zkr_semaphore_acquire");
            if (!leases) { fprintf(stderr, "c_worker: no lease without a timeout\n"); return 2; }
            fprintf(log, "start c %s lease %lld\n", id, mono_ns());
            fflush(log);
            if (i == 0) wait_for_peer(peers, id);
            sleep_ms(1);
            fprintf(log, "end c %s lease %lld\n", id, mono_ns());
            fflush(log);
            check(zkr_semaphore_return_leases(sem, leases), "zkr_semaphore_return_leases");
            zkr_leases_free(leases);
        }
        fprintf(log, "done c %s %ld\n", id, iterations);
        zkr_semaphore_free(sem);
    } else if (!strcmp(role, "semcount")) {
        semcount(client, path, id, iterations, peers, log);
    } else if (!strcmp(role, "group")) {
        group(client, path, id, expect, peers, log);
    } else if (!strcmp(role, "gzip")) {
        gzip(client, path, id, expect, log);
    } else if (!strcmp(role, "partition")) {
        partition(client, path, id, iterations, expect, peers, log);
    } else if (!strcmp(role, "lease")) {
        lease(client, path, id, iterations, log);
    } else if (!strcmp(role, "queue") || !strcmp(role, "simplequeue")) {
        /* Put N items, then consume until idle for 3 s (queue: exactly once, lock path P-locks). */
        char locks[512], item[64];
        snprintf(locks, sizeof locks, "%s-locks", path);
        int simple = !strcmp(role, "simplequeue");
        zkr_queue *q = NULL;
        zkr_simple_queue *sq = NULL;
        if (simple) check(zkr_simple_queue_new(client, path, &sq), "zkr_simple_queue_new");
        else check(zkr_queue_new(client, path, locks, 0, &q), "zkr_queue_new");
        for (long i = 0; i < iterations; i++) {
            int len = snprintf(item, sizeof item, "c:%ld", i);
            bool put = false;
            if (simple) check(zkr_simple_queue_offer(sq, (const uint8_t *)item, (size_t)len), "zkr_simple_queue_offer");
            else check(zkr_queue_put(q, (const uint8_t *)item, (size_t)len, -1, &put), "zkr_queue_put");
        }
        wait_for_curator_consumer(go, role);
        long got = 0;
        for (;;) {
            if (simple) {
                zkr_buffer *b = NULL;
                check(zkr_simple_queue_take(sq, 3000, &b), "zkr_simple_queue_take");
                if (!b) break;
                fprintf(log, "got c %s %.*s 0\n", id, (int)b->len, (const char *)b->data);
                zkr_buffer_free(b);
            } else {
                zkr_queue_item *it = NULL;
                check(zkr_queue_take(q, 3000, &it), "zkr_queue_take");
                if (!it) break;
                const uint8_t *data = NULL;
                size_t len = 0;
                int64_t token = 0;
                check(zkr_queue_item_data(it, &data, &len), "zkr_queue_item_data");
                check(zkr_queue_item_fencing_token(it, &token), "zkr_queue_item_fencing_token");
                sleep_ms(2);
                check(zkr_queue_item_done(it), "zkr_queue_item_done");
                fprintf(log, "got c %s %.*s %lld\n", id, (int)len, (const char *)data, (long long)token);
                zkr_queue_item_free(it);
            }
            got++;
        }
        fprintf(log, "done c %s %ld\n", id, got);
        zkr_queue_free(q);
        zkr_simple_queue_free(sq);
    } else if (!strcmp(role, "putmulti")) {
        char locks[512], items[3][64];
        snprintf(locks, sizeof locks, "%s-locks", path);
        zkr_queue *q = NULL;
        check(zkr_queue_new(client, path, locks, 0, &q), "zkr_queue_new");
        for (long i = 0; i < iterations; i += 3) {
            zkr_bytes batch[3];
            size_t count = 0;
            for (long k = i; k < iterations && k < i + 3; k++, count++) {
                int len = snprintf(items[count], sizeof items[count], "c:%ld", k);
                batch[count].data = (const uint8_t *)items[count];
                batch[count].len = (size_t)len;
            }
            bool put = false;
            check(zkr_queue_put_multi(q, batch, count, -1, &put), "zkr_queue_put_multi");
        }
        wait_for_curator_consumer(go, role);
        long got = 0;
        for (;;) {
            zkr_queue_item *it = NULL;
            check(zkr_queue_take(q, 3000, &it), "zkr_queue_take");
            if (!it) break;
            size_t count = 0;
            int64_t token = 0;
            check(zkr_queue_item_message_count(it, &count), "zkr_queue_item_message_count");
            check(zkr_queue_item_fencing_token(it, &token), "zkr_queue_item_fencing_token");
            sleep_ms(2);
            check(zkr_queue_item_done(it), "zkr_queue_item_done");
            for (size_t m = 0; m < count; m++) {
                const uint8_t *data = NULL;
                size_t len = 0;
                check(zkr_queue_item_message(it, m, &data, &len), "zkr_queue_item_message");
                fprintf(log, "got c %s %.*s %lld\n", id, (int)len, (const char *)data, (long long)token);
                got++;
            }
            zkr_queue_item_free(it);
        }
        fprintf(log, "done c %s %ld\n", id, got);
        zkr_queue_free(q);
    } else if (!strcmp(role, "sharder")) {
        char queues[512], leader[512], locks[512], item[64];
        snprintf(queues, sizeof queues, "%s/queues", path);
        snprintf(leader, sizeof leader, "%s/leader", path);
        snprintf(locks, sizeof locks, "%s-locks", path);
        zkr_queue_sharder *s = NULL;
        check(zkr_queue_sharder_new(client, queues, leader, locks, 3, 200, 4, &s), "zkr_queue_sharder_new");
        check(zkr_queue_sharder_start(s), "zkr_queue_sharder_start");
        for (long i = 0; i < iterations; i++) {
            zkr_queue *q = NULL;
            check(zkr_queue_sharder_get_queue(s, &q), "zkr_queue_sharder_get_queue");
            int len = snprintf(item, sizeof item, "c:%ld", i);
            bool put = false;
            check(zkr_queue_put(q, (const uint8_t *)item, (size_t)len, -1, &put), "zkr_queue_put");
            zkr_queue_free(q);
            sleep_ms(10);
        }
        wait_for_curator_consumer(go, role);
        long got = 0;
        for (;;) {
            zkr_queue_item *it = NULL;
            check(zkr_queue_sharder_take(s, 3000, &it), "zkr_queue_sharder_take");
            if (!it) break;
            const uint8_t *data = NULL;
            size_t len = 0;
            int64_t token = 0;
            check(zkr_queue_item_data(it, &data, &len), "zkr_queue_item_data");
            check(zkr_queue_item_fencing_token(it, &token), "zkr_queue_item_fencing_token");
            check(zkr_queue_item_done(it), "zkr_queue_item_done");
            fprintf(log, "got c %s %.*s %lld\n", id, (int)len, (const char *)data, (long long)token);
            zkr_queue_item_free(it);
            got++;
        }
        size_t shards = 0;
        check(zkr_queue_sharder_shard_qty(s, &shards), "zkr_queue_sharder_shard_qty");
        fprintf(log, "shards c %s %zu\n", id, shards);
        check(zkr_queue_sharder_close(s), "zkr_queue_sharder_close");
        zkr_queue_sharder_free(s);
        fprintf(log, "done c %s %ld\n", id, got);
    } else if (!strcmp(role, "doublebarrier")) {
        zkr_double_barrier *b = NULL;
        bool ok = false;
        check(zkr_double_barrier_new(client, path, (uint32_t)expect, &b), "zkr_double_barrier_new");
        sleep_ms((int)(mono_ns() % 300));
        fprintf(log, "arrive c %s %lld\n", id, mono_ns());
        fflush(log);
        check(zkr_double_barrier_enter(b, 60000, &ok), "zkr_double_barrier_enter");
        if (!ok) { fprintf(stderr, "c_worker: enter timed out\n"); return 2; }
        fprintf(log, "entered c %s %lld\n", id, mono_ns());
        sleep_ms(50);
        fprintf(log, "leaving c %s %lld\n", id, mono_ns());
        fflush(log);
        check(zkr_double_barrier_leave(b, 60000, &ok), "zkr_double_barrier_leave");
        if (!ok) { fprintf(stderr, "c_worker: leave timed out\n"); return 2; }
        fprintf(log, "left c %s %lld\n", id, mono_ns());
        fprintf(log, "done c %s 1\n", id);
        zkr_double_barrier_free(b);
    } else if (!strcmp(role, "cache")) { /* our share, then wait until every share is cached */
        char node[4096];
        for (long i = 0; i < iterations; i++) {
            snprintf(node, sizeof node, "%s/%s-%ld", path, id, i);
            check(zkr_client_create(client, node, (const uint8_t *)id, strlen(id), ZKR_PERSISTENT,
                                    ZKR_CREATE_PARENTS, NULL), "zkr_client_create");
        }
        size_t want = (size_t)(expect * iterations + 1);
        size_t size = wait_count(want, cache_size_of, cache);
        zkr_child_data_list *list = NULL;
        check(zkr_cache_snapshot(cache, &list), "zkr_cache_snapshot");
        long children = 0;
        for (size_t i = 0; i < list->len; i++) {
            const zkr_child_data *n = &list->items[i];
            if (!strcmp(n->path, path)) continue;
            fprintf(log, "node c %s %s %.*s\n", id, n->path, (int)n->data_len, n->data ? (const char *)n->data : "");
            children++;
        }
        zkr_child_data_list_free(list);
        long long t = mono_ns();
        while (cache_events() != (long long)size && mono_ns() - t < 10000000000LL) sleep_ms(5);
        fprintf(log, "events c %s %lld %zu\n", id, cache_events(), size);
        fprintf(log, "done c %s %ld\n", id, children);
        zkr_cache_free(cache);
    } else if (!strcmp(role, "watch")) { /* create + set our share, wait to hear everyone's */
        char node[4096];
        for (long i = 0; i < iterations; i++) {
            snprintf(node, sizeof node, "%s/%s-%ld", path, id, i);
            check(zkr_client_create(client, node, NULL, 0, ZKR_PERSISTENT, ZKR_CREATE_PARENTS, NULL),
                  "zkr_client_create");
            check(zkr_client_set_data(client, node, (const uint8_t *)id, strlen(id), -1, NULL),
                  "zkr_client_set_data");
        }
        size_t want = (size_t)(2 * expect * iterations);
        wait_count(want, heard_of, NULL);
        check(zkr_watcher_close(watcher), "zkr_watcher_close");
        zkr_watcher_free(watcher);
        for (size_t i = 0; i < heard_n; i++) {
            fprintf(log, "heard c %s %s\n", id, heard_lines[i]);
            free(heard_lines[i]);
        }
        fprintf(log, "done c %s %zu\n", id, heard_n);
    } else if (!strcmp(role, "discovery")) {
        discovery_run(id, iterations, expect, peers, log);
    } else {
        fprintf(stderr, "c_worker: unknown role %s\n", role);
        return 2;
    }
    fclose(log);
    zkr_client_close(client);
    zkr_client_free(client);
    return 0;
}
