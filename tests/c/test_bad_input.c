/* The bad-input table: every misuse returns its status and a message naming the function, with
 * no crash, no leak (ASan/LSan) and no hang; outputs are left untouched on failure. */
#include "testutil.h"

static zkr_client *client; /* shared by the table's rows */

static void count_state(zkr_connection_state state, void *user_data);

/* A pointer value no call may write over on failure. */
#define SENTINEL ((void *)0x5e5e5e5e)

static void test_null_handles_are_invalid_argument(void) {
    bool b = true;
    int64_t i = 7;
    zkr_mutex *m = (zkr_mutex *)SENTINEL;
    zkr_buffer *buf = (zkr_buffer *)SENTINEL;
    zkr_string_list *list = (zkr_string_list *)SENTINEL;
    zkr_connection_state st = ZKR_STATE_READ_ONLY;
    CHECK_STATUS(zkr_mutex_new(NULL, "/x", &m), ZKR_INVALID_ARGUMENT, "zkr_mutex_new");
    CHECK(strstr(zkr_last_error_message(), "client is NULL") != NULL);
    CHECK(m == (zkr_mutex *)SENTINEL);
    CHECK_STATUS(zkr_mutex_acquire(NULL, -1, &b), ZKR_INVALID_ARGUMENT, "zkr_mutex_acquire");
    CHECK(strstr(zkr_last_error_message(), "mutex is NULL") != NULL);
    CHECK(b == true);
    CHECK_STATUS(zkr_mutex_acquire_as(NULL, zkr_owner_new(), -1, &b), ZKR_INVALID_ARGUMENT, "zkr_mutex_acquire_as");
    CHECK_STATUS(zkr_mutex_release(NULL), ZKR_INVALID_ARGUMENT, "zkr_mutex_release");
    CHECK_STATUS(zkr_mutex_release_as(NULL, zkr_owner_new()), ZKR_INVALID_ARGUMENT, "zkr_mutex_release_as");
    CHECK_STATUS(zkr_mutex_fencing_token(NULL, &i), ZKR_INVALID_ARGUMENT, "zkr_mutex_fencing_token");
    CHECK(i == 7);
    CHECK_STATUS(zkr_mutex_is_owned(NULL, &b), ZKR_INVALID_ARGUMENT, "zkr_mutex_is_owned");
    CHECK_STATUS(zkr_mutex_participant_nodes(NULL, &list), ZKR_INVALID_ARGUMENT, "zkr_mutex_participant_nodes");
    CHECK(list == (zkr_string_list *)SENTINEL);
    CHECK_STATUS(zkr_mutex_set_lost_callback(NULL, NULL, NULL), ZKR_INVALID_ARGUMENT, "zkr_mutex_set_lost_callback");
    CHECK_STATUS(zkr_client_close(NULL), ZKR_INVALID_ARGUMENT, "zkr_client_close");
    CHECK_STATUS(zkr_client_state(NULL, &st), ZKR_INVALID_ARGUMENT, "zkr_client_state");
    CHECK(st == ZKR_STATE_READ_ONLY);
    CHECK_STATUS(zkr_client_get_data(NULL, "/", &buf, NULL), ZKR_INVALID_ARGUMENT, "zkr_client_get_data");
    CHECK(buf == (zkr_buffer *)SENTINEL);
    CHECK_STATUS(zkr_client_expire_session_for_testing(NULL), ZKR_INVALID_ARGUMENT,
                 "zkr_client_expire_session_for_testing");
    CHECK_STATUS(zkr_client_options_init(NULL), ZKR_INVALID_ARGUMENT, "zkr_client_options_init");
}

static void test_null_out_parameters_are_invalid_argument(void) {
    zkr_mutex *m = NULL;
    CHECK_STATUS(zkr_client_connect(zt_connect, NULL, NULL), ZKR_INVALID_ARGUMENT, "zkr_client_connect");
    CHECK(strstr(zkr_last_error_message(), "out is NULL") != NULL);
    CHECK_STATUS(zkr_mutex_new(client, "/x", NULL), ZKR_INVALID_ARGUMENT, "zkr_mutex_new");
    CHECK_OK(zkr_mutex_new(client, "/c-tests/bad-input/out", &m));
    CHECK_STATUS(zkr_mutex_acquire(m, -1, NULL), ZKR_INVALID_ARGUMENT, "zkr_mutex_acquire");
    bool owned = true;
    CHECK_OK(zkr_mutex_is_owned(m, &owned));
    CHECK_MSG(!owned, "a refused acquire must not acquire");
    CHECK_STATUS(zkr_mutex_fencing_token(m, NULL), ZKR_INVALID_ARGUMENT, "zkr_mutex_fencing_token");
    CHECK_STATUS(zkr_client_get_children(client, "/", NULL), ZKR_INVALID_ARGUMENT, "zkr_client_get_children");
    CHECK_STATUS(zkr_client_add_state_listener(client, NULL, NULL, NULL), ZKR_INVALID_ARGUMENT,
                 "zkr_client_add_state_listener");
    zkr_mutex_free(m);
}

static void test_null_strings_are_invalid_argument(void) {
    zkr_client *c = (zkr_client *)SENTINEL;
    zkr_mutex *m = (zkr_mutex *)SENTINEL;
    CHECK_STATUS(zkr_client_connect(NULL, NULL, &c), ZKR_INVALID_ARGUMENT, "zkr_client_connect");
    CHECK(strstr(zkr_last_error_message(), "hosts is NULL") != NULL);
    CHECK(c == (zkr_client *)SENTINEL);
    CHECK_STATUS(zkr_mutex_new(client, NULL, &m), ZKR_INVALID_ARGUMENT, "zkr_mutex_new");
    CHECK(strstr(zkr_last_error_message(), "path is NULL") != NULL);
    CHECK(m == (zkr_mutex *)SENTINEL);
    CHECK_STATUS(zkr_client_create(client, NULL, NULL, 0, ZKR_PERSISTENT, 0, NULL), ZKR_INVALID_ARGUMENT,
                 "zkr_client_create");
    CHECK_STATUS(zkr_client_delete(client, NULL, -1, 0), ZKR_INVALID_ARGUMENT, "zkr_client_delete");
    /* NULL data with a length. */
    CHECK_STATUS(zkr_client_create(client, "/c-tests/bad-input/d", NULL, 3, ZKR_PERSISTENT, 0, NULL),
                 ZKR_INVALID_ARGUMENT, "zkr_client_create");
    CHECK(strstr(zkr_last_error_message(), "data is NULL") != NULL);
}

static void test_invalid_utf8_is_invalid_argument(void) {
    zkr_mutex *m = (zkr_mutex *)SENTINEL;
    zkr_client *c = (zkr_client *)SENTINEL;
    CHECK_STATUS(zkr_mutex_new(client, "/locks/\xff\xfe", &m), ZKR_INVALID_ARGUMENT, "zkr_mutex_new");
    CHECK(strstr(zkr_last_error_message(), "UTF-8") != NULL);
    CHECK(m == (zkr_mutex *)SENTINEL);
    CHECK_STATUS(zkr_client_connect("127.0.0.1:2181\xc3", NULL, &c), ZKR_INVALID_ARGUMENT, "zkr_client_connect");
    bool exists = true;
    CHECK_STATUS(zkr_client_exists(client, "/\xed\xa0\x80", &exists, NULL), ZKR_INVALID_ARGUMENT,
                 "zkr_client_exists"); /* an encoded surrogate is not UTF-8 */
    CHECK(exists);
    zkr_client_options opts;
    CHECK_OK(zkr_client_options_init(&opts));
    opts.namespace_name = "ns\x80";
    CHECK_STATUS(zkr_client_connect(zt_connect, &opts, &c), ZKR_INVALID_ARGUMENT, "zkr_client_connect");
    CHECK(strstr(zkr_last_error_message(), "opts.namespace_name") != NULL);
}

static void test_bad_paths_are_invalid_argument(void) {
    static const char *bad[] = {"", "relative", "/trailing/", "/a//b", "/a/./b", "/a/../b", "/ctl\x01"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zkr_mutex *m = (zkr_mutex *)SENTINEL;
        zkr_status s = zkr_mutex_new(client, bad[i], &m);
        CHECK_MSG(s == ZKR_INVALID_ARGUMENT, "path %zu gave %s", i, zkr_status_name(s));
        CHECK_MSG(strstr(zkr_last_error_message(), "path") != NULL, "message: %s", zkr_last_error_message());
        CHECK(m == (zkr_mutex *)SENTINEL);
        bool exists = true;
        CHECK_MSG(zkr_client_exists(client, bad[i], &exists, NULL) == ZKR_INVALID_ARGUMENT, "exists(%zu)", i);
        CHECK(exists);
    }
    zkr_client *c = (zkr_client *)SENTINEL;
    CHECK_STATUS(zkr_client_connect("", NULL, &c), ZKR_INVALID_ARGUMENT, "zkr_client_connect");
    CHECK_STATUS(zkr_client_connect("host:99999", NULL, &c), ZKR_INVALID_ARGUMENT, "zkr_client_connect");
    CHECK(c == (zkr_client *)SENTINEL);
}

static void test_negative_timeout_other_than_minus_one_is_invalid_argument(void) {
    zkr_mutex *m = NULL;
    CHECK_OK(zkr_mutex_new(client, "/c-tests/bad-input/timeout", &m));
    bool ok = true;
    CHECK_STATUS(zkr_mutex_acquire(m, -2, &ok), ZKR_INVALID_ARGUMENT, "zkr_mutex_acquire");
    CHECK(strstr(zkr_last_error_message(), "-2") != NULL);
    CHECK(ok == true);
    CHECK_STATUS(zkr_mutex_acquire(m, INT64_MIN, &ok), ZKR_INVALID_ARGUMENT, "zkr_mutex_acquire");
    zkr_string_list *nodes = NULL;
    CHECK_OK(zkr_mutex_participant_nodes(m, &nodes));
    CHECK_MSG(nodes->len == 0, "a refused acquire must create no node");
    zkr_string_list_free(nodes);
    zkr_mutex_free(m);
}

static void test_bad_options_are_invalid_argument(void) {
    zkr_client *c = (zkr_client *)SENTINEL;
    zkr_client_options opts;
    memset(&opts, 0, sizeof opts); /* not initialized: size 0 */
    CHECK_STATUS(zkr_client_connect(zt_connect, &opts, &c), ZKR_INVALID_ARGUMENT, "zkr_client_connect");
    CHECK(strstr(zkr_last_error_message(), "zkr_client_options_init") != NULL);
    CHECK_OK(zkr_client_options_init(&opts));
    opts.version = ZKR_CLIENT_OPTIONS_VERSION + 1; /* from a newer header */
    CHECK_STATUS(zkr_client_connect(zt_connect, &opts, &c), ZKR_INVALID_ARGUMENT, "zkr_client_connect");
    CHECK_OK(zkr_client_options_init(&opts));
    opts.session_timeout_ms = 0;
    CHECK_STATUS(zkr_client_connect(zt_connect, &opts, &c), ZKR_INVALID_ARGUMENT, "zkr_client_connect");
    CHECK_OK(zkr_client_options_init(&opts));
    opts.retry.kind = 42;
    CHECK_STATUS(zkr_client_connect(zt_connect, &opts, &c), ZKR_INVALID_ARGUMENT, "zkr_client_connect");
    opts.retry = zkr_retry_n_times(3, -5);
    CHECK_STATUS(zkr_client_connect(zt_connect, &opts, &c), ZKR_INVALID_ARGUMENT, "zkr_client_connect");
    opts.retry = zkr_retry_exponential_backoff(10, 30, 0); /* above Curator's 29 */
    CHECK_STATUS(zkr_client_connect(zt_connect, &opts, &c), ZKR_INVALID_ARGUMENT, "zkr_client_connect");
    CHECK(c == (zkr_client *)SENTINEL);
    CHECK_STATUS(zkr_client_create(client, "/c-tests/bad-input/m", NULL, 0, 42, 0, NULL), ZKR_INVALID_ARGUMENT,
                 "zkr_client_create");
    CHECK_STATUS(zkr_client_create(client, "/c-tests/bad-input/m", NULL, 0, ZKR_PERSISTENT, 0x80, NULL),
                 ZKR_INVALID_ARGUMENT, "zkr_client_create");
    CHECK_STATUS(zkr_client_set_data(client, "/c-tests", NULL, 0, -7, NULL), ZKR_INVALID_ARGUMENT,
                 "zkr_client_set_data");
}

static void test_uninitialized_owner_is_invalid_argument(void) {
    zkr_mutex *m = NULL;
    CHECK_OK(zkr_mutex_new(client, "/c-tests/bad-input/owner", &m));
    zkr_owner zero = {0};
    bool ok = true;
    CHECK_STATUS(zkr_mutex_acquire_as(m, zero, 0, &ok), ZKR_INVALID_ARGUMENT, "zkr_mutex_acquire_as");
    CHECK(strstr(zkr_last_error_message(), "zkr_owner_new") != NULL);
    CHECK_STATUS(zkr_mutex_release_as(m, zero), ZKR_INVALID_ARGUMENT, "zkr_mutex_release_as");
    CHECK_STATUS(zkr_mutex_set_lost_policy(m, 9), ZKR_INVALID_ARGUMENT, "zkr_mutex_set_lost_policy");
    zkr_mutex_free(m);
}

static void test_use_after_close_is_closed(void) {
    zkr_client *c = NULL;
    zkr_mutex *before = NULL, *after = (zkr_mutex *)SENTINEL;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_mutex_new(c, "/c-tests/bad-input/closed", &before));
    CHECK_OK(zkr_client_close(c));
    bool ok = true;
    CHECK_STATUS(zkr_mutex_acquire(before, -1, &ok), ZKR_CLOSED, "zkr_mutex_acquire");
    CHECK(ok == true);
    CHECK_STATUS(zkr_mutex_new(c, "/c-tests/bad-input/closed", &after), ZKR_CLOSED, "zkr_mutex_new");
    CHECK(after == (zkr_mutex *)SENTINEL);
    CHECK_STATUS(zkr_client_create(c, "/c-tests/x", NULL, 0, ZKR_PERSISTENT, 0, NULL), ZKR_CLOSED, "zkr_client_create");
    uint64_t id = 0;
    CHECK_STATUS(zkr_client_add_state_listener(c, count_state, NULL, &id), ZKR_CLOSED,
                 "zkr_client_add_state_listener");
    zkr_mutex_free(before);
    zkr_client_free(c);
}

static void test_double_release_is_not_owner(void) {
    zkr_mutex *m = NULL;
    CHECK_OK(zkr_mutex_new(client, "/c-tests/bad-input/double", &m));
    bool ok = false;
    CHECK_OK(zkr_mutex_acquire(m, -1, &ok));
    CHECK(ok);
    CHECK_OK(zkr_mutex_release(m));
    CHECK_STATUS(zkr_mutex_release(m), ZKR_NOT_OWNER, "zkr_mutex_release");
    CHECK(strstr(zkr_last_error_message(), "/c-tests/bad-input/double") != NULL);
    CHECK_STATUS(zkr_mutex_release(m), ZKR_NOT_OWNER, "zkr_mutex_release");
    zkr_mutex_free(m);
}

/* ---- free while a callback is registered ---- */

typedef struct counted {
    int calls; /* heap-allocated: ASan reports any call after free */
} counted;

static void count_state(zkr_connection_state state, void *user_data) {
    (void)state;
    ((counted *)user_data)->calls++;
}

static void count_lost(zkr_owner owner, void *user_data) {
    (void)owner;
    ((counted *)user_data)->calls++;
}

static void test_free_while_callbacks_are_registered(void) {
    zkr_client *c = NULL;
    zkr_mutex *m = NULL;
    CHECK_OK(zt_connect_client(&c));
    counted *state_ud = calloc(1, sizeof *state_ud);
    counted *lost_ud = calloc(1, sizeof *lost_ud);
    uint64_t id = 0;
    CHECK_OK(zkr_client_add_state_listener(c, count_state, state_ud, &id));
    CHECK_OK(zkr_mutex_new(c, "/c-tests/bad-input/free-cb", &m));
    CHECK_OK(zkr_mutex_set_lost_callback(m, count_lost, lost_ud));
    bool ok = false;
    CHECK_OK(zkr_mutex_acquire(m, -1, &ok));
    /* Expire the session so that state and lost callbacks are in flight while we free. */
    CHECK_OK(zkr_client_expire_session_for_testing(c));
    zkr_mutex_free(m);
    free(lost_ud);
    zkr_client_free(c);
    free(state_ud);
    /* Anything still running would now touch freed memory: ASan would abort this program. */
}

typedef struct self_free {
    zkr_client *c;
    zt_event done;
} self_free;

static void free_client_from_inside(zkr_connection_state state, void *user_data) {
    self_free *s = (self_free *)user_data;
    if (state == ZKR_STATE_LOST && s->c != NULL) {
        zkr_client *c = s->c;
        s->c = NULL;
        zkr_client_free(c); /* allowed inside a callback: must not deadlock */
        zt_event_signal(&s->done, 1);
    }
}

static void test_free_from_inside_own_callback_does_not_deadlock(void) {
    self_free s;
    memset(&s, 0, sizeof s);
    zt_event_init(&s.done);
    CHECK_OK(zt_connect_client(&s.c));
    uint64_t id = 0;
    CHECK_OK(zkr_client_add_state_listener(s.c, free_client_from_inside, &s, &id));
    CHECK_OK(zkr_client_expire_session_for_testing(s.c));
    CHECK_MSG(zt_event_wait(&s.done, 1, 20000), "the callback did not free the client within 20 s");
    zt_event_destroy(&s.done);
}

static void test_free_null_is_a_no_op(void) {
    zkr_client_free(NULL);
    zkr_mutex_free(NULL);
    zkr_string_free(NULL);
    zkr_string_list_free(NULL);
    zkr_buffer_free(NULL);
}

/* Handles carry a tag that _free clears: a call on a freed handle, a second _free and a handle
 * of another type are refused (ZKR_INVALID_ARGUMENT) instead of corrupting memory. The library
 * keeps the last freed handles' memory for this check, so ASan sees no use after free here. */
static void test_freed_or_foreign_handles_are_invalid_argument(void) {
    zkr_mutex *m = NULL;
    zkr_semaphore *s = NULL;
    CHECK_OK(zkr_mutex_new(client, "/c-tests/bad-input/freed", &m));
    CHECK_OK(zkr_semaphore_new(client, "/c-tests/bad-input/freed-sem", 2, &s));
    zkr_mutex_free(m);
    bool b = true;
    CHECK_STATUS(zkr_mutex_is_owned(m, &b), ZKR_INVALID_ARGUMENT, "zkr_mutex_is_owned");
    CHECK_MSG(strstr(zkr_last_error_message(), "already freed") != NULL, "%s", zkr_last_error_message());
    CHECK(b == true);
    CHECK_STATUS(zkr_mutex_acquire(m, 0, &b), ZKR_INVALID_ARGUMENT, "zkr_mutex_acquire");
    zkr_mutex_free(m); /* the double free: detected, nothing done */
    CHECK_MSG(strstr(zkr_last_error_message(), "zkr_mutex_free") != NULL &&
                  strstr(zkr_last_error_message(), "already freed") != NULL,
              "%s", zkr_last_error_message());

    /* A handle of another type. */
    CHECK_STATUS(zkr_mutex_release((zkr_mutex *)s), ZKR_INVALID_ARGUMENT, "zkr_mutex_release");
    CHECK_MSG(strstr(zkr_last_error_message(), "not a zkr_mutex") != NULL, "%s", zkr_last_error_message());
    zkr_mutex_free((zkr_mutex *)s); /* refused: the semaphore stays usable */
    zkr_string_list *nodes = NULL;
    CHECK_OK(zkr_semaphore_participant_nodes(s, &nodes));
    zkr_string_list_free(nodes);
    zkr_semaphore_free(s);

    /* A freed client, given to a recipe's constructor. */
    zkr_client *c = NULL;
    CHECK_OK(zt_connect_client(&c));
    zkr_client_free(c);
    zkr_mutex *after = (zkr_mutex *)SENTINEL;
    CHECK_STATUS(zkr_mutex_new(c, "/c-tests/bad-input/freed", &after), ZKR_INVALID_ARGUMENT, "zkr_mutex_new");
    CHECK(after == (zkr_mutex *)SENTINEL);
    zkr_client_free(c);
    CHECK(strstr(zkr_last_error_message(), "zkr_client_free") != NULL);
}

static void *fail_on_other_thread(void *p) {
    (void)p;
    zkr_mutex *m = NULL;
    (void)zkr_mutex_new(NULL, "/x", &m);
    return NULL;
}

static void test_last_error_message_is_per_thread(void) {
    zkr_mutex *m = (zkr_mutex *)SENTINEL;
    CHECK_STATUS(zkr_mutex_new(client, "relative", &m), ZKR_INVALID_ARGUMENT, "zkr_mutex_new");
    char mine[512];
    snprintf(mine, sizeof mine, "%s", zkr_last_error_message());
    pthread_t t;
    CHECK(pthread_create(&t, NULL, fail_on_other_thread, NULL) == 0);
    pthread_join(t, NULL);
    CHECK_MSG(strcmp(mine, zkr_last_error_message()) == 0, "another thread's failure changed this thread's message");
    /* A success leaves the message alone. */
    bool exists;
    CHECK_OK(zkr_client_exists(client, "/", &exists, NULL));
    CHECK(strcmp(mine, zkr_last_error_message()) == 0);
}

int main(int argc, char **argv) {
    zt_begin(argc, argv);
    if (zt_connect_client(&client) != ZKR_OK) {
        fprintf(stderr, "cannot connect to %s: %s\n", zt_connect, zkr_last_error_message());
        return 1;
    }
    RUN(test_null_handles_are_invalid_argument);
    RUN(test_null_out_parameters_are_invalid_argument);
    RUN(test_null_strings_are_invalid_argument);
    RUN(test_invalid_utf8_is_invalid_argument);
    RUN(test_bad_paths_are_invalid_argument);
    RUN(test_negative_timeout_other_than_minus_one_is_invalid_argument);
    RUN(test_bad_options_are_invalid_argument);
    RUN(test_uninitialized_owner_is_invalid_argument);
    RUN(test_use_after_close_is_closed);
    RUN(test_double_release_is_not_owner);
    RUN(test_free_while_callbacks_are_registered);
    RUN(test_free_from_inside_own_callback_does_not_deadlock);
    RUN(test_free_null_is_a_no_op);
    RUN(test_freed_or_foreign_handles_are_invalid_argument);
    RUN(test_last_error_message_is_per_thread);
    zkr_client_free(client);
    return zt_end("test_bad_input");
}
