/*
 * A micro-benchmark of the cost of one call on a handle that does no server round trip: the
 * argument checks, the handle check (the tag that catches a freed handle) and the panic
 * boundary. Not part of scripts/test-c; run by hand against a release build:
 *
 *   cargo build --release -p zkrecipes-ffi
 *   scripts/install-c /tmp/zkr-rel --release --no-build
 *   PKG_CONFIG_PATH=/tmp/zkr-rel/lib/pkgconfig make -C tests/c BUILD=/tmp/zkr-bench bench
 *   /tmp/zkr-bench/bench_handle HOST:PORT [ITERATIONS]
 *
 * It prints, for each call, the fastest and the median of 7 runs in nanoseconds per call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <zkrecipes.h>

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define RUNS 7

/* Times `n` calls of `call` RUNS times; prints the fastest and the median per call. */
#define BENCH(name, call)                                                                  \
    do {                                                                                   \
        double per[RUNS];                                                                  \
        for (int r = 0; r < RUNS; r++) {                                                   \
            double t0 = now_ns();                                                          \
            for (long i = 0; i < n; i++) {                                                 \
                if ((call) != ZKR_OK) {                                                    \
                    fprintf(stderr, "%s failed: %s\n", name, zkr_last_error_message());   \
                    return 1;                                                              \
                }                                                                          \
            }                                                                              \
            per[r] = (now_ns() - t0) / (double)n;                                          \
        }                                                                                  \
        qsort(per, RUNS, sizeof per[0], cmp);                                              \
        printf("%-36s min %6.1f ns  median %6.1f ns  (%ld calls x %d)\n", name, per[0],     \
               per[RUNS / 2], n, RUNS);                                                    \
    } while (0)

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s HOST:PORT [ITERATIONS]\n", argv[0]);
        return 2;
    }
    long n = argc > 2 ? atol(argv[2]) : 2000000;
    zkr_client *c = NULL;
    zkr_mutex *m = NULL;
    zkr_shared_count *sc = NULL;
    if (zkr_client_connect(argv[1], NULL, &c) != ZKR_OK ||
        zkr_mutex_new(c, "/bench/handle-check", &m) != ZKR_OK ||
        zkr_shared_count_new(c, "/bench/handle-check-count", 7, &sc) != ZKR_OK) {
        fprintf(stderr, "setup failed: %s\n", zkr_last_error_message());
        return 1;
    }
    printf("zkrecipes %s\n", zkr_version());
    bool owned = false;
    int32_t count = 0;
    zkr_owner owner = zkr_owner_new();
    BENCH("zkr_mutex_is_owned", zkr_mutex_is_owned(m, &owned));
    BENCH("zkr_mutex_is_owned_as", zkr_mutex_is_owned_as(m, owner, &owned));
    BENCH("zkr_shared_count_get_count", zkr_shared_count_get_count(sc, &count));
    zkr_shared_count_free(sc);
    zkr_mutex_free(m);
    zkr_client_free(c);
    return 0;
}
