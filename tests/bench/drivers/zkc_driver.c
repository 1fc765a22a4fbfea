/* Benchmark driver for the C face's peer (issue 34): Apache ZooKeeper's own C client
 * (libzookeeper_mt, Debian's libzookeeper-mt-dev, the 3.8 client) with the lock recipe of
 * ZooKeeper's "Recipes and Solutions" page and a counter by versioned setData, written the way
 * a C/C++ team without zkrecipes would write them. Same protocol as the other drivers: one
 * scenario per run, EXACTLY one JSON line on stdout, diagnostics on stderr, exit 1 on any
 * failure, never a hang (every wait has a timeout, and a watchdog thread ends the process).
 *
 *   zkc_driver --impl zkc --scenario uncontended|contended|counter_threads|counter_clients
 *              --connect HOST:PORT --path /bench/<unique> [--iterations N] [--warmup W]
 *              [--clients C] [--threads T] [--seconds S] [--timeout SECONDS] [--min-seconds S]
 *
 *   cc -std=c99 -D_GNU_SOURCE -O2 -Wall -Wextra tests/bench/drivers/zkc_driver.c -o zkc_driver \
 *      -I/usr/include/zookeeper -lzookeeper_mt -pthread
 *
 * The lock (the documented recipe, step for step):
 *   1. create PATH/lock/lock- EPHEMERAL|SEQUENTIAL;
 *   2. getChildren(PATH/lock) without a watch;
 *   3. if our node has the lowest sequence number, we hold the lock;
 *   4. else exists(the node with the next lower sequence number, watch): if it is gone, go to 2,
 *      else wait for its notification, then go to 2.
 * Release: delete our node. The lock directory is created once, before anything is timed.
 *
 * The counter: PATH/counter holds an 8-byte big-endian long (Curator's DistributedAtomicLong
 * layout); an increment is getData, then setData(value + 1, the version read), again from
 * getData on ZBADVERSION. The node is created once, before anything is timed.
 *
 * The synchronous API throughout (zoo_create, zoo_get_children, zoo_wexists, ...): the C
 * client's own I/O and completion threads do the network work, the caller's thread waits, as a
 * C/C++ program using the mt library does. One pthread per contender / incrementing thread. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifndef THREADED
#define THREADED /* the synchronous API of the mt library */
#endif
#include <zookeeper.h>
#include <zookeeper_version.h>

#define WAIT_MS 60000 /* the longest any single wait may take before the run fails */

static void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "zkc_driver: FAILED: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    fflush(stderr);
    _exit(1); /* the C client's threads may be blocked: leave at once */
}

static void zcheck(int rc, const char *what) {
    if (rc != ZOK) fail("%s: %s (%d)", what, zerror(rc), rc);
}

static double mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double cpu_us(void) { /* user + sys of the whole process (every thread, the client's too) */
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) fail("out of memory");
    return p;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Percentile of an ascending array: s[round((n - 1) * p / 100)] (the rule of every driver). */
static double pct(const double *s, size_t n, double p) {
    if (n == 0) return 0.0;
    return s[(size_t)((double)(n - 1) * p / 100.0 + 0.5)];
}

static double mean(const double *s, size_t n) {
    double t = 0;
    for (size_t i = 0; i < n; i++) t += s[i];
    return n ? t / (double)n : 0.0;
}

/* An absolute CLOCK_REALTIME deadline ms from now (pthread_cond_timedwait's clock). */
static struct timespec deadline_ms(long ms) {
    struct timespec d;
    clock_gettime(CLOCK_REALTIME, &d);
    d.tv_sec += ms / 1000;
    d.tv_nsec += (ms % 1000) * 1000000L;
    if (d.tv_nsec >= 1000000000L) d.tv_sec++, d.tv_nsec -= 1000000000L;
    return d;
}

static void sleep_until(double t_us) {
    double d = t_us - mono_us();
    if (d <= 0) return;
    time_t whole = (time_t)(d / 1e6);
    struct timespec ts = {whole, (long)((d - (double)whole * 1e6) * 1e3)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- options and JSON output ---- */

static struct {
    const char *impl, *scenario, *connect, *path;
    long iterations, warmup, clients, threads;
    double seconds, timeout, min_seconds;
} opt = {"zkc", NULL, NULL, NULL, -1, -1, -1, -1, -1, 600, 2.0};

static long dflt(long v, long d) { return v >= 0 ? v : d; }

static char json[8192];
static size_t json_len;

static void put(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(json + json_len, sizeof json - json_len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof json - json_len) fail("JSON line too long");
    json_len += (size_t)n;
}

static void put_num(const char *key, double v) { put(", \"%s\": %.2f", key, v); }
static void put_int(const char *key, long long v) { put(", \"%s\": %lld", key, v); }

static void put_lat(double *s, size_t n) {
    qsort(s, n, sizeof *s, cmp_double);
    put_int("n", (long long)n);
    put_num("p50_us", pct(s, n, 50));
    put_num("p99_us", pct(s, n, 99));
    put_num("mean_us", mean(s, n));
}

static void *watchdog(void *arg) {
    (void)arg;
    double secs = opt.timeout;
    struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    fail("watchdog: no result after %.0f s", secs);
    return NULL;
}

/* ---- sessions ---- */

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int state; /* the latest session state the default watcher heard */
} session;

static void session_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx) {
    (void)zh, (void)path;
    session *s = ctx;
    if (type != ZOO_SESSION_EVENT) return;
    pthread_mutex_lock(&s->mu);
    s->state = state;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
    if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE)
        fail("session lost (state %d)", state);
}

typedef struct {
    zhandle_t *zh;
    session s;
} client;

static client *connect_client(void) {
    client *c = xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->s.mu, NULL);
    pthread_cond_init(&c->s.cond, NULL);
    c->zh = zookeeper_init(opt.connect, session_watcher, 30000, NULL, &c->s, 0);
    if (!c->zh) fail("zookeeper_init(%s): %s", opt.connect, strerror(errno));
    struct timespec dl = deadline_ms(15000);
    pthread_mutex_lock(&c->s.mu);
    while (c->s.state != ZOO_CONNECTED_STATE)
        if (pthread_cond_timedwait(&c->s.cond, &c->s.mu, &dl) == ETIMEDOUT) fail("not connected within 15 s");
    pthread_mutex_unlock(&c->s.mu);
    return c;
}

static void close_client(client *c) {
    zcheck(zookeeper_close(c->zh), "zookeeper_close");
    free(c);
}

/* Creates every missing persistent node of `path` (no data). */
static void mkdirs(zhandle_t *zh, const char *path) {
    char buf[1024];
    size_t n = strlen(path);
    if (n >= sizeof buf) fail("path too long: %s", path);
    for (size_t i = 1; i <= n; i++) {
        if (i < n && path[i] != '/') continue;
        memcpy(buf, path, i);
        buf[i] = 0;
        int rc = zoo_create(zh, buf, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        if (rc != ZOK && rc != ZNODEEXISTS) fail("create %s: %s", buf, zerror(rc));
    }
}

static char *subpath(const char *suffix) {
    size_t n = strlen(opt.path) + strlen(suffix) + 2;
    char *p = xcalloc(n, 1);
    snprintf(p, n, "%s/%s", opt.path, suffix);
    return p;
}

/* ---- the lock recipe ---- */

typedef struct {
    zhandle_t *zh;
    const char *dir;   /* the lock directory */
    char node[1024];   /* our node's full path while we hold or wait */
    pthread_mutex_t mu;
    pthread_cond_t cond;
    unsigned long fired; /* notifications heard (the predecessor watch) */
} zlock;

static void lock_init(zlock *l, zhandle_t *zh, const char *dir) {
    memset(l, 0, sizeof *l);
    l->zh = zh, l->dir = dir;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cond, NULL);
}

/* The predecessor watch: any notification on it sends the waiter back to getChildren. A watch
 * left over from an earlier wait only costs one extra getChildren, as in the recipe. */
static void pred_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx) {
    (void)zh, (void)type, (void)state, (void)path;
    zlock *l = ctx;
    pthread_mutex_lock(&l->mu);
    l->fired++;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->mu);
}

static long long seq_of(const char *name) {
    if (strncmp(name, "lock-", 5)) return -1;
    return strtoll(name + 5, NULL, 10);
}

static void lock_acquire(zlock *l) {
    char prefix[1024];
    snprintf(prefix, sizeof prefix, "%s/lock-", l->dir);
    zcheck(zoo_create(l->zh, prefix, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL, l->node,
                      (int)sizeof l->node),
           "create lock node");
    const char *own = strrchr(l->node, '/') + 1;
    long long mine = seq_of(own);
    for (;;) {
        struct String_vector ch = {0, NULL};
        zcheck(zoo_get_children(l->zh, l->dir, 0, &ch), "getChildren");
        long long best = -1;
        char pred[1024] = "";
        for (int i = 0; i < ch.count; i++) {
            long long s = seq_of(ch.data[i]);
            if (s >= 0 && s < mine && s > best) {
                best = s;
                snprintf(pred, sizeof pred, "%s/%s", l->dir, ch.data[i]);
            }
        }
        deallocate_String_vector(&ch);
        if (best < 0) return; /* the lowest: ours */
        pthread_mutex_lock(&l->mu);
        unsigned long seen = l->fired;
        pthread_mutex_unlock(&l->mu);
        struct Stat st;
        int rc = zoo_wexists(l->zh, pred, pred_watcher, l, &st);
        if (rc == ZNONODE) continue;
        zcheck(rc, "exists(predecessor, watch)");
        struct timespec dl = deadline_ms(WAIT_MS);
        pthread_mutex_lock(&l->mu);
        while (l->fired == seen)
            if (pthread_cond_timedwait(&l->cond, &l->mu, &dl) == ETIMEDOUT)
                fail("no notification on %s within %d ms", pred, WAIT_MS);
        pthread_mutex_unlock(&l->mu);
    }
}

static void lock_release(zlock *l) { zcheck(zoo_delete(l->zh, l->node, -1), "delete lock node"); }

/* ---- uncontended ---- */

static void uncontended(void) {
    long n = dflt(opt.iterations, 2000), w = dflt(opt.warmup, 200);
    client *c = connect_client();
    char *dir = subpath("lock");
    mkdirs(c->zh, dir);
    zlock l;
    lock_init(&l, c->zh, dir);
    for (long i = 0; i < w; i++) {
        lock_acquire(&l);
        lock_release(&l);
    }
    long cap = n > 0 ? n : 1;
    double *acq = xcalloc((size_t)cap, sizeof *acq), *rel = xcalloc((size_t)cap, sizeof *rel),
           *cyc = xcalloc((size_t)cap, sizeof *cyc);
    double cpu0 = cpu_us(), phase0 = mono_us();
    long i = 0; /* rounds of n cycles until the phase has lasted --min-seconds */
    for (; i < n || (n > 0 && (i % n != 0 || mono_us() - phase0 < opt.min_seconds * 1e6)); i++) {
        if (i == cap) {
            cap *= 2;
            acq = realloc(acq, (size_t)cap * sizeof *acq);
            rel = realloc(rel, (size_t)cap * sizeof *rel);
            cyc = realloc(cyc, (size_t)cap * sizeof *cyc);
            if (!acq || !rel || !cyc) fail("out of memory");
        }
        double t0 = mono_us();
        lock_acquire(&l);
        double t1 = mono_us();
        lock_release(&l);
        double t2 = mono_us();
        acq[i] = t1 - t0, rel[i] = t2 - t1, cyc[i] = t2 - t0;
    }
    n = i;
    double cpu = cpu_us() - cpu0;
    close_client(c);
    put_lat(cyc, (size_t)n);
    qsort(acq, (size_t)n, sizeof *acq, cmp_double);
    qsort(rel, (size_t)n, sizeof *rel, cmp_double);
    put_num("acquire_p50_us", pct(acq, (size_t)n, 50));
    put_num("release_p50_us", pct(rel, (size_t)n, 50));
    put_num("cpu_us_per_op", cpu / (double)(n ? n : 1));
    free(acq), free(rel), free(cyc), free(dir);
}

/* ---- contended ---- */

typedef struct {
    zlock l;
    double start, m0, m1; /* monotonic us: go, measured window [m0, m1) */
    double *waits;
    size_t count, cap;
} contender;

static void *contend(void *arg) {
    contender *k = arg;
    sleep_until(k->start);
    for (;;) {
        double t0 = mono_us();
        lock_acquire(&k->l);
        double t1 = mono_us();
        lock_release(&k->l);
        if (t1 >= k->m0 && t1 < k->m1) {
            if (k->count == k->cap) {
                k->cap = k->cap ? k->cap * 2 : 1024;
                k->waits = realloc(k->waits, k->cap * sizeof *k->waits);
                if (!k->waits) fail("out of memory");
            }
            k->waits[k->count++] = t1 - t0;
        }
        if (t1 >= k->m1) return NULL;
    }
}

static void contended(void) {
    long k = dflt(opt.clients, 8);
    double secs = opt.seconds >= 0 ? opt.seconds : 10.0;
    char *dir = subpath("lock");
    client **cs = xcalloc((size_t)k, sizeof *cs);
    contender *ks = xcalloc((size_t)k, sizeof *ks);
    pthread_t *ts = xcalloc((size_t)k, sizeof *ts);
    for (long i = 0; i < k; i++) cs[i] = connect_client();
    mkdirs(cs[0]->zh, dir);
    double start = mono_us() + 50000, m0 = start + 1e6, m1 = m0 + secs * 1e6;
    for (long i = 0; i < k; i++) {
        lock_init(&ks[i].l, cs[i]->zh, dir);
        ks[i].start = start, ks[i].m0 = m0, ks[i].m1 = m1;
        if (pthread_create(&ts[i], NULL, contend, &ks[i])) fail("pthread_create");
    }
    sleep_until(m0);
    double cpu0 = cpu_us();
    sleep_until(m1);
    double cpu = cpu_us() - cpu0;
    size_t n = 0;
    for (long i = 0; i < k; i++) {
        pthread_join(ts[i], NULL);
        n += ks[i].count;
    }
    if (n == 0) fail("no acquisition completed in the measured window");
    double *all = xcalloc(n, sizeof *all);
    size_t j = 0;
    for (long i = 0; i < k; i++) {
        memcpy(all + j, ks[i].waits, ks[i].count * sizeof *all);
        j += ks[i].count;
        free(ks[i].waits);
        close_client(cs[i]);
    }
    put_lat(all, n);
    put_num("ops_per_s", (double)n / secs);
    put_num("wait_p99_us", pct(all, n, 99));
    put_num("cpu_us_per_op", cpu / (double)n);
    put_int("clients", k);
    put_num("seconds", secs);
    free(all), free(ts), free(ks), free(cs), free(dir);
}

/* ---- the counter: versioned setData ---- */

static void encode(char *b, int64_t v) {
    for (int i = 7; i >= 0; i--) b[i] = (char)(v & 0xff), v = (int64_t)((uint64_t)v >> 8);
}

static int64_t decode(const char *b, int len, const char *path) {
    if (len != 8) fail("%s holds %d bytes, not an 8-byte long", path, len);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | (unsigned char)b[i];
    return (int64_t)v;
}

static int64_t counter_get(zhandle_t *zh, const char *path, int *version) {
    char buf[16];
    int len = (int)sizeof buf;
    struct Stat st;
    zcheck(zoo_get(zh, path, 0, buf, &len, &st), "getData(counter)");
    if (version) *version = st.version;
    return decode(buf, len, path);
}

/* Returns ZOK and the new value, or the error of the last setData that was not ZBADVERSION. */
static int counter_increment(zhandle_t *zh, const char *path, int64_t *out) {
    for (;;) {
        int version;
        char buf[16];
        int len = (int)sizeof buf;
        struct Stat st;
        int rc = zoo_get(zh, path, 0, buf, &len, &st);
        if (rc != ZOK) return rc;
        version = st.version;
        int64_t v = decode(buf, len, path) + 1;
        encode(buf, v);
        rc = zoo_set(zh, path, buf, 8, version);
        if (rc == ZOK) {
            *out = v;
            return ZOK;
        }
        if (rc != ZBADVERSION) return rc;
    }
}

typedef struct {
    zhandle_t *zh;
    const char *path;
    long each, ok, failed, done, cap;
    double *lat, phase0_us, min_us;
} incrementer;

static void *increment(void *arg) {
    incrementer *w = arg;
    for (long i = 0; i < w->each || (w->each > 0 && (i % w->each != 0 || mono_us() - w->phase0_us < w->min_us));
         i++) {
        int64_t v = 0;
        double t0 = mono_us();
        int rc = counter_increment(w->zh, w->path, &v);
        if (w->done == w->cap) {
            w->cap = w->cap ? 2 * w->cap : 64;
            w->lat = realloc(w->lat, (size_t)w->cap * sizeof(double));
            if (!w->lat) fail("out of memory");
        }
        w->lat[w->done++] = mono_us() - t0;
        if (rc == ZOK) {
            w->ok++;
        } else {
            w->failed++;
            fprintf(stderr, "zkc_driver: increment failed: %s (%d)\n", zerror(rc), rc);
        }
    }
    return NULL;
}

static void counter(int per_client) {
    long workers = per_client ? dflt(opt.clients, 10) : dflt(opt.threads, 10);
    long each = dflt(opt.iterations, 100), w = dflt(opt.warmup, 20);
    long nclients = per_client ? workers : 1;
    char *path = subpath("counter");
    client **cs = xcalloc((size_t)nclients, sizeof *cs);
    for (long i = 0; i < nclients; i++) cs[i] = connect_client();
    mkdirs(cs[0]->zh, opt.path);
    char zero[8];
    encode(zero, 0);
    int rc = zoo_create(cs[0]->zh, path, zero, 8, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    if (rc != ZOK && rc != ZNODEEXISTS) fail("create %s: %s", path, zerror(rc));
    incrementer *ws = xcalloc((size_t)workers, sizeof *ws);
    pthread_t *ts = xcalloc((size_t)workers, sizeof *ts);
    for (long i = 0; i < workers; i++) ws[i].zh = cs[per_client ? i : 0]->zh, ws[i].path = path, ws[i].each = each;
    for (long i = 0; i < w; i++) {
        int64_t v;
        zcheck(counter_increment(cs[0]->zh, path, &v), "warm-up increment");
    }
    for (long i = 1; i < nclients; i++) counter_get(cs[i]->zh, path, NULL);
    int64_t initial = counter_get(cs[0]->zh, path, NULL);
    double cpu0 = cpu_us(), t0 = mono_us();
    for (long i = 0; i < workers; i++) ws[i].phase0_us = t0, ws[i].min_us = opt.min_seconds * 1e6;
    for (long i = 0; i < workers; i++)
        if (pthread_create(&ts[i], NULL, increment, &ws[i])) fail("pthread_create");
    for (long i = 0; i < workers; i++) pthread_join(ts[i], NULL);
    double elapsed = mono_us() - t0, cpu = cpu_us() - cpu0;
    long ok = 0, failed = 0;
    size_t n = 0;
    for (long i = 0; i < workers; i++) ok += ws[i].ok, failed += ws[i].failed, n += (size_t)ws[i].done;
    /* On an ensemble this session's server may lag the others' last writes: re-read for up to
     * 5 s before a shortfall counts as lost. */
    int64_t final = counter_get(cs[0]->zh, path, NULL);
    long final_reads = 1;
    while (final - initial < ok && final_reads < 10) {
        struct timespec half = {0, 500000000L};
        nanosleep(&half, NULL);
        final = counter_get(cs[0]->zh, path, NULL);
        final_reads++;
    }
    double *lat = xcalloc(n, sizeof *lat);
    size_t at = 0;
    for (long i = 0; i < workers; i++) {
        if (ws[i].done) memcpy(lat + at, ws[i].lat, (size_t)ws[i].done * sizeof *lat);
        at += (size_t)ws[i].done;
        free(ws[i].lat);
    }
    for (long i = 0; i < nclients; i++) close_client(cs[i]);
    qsort(lat, n, sizeof *lat, cmp_double);
    put_int("n", ok);
    put_num("p50_us", pct(lat, n, 50));
    put_num("p99_us", pct(lat, n, 99));
    put_num("mean_us", mean(lat, n));
    put_num("ops_per_s", (double)ok / (elapsed / 1e6));
    put_int("final", final);
    put_int("expected", initial + ok);
    put_int("lost", ok - (final - initial));
    put_int("failed", failed);
    put_num("cpu_us_per_op", cpu / (double)(ok ? ok : 1));
    put_int("final_reads", final_reads);
    put_int(per_client ? "clients" : "threads", workers);
    free(lat), free(ts), free(ws), free(cs), free(path);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) fail("option %s needs a value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--impl")) opt.impl = v;
        else if (!strcmp(a, "--scenario")) opt.scenario = v;
        else if (!strcmp(a, "--connect")) opt.connect = v;
        else if (!strcmp(a, "--path")) opt.path = v;
        else if (!strcmp(a, "--iterations")) opt.iterations = atol(v);
        else if (!strcmp(a, "--warmup")) opt.warmup = atol(v);
        else if (!strcmp(a, "--clients")) opt.clients = atol(v);
        else if (!strcmp(a, "--threads")) opt.threads = atol(v);
        else if (!strcmp(a, "--seconds")) opt.seconds = atof(v);
        else if (!strcmp(a, "--timeout")) opt.timeout = atof(v);
        else if (!strcmp(a, "--min-seconds")) opt.min_seconds = atof(v);
        else fail("unknown option %s", a);
    }
    if (strcmp(opt.impl, "zkc")) fail("--impl must be zkc, not %s", opt.impl);
    if (!opt.scenario || !opt.connect || !opt.path) fail("--scenario, --connect and --path are required");
    if (opt.path[0] != '/' || opt.path[strlen(opt.path) - 1] == '/')
        fail("--path must be absolute without a trailing slash: %s", opt.path);
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR); /* the client's INFO lines would flood stderr */
    pthread_t wd;
    if (pthread_create(&wd, NULL, watchdog, NULL)) fail("pthread_create");
    pthread_detach(wd);

    put("{\"impl\": \"zkc\", \"scenario\": \"%s\"", opt.scenario);
    if (!strcmp(opt.scenario, "uncontended")) uncontended();
    else if (!strcmp(opt.scenario, "contended")) contended();
    else if (!strcmp(opt.scenario, "counter_threads")) counter(0);
    else if (!strcmp(opt.scenario, "counter_clients")) counter(1);
    else fail("unknown scenario %s (the peer drivers have uncontended, contended, counter_threads, "
              "counter_clients)", opt.scenario);
    put(", \"version\": \"Apache ZooKeeper C client %s (libzookeeper_mt, recipe-page lock)\"}", ZOO_VERSION);
    printf("%s\n", json);
    fflush(stdout);
    return 0;
}
