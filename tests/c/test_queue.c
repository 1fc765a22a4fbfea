/* Barriers and queues through the C API: a simple queue's order and timeouts, exactly-once
 * consumption with a lock path (a consumer whose session ends mid-item cannot complete it; the
 * next taker gets a larger fencing token), an item given back (its key kept without a lock
 * path), the variants, a double barrier of three threads, a
 * barrier, and bad input. */
#include "testutil.h"

static void test_simple_queue_order_and_timeouts(void) {
    char path[128];
    zt_path(path, sizeof path, "simple");
    zkr_client *c;
    CHECK_OK(zt_connect_client(&c));
    zkr_simple_queue *q;
    CHECK_OK(zkr_simple_queue_new(c, path, &q));
    zkr_buffer *b = (zkr_buffer *)1;
    CHECK_OK(zkr_simple_queue_take(q, 0, &b));
    CHECK(b == NULL);
    CHECK_OK(zkr_simple_queue_offer(q, (const uint8_t *)"one", 3));
    CHECK_OK(zkr_simple_queue_offer(q, (const uint8_t *)"two", 3));
    CHECK_OK(zkr_simple_queue_peek(q, &b));
    CHECK(b != NULL && b->len == 3 && memcmp(b->data, "one", 3) == 0);
    zkr_buffer_free(b);
    CHECK_OK(zkr_simple_queue_take(q, -1, &b));
    CHECK(b != NULL && memcmp(b->data, "one", 3) == 0);
    zkr_buffer_free(b);
    CHECK_OK(zkr_simple_queue_take(q, 1000, &b));
    CHECK(b != NULL && memcmp(b->data, "two", 3) == 0);
    zkr_buffer_free(b);
    double t0 = zt_now_ms();
    CHECK_OK(zkr_simple_queue_take(q, 200, &b));
    CHECK(b == NULL);
    CHECK(zt_now_ms() - t0 >= 190);
    zkr_simple_queue_free(q);
    zkr_client_free(c);
}

static void test_exactly_once_with_a_lock_path(void) {
    char path[128], locks[128];
    zt_path(path, sizeof path, "queue");
    zt_path(locks, sizeof locks, "queue-locks");
    zkr_client *a, *b;
    CHECK_OK(zt_connect_client(&a));
    CHECK_OK(zt_connect_client(&b));
    zkr_queue *qa, *qb;
    CHECK_OK(zkr_queue_new(a, path, locks, 0, &qa));
    CHECK_OK(zkr_queue_new(b, path, locks, 0, &qb));
    bool put = false;
    CHECK_OK(zkr_queue_put(qa, (const uint8_t *)"x", 1, -1, &put));
    CHECK(put);
    CHECK_OK(zkr_queue_put(qa, (const uint8_t *)"y", 1, -1, &put));
    size_t len = 0;
    CHECK_OK(zkr_queue_len(qa, &len));
    CHECK(len == 2);
    zkr_queue_item *held;
    CHECK_OK(zkr_queue_take(qa, 1000, &held));
    CHECK(held != NULL);
    const uint8_t *data;
    CHECK_OK(zkr_queue_item_data(held, &data, &len));
    CHECK(len == 1 && data[0] == 'x');
    int64_t held_token = 0;
    CHECK_OK(zkr_queue_item_fencing_token(held, &held_token));
    /* The other consumer passes over the held item. */
    zkr_queue_item *other;
    CHECK_OK(zkr_queue_take(qb, 1000, &other));
    CHECK(other != NULL);
    CHECK_OK(zkr_queue_item_data(other, &data, &len));
    CHECK(len == 1 && data[0] == 'y');
    CHECK_OK(zkr_queue_item_done(other));
    CHECK_STATUS(zkr_queue_item_done(other), ZKR_INVALID_ARGUMENT, "zkr_queue_item_done");
    zkr_queue_item_free(other);
    /* The holder's session ends mid-item: the item goes back, with a larger token. */
    int64_t sid = 0;
    CHECK_OK(zkr_client_session_id(a, &sid));
    CHECK_OK(zkr_client_expire_session_for_testing(a));
    CHECK(zt_wait_new_session(a, sid, 20000));
    zkr_queue_item *again;
    CHECK_OK(zkr_queue_take(qb, 10000, &again));
    CHECK(again != NULL);
    int64_t token = 0;
    CHECK_OK(zkr_queue_item_fencing_token(again, &token));
    CHECK(token > held_token);
    CHECK_STATUS(zkr_queue_item_done(held), ZKR_SESSION_EXPIRED, "zkr_queue_item_done");
    zkr_queue_item_free(held);
    CHECK_OK(zkr_queue_item_done(again));
    zkr_queue_item_free(again);
    CHECK_OK(zkr_queue_len(qb, &len));
    CHECK(len == 0);
    /* Released, not completed: taken again. */
    CHECK_OK(zkr_queue_put(qb, (const uint8_t *)"z", 1, -1, &put));
    CHECK_OK(zkr_queue_take(qb, 1000, &again));
    CHECK(again != NULL);
    CHECK_OK(zkr_queue_item_release(again));
    zkr_queue_item_free(again);
    CHECK_OK(zkr_queue_take(qb, 5000, &again));
    CHECK(again != NULL);
    CHECK_OK(zkr_queue_item_done(again));
    zkr_queue_item_free(again);
    zkr_queue_free(qa);
    zkr_queue_free(qb);
    zkr_client_free(a);
    zkr_client_free(b);
}

/* Takes the next item of `q` (within 5 s) into `item` and checks its data is the byte `want`. */
#define TAKE_ONE(q, want, item)                                                              \
    do {                                                                                     \
        const uint8_t *take_data_;                                                           \
        size_t take_len_;                                                                    \
        CHECK_OK(zkr_queue_take((q), 5000, &(item)));                                        \
        CHECK_MSG((item) != NULL, "no item within 5 s (wanted %c)", (want));                 \
        CHECK_OK(zkr_queue_item_data((item), &take_data_, &take_len_));                      \
        CHECK_MSG(take_len_ == 1 && take_data_[0] == (uint8_t)(want),                        \
                  "took %zu bytes starting %c, not %c", take_len_,                           \
                  take_len_ ? (char)take_data_[0] : '-', (want));                            \
    } while (0)

static void test_give_back_without_a_lock_path_keeps_the_priority(void) {
    char path[128];
    zt_path(path, sizeof path, "give-back-prio");
    zkr_client *c;
    CHECK_OK(zt_connect_client(&c));
    zkr_queue *q;
    CHECK_OK(zkr_priority_queue_new(c, path, NULL, 0, &q));
    bool put = false;
    CHECK_OK(zkr_queue_put_with_priority(q, (const uint8_t *)"h", 1, -5, -1, &put));
    CHECK_OK(zkr_queue_put_with_priority(q, (const uint8_t *)"l", 1, 50, -1, &put));
    CHECK(put);
    /* The take removed the item: given back, it is put back with its key, so it comes first
     * again, ahead of the lower priority (zkr_queue_item_release would have nothing to give). */
    zkr_queue_item *first = NULL;
    TAKE_ONE(q, 'h', first);
    int64_t first_token = 0, token = 0;
    CHECK_OK(zkr_queue_item_fencing_token(first, &first_token));
    CHECK_OK(zkr_queue_item_give_back(first));
    zkr_queue_item_free(first);
    zkr_queue_item *again = NULL;
    TAKE_ONE(q, 'h', again);
    CHECK_OK(zkr_queue_item_fencing_token(again, &token));
    CHECK(token > first_token);
    zkr_queue_item_free(again);
    zkr_queue_item *low = NULL;
    TAKE_ONE(q, 'l', low);
    zkr_queue_item_free(low);
    size_t len = 1;
    CHECK_OK(zkr_queue_len(q, &len));
    CHECK(len == 0);
    zkr_queue_free(q);
    zkr_client_free(c);
}

static void test_give_back_with_a_lock_path_leaves_the_item_for_another_take(void) {
    char path[128], locks[128];
    zt_path(path, sizeof path, "give-back-locked");
    zt_path(locks, sizeof locks, "give-back-locked-locks");
    zkr_client *c;
    CHECK_OK(zt_connect_client(&c));
    zkr_queue *q;
    CHECK_OK(zkr_queue_new(c, path, locks, 0, &q));
    bool put = false;
    CHECK_OK(zkr_queue_put(q, (const uint8_t *)"x", 1, -1, &put));
    CHECK_OK(zkr_queue_put(q, (const uint8_t *)"y", 1, -1, &put));
    zkr_queue_item *first = NULL;
    TAKE_ONE(q, 'x', first);
    int64_t first_token = 0, token = 0;
    CHECK_OK(zkr_queue_item_fencing_token(first, &first_token));
    CHECK_OK(zkr_queue_item_give_back(first));
    zkr_queue_item_free(first);
    /* Where it was: first again, under a new lock. */
    zkr_queue_item *again = NULL;
    TAKE_ONE(q, 'x', again);
    CHECK_OK(zkr_queue_item_fencing_token(again, &token));
    CHECK(token > first_token);
    CHECK_OK(zkr_queue_item_done(again));
    zkr_queue_item_free(again);
    size_t len = 0;
    CHECK_OK(zkr_queue_len(q, &len));
    CHECK(len == 1);
    zkr_queue_free(q);
    zkr_client_free(c);
}

/* Given back twice, or after done: ZKR_INVALID_ARGUMENT, as zkr_queue_item_release's. */
static void give_back_twice_or_after_done(bool locked) {
    char path[128], locks[128];
    zt_path(path, sizeof path, "give-back-twice");
    zt_path(locks, sizeof locks, "give-back-twice-locks");
    zkr_client *c;
    CHECK_OK(zt_connect_client(&c));
    zkr_queue *q;
    CHECK_OK(zkr_queue_new(c, path, locked ? locks : NULL, 0, &q));
    bool put = false;
    CHECK_OK(zkr_queue_put(q, (const uint8_t *)"a", 1, -1, &put));
    CHECK_OK(zkr_queue_put(q, (const uint8_t *)"b", 1, -1, &put));
    zkr_queue_item *given = NULL;
    TAKE_ONE(q, 'a', given);
    CHECK_OK(zkr_queue_item_give_back(given));
    CHECK_STATUS(zkr_queue_item_give_back(given), ZKR_INVALID_ARGUMENT, "zkr_queue_item_give_back");
    CHECK_STATUS(zkr_queue_item_release(given), ZKR_INVALID_ARGUMENT, "zkr_queue_item_release");
    zkr_queue_item_free(given);
    /* With a lock path "a" stayed at the head; without one it went back behind "b". */
    zkr_queue_item *done = NULL;
    TAKE_ONE(q, locked ? 'a' : 'b', done);
    CHECK_OK(zkr_queue_item_done(done));
    CHECK_STATUS(zkr_queue_item_give_back(done), ZKR_INVALID_ARGUMENT, "zkr_queue_item_give_back");
    CHECK_STATUS(zkr_queue_item_release(done), ZKR_INVALID_ARGUMENT, "zkr_queue_item_release");
    zkr_queue_item_free(done);
    /* Nothing given back or completed twice: the other item is the one left. */
    size_t len = 0;
    CHECK_OK(zkr_queue_len(q, &len));
    CHECK(len == 1);
    zkr_queue_item *left = NULL;
    TAKE_ONE(q, locked ? 'b' : 'a', left);
    CHECK_OK(zkr_queue_item_done(left));
    zkr_queue_item_free(left);
    zkr_queue_free(q);
    zkr_client_free(c);
}

static void test_give_back_twice_or_after_done_is_refused(void) {
    give_back_twice_or_after_done(false);
    give_back_twice_or_after_done(true);
}

static void test_variants_and_bounded_puts(void) {
    char path[128];
    zkr_client *c;
    CHECK_OK(zt_connect_client(&c));
    zkr_queue *p;
    zt_path(path, sizeof path, "prio");
    CHECK_OK(zkr_priority_queue_new(c, path, NULL, 2, &p));
    bool put = false;
    CHECK_OK(zkr_queue_put_with_priority(p, (const uint8_t *)"b", 1, 5, -1, &put));
    CHECK_OK(zkr_queue_put_with_priority(p, (const uint8_t *)"a", 1, -5, -1, &put));
    CHECK(put);
    /* Full (max_items 2): the put times out. */
    CHECK_OK(zkr_queue_put_with_priority(p, (const uint8_t *)"c", 1, 0, 100, &put));
    CHECK(!put);
    CHECK_STATUS(zkr_queue_put(p, (const uint8_t *)"c", 1, -1, &put), ZKR_INVALID_ARGUMENT,
                 "zkr_queue_put");
    zkr_queue_item *item;
    const uint8_t *data;
    size_t len;
    CHECK_OK(zkr_queue_take(p, 1000, &item));
    CHECK(item != NULL);
    CHECK_OK(zkr_queue_item_data(item, &data, &len));
    CHECK(len == 1 && data[0] == 'a');
    CHECK_OK(zkr_queue_item_done(item)); /* no lock path: nothing to do */
    zkr_queue_item_free(item);
    zkr_queue_free(p);

    zkr_queue *ids;
    zt_path(path, sizeof path, "ids");
    CHECK_OK(zkr_id_queue_new(c, path, NULL, 0, &ids));
    CHECK_OK(zkr_queue_put_with_id(ids, (const uint8_t *)"1", 1, "job", -1, &put));
    CHECK_OK(zkr_queue_put_with_id(ids, (const uint8_t *)"2", 1, "job", -1, &put));
    size_t removed = 0;
    CHECK_OK(zkr_queue_remove_id(ids, "job", &removed));
    CHECK(removed == 2);
    CHECK_STATUS(zkr_queue_put_with_id(ids, (const uint8_t *)"3", 1, "", -1, &put),
                 ZKR_INVALID_ARGUMENT, "zkr_queue_put_with_id");
    zkr_queue_free(ids);

    zkr_queue *delay;
    zt_path(path, sizeof path, "delay");
    CHECK_OK(zkr_delay_queue_new(c, path, NULL, 0, &delay));
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t due = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 + 1000;
    CHECK_OK(zkr_queue_put_with_delay(delay, (const uint8_t *)"d", 1, due, -1, &put));
    /* Never handed out before it is due. Usually it is not due yet at the first take; a busy
     * machine may take longer than the delay to get there, and then it must be due. */
    CHECK_OK(zkr_queue_take(delay, 0, &item));
    if (item == NULL) CHECK_OK(zkr_queue_take(delay, 10000, &item));
    CHECK(item != NULL);
    clock_gettime(CLOCK_REALTIME, &now);
    CHECK((int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 >= due);
    zkr_queue_item_free(item);
    zkr_queue_free(delay);
    zkr_client_free(c);
}

typedef struct member_arg {
    const char *path;
    bool entered, left;
    zkr_status status;
} member_arg;

static void *member(void *p) {
    member_arg *m = (member_arg *)p;
    zkr_client *c;
    zkr_double_barrier *b;
    if ((m->status = zt_connect_client(&c)) != ZKR_OK) return NULL;
    if ((m->status = zkr_double_barrier_new(c, m->path, 3, &b)) == ZKR_OK) {
        m->status = zkr_double_barrier_enter(b, 30000, &m->entered);
        if (m->status == ZKR_OK) m->status = zkr_double_barrier_leave(b, 30000, &m->left);
        zkr_double_barrier_free(b);
    }
    zkr_client_free(c);
    return NULL;
}

static void test_double_barrier_of_three(void) {
    char path[128];
    zt_path(path, sizeof path, "double");
    zkr_client *c;
    CHECK_OK(zt_connect_client(&c));
    /* Alone, a member stays out and its node goes. */
    zkr_double_barrier *lone;
    CHECK_OK(zkr_double_barrier_new(c, path, 3, &lone));
    bool entered = true;
    CHECK_OK(zkr_double_barrier_enter(lone, 300, &entered));
    CHECK(!entered);
    zkr_double_barrier_free(lone);
    pthread_t t[3];
    member_arg args[3];
    for (int i = 0; i < 3; i++) {
        args[i] = (member_arg){path, false, false, ZKR_OK};
        CHECK(pthread_create(&t[i], NULL, member, &args[i]) == 0);
    }
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 3; i++) {
        CHECK_MSG(args[i].status == ZKR_OK, "member %d: %s", i, zkr_status_name(args[i].status));
        CHECK(args[i].entered && args[i].left);
    }
    zkr_client_free(c);
}

static void test_barrier(void) {
    char path[128];
    zt_path(path, sizeof path, "barrier");
    zkr_client *c;
    CHECK_OK(zt_connect_client(&c));
    zkr_barrier *b;
    CHECK_OK(zkr_barrier_new(c, path, &b));
    CHECK_OK(zkr_barrier_set(b));
    bool released = true;
    CHECK_OK(zkr_barrier_wait(b, 100, &released));
    CHECK(!released);
    CHECK_OK(zkr_barrier_remove(b));
    CHECK_OK(zkr_barrier_wait(b, -1, &released));
    CHECK(released);
    zkr_barrier_free(b);
    zkr_client_free(c);
}

static void test_bad_input(void) {
    zkr_client *c;
    CHECK_OK(zt_connect_client(&c));
    zkr_queue *q = NULL;
    bool put;
    CHECK_STATUS(zkr_queue_new(c, "relative", NULL, 0, &q), ZKR_INVALID_ARGUMENT, "zkr_queue_new");
    CHECK_STATUS(zkr_queue_new(c, "/q", "/q/locks", 0, &q), ZKR_INVALID_ARGUMENT, "zkr_queue_new");
    CHECK_STATUS(zkr_queue_new(NULL, "/q", NULL, 0, &q), ZKR_INVALID_ARGUMENT, "zkr_queue_new");
    CHECK_STATUS(zkr_queue_put(NULL, NULL, 0, -1, &put), ZKR_INVALID_ARGUMENT, "zkr_queue_put");
    CHECK_STATUS(zkr_double_barrier_new(c, "/d", 0, NULL), ZKR_INVALID_ARGUMENT,
                 "zkr_double_barrier_new");
    zkr_double_barrier *d;
    CHECK_STATUS(zkr_double_barrier_new(c, "/d", 0, &d), ZKR_INVALID_ARGUMENT,
                 "zkr_double_barrier_new");
    CHECK_OK(zkr_queue_new(c, "/c-tests/bad", NULL, 0, &q));
    CHECK_STATUS(zkr_queue_put(q, NULL, 3, -1, &put), ZKR_INVALID_ARGUMENT, "zkr_queue_put");
    zkr_queue_item *item;
    CHECK_STATUS(zkr_queue_take(q, -5, &item), ZKR_INVALID_ARGUMENT, "zkr_queue_take");
    CHECK_STATUS(zkr_queue_item_done(NULL), ZKR_INVALID_ARGUMENT, "zkr_queue_item_done");
    CHECK_STATUS(zkr_queue_item_release(NULL), ZKR_INVALID_ARGUMENT, "zkr_queue_item_release");
    CHECK_STATUS(zkr_queue_item_give_back(NULL), ZKR_INVALID_ARGUMENT, "zkr_queue_item_give_back");
    /* A freed item is refused, not used. */
    CHECK_OK(zkr_queue_put(q, (const uint8_t *)"x", 1, -1, &put));
    CHECK_OK(zkr_queue_take(q, 5000, &item));
    CHECK(item != NULL);
    zkr_queue_item_free(item); /* no lock path: the item was removed when taken */
    CHECK_STATUS(zkr_queue_item_give_back(item), ZKR_INVALID_ARGUMENT, "zkr_queue_item_give_back");
    zkr_queue_free(q);
    /* A freed handle is refused, not used. */
    CHECK_STATUS(zkr_queue_put(q, (const uint8_t *)"x", 1, -1, &put), ZKR_INVALID_ARGUMENT,
                 "zkr_queue_put");
    zkr_barrier *b;
    CHECK_OK(zkr_barrier_new(c, "/c-tests/bad-barrier", &b));
    zkr_barrier_free(b);
    bool released;
    CHECK_STATUS(zkr_barrier_wait(b, 0, &released), ZKR_INVALID_ARGUMENT, "zkr_barrier_wait");
    zkr_queue_free(NULL);
    zkr_queue_item_free(NULL);
    zkr_barrier_free(NULL);
    zkr_double_barrier_free(NULL);
    zkr_simple_queue_free(NULL);
    zkr_client_free(c);
}

int main(int argc, char **argv) {
    zt_begin(argc, argv);
    RUN(test_simple_queue_order_and_timeouts);
    RUN(test_exactly_once_with_a_lock_path);
    RUN(test_give_back_without_a_lock_path_keeps_the_priority);
    RUN(test_give_back_with_a_lock_path_leaves_the_item_for_another_take);
    RUN(test_give_back_twice_or_after_done_is_refused);
    RUN(test_variants_and_bounded_puts);
    RUN(test_double_barrier_of_three);
    RUN(test_barrier);
    RUN(test_bad_input);
    return zt_end("test_queue");
}
