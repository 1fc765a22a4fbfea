/* Benchmark driver for the C face of zkrecipes (issue 10; protocol in the bench docs): one
 * scenario per run, EXACTLY one JSON line on stdout, diagnostics on stderr, exit 1 on any
 * failure, never a hang (every wait has a timeout, and a watchdog thread ends the process).
 *
 *   c_driver --impl c --scenario uncontended|contended|counter_threads|counter_clients|failover|memory
 *            --connect HOST:PORT --path /bench/<unique> [--iterations N] [--warmup W]
 *            [--clients C] [--threads T] [--seconds S] [--locks L] [--timeout SECONDS]
 *            [--min-seconds S]
 *
 * Built against a staged install (scripts/install-c PREFIX [--release]), like the interop worker:
 *   PKG_CONFIG_PATH=PREFIX/lib/pkgconfig cc -std=c99 -D_POSIX_C_SOURCE=200809L -O2 -Wall -Wextra \
 *     tests/bench/drivers/c_driver.c -o c_driver $(pkg-config --cflags --libs zkrecipes) \
 *     -pthread -Wl,-rpath,PREFIX/lib
 * Threads are pthreads: one per contender / incrementing thread / client. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zkrecipes.h>

#define WAIT_MS 60000 /* the longest any single wait may take before the run fails */

static void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "c_driver: FAILED: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    fflush(stderr);
    _exit(1); /* other threads may be blocked in the library: leave at once */
}

static void check(zkr_status st, const char *what) {
    if (st != ZKR_OK) fail("%s: %s (%s)", what, zkr_status_name(st), zkr_last_error_message());
}

static double mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double cpu_us(void) { /* user + sys of the whole process (every thread) */
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static long rss_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) fail("cannot open /proc/self/status");
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) kb = atol(line + 6);
    fclose(f);
    if (kb < 0) fail("no VmRSS in /proc/self/status");
    return kb;
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

/* Percentile of an ascending array: s[round((n - 1) * p / 100)], half away from zero (the rule
 * of every driver, the Rust and Curator ones included). */
static double pct(const double *s, size_t n, double p) {
    if (n == 0) return 0.0;
    return s[(size_t)((double)(n - 1) * p / 100.0 + 0.5)];
}

static double mean(const double *s, size_t n) {
    double t = 0;
    for (size_t i = 0; i < n; i++) t += s[i];
    return n ? t / (double)n : 0.0;
}

/* ---- options and JSON output ---- */

static struct {
    const char *impl, *scenario, *connect, *path;
    long iterations, warmup, clients, threads, locks;
    double seconds, timeout, min_seconds;
} opt = {"c", NULL, NULL, NULL, -1, -1, -1, -1, -1, -1, 600, 2.0};

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

/* n, p50_us, p99_us, mean_us of samples (sorted in place) */
static void put_lat(double *s, size_t n) {
    qsort(s, n, sizeof *s, cmp_double);
    put_int("n", (long long)n);
    put_num("p50_us", pct(s, n, 50));
    put_num("p99_us", pct(s, n, 99));
    put_num("mean_us", mean(s, n));
}

static zkr_client *connect_client(void) {
    zkr_client_options o;
    check(zkr_client_options_init(&o), "zkr_client_options_init");
    o.session_timeout_ms = 30000;
    o.connection_timeout_ms = 15000;
    zkr_client *c = NULL;
    check(zkr_client_connect(opt.connect, &o, &c), "zkr_client_connect");
    return c;
}

static void close_client(zkr_client *c) {
    check(zkr_client_close(c), "zkr_client_close");
    zkr_client_free(c);
}

static char *subpath(const char *suffix) {
    size_t n = strlen(opt.path) + strlen(suffix) + 2;
    char *p = xcalloc(n, 1);
    snprintf(p, n, "%s/%s", opt.path, suffix);
    return p;
}

static void acquire(zkr_mutex *m, const char *what) {
    bool ok = false;
    check(zkr_mutex_acquire(m, WAIT_MS, &ok), what);
    if (!ok) fail("%s: not acquired within %d ms", what, WAIT_MS);
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

static long dflt(long v, long d) { return v >= 0 ? v : d; }

/* ---- uncontended ---- */

static void uncontended(void) {
    long n = dflt(opt.iterations, 2000), w = dflt(opt.warmup, 200);
    zkr_client *c = connect_client();
    char *path = subpath("lock");
    zkr_mutex *m = NULL;
    check(zkr_mutex_new(c, path, &m), "zkr_mutex_new");
    for (long i = 0; i < w; i++) {
        acquire(m, "warm-up acquire");
        check(zkr_mutex_release(m), "warm-up release");
    }
    long cap = n > 0 ? n : 1;
    double *acq = xcalloc((size_t)cap, sizeof *acq), *rel = xcalloc((size_t)cap, sizeof *rel),
           *cyc = xcalloc((size_t)cap, sizeof *cyc);
    double cpu0 = cpu_us(), phase0 = mono_us();
    /* Rounds of n cycles until the phase has lasted --min-seconds. */
    long i = 0;
    for (; i < n || (n > 0 && (i % n != 0 || mono_us() - phase0 < opt.min_seconds * 1e6)); i++) {
        if (i == cap) {
            cap *= 2;
            acq = realloc(acq, (size_t)cap * sizeof *acq);
            rel = realloc(rel, (size_t)cap * sizeof *rel);
            cyc = realloc(cyc, (size_t)cap * sizeof *cyc);
            if (!acq || !rel || !cyc) fail("out of memory");
        }
        double t0 = mono_us();
        acquire(m, "acquire");
        double t1 = mono_us();
        check(zkr_mutex_release(m), "release");
        double t2 = mono_us();
        acq[i] = t1 - t0;
        rel[i] = t2 - t1;
        cyc[i] = t2 - t0;
    }
    n = i;
    double cpu = cpu_us() - cpu0;
    zkr_mutex_free(m);
    close_client(c);
    put_lat(cyc, (size_t)n);
    qsort(acq, (size_t)n, sizeof *acq, cmp_double);
    qsort(rel, (size_t)n, sizeof *rel, cmp_double);
    put_num("acquire_p50_us", pct(acq, (size_t)n, 50));
    put_num("release_p50_us", pct(rel, (size_t)n, 50));
    put_num("cpu_us_per_op", cpu / (double)(n ? n : 1));
    free(acq), free(rel), free(cyc), free(path);
}

/* ---- contended ---- */

typedef struct {
    zkr_mutex *m;
    double start, m0, m1; /* monotonic us: go, measured window [m0, m1) */
    double *waits;
    size_t count, cap;
} contender;

static void *contend(void *arg) {
    contender *k = arg;
    while (mono_us() < k->start) {
        struct timespec ms = {0, 200000};
        nanosleep(&ms, NULL);
    }
    for (;;) {
        double t0 = mono_us();
        acquire(k->m, "contended acquire");
        double t1 = mono_us();
        check(zkr_mutex_release(k->m), "contended release");
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

static void sleep_until(double t_us) {
    double d = t_us - mono_us();
    if (d <= 0) return;
    time_t whole = (time_t)(d / 1e6);
    struct timespec ts = {whole, (long)((d - (double)whole * 1e6) * 1e3)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void contended(void) {
    long k = dflt(opt.clients, 8);
    double secs = opt.seconds >= 0 ? opt.seconds : 10.0;
    char *path = subpath("lock");
    zkr_client **cs = xcalloc((size_t)k, sizeof *cs);
    contender *ks = xcalloc((size_t)k, sizeof *ks);
    pthread_t *ts = xcalloc((size_t)k, sizeof *ts);
    for (long i = 0; i < k; i++) cs[i] = connect_client();
    double start = mono_us() + 50000, m0 = start + 1e6, m1 = m0 + secs * 1e6;
    for (long i = 0; i < k; i++) {
        check(zkr_mutex_new(cs[i], path, &ks[i].m), "zkr_mutex_new");
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
        zkr_mutex_free(ks[i].m);
        close_client(cs[i]);
    }
    put_lat(all, n);
    put_num("ops_per_s", (double)n / secs);
    put_num("wait_p99_us", pct(all, n, 99));
    put_num("cpu_us_per_op", cpu / (double)n);
    put_int("clients", k);
    put_num("seconds", secs);
    free(all), free(ts), free(ks), free(cs), free(path);
}

/* ---- counters ---- */

typedef struct {
    zkr_atomic_long *a;
    long each, ok, failed, done, cap;
    double *lat, phase0_us, min_us;
} incrementer;

/* Rounds of `each` increments until the phase has lasted --min-seconds. */
static void *increment(void *arg) {
    incrementer *w = arg;
    for (long i = 0; i < w->each || (w->each > 0 && (i % w->each != 0 || mono_us() - w->phase0_us < w->min_us));
         i++) {
        int64_t v = 0;
        double t0 = mono_us();
        zkr_status st = zkr_atomic_long_add_and_get(w->a, 1, WAIT_MS, &v);
        if (w->done == w->cap) {
            w->cap = w->cap ? 2 * w->cap : 64;
            w->lat = realloc(w->lat, (size_t)w->cap * sizeof(double));
            if (!w->lat) fail("out of memory");
        }
        w->lat[w->done++] = mono_us() - t0;
        if (st == ZKR_OK) {
            w->ok++;
        } else {
            w->failed++;
            fprintf(stderr, "c_driver: increment failed: %s (%s)\n", zkr_status_name(st), zkr_last_error_message());
        }
    }
    return NULL;
}

static int64_t counter_value(zkr_atomic_long *a) {
    zkr_atomic_value v;
    check(zkr_atomic_long_get(a, &v), "zkr_atomic_long_get");
    return v.pre_value;
}

static void counter(int per_client) {
    long workers = per_client ? dflt(opt.clients, 10) : dflt(opt.threads, 10);
    long each = dflt(opt.iterations, 100), w = dflt(opt.warmup, 20);
    long nclients = per_client ? workers : 1;
    char *path = subpath("counter");
    zkr_client **cs = xcalloc((size_t)nclients, sizeof *cs);
    for (long i = 0; i < nclients; i++) cs[i] = connect_client();
    incrementer *ws = xcalloc((size_t)workers, sizeof *ws);
    pthread_t *ts = xcalloc((size_t)workers, sizeof *ts);
    /* One counter handle per worker (each client's own; threads: one each on the one client). */
    for (long i = 0; i < workers; i++) {
        check(zkr_atomic_long_new(cs[per_client ? i : 0], path, &ws[i].a), "zkr_atomic_long_new");
        ws[i].each = each;
    }
    for (long i = 0; i < w; i++) {
        int64_t v;
        check(zkr_atomic_long_add_and_get(ws[0].a, 1, WAIT_MS, &v), "warm-up increment");
    }
    for (long i = 1; i < workers; i++) counter_value(ws[i].a);
    int64_t initial = counter_value(ws[0].a);
    double cpu0 = cpu_us(), t0 = mono_us();
    for (long i = 0; i < workers; i++) ws[i].phase0_us = t0, ws[i].min_us = opt.min_seconds * 1e6;
    for (long i = 0; i < workers; i++)
        if (pthread_create(&ts[i], NULL, increment, &ws[i])) fail("pthread_create");
    for (long i = 0; i < workers; i++) pthread_join(ts[i], NULL);
    double elapsed = mono_us() - t0, cpu = cpu_us() - cpu0;
    zkr_atomic_long *reader = NULL;
    check(zkr_atomic_long_new(cs[0], path, &reader), "zkr_atomic_long_new");
    /* On an ensemble this session's server may lag the others' last writes (reads are not
     * linearizable): re-read for up to 5 s before a shortfall counts as lost. */
    long ok_sum = 0;
    for (long i = 0; i < workers; i++) ok_sum += ws[i].ok;
    int64_t final = counter_value(reader);
    long final_reads = 1;
    while (final - initial < ok_sum && final_reads < 10) {
        struct timespec half = {0, 500000000L};
        nanosleep(&half, NULL);
        final = counter_value(reader);
        final_reads++;
    }
    zkr_atomic_long_free(reader);
    long ok = 0, failed = 0;
    size_t n = 0;
    for (long i = 0; i < workers; i++) n += (size_t)ws[i].done;
    double *lat = xcalloc(n ? n : 1, sizeof *lat);
    size_t at = 0;
    for (long i = 0; i < workers; i++) {
        ok += ws[i].ok, failed += ws[i].failed;
        if (ws[i].done) memcpy(lat + at, ws[i].lat, (size_t)ws[i].done * sizeof *lat);
        at += (size_t)ws[i].done;
        free(ws[i].lat);
        zkr_atomic_long_free(ws[i].a);
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

/* ---- failover ---- */

static pthread_mutex_t fo_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fo_cond;
static long fo_leader = -1; /* member that last became leader, -1 once consumed */
static double fo_at;        /* when (monotonic us, taken in the listener) */

static void on_leadership(bool is_leader, void *user) {
    if (!is_leader) return;
    double t = mono_us();
    pthread_mutex_lock(&fo_lock);
    fo_leader = (long)(intptr_t)user;
    fo_at = t;
    pthread_cond_broadcast(&fo_cond);
    pthread_mutex_unlock(&fo_lock);
}

/* Waits (fo_lock held) until a leader is reported; fails after WAIT_MS. */
static void wait_leader(const char *what) {
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += WAIT_MS / 1000;
    while (fo_leader < 0) {
        int rc = pthread_cond_timedwait(&fo_cond, &fo_lock, &dl);
        if (rc == ETIMEDOUT && fo_leader < 0) fail("%s: no leader within %d ms", what, WAIT_MS);
    }
}

static zkr_leader_latch *join_latch(zkr_client *c, const char *path, long i) {
    char id[32];
    snprintf(id, sizeof id, "m%ld", i);
    zkr_leader_latch *l = NULL;
    uint64_t lid;
    check(zkr_leader_latch_new(c, path, id, &l), "zkr_leader_latch_new");
    check(zkr_leader_latch_add_listener(l, on_leadership, (void *)(intptr_t)i, &lid), "zkr_leader_latch_add_listener");
    check(zkr_leader_latch_start(l), "zkr_leader_latch_start");
    return l;
}

static void failover(void) {
    long k = dflt(opt.clients, 3), n = dflt(opt.iterations, 200), w = dflt(opt.warmup, 10);
    if (k < 2) fail("failover needs --clients >= 2");
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&fo_cond, &ca);
    char *path = subpath("latch");
    zkr_client **cs = xcalloc((size_t)k, sizeof *cs);
    zkr_leader_latch **ls = xcalloc((size_t)k, sizeof *ls);
    double *times = xcalloc((size_t)n, sizeof *times);
    for (long i = 0; i < k; i++) cs[i] = connect_client();
    for (long i = 0; i < k; i++) ls[i] = join_latch(cs[i], path, i);
    for (long r = 0; r < w + n; r++) {
        pthread_mutex_lock(&fo_lock);
        wait_leader("start of round");
        long old = fo_leader;
        fo_leader = -1;
        pthread_mutex_unlock(&fo_lock);
        bool leads = false;
        check(zkr_leader_latch_has_leadership(ls[old], &leads), "zkr_leader_latch_has_leadership");
        if (!leads) fail("member %ld was reported leader but has_leadership is false", old);
        double t0 = mono_us();
        check(zkr_leader_latch_close(ls[old]), "zkr_leader_latch_close");
        pthread_mutex_lock(&fo_lock);
        wait_leader("after close");
        if (fo_leader == old) fail("the closed member leads again");
        double dt = fo_at - t0;
        pthread_mutex_unlock(&fo_lock);
        if (r >= w) times[r - w] = dt;
        zkr_leader_latch_free(ls[old]);
        ls[old] = join_latch(cs[old], path, old); /* a fresh latch, at the back of the queue */
    }
    for (long i = 0; i < k; i++) {
        check(zkr_leader_latch_close(ls[i]), "zkr_leader_latch_close");
        zkr_leader_latch_free(ls[i]);
        close_client(cs[i]);
    }
    put_lat(times, (size_t)n);
    put_int("clients", k);
    free(times), free(ls), free(cs), free(path);
}

/* ---- memory ---- */

static void memory(void) {
    long count = dflt(opt.locks, 1000), w = dflt(opt.warmup, 50);
    zkr_client *c = connect_client();
    char *wpath = subpath("warmup");
    zkr_mutex *wm = NULL;
    check(zkr_mutex_new(c, wpath, &wm), "zkr_mutex_new");
    for (long i = 0; i < w; i++) {
        acquire(wm, "warm-up acquire");
        check(zkr_mutex_release(wm), "warm-up release");
    }
    zkr_mutex **ms = xcalloc((size_t)count, sizeof *ms);
    double *lat = xcalloc((size_t)count, sizeof *lat);
    char buf[64];
    long before = rss_kb();
    double cpu0 = cpu_us();
    for (long i = 0; i < count; i++) {
        snprintf(buf, sizeof buf, "m%ld", i);
        char *p = subpath(buf);
        check(zkr_mutex_new(c, p, &ms[i]), "zkr_mutex_new");
        free(p);
        double t0 = mono_us();
        acquire(ms[i], "acquire");
        lat[i] = mono_us() - t0;
    }
    double cpu = cpu_us() - cpu0;
    long after = rss_kb();
    for (long i = 0; i < count; i++) {
        check(zkr_mutex_release(ms[i]), "release");
        zkr_mutex_free(ms[i]);
    }
    zkr_mutex_free(wm);
    close_client(c);
    put_lat(lat, (size_t)count);
    put_int("rss_kb", after);
    put_int("rss_delta_kb", after - before);
    put_num("cpu_us_per_op", cpu / (double)count);
    put_int("locks", count);
    free(lat), free(ms), free(wpath);
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
        else if (!strcmp(a, "--locks")) opt.locks = atol(v);
        else if (!strcmp(a, "--seconds")) opt.seconds = atof(v);
        else if (!strcmp(a, "--timeout")) opt.timeout = atof(v);
        else if (!strcmp(a, "--min-seconds")) opt.min_seconds = atof(v);
        else fail("unknown option %s", a);
    }
    if (strcmp(opt.impl, "c")) fail("--impl must be c, not %s", opt.impl);
    if (!opt.scenario || !opt.connect || !opt.path) fail("--scenario, --connect and --path are required");
    if (opt.path[0] != '/' || opt.path[strlen(opt.path) - 1] == '/')
        fail("--path must be absolute without a trailing slash: %s", opt.path);
    pthread_t wd;
    if (pthread_create(&wd, NULL, watchdog, NULL)) fail("pthread_create");
    pthread_detach(wd);

    put("{\"impl\": \"c\", \"scenario\": \"%s\"", opt.scenario);
    if (!strcmp(opt.scenario, "uncontended")) uncontended();
    else if (!strcmp(opt.scenario, "contended")) contended();
    else if (!strcmp(opt.scenario, "counter_threads")) counter(0);
    else if (!strcmp(opt.scenario, "counter_clients")) counter(1);
    else if (!strcmp(opt.scenario, "failover")) failover();
    else if (!strcmp(opt.scenario, "memory")) memory();
    else fail("unknown scenario %s", opt.scenario);
    put(", \"version\": \"zkrecipes %s (c)\"}", zkr_version());
    printf("%s\n", json);
    fflush(stdout);
    return 0;
}
