/* DistributedAtomicLong/Integer and SharedCount through the C API: the seed scenario
 * (10 threads x 100 add_and_get = 1000 exactly), Curator's operations, overflow and corrupted
 * data, and a SharedCount seen from two clients. */
#include "testutil.h"

#define COUNTER_THREADS 10
#define ADDS_PER_THREAD 100
#define COUNTER_CLIENTS 5

typedef struct counter_arg {
    zkr_atomic_long *counter;
    unsigned char *seen; /* seen[v] for every value returned; shared, written once per value */
    int errors;
} counter_arg;

static void *add_100(void *p) {
    counter_arg *a = (counter_arg *)p;
    for (int i = 0; i < ADDS_PER_THREAD; i++) {
        int64_t v = 0;
        if (zkr_atomic_long_add_and_get(a->counter, 1, -1, &v) != ZKR_OK) {
            fprintf(stderr, "    add_and_get failed: %s\n", zkr_last_error_message());
            a->errors++;
            continue;
        }
        if (v < 1 || v > COUNTER_THREADS * ADDS_PER_THREAD) {
            a->errors++;
            continue;
        }
        __atomic_fetch_add(&a->seen[v], 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

static void test_seed_10_threads_x_100_add_and_get_is_1000(void) {
    char path[128];
    zt_path(path, sizeof path, "seed-counter");
    zkr_client *clients[COUNTER_CLIENTS];
    zkr_atomic_long *counters[COUNTER_CLIENTS];
    for (int i = 0; i < COUNTER_CLIENTS; i++) {
        CHECK_OK(zt_connect_client(&clients[i]));
        CHECK_OK(zkr_atomic_long_new(clients[i], path, &counters[i]));
    }
    unsigned char seen[COUNTER_THREADS * ADDS_PER_THREAD + 1];
    memset(seen, 0, sizeof seen);
    pthread_t threads[COUNTER_THREADS];
    counter_arg args[COUNTER_THREADS];
    for (int i = 0; i < COUNTER_THREADS; i++) {
        args[i].counter = counters[i % COUNTER_CLIENTS];
        args[i].seen = seen;
        args[i].errors = 0;
        CHECK(pthread_create(&threads[i], NULL, add_100, &args[i]) == 0);
    }
    int errors = 0;
    for (int i = 0; i < COUNTER_THREADS; i++) {
        pthread_join(threads[i], NULL);
        errors += args[i].errors;
    }
    CHECK_MSG(errors == 0, "%d add_and_get calls failed", errors);
    zkr_atomic_value v;
    CHECK_OK(zkr_atomic_long_get(counters[0], &v));
    CHECK_MSG(v.succeeded && v.post_value == COUNTER_THREADS * ADDS_PER_THREAD, "final value %" PRId64, v.post_value);
    for (int i = 1; i <= COUNTER_THREADS * ADDS_PER_THREAD; i++)
        CHECK_MSG(seen[i] == 1, "value %d was returned %d times (each new value exactly once)", i, seen[i]);
    for (int i = 0; i < COUNTER_CLIENTS; i++) {
        zkr_atomic_long_free(counters[i]);
        zkr_client_free(clients[i]);
    }
}

static void test_curator_operations_report_pre_and_post_values(void) {
    char path[128];
    zt_path(path, sizeof path, "curator-ops");
    zkr_client *c = NULL;
    zkr_atomic_long *a = NULL;
    CHECK_OK(zt_connect_client(&c));
    zkr_retry_policy retry = zkr_retry_n_times(5, 10);
    char lock_path[160];
    snprintf(lock_path, sizeof lock_path, "%s-lock", path);
    CHECK_OK(zkr_atomic_long_new_with(c, path, &retry, lock_path, 5000, &a));
    zkr_atomic_value v;
    CHECK_OK(zkr_atomic_long_get(a, &v));
    CHECK(v.succeeded && v.pre_value == 0 && v.post_value == 0);
    bool created = false;
    CHECK_OK(zkr_atomic_long_initialize(a, 10, &created));
    CHECK(created);
    CHECK_OK(zkr_atomic_long_initialize(a, 99, &created));
    CHECK(!created);
    CHECK_OK(zkr_atomic_long_increment(a, &v));
    CHECK(v.succeeded && v.pre_value == 10 && v.post_value == 11 && v.stats.optimistic_tries >= 1);
    CHECK_OK(zkr_atomic_long_add(a, 9, &v));
    CHECK(v.succeeded && v.pre_value == 11 && v.post_value == 20);
    CHECK_OK(zkr_atomic_long_subtract(a, 5, &v));
    CHECK(v.succeeded && v.post_value == 15);
    CHECK_OK(zkr_atomic_long_decrement(a, &v));
    CHECK(v.succeeded && v.post_value == 14);
    CHECK_OK(zkr_atomic_long_compare_and_set(a, 99, 1, &v));
    CHECK_MSG(!v.succeeded && v.pre_value == 14, "a compare-and-set against a wrong value must fail");
    CHECK_OK(zkr_atomic_long_compare_and_set(a, 14, -3, &v));
    CHECK(v.succeeded && v.post_value == -3);
    CHECK_OK(zkr_atomic_long_try_set(a, INT64_MAX, &v));
    CHECK(v.succeeded && v.post_value == INT64_MAX);
    int64_t after = 0;
    CHECK_STATUS(zkr_atomic_long_add_and_get(a, 1, 5000, &after), ZKR_OVERFLOW, "zkr_atomic_long_add_and_get");
    CHECK(after == 0);
    CHECK_OK(zkr_atomic_long_force_set(a, 7));
    CHECK_OK(zkr_atomic_long_add_and_get(a, -8, 5000, &after));
    CHECK(after == -1);
    /* The wire format is Curator's: 8 bytes, big-endian. */
    zkr_buffer *raw = NULL;
    CHECK_OK(zkr_client_get_data(c, path, &raw, NULL));
    CHECK(raw->len == 8);
    for (size_t i = 0; i < 8; i++) CHECK(raw->data[i] == 0xff);
    zkr_buffer_free(raw);
    zkr_atomic_long_free(a);
    zkr_client_free(c);
}

static void test_int_counter_and_corrupted_data(void) {
    char path[128];
    zt_path(path, sizeof path, "int-counter");
    zkr_client *c = NULL;
    zkr_atomic_int *i32 = NULL;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_atomic_int_new(c, path, &i32));
    int32_t v = 0;
    CHECK_OK(zkr_atomic_int_add_and_get(i32, INT32_MAX, -1, &v));
    CHECK(v == INT32_MAX);
    CHECK_STATUS(zkr_atomic_int_add_and_get(i32, 1, -1, &v), ZKR_OVERFLOW, "zkr_atomic_int_add_and_get");
    zkr_atomic_value av = {0};
    /* Curator's add wraps, like Java; ours refuses and writes nothing. */
    CHECK_STATUS(zkr_atomic_int_increment(i32, &av), ZKR_OVERFLOW, "zkr_atomic_int_increment");
    CHECK(!av.succeeded && av.post_value == 0);
    zkr_buffer *raw = NULL;
    CHECK_OK(zkr_client_get_data(c, path, &raw, NULL));
    CHECK(raw->len == 4 && raw->data[0] == 0x7f && raw->data[3] == 0xff);
    zkr_buffer_free(raw);

    char bad[160];
    snprintf(bad, sizeof bad, "%s-bad", path);
    CHECK_OK(zkr_client_create(c, bad, (const uint8_t *)"abc", 3, ZKR_PERSISTENT, ZKR_CREATE_PARENTS, NULL));
    zkr_atomic_long *l = NULL;
    CHECK_OK(zkr_atomic_long_new(c, bad, &l));
    zkr_atomic_value lv;
    CHECK_STATUS(zkr_atomic_long_get(l, &lv), ZKR_CORRUPTED_DATA, "zkr_atomic_long_get");
    CHECK(strstr(zkr_last_error_message(), bad) != NULL);
    zkr_atomic_long_free(l);
    zkr_atomic_int_free(i32);
    CHECK_STATUS(zkr_atomic_int_new(c, "nope", &i32), ZKR_INVALID_ARGUMENT, "zkr_atomic_int_new");
    zkr_atomic_int_free(NULL);
    zkr_atomic_long_free(NULL);
    zkr_client_free(c);
}

/* Where Curator's add wraps silently, every add of ours that would overflow is ZKR_OVERFLOW and
 * leaves the counter as it was (out-parameters untouched). */
static void test_add_that_would_overflow_is_overflow_and_writes_nothing(void) {
    char path[128], ipath[160];
    zt_path(path, sizeof path, "overflow");
    snprintf(ipath, sizeof ipath, "%s-int", path);
    zkr_client *c = NULL;
    zkr_atomic_long *a = NULL;
    zkr_atomic_int *i = NULL;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_atomic_long_new(c, path, &a));
    CHECK_OK(zkr_atomic_int_new(c, ipath, &i));
    CHECK_OK(zkr_atomic_long_force_set(a, INT64_MAX));
    zkr_atomic_value v = {.succeeded = true, .pre_value = 11, .post_value = 12};
    CHECK_STATUS(zkr_atomic_long_add(a, 1, &v), ZKR_OVERFLOW, "zkr_atomic_long_add");
    CHECK(v.succeeded && v.pre_value == 11 && v.post_value == 12);
    CHECK_STATUS(zkr_atomic_long_increment(a, &v), ZKR_OVERFLOW, "zkr_atomic_long_increment");
    CHECK_STATUS(zkr_atomic_long_subtract(a, -1, &v), ZKR_OVERFLOW, "zkr_atomic_long_subtract");
    CHECK_OK(zkr_atomic_long_get(a, &v));
    CHECK_MSG(v.post_value == INT64_MAX, "the counter moved to %" PRId64, v.post_value);
    CHECK_OK(zkr_atomic_long_force_set(a, INT64_MIN));
    CHECK_STATUS(zkr_atomic_long_decrement(a, &v), ZKR_OVERFLOW, "zkr_atomic_long_decrement");
    CHECK_OK(zkr_atomic_long_add(a, 1, &v)); /* away from the edge: fine */
    CHECK(v.succeeded && v.post_value == INT64_MIN + 1);
    CHECK_OK(zkr_atomic_int_force_set(i, INT32_MIN));
    CHECK_STATUS(zkr_atomic_int_add(i, -1, &v), ZKR_OVERFLOW, "zkr_atomic_int_add");
    CHECK_OK(zkr_atomic_int_get(i, &v));
    CHECK(v.post_value == INT32_MIN);
    zkr_atomic_int_free(i);
    zkr_atomic_long_free(a);
    zkr_client_free(c);
}

typedef struct count_seen {
    zt_event event;
    zkr_versioned_value last;
} count_seen;

static void record_count(zkr_versioned_value value, void *user_data) {
    count_seen *s = (count_seen *)user_data;
    s->last = value;
    zt_event_signal(&s->event, value.value);
}

static void test_shared_count_is_seen_by_another_client(void) {
    char path[128];
    zt_path(path, sizeof path, "shared-count");
    zkr_client *c1 = NULL, *c2 = NULL;
    zkr_shared_count *a = NULL, *b = NULL;
    CHECK_OK(zt_connect_client(&c1));
    CHECK_OK(zt_connect_client(&c2));
    CHECK_OK(zkr_shared_count_new(c1, path, 5, &a));
    CHECK_OK(zkr_shared_count_new(c2, path, 1000, &b));
    int32_t n = 0;
    CHECK_OK(zkr_shared_count_get_count(a, &n));
    CHECK(n == 5);
    CHECK_STATUS(zkr_shared_count_set_count(a, 1), ZKR_INVALID_ARGUMENT, "zkr_shared_count_set_count"); /* not started */
    CHECK_OK(zkr_shared_count_start(a));
    CHECK_OK(zkr_shared_count_start(b));
    CHECK_OK(zkr_shared_count_get_count(b, &n));
    CHECK_MSG(n == 5, "the second count must read the first one's seed, got %d", n);
    count_seen s;
    memset(&s, 0, sizeof s);
    zt_event_init(&s.event);
    uint64_t id = 0;
    CHECK_OK(zkr_shared_count_add_listener(b, record_count, &s, &id));
    CHECK_OK(zkr_shared_count_set_count(a, 42));
    CHECK_MSG(zt_event_wait(&s.event, 1, 10000), "the other client did not hear the change");
    CHECK(s.last.value == 42);
    CHECK_OK(zkr_shared_count_get_count(b, &n));
    CHECK(n == 42);
    zkr_versioned_value vv, stale = {0, 5};
    CHECK_OK(zkr_shared_count_get_versioned_value(b, &vv));
    CHECK(vv.value == 42 && vv.version >= 1);
    bool set = true;
    CHECK_OK(zkr_shared_count_try_set_count(b, stale, 7, &set));
    CHECK_MSG(!set, "a stale versioned value must not set");
    CHECK_OK(zkr_shared_count_try_set_count(b, vv, 43, &set));
    CHECK(set);
    CHECK_OK(zkr_shared_count_remove_listener(b, id));
    CHECK_OK(zkr_shared_count_close(a));
    CHECK_STATUS(zkr_shared_count_set_count(a, 1), ZKR_CLOSED, "zkr_shared_count_set_count");
    CHECK_OK(zkr_shared_count_add_listener(a, record_count, &s, &id)); /* freed while registered */
    zkr_shared_count_free(a);
    zkr_shared_count_free(b);
    zkr_shared_count_free(NULL);
    zkr_client_free(c1);
    zkr_client_free(c2);
    zt_event_destroy(&s.event);
}

typedef struct count_error {
    zt_event event;
    zkr_status status;
    int32_t version;
} count_error;

static void record_count_error(zkr_status status, int32_t version, void *user_data) {
    count_error *e = (count_error *)user_data;
    e->status = status;
    e->version = version;
    zt_event_signal(&e->event, (int)status);
}

/* Someone writes data that is not a count into the node: the error callback hears
 * ZKR_CORRUPTED_DATA with the data version, and the getters fail with ZKR_CORRUPTED_DATA (never
 * the stale count) until a valid value is written, which the change callback hears. */
static void test_shared_count_reports_data_that_is_not_a_count(void) {
    char path[128];
    zt_path(path, sizeof path, "shared-count-garbage");
    zkr_client *c = NULL, *other = NULL;
    zkr_shared_count *sc = NULL;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zt_connect_client(&other));
    CHECK_OK(zkr_shared_count_new(c, path, 5, &sc));
    CHECK_OK(zkr_shared_count_start(sc));
    count_error *e = calloc(1, sizeof *e);
    count_seen *s = calloc(1, sizeof *s);
    CHECK(e != NULL && s != NULL);
    zt_event_init(&e->event);
    zt_event_init(&s->event);
    uint64_t id = 0;
    CHECK_OK(zkr_shared_count_set_error_callback(sc, record_count_error, e));
    CHECK_OK(zkr_shared_count_add_listener(sc, record_count, s, &id));
    zkr_stat st;
    CHECK_OK(zkr_client_set_data(other, path, (const uint8_t *)"abc", 3, -1, &st));
    CHECK_MSG(zt_event_wait(&e->event, 1, 10000), "no error callback within 10 s");
    CHECK(e->status == ZKR_CORRUPTED_DATA && e->version == st.version);
    int32_t n = 77;
    CHECK_STATUS(zkr_shared_count_get_count(sc, &n), ZKR_CORRUPTED_DATA, "zkr_shared_count_get_count");
    CHECK(n == 77);
    CHECK(strstr(zkr_last_error_message(), path) != NULL);
    zkr_versioned_value vv = {-7, -7};
    CHECK_STATUS(zkr_shared_count_get_versioned_value(sc, &vv), ZKR_CORRUPTED_DATA,
                 "zkr_shared_count_get_versioned_value");
    CHECK(vv.version == -7);
    /* A valid value again: 42, 4 bytes big-endian. */
    const uint8_t forty_two[4] = {0, 0, 0, 42};
    CHECK_OK(zkr_client_set_data(other, path, forty_two, 4, -1, NULL));
    CHECK_MSG(zt_event_wait(&s->event, 1, 10000), "the repaired value was not heard");
    CHECK(s->last.value == 42);
    CHECK_OK(zkr_shared_count_get_count(sc, &n));
    CHECK(n == 42);
    CHECK(zt_event_count(&e->event) == 1);
    /* Removed: the user data may go at once. */
    CHECK_OK(zkr_shared_count_set_error_callback(sc, NULL, NULL));
    zt_event_destroy(&e->event);
    free(e);
    zkr_shared_count_free(sc);
    zt_event_destroy(&s->event);
    free(s);
    zkr_client_free(other);
    zkr_client_free(c);
}

int main(int argc, char **argv) {
    zt_begin(argc, argv);
    RUN(test_seed_10_threads_x_100_add_and_get_is_1000);
    RUN(test_curator_operations_report_pre_and_post_values);
    RUN(test_int_counter_and_corrupted_data);
    RUN(test_shared_count_is_seen_by_another_client);
    RUN(test_add_that_would_overflow_is_overflow_and_writes_nothing);
    RUN(test_shared_count_reports_data_that_is_not_a_count);
    return zt_end("test_atomic");
}
