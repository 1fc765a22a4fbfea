/*
 * The seeds' three scenarios through the zkrecipes C API, with pthreads, printing what
 * happened. Exit status 0 only if every scenario was correct.
 *
 *   seeds HOST:PORT [mutex] [latch] [counter]      (no names: all three)
 *
 *  mutex:   100 threads contend for one InterProcessMutex (10 clients, 10 threads each); a
 *           shared "inside" counter proves that no two were ever inside at once, and the
 *           fencing tokens only go up.
 *  latch:   10 clients (one thread each) join one LeaderLatch; each waits for leadership,
 *           leads briefly, then closes its latch so that the next one takes over; at most one
 *           leads at any time and every client leads exactly once.
 *  counter: 10 threads x 100 add_and_get(1) on one DistributedAtomicLong = 1000 exactly, and
 *           each value 1..1000 is handed to exactly one caller.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zkrecipes.h>

static const char *connect_string;
static char base[96];

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static void pause_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static zkr_client *connect_client(void) {
    zkr_client *c = NULL;
    if (zkr_client_connect(connect_string, NULL, &c) != ZKR_OK) {
        fprintf(stderr, "  cannot connect to %s: %s\n", connect_string, zkr_last_error_message());
        return NULL;
    }
    return c;
}

#define REPORT_FAILURE(what)                                                                     \
    fprintf(stderr, "  %s failed: %s\n", (what), zkr_last_error_message())

/* ------------------------------------------------------------------------------------------ */
/* 100 threads on one mutex                                                                   */

#define MUTEX_THREADS 100
#define MUTEX_CLIENTS 10

static struct {
    zkr_mutex *mutexes[MUTEX_CLIENTS];
    int inside, max_inside, overlaps, done, errors;
    int64_t last_token;
    int token_regressions;
} mx;

static void *mutex_worker(void *arg) {
    zkr_mutex *m = mx.mutexes[(intptr_t)arg % MUTEX_CLIENTS];
    bool acquired = false;
    if (zkr_mutex_acquire(m, 60000, &acquired) != ZKR_OK || !acquired) {
        REPORT_FAILURE("zkr_mutex_acquire");
        __atomic_fetch_add(&mx.errors, 1, __ATOMIC_SEQ_CST);
        return NULL;
    }
    int now = __atomic_add_fetch(&mx.inside, 1, __ATOMIC_SEQ_CST);
    if (now > 1) __atomic_fetch_add(&mx.overlaps, 1, __ATOMIC_SEQ_CST);
    if (now > mx.max_inside) mx.max_inside = now;
    int64_t token = 0;
    if (zkr_mutex_fencing_token(m, &token) != ZKR_OK) __atomic_fetch_add(&mx.errors, 1, __ATOMIC_SEQ_CST);
    if (token <= mx.last_token) mx.token_regressions++;
    mx.last_token = token;
    pause_ms(1); /* the critical section's "work": an overlap would be seen here */
    __atomic_sub_fetch(&mx.inside, 1, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&mx.done, 1, __ATOMIC_SEQ_CST);
    if (zkr_mutex_release(m) != ZKR_OK) {
        REPORT_FAILURE("zkr_mutex_release");
        __atomic_fetch_add(&mx.errors, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

static bool scenario_mutex(void) {
    char path[160];
    snprintf(path, sizeof path, "%s/mutex", base);
    printf("== C: %d threads on one InterProcessMutex (%s) ==\n", MUTEX_THREADS, path);
    zkr_client *clients[MUTEX_CLIENTS] = {0};
    bool ok = true;
    for (int i = 0; i < MUTEX_CLIENTS && ok; i++) {
        clients[i] = connect_client();
        ok = clients[i] != NULL && zkr_mutex_new(clients[i], path, &mx.mutexes[i]) == ZKR_OK;
    }
    double t0 = now_ms();
    if (ok) {
        pthread_t threads[MUTEX_THREADS];
        for (intptr_t i = 0; i < MUTEX_THREADS; i++) pthread_create(&threads[i], NULL, mutex_worker, (void *)i);
        for (int i = 0; i < MUTEX_THREADS; i++) pthread_join(threads[i], NULL);
    }
    double elapsed = now_ms() - t0;
    size_t left = 99;
    zkr_string_list *nodes = NULL;
    if (ok && zkr_mutex_participant_nodes(mx.mutexes[0], &nodes) == ZKR_OK) {
        left = nodes->len;
        zkr_string_list_free(nodes);
    }
    for (int i = 0; i < MUTEX_CLIENTS; i++) {
        zkr_mutex_free(mx.mutexes[i]);
        zkr_client_free(clients[i]);
    }
    bool correct = ok && mx.errors == 0 && mx.overlaps == 0 && mx.done == MUTEX_THREADS &&
                   mx.token_regressions == 0 && left == 0;
    printf("  %d of %d threads ran their critical section in %.0f ms (%d clients)\n", mx.done, MUTEX_THREADS,
           elapsed, MUTEX_CLIENTS);
    printf("  most threads inside at once: %d; overlaps: %d; fencing tokens went down: %d times; "
           "lock nodes left: %zu; errors: %d\n",
           mx.max_inside, mx.overlaps, mx.token_regressions, left, mx.errors);
    printf("  %s\n\n", correct ? "OK: never two holders at once" : "WRONG");
    return correct;
}

/* ------------------------------------------------------------------------------------------ */
/* 10 clients taking turns in a LeaderLatch                                                    */

#define LATCH_CLIENTS 10

static struct {
    char path[160];
    pthread_mutex_t mu;
    int leaders_now, max_leaders, turns, errors;
    int order[LATCH_CLIENTS];
    int64_t epochs[LATCH_CLIENTS];
} lt = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void *latch_worker(void *arg) {
    int me = (int)(intptr_t)arg;
    char id[32];
    snprintf(id, sizeof id, "client-%d", me);
    zkr_client *c = connect_client();
    zkr_leader_latch *l = NULL;
    bool leader = false;
    if (c == NULL || zkr_leader_latch_new(c, lt.path, id, &l) != ZKR_OK || zkr_leader_latch_start(l) != ZKR_OK ||
        zkr_leader_latch_await(l, 60000, &leader) != ZKR_OK || !leader) {
        REPORT_FAILURE(id);
        pthread_mutex_lock(&lt.mu);
        lt.errors++;
        pthread_mutex_unlock(&lt.mu);
    } else {
        int64_t epoch = 0;
        (void)zkr_leader_latch_leadership_epoch(l, &epoch);
        pthread_mutex_lock(&lt.mu);
        lt.leaders_now++;
        if (lt.leaders_now > lt.max_leaders) lt.max_leaders = lt.leaders_now;
        lt.epochs[lt.turns] = epoch;
        lt.order[lt.turns++] = me;
        pthread_mutex_unlock(&lt.mu);
        pause_ms(20); /* lead for a moment */
        pthread_mutex_lock(&lt.mu);
        lt.leaders_now--;
        pthread_mutex_unlock(&lt.mu);
        /* Leadership ends before close returns: the next client may take over now. */
        if (zkr_leader_latch_close(l) != ZKR_OK) {
            REPORT_FAILURE("zkr_leader_latch_close");
            pthread_mutex_lock(&lt.mu);
            lt.errors++;
            pthread_mutex_unlock(&lt.mu);
        }
    }
    zkr_leader_latch_free(l);
    zkr_client_free(c);
    return NULL;
}

static bool scenario_latch(void) {
    snprintf(lt.path, sizeof lt.path, "%s/leader", base);
    printf("== C: %d clients taking turns in a LeaderLatch (%s) ==\n", LATCH_CLIENTS, lt.path);
    double t0 = now_ms();
    pthread_t threads[LATCH_CLIENTS];
    for (intptr_t i = 0; i < LATCH_CLIENTS; i++) pthread_create(&threads[i], NULL, latch_worker, (void *)i);
    for (int i = 0; i < LATCH_CLIENTS; i++) pthread_join(threads[i], NULL);
    double elapsed = now_ms() - t0;
    int led[LATCH_CLIENTS] = {0};
    bool epochs_up = true;
    printf("  order of leadership:");
    for (int t = 0; t < lt.turns; t++) {
        printf(" client-%d", lt.order[t]);
        led[lt.order[t]]++;
        if (t > 0 && lt.epochs[t] <= lt.epochs[t - 1]) epochs_up = false;
    }
    printf("\n");
    bool each_once = true;
    for (int i = 0; i < LATCH_CLIENTS; i++) each_once = each_once && led[i] == 1;
    bool correct = lt.errors == 0 && lt.turns == LATCH_CLIENTS && lt.max_leaders == 1 && each_once && epochs_up;
    printf("  %d turns in %.0f ms; most leaders at once: %d; each client led once: %s; "
           "leadership epochs increasing: %s; errors: %d\n",
           lt.turns, elapsed, lt.max_leaders, each_once ? "yes" : "no", epochs_up ? "yes" : "no", lt.errors);
    printf("  %s\n\n", correct ? "OK: one leader at a time, everyone in turn" : "WRONG");
    return correct;
}

/* ------------------------------------------------------------------------------------------ */
/* 10 threads x 100 increments                                                                 */

#define COUNTER_THREADS 10
#define COUNTER_ADDS 100
#define COUNTER_CLIENTS 5

static struct {
    zkr_atomic_long *counters[COUNTER_CLIENTS];
    unsigned char seen[COUNTER_THREADS * COUNTER_ADDS + 1];
    int errors;
} ct;

static void *counter_worker(void *arg) {
    zkr_atomic_long *a = ct.counters[(intptr_t)arg % COUNTER_CLIENTS];
    for (int i = 0; i < COUNTER_ADDS; i++) {
        int64_t v = 0;
        if (zkr_atomic_long_add_and_get(a, 1, 60000, &v) != ZKR_OK) {
            REPORT_FAILURE("zkr_atomic_long_add_and_get");
            __atomic_fetch_add(&ct.errors, 1, __ATOMIC_SEQ_CST);
        } else if (v >= 1 && v <= COUNTER_THREADS * COUNTER_ADDS) {
            __atomic_fetch_add(&ct.seen[v], 1, __ATOMIC_SEQ_CST);
        } else {
            __atomic_fetch_add(&ct.errors, 1, __ATOMIC_SEQ_CST);
        }
    }
    return NULL;
}

static bool scenario_counter(void) {
    char path[160];
    snprintf(path, sizeof path, "%s/counter", base);
    printf("== C: %d threads x %d add_and_get(1) on one DistributedAtomicLong (%s) ==\n", COUNTER_THREADS,
           COUNTER_ADDS, path);
    zkr_client *clients[COUNTER_CLIENTS] = {0};
    bool ok = true;
    for (int i = 0; i < COUNTER_CLIENTS && ok; i++) {
        clients[i] = connect_client();
        ok = clients[i] != NULL && zkr_atomic_long_new(clients[i], path, &ct.counters[i]) == ZKR_OK;
    }
    double t0 = now_ms();
    if (ok) {
        pthread_t threads[COUNTER_THREADS];
        for (intptr_t i = 0; i < COUNTER_THREADS; i++) pthread_create(&threads[i], NULL, counter_worker, (void *)i);
        for (int i = 0; i < COUNTER_THREADS; i++) pthread_join(threads[i], NULL);
    }
    double elapsed = now_ms() - t0;
    zkr_atomic_value v = {0};
    if (ok && zkr_atomic_long_get(ct.counters[0], &v) != ZKR_OK) {
        REPORT_FAILURE("zkr_atomic_long_get");
        ok = false;
    }
    int missing = 0, repeated = 0;
    for (int i = 1; i <= COUNTER_THREADS * COUNTER_ADDS; i++) {
        missing += ct.seen[i] == 0;
        repeated += ct.seen[i] > 1;
    }
    for (int i = 0; i < COUNTER_CLIENTS; i++) {
        zkr_atomic_long_free(ct.counters[i]);
        zkr_client_free(clients[i]);
    }
    bool correct = ok && ct.errors == 0 && v.post_value == COUNTER_THREADS * COUNTER_ADDS && missing == 0 &&
                   repeated == 0;
    printf("  final value %" PRId64 " (expected %d) after %.0f ms (%d clients); values never returned: %d, "
           "returned twice: %d; errors: %d\n",
           v.post_value, COUNTER_THREADS * COUNTER_ADDS, elapsed, COUNTER_CLIENTS, missing, repeated, ct.errors);
    printf("  %s\n\n", correct ? "OK: no increment lost or doubled" : "WRONG");
    return correct;
}

/* ------------------------------------------------------------------------------------------ */

static bool wanted(int argc, char **argv, const char *name) {
    if (argc <= 2) return true;
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], name) == 0) return true;
    return false;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s HOST:PORT [mutex] [latch] [counter]\n", argv[0]);
        return 2;
    }
    connect_string = argv[1];
    snprintf(base, sizeof base, "/zkrecipes-demo/c-%ld-%ld", (long)getpid(), (long)time(NULL));
    printf("zkrecipes %s (C API, header %s) against ZooKeeper at %s\n\n", zkr_version(), ZKR_VERSION_STRING,
           connect_string);
    bool all = true;
    if (wanted(argc, argv, "mutex")) all = scenario_mutex() && all;
    if (wanted(argc, argv, "latch")) all = scenario_latch() && all;
    if (wanted(argc, argv, "counter")) all = scenario_counter() && all;

    /* Leave nothing behind. */
    zkr_client *c = connect_client();
    /* Lock and latch paths are container nodes: the server may have removed them already. */
    zkr_status cleaned = c == NULL ? ZKR_CLOSED : zkr_client_delete(c, base, -1, ZKR_DELETE_RECURSIVE);
    if (cleaned != ZKR_OK && cleaned != ZKR_NO_NODE) {
        REPORT_FAILURE("cleaning up");
        all = false;
    }
    zkr_client_free(c);
    printf("C seeds: %s\n", all ? "all correct" : "SOMETHING WAS WRONG");
    return all ? 0 : 1;
}
