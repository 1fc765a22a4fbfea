/*
 * A tiny test runner for the C API tests: every test program takes the ZooKeeper connect
 * string as argv[1], runs its tests in order and prints one line per test and a summary line
 * ("<program>: N passed, M failed"); its exit status is 0 only if every test passed.
 *
 * CHECK_* macros record a failure (file, line, status name, zkr_last_error_message()) and return
 * from the test function.
 */
#ifndef ZKR_TESTUTIL_H
#define ZKR_TESTUTIL_H

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zkrecipes.h>

static const char *zt_connect; /* argv[1] */
static const char *zt_program = "c_tests"; /* argv[0]'s base name */
static int zt_failed_in_test;
static int zt_passed;

static inline void zt_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "    FAIL %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    zt_failed_in_test = 1;
}

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            zt_fail(__FILE__, __LINE__, "%s", #cond);                                        \
            return;                                                                          \
        }                                                                                    \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                 \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            zt_fail(__FILE__, __LINE__, __VA_ARGS__);                                        \
            return;                                                                          \
        }                                                                                    \
    } while (0)

/* The call must return ZKR_OK. */
#define CHECK_OK(call)                                                                       \
    do {                                                                                     \
        zkr_status zt_s_ = (call);                                                           \
        if (zt_s_ != ZKR_OK) {                                                               \
            zt_fail(__FILE__, __LINE__, "%s returned %s: %s", #call, zkr_status_name(zt_s_), \
                    zkr_last_error_message());                                               \
            return;                                                                          \
        }                                                                                    \
    } while (0)

/* The call must fail with `expected` and leave a message naming the failed function. */
#define CHECK_STATUS(call, expected, function)                                               \
    do {                                                                                     \
        zkr_status zt_s_ = (call);                                                           \
        const char *zt_m_ = zkr_last_error_message();                                        \
        if (zt_s_ != (expected)) {                                                           \
            zt_fail(__FILE__, __LINE__, "%s returned %s, expected %s (message: %s)", #call,  \
                    zkr_status_name(zt_s_), zkr_status_name(expected), zt_m_);               \
            return;                                                                          \
        }                                                                                    \
        if (zt_m_ == NULL || strstr(zt_m_, (function)) == NULL ||                            \
            strstr(zt_m_, zkr_status_name(expected)) == NULL) {                              \
            zt_fail(__FILE__, __LINE__, "%s: message %s does not name %s and %s", #call,     \
                    zt_m_ ? zt_m_ : "(null)", (function), zkr_status_name(expected));        \
            return;                                                                          \
        }                                                                                    \
    } while (0)

#define RUN(test)                                                                            \
    do {                                                                                     \
        zt_failed_in_test = 0;                                                               \
        double zt_t0_ = zt_now_ms();                                                         \
        test();                                                                              \
        printf("  %-58s %s (%.0f ms)\n", #test, zt_failed_in_test ? "FAILED" : "ok",         \
               zt_now_ms() - zt_t0_);                                                        \
        fflush(stdout);                                                                      \
        if (zt_failed_in_test) zt_stop_after_failure(#test);                                 \
        zt_passed++;                                                                         \
    } while (0)

/* A failed CHECK returns from its test at once, leaving behind what the test had not freed yet:
 * handles whose listeners point into the test's stack frame. Running the next test would reuse
 * that frame while those listeners may still fire, so the first failed test ends the program
 * (the tests before it are reported; `_exit` runs no atexit handlers under live callbacks). */
static inline void zt_stop_after_failure(const char *test) {
    printf("%s: %d passed, 1 failed (stopped after %s)\n", zt_program, zt_passed, test);
    fflush(stdout);
    fflush(stderr);
    _exit(1);
}

static inline double zt_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static inline void zt_begin(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s HOST:PORT (a running ZooKeeper; scripts/test-c starts one)\n", argv[0]);
        exit(2);
    }
    zt_connect = argv[1];
    zt_program = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    printf("%s (zkrecipes %s, header %s)\n", argv[0], zkr_version(), ZKR_VERSION_STRING);
}

static inline int zt_end(const char *program) {
    printf("%s: %d passed, 0 failed\n", program, zt_passed);
    return zt_passed > 0 ? 0 : 1;
}

/* A unique path per call: /c-tests/<pid>-<n>/<name>. */
static inline void zt_path(char *buf, size_t len, const char *name) {
    static int counter;
    snprintf(buf, len, "/c-tests/%ld-%d/%s", (long)getpid(), ++counter, name);
}

/* A client with a short session timeout (so expiry-related tests stay quick). */
static inline zkr_status zt_connect_client(zkr_client **out) {
    zkr_client_options opts;
    zkr_status s = zkr_client_options_init(&opts);
    if (s != ZKR_OK) return s;
    opts.session_timeout_ms = 10000;
    opts.connection_timeout_ms = 10000;
    opts.retry = zkr_retry_exponential_backoff(100, 5, 1000);
    return zkr_client_connect(zt_connect, &opts, out);
}

/* After zkr_client_expire_session_for_testing: waits (bounded) until the client runs on a new
 * session, so that the next call does not race the old session's expiry. */
static inline bool zt_wait_new_session(zkr_client *c, int64_t old_session, int timeout_ms) {
    double deadline = zt_now_ms() + timeout_ms;
    while (zt_now_ms() < deadline) {
        int64_t sid = 0;
        zkr_connection_state st;
        if (zkr_client_session_id(c, &sid) == ZKR_OK && sid != 0 && sid != old_session &&
            zkr_client_state(c, &st) == ZKR_OK && (st == ZKR_STATE_CONNECTED || st == ZKR_STATE_RECONNECTED))
            return true;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    return false;
}

/* A counter that callbacks bump and tests wait on (deadline-bounded, no sleeping). */
typedef struct zt_event {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int count;
    int last;
} zt_event;

static inline void zt_event_init(zt_event *e) {
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    e->count = 0;
    e->last = 0;
}

static inline void zt_event_destroy(zt_event *e) {
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
}

static inline void zt_event_signal(zt_event *e, int value) {
    pthread_mutex_lock(&e->mu);
    e->count++;
    e->last = value;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

/* Waits until the count reaches `n`; false after `timeout_ms`. */
static inline bool zt_event_wait(zt_event *e, int n, int timeout_ms) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&e->mu);
    int rc = 0;
    while (e->count < n && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&e->cv, &e->mu, &deadline);
    bool ok = e->count >= n;
    pthread_mutex_unlock(&e->mu);
    return ok;
}

static inline int zt_event_count(zt_event *e) {
    pthread_mutex_lock(&e->mu);
    int n = e->count;
    pthread_mutex_unlock(&e->mu);
    return n;
}

/* What a connection-state listener saw, in order: register it with
 * zkr_client_add_state_listener(c, zt_record_state, &states, &id) after zt_states_init. */
typedef struct zt_states {
    zt_event event;
    pthread_mutex_t mu;
    zkr_connection_state seen[256];
    int n;
    pthread_t registering_thread;
    bool on_registering_thread; /* a callback ran on the thread that called zt_states_init */
} zt_states;

static inline void zt_states_init(zt_states *s) {
    memset(s, 0, sizeof *s);
    zt_event_init(&s->event);
    pthread_mutex_init(&s->mu, NULL);
    s->registering_thread = pthread_self();
}

static inline void zt_states_destroy(zt_states *s) {
    pthread_mutex_destroy(&s->mu);
    zt_event_destroy(&s->event);
}

static inline void zt_record_state(zkr_connection_state state, void *user_data) {
    zt_states *s = (zt_states *)user_data;
    pthread_mutex_lock(&s->mu);
    if (s->n < 256) s->seen[s->n++] = state;
    if (pthread_equal(pthread_self(), s->registering_thread)) s->on_registering_thread = true;
    pthread_mutex_unlock(&s->mu);
    zt_event_signal(&s->event, (int)state);
}

/* Waits (bounded) until the listener has seen `state` at index `from` or later; that index, or
 * -1 (timed out, or more states than the record holds). */
static inline int zt_states_wait(zt_states *s, int from, zkr_connection_state state, int timeout_ms) {
    double deadline = zt_now_ms() + timeout_ms;
    for (int i = from; i < 256 && zt_now_ms() < deadline; i++) {
        if (!zt_event_wait(&s->event, i + 1, (int)(deadline - zt_now_ms()) + 1)) return -1;
        pthread_mutex_lock(&s->mu);
        zkr_connection_state got = s->seen[i];
        pthread_mutex_unlock(&s->mu);
        if (got == state) return i;
    }
    return -1;
}

#endif
