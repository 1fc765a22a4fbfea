/* Nodes and membership through the C API: transactions (a failing check aborts everything and
 * names its index), TTL nodes, persistent parents, compressed data, PersistentNode (re-created
 * after a delete and a session expiry), GroupMember (payloads, changes, leaving, the same id
 * from two sessions is ZKR_CONFLICT), PersistentTtlNode, and bad input. */
#include "testutil.h"

/* Polls (bounded) until `path` exists (want true) or not (want false). */
static bool wait_exists(zkr_client *c, const char *path, bool want, int timeout_ms, zkr_stat *stat) {
    double deadline = zt_now_ms() + timeout_ms;
    while (zt_now_ms() < deadline) {
        bool exists = false;
        if (zkr_client_exists(c, path, &exists, stat) == ZKR_OK && exists == want) return true;
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    return false;
}

static bool data_is(zkr_client *c, const char *path, const char *want) {
    zkr_buffer *b = NULL;
    if (zkr_client_get_data(c, path, &b, NULL) != ZKR_OK) return false;
    bool same = b->len == strlen(want) && (b->len == 0 || memcmp(b->data, want, b->len) == 0);
    zkr_buffer_free(b);
    return same;
}

static void test_a_failing_check_aborts_the_whole_transaction(void) {
    char base[128], a[160], b[160];
    zt_path(base, sizeof base, "txn");
    snprintf(a, sizeof a, "%s/a", base);
    snprintf(b, sizeof b, "%s/b", base);
    zkr_client *c;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_client_create(c, base, (const uint8_t *)"v0", 2, ZKR_PERSISTENT, ZKR_CREATE_PARENTS, NULL));

    zkr_transaction *t;
    CHECK_OK(zkr_transaction_new(c, &t));
    CHECK_OK(zkr_transaction_create(t, a, (const uint8_t *)"a", 1, ZKR_PERSISTENT, 0));
    CHECK_OK(zkr_transaction_set_data(t, base, (const uint8_t *)"v1", 2, -1));
    CHECK_OK(zkr_transaction_check(t, base, 7));
    CHECK_OK(zkr_transaction_create(t, b, NULL, 0, ZKR_PERSISTENT, 0));
    zkr_op_result_list *results = NULL;
    CHECK_STATUS(zkr_transaction_commit(t, &results), ZKR_BAD_VERSION, "zkr_transaction_commit");
    CHECK(results == NULL);
    int64_t index = -2;
    CHECK_OK(zkr_transaction_failed_op(t, &index));
    CHECK_MSG(index == 2, "failed op %" PRId64, index);
    bool exists = true;
    CHECK_OK(zkr_client_exists(c, a, &exists, NULL));
    CHECK_MSG(!exists, "an aborted create was applied");
    CHECK(data_is(c, base, "v0"));
    zkr_transaction_free(t);

    CHECK_OK(zkr_transaction_new(c, &t));
    CHECK_OK(zkr_transaction_check(t, base, 0));
    CHECK_OK(zkr_transaction_create(t, a, (const uint8_t *)"a", 1, ZKR_PERSISTENT_WITH_TTL, 60000));
    CHECK_OK(zkr_transaction_set_data(t, base, (const uint8_t *)"v1", 2, 0));
    CHECK_OK(zkr_transaction_delete(t, a, -1));
    CHECK_OK(zkr_transaction_commit(t, &results));
    CHECK(results != NULL && results->len == 4);
    CHECK(results->items[0].type_ == ZKR_OP_CHECK);
    CHECK(results->items[1].type_ == ZKR_OP_CREATE && strcmp(results->items[1].path, a) == 0);
    CHECK(results->items[2].type_ == ZKR_OP_SET_DATA && results->items[2].stat.version == 1);
    CHECK(results->items[3].type_ == ZKR_OP_DELETE && results->items[3].path == NULL);
    CHECK_OK(zkr_transaction_failed_op(t, &index));
    CHECK(index == -1);
    zkr_op_result_list_free(results);
    zkr_transaction_free(t);
    zkr_client_free(c);
}

static void test_ttl_nodes_persistent_parents_and_compression(void) {
    char ttl[128], pp[160], z[128];
    zt_path(ttl, sizeof ttl, "ttl");
    zt_path(pp, sizeof pp, "pp/a/leaf");
    zt_path(z, sizeof z, "z");
    zkr_client *c;
    CHECK_OK(zt_connect_client(&c));

    CHECK_OK(zkr_client_create_ex(c, ttl, NULL, 0, ZKR_PERSISTENT_WITH_TTL, ZKR_CREATE_PARENTS, 300, NULL));
    CHECK_MSG(wait_exists(c, ttl, false, 10000, NULL), "the TTL node was not reaped");
    CHECK_STATUS(zkr_client_create_ex(c, ttl, NULL, 0, ZKR_PERSISTENT_WITH_TTL, 0, 0, NULL),
                 ZKR_INVALID_ARGUMENT, "zkr_client_create_ex");
    CHECK_STATUS(zkr_client_create_ex(c, ttl, NULL, 0, ZKR_PERSISTENT, 0, 500, NULL),
                 ZKR_INVALID_ARGUMENT, "zkr_client_create_ex");
    CHECK_STATUS(zkr_client_create_ex(c, ttl, NULL, 0, ZKR_PERSISTENT, 64, 0, NULL),
                 ZKR_INVALID_ARGUMENT, "zkr_client_create_ex");

    char *created = NULL;
    CHECK_OK(zkr_client_create_ex(c, pp, NULL, 0, ZKR_PERSISTENT, ZKR_CREATE_PERSISTENT_PARENTS, 0, &created));
    CHECK(strcmp(created, pp) == 0);
    zkr_string_free(created);

    const char *plain = "compressed by zkrecipes, compressed by zkrecipes, compressed by zkrecipes";
    CHECK_OK(zkr_client_create_ex(c, z, (const uint8_t *)plain, strlen(plain), ZKR_PERSISTENT,
                                  ZKR_CREATE_PARENTS | ZKR_CREATE_COMPRESSED, 0, NULL));
    zkr_buffer *raw = NULL;
    CHECK_OK(zkr_client_get_data(c, z, &raw, NULL));
    static const uint8_t header[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
    bool curator_header = raw->len > 10 && memcmp(raw->data, header, 10) == 0;
    bool smaller = raw->len < strlen(plain);
    zkr_buffer_free(raw);
    CHECK_MSG(curator_header, "not Curator's GZIP header");
    CHECK(smaller);
    zkr_buffer *back = NULL;
    CHECK_OK(zkr_client_get_data_decompressed(c, z, &back, NULL));
    bool same = back->len == strlen(plain) && memcmp(back->data, plain, back->len) == 0;
    zkr_buffer_free(back);
    CHECK(same);
    zkr_stat st;
    CHECK_OK(zkr_client_set_data_compressed(c, z, (const uint8_t *)"x", 1, 0, &st));
    CHECK(st.version == 1);
    CHECK_OK(zkr_client_get_data_decompressed(c, z, &back, NULL));
    same = back->len == 1 && back->data[0] == 'x';
    zkr_buffer_free(back);
    CHECK(same);
    CHECK_STATUS(zkr_client_get_data_decompressed(c, pp, &back, NULL), ZKR_CORRUPTED_DATA,
                 "zkr_client_get_data_decompressed");
    zkr_client_free(c);
}

static void on_node_event(zkr_node_event event, const char *path, void *user_data) {
    (void)path;
    zt_event_signal((zt_event *)user_data, (int)event);
}

static void test_a_persistent_node_comes_back_after_a_delete_and_a_session_expiry(void) {
    char path[128];
    zt_path(path, sizeof path, "svc");
    zkr_client *c, *other;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zt_connect_client(&other));
    zkr_persistent_node *n;
    CHECK_OK(zkr_persistent_node_new(c, path, ZKR_EPHEMERAL, (const uint8_t *)"addr", 4, false, 0, &n));
    zt_event registered;
    zt_event_init(&registered);
    uint64_t id = 0;
    CHECK_OK(zkr_persistent_node_add_listener(n, on_node_event, &registered, &id));
    CHECK_OK(zkr_persistent_node_start(n));
    bool created = false;
    CHECK_OK(zkr_persistent_node_wait_for_initial_create(n, 15000, &created));
    CHECK(created);
    char *actual = NULL;
    CHECK_OK(zkr_persistent_node_actual_path(n, &actual));
    CHECK(strcmp(actual, path) == 0);
    zkr_string_free(actual);
    CHECK(zt_event_wait(&registered, 1, 5000) && registered.last == ZKR_NODE_REGISTERED);

    CHECK_OK(zkr_client_delete(other, path, -1, 0));
    /* UNREGISTERED, then REGISTERED again. */
    CHECK_MSG(zt_event_wait(&registered, 3, 15000), "not re-created after a delete");
    CHECK(registered.last == ZKR_NODE_REGISTERED);
    CHECK(data_is(other, path, "addr"));

    CHECK_OK(zkr_persistent_node_set_data(n, (const uint8_t *)"addr2", 5));
    int64_t old = 0;
    CHECK_OK(zkr_client_session_id(c, &old));
    CHECK_OK(zkr_client_expire_session_for_testing(c));
    CHECK(zt_wait_new_session(c, old, 15000));
    int64_t now = 0;
    zkr_stat st;
    double deadline = zt_now_ms() + 15000;
    bool back = false;
    while (!back && zt_now_ms() < deadline) {
        CHECK_OK(zkr_client_session_id(c, &now));
        back = wait_exists(other, path, true, 100, &st) && st.ephemeral_owner == now && now != old &&
               data_is(other, path, "addr2");
    }
    CHECK_MSG(back, "not re-created in the new session with the new data");
    CHECK_OK(zkr_persistent_node_remove_listener(n, id));
    CHECK_OK(zkr_persistent_node_close(n));
    bool exists = true;
    CHECK_OK(zkr_client_exists(other, path, &exists, NULL));
    CHECK_MSG(!exists, "close left the node");
    zkr_persistent_node_free(n);
    zt_event_destroy(&registered);
    zkr_client_free(c);
    zkr_client_free(other);
}

static void on_members(const zkr_member_list *members, void *user_data) {
    zt_event_signal((zt_event *)user_data, (int)members->len);
}

static bool has_member(zkr_group_member *m, const char *id, const char *payload) {
    zkr_member_list *list = NULL;
    if (zkr_group_member_current_members(m, &list) != ZKR_OK) return false;
    bool found = false;
    for (size_t i = 0; i < list->len; i++) {
        if (strcmp(list->items[i].id, id) == 0)
            found = list->items[i].len == strlen(payload) && memcmp(list->items[i].data, payload, list->items[i].len) == 0;
    }
    zkr_member_list_free(list);
    return found;
}

static bool wait_member(zkr_group_member *m, const char *id, const char *payload, bool want, int timeout_ms) {
    double deadline = zt_now_ms() + timeout_ms;
    while (zt_now_ms() < deadline) {
        if (has_member(m, id, payload) == want) return true;
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    return false;
}

static void test_group_members_see_each_other_and_the_same_id_is_a_conflict(void) {
    char group[128], node[160];
    zt_path(group, sizeof group, "group");
    snprintf(node, sizeof node, "%s/a", group);
    zkr_client *c1, *c2;
    CHECK_OK(zt_connect_client(&c1));
    CHECK_OK(zt_connect_client(&c2));
    zkr_group_member *a, *b, *dup;
    CHECK_OK(zkr_group_member_new(c1, group, "a", (const uint8_t *)"pa", 2, &a));
    zt_event changes;
    zt_event_init(&changes);
    uint64_t id = 0;
    CHECK_OK(zkr_group_member_add_listener(a, on_members, &changes, &id));
    CHECK_OK(zkr_group_member_start(a));
    CHECK_OK(zkr_group_member_new(c2, group, "b", (const uint8_t *)"pb", 2, &b));
    CHECK_OK(zkr_group_member_start(b));
    CHECK(wait_member(a, "b", "pb", true, 15000));
    CHECK(wait_member(b, "a", "pa", true, 15000));
    CHECK(zt_event_wait(&changes, 1, 5000));

    zkr_stat before, after;
    CHECK_OK(zkr_client_exists(c1, node, &(bool){false}, &before));
    CHECK_OK(zkr_group_member_new(c2, group, "a", (const uint8_t *)"other", 5, &dup));
    CHECK_STATUS(zkr_group_member_start(dup), ZKR_CONFLICT, "zkr_group_member_start");
    zkr_group_member_free(dup);
    CHECK_OK(zkr_client_exists(c1, node, &(bool){false}, &after));
    CHECK_MSG(before.czxid == after.czxid && before.version == after.version &&
                  after.ephemeral_owner == before.ephemeral_owner,
              "the first member's node was touched");
    CHECK(data_is(c1, node, "pa"));

    CHECK_OK(zkr_group_member_set_this_data(b, (const uint8_t *)"pb2", 3));
    CHECK(wait_member(a, "b", "pb2", true, 15000));
    CHECK_OK(zkr_group_member_close(b));
    CHECK(wait_member(a, "b", "pb2", false, 15000));
    CHECK_OK(zkr_group_member_remove_listener(a, id));
    zkr_group_member_free(b);
    zkr_group_member_free(a);
    zt_event_destroy(&changes);
    zkr_client_free(c1);
    zkr_client_free(c2);
}

static void test_a_ttl_node_goes_within_its_ttl_once_closed(void) {
    char path[128];
    zt_path(path, sizeof path, "ttlnode");
    zkr_client *c;
    CHECK_OK(zt_connect_client(&c));
    zkr_persistent_ttl_node *n;
    CHECK_OK(zkr_persistent_ttl_node_new(c, path, 600, (const uint8_t *)"here", 4, &n));
    CHECK_OK(zkr_persistent_ttl_node_start(n));
    bool created = false;
    CHECK_OK(zkr_persistent_ttl_node_wait_for_initial_create(n, 15000, &created));
    CHECK(created);
    char touch[160];
    snprintf(touch, sizeof touch, "%s/touch", path);
    CHECK_MSG(wait_exists(c, touch, true, 5000, NULL), "never touched");
    CHECK(data_is(c, path, "here"));
    CHECK_OK(zkr_persistent_ttl_node_close(n));
    double stopped = zt_now_ms();
    CHECK_MSG(wait_exists(c, path, false, 600 + 4000, NULL), "still there after TTL + 4 s");
    printf("    TTL node gone %.0f ms after close (ttl 600 ms)\n", zt_now_ms() - stopped);
    zkr_persistent_ttl_node_free(n);
    zkr_client_free(c);
}

static void test_bad_input_is_invalid_argument(void) {
    zkr_client *c;
    CHECK_OK(zt_connect_client(&c));
    zkr_persistent_node *n = NULL;
    CHECK_STATUS(zkr_persistent_node_new(NULL, "/x", ZKR_EPHEMERAL, NULL, 0, false, 0, &n),
                 ZKR_INVALID_ARGUMENT, "zkr_persistent_node_new");
    CHECK_STATUS(zkr_persistent_node_new(c, "/x", 99, NULL, 0, false, 0, &n), ZKR_INVALID_ARGUMENT,
                 "zkr_persistent_node_new");
    CHECK_STATUS(zkr_persistent_node_new(c, "/", ZKR_EPHEMERAL, NULL, 0, false, 0, &n),
                 ZKR_INVALID_ARGUMENT, "zkr_persistent_node_new");
    CHECK_STATUS(zkr_persistent_node_new(c, "/x", ZKR_EPHEMERAL, NULL, 3, false, 0, &n),
                 ZKR_INVALID_ARGUMENT, "zkr_persistent_node_new");
    CHECK_STATUS(zkr_persistent_node_new(c, "/x", ZKR_EPHEMERAL, NULL, 0, false, -5, &n),
                 ZKR_INVALID_ARGUMENT, "zkr_persistent_node_new");
    CHECK(n == NULL);
    CHECK_STATUS(zkr_persistent_node_start(NULL), ZKR_INVALID_ARGUMENT, "zkr_persistent_node_start");
    CHECK_OK(zkr_persistent_node_new(c, "/x", ZKR_EPHEMERAL, NULL, 0, false, 0, &n));
    bool created;
    CHECK_STATUS(zkr_persistent_node_wait_for_initial_create(n, -7, &created), ZKR_INVALID_ARGUMENT,
                 "zkr_persistent_node_wait_for_initial_create");
    CHECK_STATUS(zkr_persistent_node_wait_for_initial_create(n, 0, &created), ZKR_INVALID_ARGUMENT,
                 "zkr_persistent_node_wait_for_initial_create");
    CHECK_STATUS(zkr_persistent_node_add_listener(n, NULL, NULL, &(uint64_t){0}), ZKR_INVALID_ARGUMENT,
                 "zkr_persistent_node_add_listener");
    zkr_persistent_node_free(n);
    CHECK_STATUS(zkr_persistent_node_start(n), ZKR_INVALID_ARGUMENT, "zkr_persistent_node_start");
    zkr_persistent_node_free(NULL);

    zkr_group_member *m = NULL;
    CHECK_STATUS(zkr_group_member_new(c, "/g", "a/b", NULL, 0, &m), ZKR_INVALID_ARGUMENT,
                 "zkr_group_member_new");
    CHECK_STATUS(zkr_group_member_new(c, "/g", NULL, NULL, 0, &m), ZKR_INVALID_ARGUMENT,
                 "zkr_group_member_new");
    CHECK_STATUS(zkr_group_member_current_members(NULL, &(zkr_member_list *){NULL}),
                 ZKR_INVALID_ARGUMENT, "zkr_group_member_current_members");
    zkr_group_member_free(NULL);
    zkr_member_list_free(NULL);

    zkr_persistent_ttl_node *t = NULL;
    CHECK_STATUS(zkr_persistent_ttl_node_new(c, "/t", 0, NULL, 0, &t), ZKR_INVALID_ARGUMENT,
                 "zkr_persistent_ttl_node_new");
    zkr_persistent_ttl_node_free(NULL);

    zkr_transaction *tx = NULL;
    CHECK_STATUS(zkr_transaction_new(NULL, &tx), ZKR_INVALID_ARGUMENT, "zkr_transaction_new");
    CHECK_OK(zkr_transaction_new(c, &tx));
    CHECK_STATUS(zkr_transaction_create(tx, NULL, NULL, 0, ZKR_PERSISTENT, 0), ZKR_INVALID_ARGUMENT,
                 "zkr_transaction_create");
    CHECK_OK(zkr_transaction_check(tx, "bad path", 0));
    CHECK_STATUS(zkr_transaction_commit(tx, NULL), ZKR_INVALID_ARGUMENT, "zkr_transaction_commit");
    int64_t index = -2;
    CHECK_OK(zkr_transaction_failed_op(tx, &index));
    CHECK_MSG(index == 0, "failed op %" PRId64, index);
    zkr_transaction_free(tx);
    CHECK_STATUS(zkr_transaction_commit(tx, NULL), ZKR_INVALID_ARGUMENT, "zkr_transaction_commit");
    zkr_transaction_free(NULL);
    zkr_op_result_list_free(NULL);
    zkr_client_free(c);
}

int main(int argc, char **argv) {
    zt_begin(argc, argv);
    RUN(test_a_failing_check_aborts_the_whole_transaction);
    RUN(test_ttl_nodes_persistent_parents_and_compression);
    RUN(test_a_persistent_node_comes_back_after_a_delete_and_a_session_expiry);
    RUN(test_group_members_see_each_other_and_the_same_id_is_a_conflict);
    RUN(test_a_ttl_node_goes_within_its_ttl_once_closed);
    RUN(test_bad_input_is_invalid_argument);
    return zt_end("test_nodes");
}
