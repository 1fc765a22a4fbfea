/* Queue extras through the C API (issue 32): put_multi in Curator's framing, put listeners,
 * state listeners, error modes (REQUEUE at the tail, DELETE), and the QueueSharder. */
#include "testutil.h"

typedef struct put_log {
    zt_event ev;
    pthread_mutex_t mu;
    char nodes[8][160];
    size_t counts[8];
    bool multi[8];
    char first[8][16];
} put_log;

static void on_put(const zkr_queue_put_event *e, void *user_data) {
    put_log *log = (put_log *)user_data;
    pthread_mutex_lock(&log->mu);
    int i = zt_event_count(&log->ev);
    if (i < 8) {
        snprintf(log->nodes[i], sizeof log->nodes[i], "%s", e->node);
        log->counts[i] = e->count;
        log->multi[i] = e->multi;
        size_t n = e->count > 0 ? e->messages[0].len : 0;
        if (n > 15) n = 15;
        if (n > 0) memcpy(log->first[i], e->messages[0].data, n);
        log->first[i][n] = 0;
    }
    pthread_mutex_unlock(&log->mu);
    zt_event_signal(&log->ev, i);
}

static void test_put_multi_and_put_listeners(void) {
    char path[128], locks[128];
    zt_path(path, sizeof path, "pm");
    zt_path(locks, sizeof locks, "pm-locks");
    zkr_client *c;
    CHECK_OK(zt_connect_client(&c));
    zkr_queue *q;
    CHECK_OK(zkr_queue_new(c, path, locks, 0, &q));
    put_log log;
    memset(&log, 0, sizeof log);
    zt_event_init(&log.ev);
    pthread_mutex_init(&log.mu, NULL);
    uint64_t id = 0;
    CHECK_OK(zkr_queue_add_put_listener(q, on_put, &log, &id));
    zkr_bytes three[3] = {{(const uint8_t *)"alpha", 5}, {NULL, 0}, {(const uint8_t *)"gamma", 5}};
    bool put = false;
    CHECK_OK(zkr_queue_put_multi(q, three, 3, -1, &put));
    CHECK(put);
    CHECK_OK(zkr_queue_put(q, (const uint8_t *)"single", 6, -1, &put));
    CHECK(zt_event_wait(&log.ev, 2, 10000));
    pthread_mutex_lock(&log.mu);
    CHECK(log.counts[0] == 3 && log.multi[0] && strcmp(log.first[0], "alpha") == 0);
    CHECK(log.counts[1] == 1 && !log.multi[1] && strcmp(log.first[1], "single") == 0);
    CHECK(strncmp(log.nodes[0], path, strlen(path)) == 0 && strstr(log.nodes[0], "/queue-") != NULL);
    pthread_mutex_unlock(&log.mu);
    /* One node in Curator's ItemSerializer framing. */
    zkr_string_list *kids;
    CHECK_OK(zkr_client_get_children(c, path, &kids));
    CHECK(kids->len == 2);
    zkr_string_list_free(kids);
    zkr_queue_item *item;
    CHECK_OK(zkr_queue_take(q, 1000, &item));
    CHECK(item != NULL);
    size_t count = 0, len = 0;
    const uint8_t *data;
    CHECK_OK(zkr_queue_item_message_count(item, &count));
    CHECK(count == 3);
    CHECK_OK(zkr_queue_item_message(item, 0, &data, &len));
    CHECK(len == 5 && memcmp(data, "alpha", 5) == 0);
    CHECK_OK(zkr_queue_item_message(item, 1, &data, &len));
    CHECK(len == 0 && data == NULL);
    CHECK_OK(zkr_queue_item_message(item, 2, &data, &len));
    CHECK(len == 5 && memcmp(data, "gamma", 5) == 0);
    CHECK_STATUS(zkr_queue_item_message(item, 3, &data, &len), ZKR_INVALID_ARGUMENT, "zkr_queue_item_message");
    CHECK_OK(zkr_queue_item_done(item));
    zkr_queue_item_free(item);
    CHECK_OK(zkr_queue_take(q, 1000, &item));
    CHECK_OK(zkr_queue_item_message_count(item, &count));
    CHECK(count == 1);
    CHECK_OK(zkr_queue_item_done(item));
    zkr_queue_item_free(item);
    /* Removed: no more calls. Bad input is refused. */
    CHECK_OK(zkr_queue_remove_put_listener(q, id));
    CHECK_STATUS(zkr_queue_remove_put_listener(q, id), ZKR_INVALID_ARGUMENT, "zkr_queue_remove_put_listener");
    CHECK_OK(zkr_queue_put(q, (const uint8_t *)"unheard", 7, -1, &put));
    CHECK_STATUS(zkr_queue_put_multi(q, three, 0, -1, &put), ZKR_INVALID_ARGUMENT, "zkr_queue_put_multi");
    zkr_bytes bad[1] = {{NULL, 3}};
    CHECK_STATUS(zkr_queue_put_multi(q, bad, 1, -1, &put), ZKR_INVALID_ARGUMENT, "zkr_queue_put_multi");
    CHECK_STATUS(zkr_queue_put_multi(q, NULL, 2, -1, &put), ZKR_INVALID_ARGUMENT, "zkr_queue_put_multi");
    CHECK_STATUS(zkr_queue_put_multi_with_priority(q, three, 1, 1, -1, &put), ZKR_INVALID_ARGUMENT,
                 "zkr_queue_put_multi_with_priority");
    CHECK_STATUS(zkr_queue_add_put_listener(q, NULL, NULL, &id), ZKR_INVALID_ARGUMENT, "zkr_queue_add_put_listener");
    CHECK(zt_event_count(&log.ev) == 2);
    zkr_queue_free(q);
    CHECK(zt_event_count(&log.ev) == 2);
    pthread_mutex_destroy(&log.mu);
    zt_event_destroy(&log.ev);

    /* Priority and delay put_multi. */
    char ppath[128];
    zt_path(ppath, sizeof ppath, "pm-prio");
    zkr_queue *pq;
    CHECK_OK(zkr_priority_queue_new(c, ppath, NULL, 0, &pq));
    zkr_bytes late[2] = {{(const uint8_t *)"l1", 2}, {(const uint8_t *)"l2", 2}};
    zkr_bytes early[1] = {{(const uint8_t *)"e", 1}};
    CHECK_OK(zkr_queue_put_multi_with_priority(pq, late, 2, 5, -1, &put));
    CHECK_OK(zkr_queue_put_multi_with_priority(pq, early, 1, -5, -1, &put));
    CHECK_OK(zkr_queue_take(pq, 1000, &item));
    CHECK_OK(zkr_queue_item_message_count(item, &count));
    CHECK(count == 1);
    zkr_queue_item_free(item);
    CHECK_OK(zkr_queue_take(pq, 1000, &item));
    CHECK_OK(zkr_queue_item_message_count(item, &count));
    CHECK(count == 2);
    zkr_queue_item_free(item);
    zkr_queue_free(pq);
    char dpath[128];
    zt_path(dpath, sizeof dpath, "pm-delay");
    zkr_queue *dq;
    CHECK_OK(zkr_delay_queue_new(c, dpath, NULL, 0, &dq));
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t due = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 + 300;
    CHECK_OK(zkr_queue_put_multi_with_delay(dq, late, 2, due, -1, &put));
    CHECK_OK(zkr_queue_take(dq, 20000, &item));
    CHECK(item != NULL);
    clock_gettime(CLOCK_REALTIME, &now);
    CHECK((int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 >= due);
    CHECK_OK(zkr_queue_item_message_count(item, &count));
    CHECK(count == 2);
    zkr_queue_item_free(item);
    zkr_queue_free(dq);
    zkr_client_free(c);
}

static void on_state(zkr_connection_state state, void *user_data) {
    zt_event_signal((zt_event *)user_data, (int)state);
}

static void test_state_listener(void) {
    char path[128];
    zt_path(path, sizeof path, "states");
    zkr_client *c;
    CHECK_OK(zt_connect_client(&c));
    zkr_queue *q;
    CHECK_OK(zkr_queue_new(c, path, NULL, 0, &q));
    zt_event ev;
    zt_event_init(&ev);
    uint64_t id = 0;
    CHECK_OK(zkr_queue_add_listener(q, on_state, &ev, &id));
    int64_t sid = 0;
    CHECK_OK(zkr_client_session_id(c, &sid));
    CHECK_OK(zkr_client_expire_session_for_testing(c));
    CHECK(zt_event_wait(&ev, 1, 20000));
    CHECK(zt_wait_new_session(c, sid, 20000));
    CHECK(zt_event_wait(&ev, 2, 20000));
    CHECK_OK(zkr_queue_remove_listener(q, id));
    CHECK_STATUS(zkr_queue_remove_listener(q, id), ZKR_INVALID_ARGUMENT, "zkr_queue_remove_listener");
    CHECK_OK(zkr_queue_add_listener(q, on_state, &ev, &id));
    CHECK_OK(zkr_queue_close(q));
    CHECK_OK(zkr_queue_close(q));
    CHECK_STATUS(zkr_queue_remove_listener(q, id), ZKR_INVALID_ARGUMENT, "zkr_queue_remove_listener");
    /* Closed: the queue itself still works. */
    bool put = false;
    CHECK_OK(zkr_queue_put(q, (const uint8_t *)"x", 1, -1, &put));
    CHECK(put);
    zkr_queue_free(q);
    zkr_client_free(c);
    zt_event_destroy(&ev);
}

static void test_error_modes(void) {
    char path[128], locks[128];
    zt_path(path, sizeof path, "em");
    zt_path(locks, sizeof locks, "em-locks");
    zkr_client *c;
    CHECK_OK(zt_connect_client(&c));
    zkr_queue *q;
    CHECK_OK(zkr_queue_new(c, path, locks, 0, &q));
    zkr_error_mode mode = 99;
    CHECK_OK(zkr_queue_error_mode(q, &mode));
    CHECK(mode == ZKR_ERROR_MODE_REQUEUE);
    bool put = false;
    CHECK_OK(zkr_queue_put(q, (const uint8_t *)"a", 1, -1, &put));
    CHECK_OK(zkr_queue_put(q, (const uint8_t *)"b", 1, -1, &put));
    zkr_queue_item *item;
    const uint8_t *data;
    size_t len;
    CHECK_OK(zkr_queue_take(q, 1000, &item));
    CHECK_OK(zkr_queue_item_data(item, &data, &len));
    CHECK(len == 1 && data[0] == 'a');
    CHECK_OK(zkr_queue_item_fail(item)); /* requeued at the tail */
    CHECK_STATUS(zkr_queue_item_fail(item), ZKR_INVALID_ARGUMENT, "zkr_queue_item_fail");
    zkr_queue_item_free(item);
    CHECK_OK(zkr_queue_take(q, 1000, &item));
    CHECK_OK(zkr_queue_item_data(item, &data, &len));
    CHECK(len == 1 && data[0] == 'b');
    CHECK_OK(zkr_queue_item_done(item));
    zkr_queue_item_free(item);
    CHECK_OK(zkr_queue_set_error_mode(q, ZKR_ERROR_MODE_DELETE));
    CHECK_OK(zkr_queue_error_mode(q, &mode));
    CHECK(mode == ZKR_ERROR_MODE_DELETE);
    CHECK_OK(zkr_queue_take(q, 1000, &item));
    CHECK_OK(zkr_queue_item_data(item, &data, &len));
    CHECK(len == 1 && data[0] == 'a');
    CHECK_OK(zkr_queue_item_fail(item)); /* deleted */
    zkr_queue_item_free(item);
    size_t n = 9;
    CHECK_OK(zkr_queue_len(q, &n));
    CHECK(n == 0);
    CHECK_STATUS(zkr_queue_set_error_mode(q, 7), ZKR_INVALID_ARGUMENT, "zkr_queue_set_error_mode");
    zkr_queue *plain;
    CHECK_OK(zkr_queue_new(c, path, NULL, 0, &plain));
    CHECK_STATUS(zkr_queue_set_error_mode(plain, ZKR_ERROR_MODE_DELETE), ZKR_INVALID_ARGUMENT,
                 "zkr_queue_set_error_mode");
    zkr_queue_free(plain);
    zkr_queue_free(q);
    zkr_client_free(c);
}

static void test_sharder(void) {
    char queues[128], leader[128], locks[128];
    zt_path(queues, sizeof queues, "shards");
    zt_path(leader, sizeof leader, "shards-leader");
    zt_path(locks, sizeof locks, "shards-locks");
    zkr_client *c;
    CHECK_OK(zt_connect_client(&c));
    zkr_queue_sharder *s;
    CHECK_OK(zkr_queue_sharder_new(c, queues, leader, locks, 4, 100, 2, &s));
    zkr_queue *q = NULL;
    CHECK_STATUS(zkr_queue_sharder_get_queue(s, &q), ZKR_INVALID_ARGUMENT, "zkr_queue_sharder_get_queue");
    CHECK_OK(zkr_queue_sharder_start(s));
    size_t qty = 0;
    CHECK_OK(zkr_queue_sharder_shard_qty(s, &qty));
    CHECK(qty == 1);
    bool leads = false;
    for (int i = 0; i < 1000 && !leads; i++) {
        CHECK_OK(zkr_queue_sharder_is_leader(s, &leads));
        if (!leads) {
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL);
        }
    }
    CHECK(leads);
    bool put = false;
    for (int i = 0; i < 12; i++) {
        CHECK_OK(zkr_queue_sharder_get_queue(s, &q));
        char item[16];
        int l = snprintf(item, sizeof item, "i%d", i);
        CHECK_OK(zkr_queue_put(q, (const uint8_t *)item, (size_t)l, -1, &put));
        zkr_queue_free(q);
    }
    /* Past the threshold (4), the leader adds a second shard, and no more (max 2). */
    double t0 = zt_now_ms();
    while (zt_now_ms() - t0 < 20000) {
        CHECK_OK(zkr_queue_sharder_shard_qty(s, &qty));
        if (qty == 2) break;
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    CHECK(qty == 2);
    zkr_string_list *paths;
    CHECK_OK(zkr_queue_sharder_queue_paths(s, &paths));
    CHECK(paths->len == 2 && strstr(paths->items[0], "/queue-") != NULL);
    zkr_string_list_free(paths);
    int got = 0;
    zkr_queue_item *item;
    for (;;) {
        CHECK_OK(zkr_queue_sharder_take(s, 1000, &item));
        if (item == NULL) break;
        CHECK_OK(zkr_queue_item_done(item));
        zkr_queue_item_free(item);
        got++;
    }
    CHECK(got == 12);
    CHECK_OK(zkr_queue_sharder_close(s));
    CHECK_OK(zkr_queue_sharder_close(s));
    CHECK_STATUS(zkr_queue_sharder_get_queue(s, &q), ZKR_CLOSED, "zkr_queue_sharder_get_queue");
    zkr_queue_sharder_free(s);
    CHECK_STATUS(zkr_queue_sharder_shard_qty(s, &qty), ZKR_INVALID_ARGUMENT, "zkr_queue_sharder_shard_qty");
    CHECK_STATUS(zkr_queue_sharder_new(c, queues, queues, NULL, 0, 0, 0, &s), ZKR_INVALID_ARGUMENT,
                 "zkr_queue_sharder_new");
    CHECK_STATUS(zkr_queue_sharder_new(c, queues, NULL, NULL, 0, 0, 0, &s), ZKR_INVALID_ARGUMENT,
                 "zkr_queue_sharder_new");
    zkr_queue_sharder_free(NULL);
    zkr_client_free(c);
}

int main(int argc, char **argv) {
    zt_begin(argc, argv);
    RUN(test_put_multi_and_put_listeners);
    RUN(test_state_listener);
    RUN(test_error_modes);
    RUN(test_sharder);
    return zt_end("test_queue_extras");
}
