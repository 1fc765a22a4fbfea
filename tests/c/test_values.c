/* SharedValue, DistributedAtomicValue (zkr_atomic_bytes), CachedAtomicLong/Integer and the
 * semaphore whose max leases come from a SharedCount, through the C API. */
#include "testutil.h"

typedef struct value_seen {
    zt_event event;
    pthread_mutex_t mu;
    int32_t version;
    uint8_t data[64];
    size_t len;
} value_seen;

static void record_value(int32_t version, const uint8_t *data, size_t len, void *user_data) {
    value_seen *s = (value_seen *)user_data;
    pthread_mutex_lock(&s->mu);
    s->version = version;
    s->len = len < sizeof s->data ? len : sizeof s->data;
    if (len > 0) memcpy(s->data, data, s->len);
    pthread_mutex_unlock(&s->mu);
    zt_event_signal(&s->event, (int)version);
}

static bool buffer_is(const zkr_buffer *b, const void *bytes, size_t len) {
    return b != NULL && b->len == len && (len == 0 || memcmp(b->data, bytes, len) == 0);
}

static void test_shared_value_bytes_versions_and_listeners(void) {
    char path[128];
    zt_path(path, sizeof path, "shared-value");
    zkr_client *c1 = NULL, *c2 = NULL;
    zkr_shared_value *a = NULL, *b = NULL;
    CHECK_OK(zt_connect_client(&c1));
    CHECK_OK(zt_connect_client(&c2));
    CHECK_OK(zkr_shared_value_new(c1, path, (const uint8_t *)"seed", 4, &a));
    CHECK_OK(zkr_shared_value_new(c2, path, NULL, 0, &b));
    zkr_buffer *v = NULL;
    int32_t version = 0;
    CHECK_OK(zkr_shared_value_get_value(a, &v, &version));
    CHECK(buffer_is(v, "seed", 4) && version == -1);
    zkr_buffer_free(v);
    CHECK_STATUS(zkr_shared_value_set_value(a, (const uint8_t *)"x", 1), ZKR_INVALID_ARGUMENT,
                 "zkr_shared_value_set_value"); /* not started */
    CHECK_OK(zkr_shared_value_start(a));
    CHECK_OK(zkr_shared_value_start(b));
    CHECK_OK(zkr_shared_value_get_value(b, &v, &version));
    CHECK_MSG(buffer_is(v, "seed", 4) && version == 0, "b must read a's seed at version 0");
    zkr_buffer_free(v);

    value_seen *s = calloc(1, sizeof *s);
    CHECK(s != NULL);
    zt_event_init(&s->event);
    pthread_mutex_init(&s->mu, NULL);
    uint64_t id = 0;
    CHECK_OK(zkr_shared_value_add_listener(b, record_value, s, &id));
    bool set = false;
    CHECK_OK(zkr_shared_value_try_set_value(a, 0, (const uint8_t *)"seed", 4, (const uint8_t *)"one", 3, &set));
    CHECK(set);
    CHECK_MSG(zt_event_wait(&s->event, 1, 10000), "the other client did not hear the change");
    pthread_mutex_lock(&s->mu);
    bool heard = s->version == 1 && s->len == 3 && memcmp(s->data, "one", 3) == 0;
    pthread_mutex_unlock(&s->mu);
    CHECK(heard);
    /* Stale: version 0 is gone; nothing written. */
    CHECK_OK(zkr_shared_value_try_set_value(a, 0, (const uint8_t *)"seed", 4, (const uint8_t *)"stale", 5, &set));
    CHECK_MSG(!set, "a stale version must not set");
    zkr_buffer *raw = NULL;
    CHECK_OK(zkr_client_get_data(c1, path, &raw, NULL));
    CHECK(buffer_is(raw, "one", 3));
    zkr_buffer_free(raw);
    /* Bytes with a NUL, and the empty value. */
    const uint8_t binary[3] = {0, 255, 0};
    CHECK_OK(zkr_shared_value_set_value(b, binary, 3));
    CHECK_MSG(zt_event_wait(&s->event, 2, 10000), "b's own write was not heard");
    double deadline = zt_now_ms() + 10000;
    bool seen = false;
    while (!seen && zt_now_ms() < deadline) {
        CHECK_OK(zkr_shared_value_get_value(a, &v, &version));
        seen = buffer_is(v, binary, 3) && version == 2;
        zkr_buffer_free(v);
        if (!seen) {
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL);
        }
    }
    CHECK_MSG(seen, "a did not see b's bytes at version 2");
    CHECK_OK(zkr_shared_value_try_set_value(a, 2, binary, 3, NULL, 0, &set));
    CHECK(set);
    /* Bad input. */
    CHECK_STATUS(zkr_shared_value_set_value(a, NULL, 2), ZKR_INVALID_ARGUMENT, "zkr_shared_value_set_value");
    CHECK_STATUS(zkr_shared_value_try_set_value(a, 3, NULL, 0, NULL, 0, NULL), ZKR_INVALID_ARGUMENT,
                 "zkr_shared_value_try_set_value");
    CHECK_STATUS(zkr_shared_value_add_listener(a, NULL, NULL, &id), ZKR_INVALID_ARGUMENT,
                 "zkr_shared_value_add_listener");
    CHECK_STATUS(zkr_shared_value_new(c1, "no-slash", NULL, 0, &a), ZKR_INVALID_ARGUMENT, "zkr_shared_value_new");
    CHECK_OK(zkr_shared_value_remove_listener(b, id));
    CHECK_OK(zkr_shared_value_close(a));
    CHECK_OK(zkr_shared_value_close(a));
    CHECK_STATUS(zkr_shared_value_set_value(a, binary, 1), ZKR_CLOSED, "zkr_shared_value_set_value");
    CHECK_OK(zkr_shared_value_add_listener(b, record_value, s, &id)); /* freed while registered */
    zkr_shared_value_free(a);
    zkr_shared_value_free(b);
    zkr_shared_value_free(NULL);
    zt_event_destroy(&s->event);
    pthread_mutex_destroy(&s->mu);
    free(s);
    zkr_client_free(c1);
    zkr_client_free(c2);
}

static void test_atomic_bytes_curator_semantics(void) {
    char path[128], lock_path[160], long_path[160];
    zt_path(path, sizeof path, "atomic-bytes");
    snprintf(lock_path, sizeof lock_path, "%s-lock", path);
    snprintf(long_path, sizeof long_path, "%s-long", path);
    zkr_client *c = NULL;
    zkr_atomic_bytes *a = NULL, *promoted = NULL;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_atomic_bytes_new(c, path, &a));
    zkr_atomic_bytes_result *r = NULL;
    CHECK_OK(zkr_atomic_bytes_get(a, &r));
    CHECK_MSG(r->succeeded && r->pre_value == NULL && r->post_value == NULL, "a missing node is NULL");
    zkr_atomic_bytes_result_free(r);
    CHECK_OK(zkr_atomic_bytes_compare_and_set(a, NULL, 0, (const uint8_t *)"x", 1, &r));
    CHECK_MSG(!r->succeeded, "a missing node never matches");
    zkr_atomic_bytes_result_free(r);
    bool created = false;
    CHECK_OK(zkr_atomic_bytes_initialize(a, (const uint8_t *)"start", 5, &created));
    CHECK(created);
    CHECK_OK(zkr_atomic_bytes_initialize(a, (const uint8_t *)"again", 5, &created));
    CHECK(!created);
    CHECK_OK(zkr_atomic_bytes_compare_and_set(a, (const uint8_t *)"star", 4, (const uint8_t *)"no", 2, &r));
    CHECK(!r->succeeded && buffer_is(r->pre_value, "start", 5) && r->post_value == NULL);
    zkr_atomic_bytes_result_free(r);
    CHECK_OK(zkr_atomic_bytes_compare_and_set(a, (const uint8_t *)"start", 5, (const uint8_t *)"next", 4, &r));
    CHECK(r->succeeded && buffer_is(r->pre_value, "start", 5) && buffer_is(r->post_value, "next", 4));
    zkr_atomic_bytes_result_free(r);
    /* trySet with the promoted lock as fallback. */
    zkr_retry_policy retry = zkr_retry_n_times(3, 10);
    CHECK_OK(zkr_atomic_bytes_new_with(c, path, &retry, lock_path, 5000, &promoted));
    CHECK_OK(zkr_atomic_bytes_try_set(promoted, (const uint8_t *)"tried", 5, &r));
    CHECK(r->succeeded && buffer_is(r->post_value, "tried", 5) && r->stats.optimistic_tries >= 1);
    zkr_atomic_bytes_result_free(r);
    CHECK_OK(zkr_atomic_bytes_force_set(a, (const uint8_t *)"forced", 6));
    zkr_buffer *raw = NULL;
    CHECK_OK(zkr_client_get_data(c, path, &raw, NULL));
    CHECK(buffer_is(raw, "forced", 6));
    zkr_buffer_free(raw);
    /* The same node as Curator's DistributedAtomicLong: 8 bytes, big-endian. */
    zkr_atomic_long *counter = NULL;
    zkr_atomic_bytes *as_bytes = NULL;
    CHECK_OK(zkr_atomic_long_new(c, long_path, &counter));
    CHECK_OK(zkr_atomic_long_force_set(counter, 41));
    CHECK_OK(zkr_atomic_bytes_new(c, long_path, &as_bytes));
    const uint8_t b41[8] = {0, 0, 0, 0, 0, 0, 0, 41}, b42[8] = {0, 0, 0, 0, 0, 0, 0, 42};
    CHECK_OK(zkr_atomic_bytes_compare_and_set(as_bytes, b41, 8, b42, 8, &r));
    CHECK(r->succeeded);
    zkr_atomic_bytes_result_free(r);
    zkr_atomic_value v;
    CHECK_OK(zkr_atomic_long_get(counter, &v));
    CHECK(v.post_value == 42);
    /* Bad input. */
    CHECK_STATUS(zkr_atomic_bytes_try_set(a, NULL, 3, &r), ZKR_INVALID_ARGUMENT, "zkr_atomic_bytes_try_set");
    CHECK_STATUS(zkr_atomic_bytes_get(a, NULL), ZKR_INVALID_ARGUMENT, "zkr_atomic_bytes_get");
    CHECK_STATUS(zkr_atomic_bytes_new_with(c, path, NULL, lock_path, -2, &a), ZKR_INVALID_ARGUMENT,
                 "zkr_atomic_bytes_new_with");
    CHECK_STATUS(zkr_atomic_bytes_get((zkr_atomic_bytes *)counter, &r), ZKR_INVALID_ARGUMENT, "zkr_atomic_bytes_get");
    zkr_atomic_bytes_result_free(NULL);
    zkr_atomic_bytes_free(as_bytes);
    zkr_atomic_long_free(counter);
    zkr_atomic_bytes_free(promoted);
    zkr_atomic_bytes_free(a);
    zkr_client_free(c);
}

#define CACHED_IDS 40

typedef struct cached_arg {
    zkr_cached_atomic_long *cached;
    int64_t ids[CACHED_IDS];
    int errors;
} cached_arg;

static void *take_ids(void *p) {
    cached_arg *a = (cached_arg *)p;
    for (int got = 0; got < CACHED_IDS;) {
        zkr_atomic_value v;
        if (zkr_cached_atomic_long_next(a->cached, &v) != ZKR_OK) {
            fprintf(stderr, "    next failed: %s\n", zkr_last_error_message());
            a->errors++;
            return NULL;
        }
        if (!v.succeeded) continue;
        if (v.pre_value != v.post_value - 1) a->errors++;
        a->ids[got++] = v.post_value;
    }
    return NULL;
}

static void test_cached_counters_hand_out_each_id_once(void) {
    char path[128], int_path[160];
    zt_path(path, sizeof path, "cached");
    snprintf(int_path, sizeof int_path, "%s-int", path);
    zkr_client *c1 = NULL, *c2 = NULL;
    CHECK_OK(zt_connect_client(&c1));
    CHECK_OK(zt_connect_client(&c2));
    zkr_atomic_long *l1 = NULL, *l2 = NULL;
    CHECK_OK(zkr_atomic_long_new(c1, path, &l1));
    CHECK_OK(zkr_atomic_long_new(c2, path, &l2));
    cached_arg args[3];
    memset(args, 0, sizeof args);
    CHECK_OK(zkr_cached_atomic_long_new(l1, 5, &args[0].cached));
    CHECK_OK(zkr_cached_atomic_long_new(l2, 7, &args[1].cached));
    args[2].cached = args[0].cached; /* two threads on one cached counter */
    zkr_atomic_long_free(l2);         /* the cached counter does not need its handle */
    pthread_t threads[3];
    for (int i = 0; i < 3; i++) CHECK(pthread_create(&threads[i], NULL, take_ids, &args[i]) == 0);
    for (int i = 0; i < 3; i++) pthread_join(threads[i], NULL);
    int64_t all[3 * CACHED_IDS];
    for (int i = 0; i < 3; i++) {
        CHECK_MSG(args[i].errors == 0, "thread %d: %d errors", i, args[i].errors);
        memcpy(all + i * CACHED_IDS, args[i].ids, sizeof args[i].ids);
    }
    for (int i = 0; i < 3 * CACHED_IDS; i++) {
        CHECK(all[i] >= 1);
        for (int j = i + 1; j < 3 * CACHED_IDS; j++) CHECK_MSG(all[i] != all[j], "id %" PRId64 " handed out twice", all[i]);
    }
    zkr_cached_atomic_long_free(args[0].cached);
    zkr_cached_atomic_long_free(args[1].cached);

    zkr_atomic_int *counter = NULL;
    zkr_cached_atomic_int *ci = NULL;
    CHECK_OK(zkr_atomic_int_new(c1, int_path, &counter));
    CHECK_OK(zkr_cached_atomic_int_new(counter, 3, &ci));
    for (int64_t want = 1; want <= 4; want++) {
        zkr_atomic_value v;
        CHECK_OK(zkr_cached_atomic_int_next(ci, &v));
        CHECK_MSG(v.succeeded && v.post_value == want, "id %" PRId64 ", expected %" PRId64, v.post_value, want);
    }
    zkr_atomic_value v;
    CHECK_OK(zkr_atomic_int_get(counter, &v));
    CHECK_MSG(v.post_value == 6, "two ranges of 3 reserved, counter at %" PRId64, v.post_value);
    zkr_cached_atomic_int *bad = NULL;
    CHECK_STATUS(zkr_cached_atomic_int_new(counter, 0, &bad), ZKR_INVALID_ARGUMENT, "zkr_cached_atomic_int_new");
    CHECK_STATUS(zkr_cached_atomic_long_new((zkr_atomic_long *)counter, 3, NULL), ZKR_INVALID_ARGUMENT,
                 "zkr_cached_atomic_long_new");
    CHECK(bad == NULL);
    zkr_cached_atomic_int_free(ci);
    zkr_atomic_int_free(counter);
    zkr_atomic_long_free(l1);
    zkr_client_free(c1);
    zkr_client_free(c2);
}

static void test_semaphore_limit_follows_a_shared_count(void) {
    char path[128], count_path[160];
    zt_path(path, sizeof path, "semcount");
    snprintf(count_path, sizeof count_path, "%s-max", path);
    zkr_client *c1 = NULL, *c2 = NULL;
    CHECK_OK(zt_connect_client(&c1));
    CHECK_OK(zt_connect_client(&c2));
    zkr_shared_count *n1 = NULL, *n2 = NULL;
    CHECK_OK(zkr_shared_count_new(c1, count_path, 1, &n1));
    CHECK_OK(zkr_shared_count_new(c2, count_path, 1, &n2));
    CHECK_OK(zkr_shared_count_start(n1));
    CHECK_OK(zkr_shared_count_start(n2));
    zkr_semaphore *s1 = NULL, *s2 = NULL;
    CHECK_OK(zkr_semaphore_new_with_count(c1, path, n1, &s1));
    CHECK_OK(zkr_semaphore_new_with_count(c2, path, n2, &s2));
    zkr_leases *first = NULL, *second = NULL;
    CHECK_OK(zkr_semaphore_acquire(s1, 1, 20000, &first));
    CHECK(first != NULL);
    CHECK_OK(zkr_semaphore_acquire(s2, 1, 200, &second));
    CHECK_MSG(second == NULL, "a limit of 1 must keep the second out");
    /* More than the count waits (it may be raised) instead of being refused. */
    CHECK_OK(zkr_semaphore_acquire(s2, 2, 100, &second));
    CHECK(second == NULL);
    /* Raised from the first client: the second one's semaphore follows its count live. */
    CHECK_OK(zkr_shared_count_set_count(n1, 2));
    CHECK_OK(zkr_semaphore_acquire(s2, 1, 20000, &second));
    CHECK_MSG(second != NULL, "admitted once the count was raised");
    CHECK_OK(zkr_semaphore_return_leases(s2, second));
    zkr_leases_free(second);
    CHECK_OK(zkr_semaphore_return_leases(s1, first));
    zkr_leases_free(first);
    CHECK_STATUS(zkr_semaphore_new_with_count(c1, path, NULL, &s1), ZKR_INVALID_ARGUMENT,
                 "zkr_semaphore_new_with_count");
    CHECK_STATUS(zkr_semaphore_new_with_count(c1, path, (zkr_shared_count *)c2, &s1), ZKR_INVALID_ARGUMENT,
                 "zkr_semaphore_new_with_count");
    zkr_semaphore_free(s1);
    zkr_semaphore_free(s2);
    zkr_shared_count_free(n1);
    zkr_shared_count_free(n2);
    zkr_client_free(c1);
    zkr_client_free(c2);
}

int main(int argc, char **argv) {
    zt_begin(argc, argv);
    RUN(test_shared_value_bytes_versions_and_listeners);
    RUN(test_atomic_bytes_curator_semantics);
    RUN(test_cached_counters_hand_out_each_id_once);
    RUN(test_semaphore_limit_follows_a_shared_count);
    return zt_end("test_values");
}
