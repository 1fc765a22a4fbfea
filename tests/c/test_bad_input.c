/* The bad-input table: every misuse returns its status and a message naming the function, with
 * no crash, no leak (ASan/LSan) and no hang; outputs are left untouched on failure. */
#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>

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

/* A program built against an older header has a smaller zkr_client_options. Filling it must
 * write only its bytes, record its size and version, and connect with the defaults for the rest
 * (before zkr_client_options_init_sized, the init wrote the library's whole struct: here the
 * 8 bytes of track_ensemble and padding past a version-4 struct). */
static void test_options_of_an_older_header_are_filled_in_their_bytes_only(void) {
    const size_t v4 = offsetof(zkr_client_options, track_ensemble); /* version 4's sizeof */
    struct {
        zkr_client_options o;
        unsigned char after[16];
    } v;
    memset(&v, 0xAB, sizeof v);
    CHECK_OK(zkr_client_options_init_sized(&v.o, v4, 4));
    const unsigned char *bytes = (const unsigned char *)&v;
    size_t written_past = 0;
    for (size_t i = v4; i < sizeof v; i++) written_past += bytes[i] != 0xAB;
    CHECK_MSG(written_past == 0, "the init wrote past the caller's version-4 struct");
    CHECK(v.o.size == v4);
    CHECK(v.o.version == 4);
    CHECK(v.o.session_timeout_ms == 60000);
    CHECK(v.o.max_request_bytes == 1048575);
    zkr_client *c = NULL;
    CHECK_OK(zkr_client_connect(zt_connect, &v.o, &c));
    size_t max = 0;
    CHECK_OK(zkr_client_max_request_bytes(c, &max));
    CHECK(max == 1048575);
    zkr_client_free(c);

    /* The macro passes this program's own size and version. */
    zkr_client_options opts;
    CHECK_OK(zkr_client_options_init(&opts));
    CHECK(opts.size == sizeof opts);
    CHECK(opts.version == ZKR_CLIENT_OPTIONS_VERSION);

    /* Sizes and versions no header made: refused, nothing written. */
    memset(&v, 0xAB, sizeof v);
    CHECK_STATUS(zkr_client_options_init_sized(&v.o, 4, 1), ZKR_INVALID_ARGUMENT, "zkr_client_options_init_sized");
    CHECK(strstr(zkr_last_error_message(), "zkr_client_options_init(&opts)") != NULL);
    CHECK_STATUS(zkr_client_options_init_sized(&v.o, v4, 0), ZKR_INVALID_ARGUMENT, "zkr_client_options_init_sized");
    CHECK_STATUS(zkr_client_options_init_sized(&v.o, sizeof v.o, ZKR_CLIENT_OPTIONS_VERSION + 1),
                 ZKR_INVALID_ARGUMENT, "zkr_client_options_init_sized");
    CHECK(strstr(zkr_last_error_message(), "newer zkrecipes header") != NULL);
    CHECK_STATUS(zkr_client_options_init_sized(&v.o, sizeof v, ZKR_CLIENT_OPTIONS_VERSION),
                 ZKR_INVALID_ARGUMENT, "zkr_client_options_init_sized");
    written_past = 0;
    for (size_t i = 0; i < sizeof v; i++) written_past += bytes[i] != 0xAB;
    CHECK_MSG(written_past == 0, "a refused init wrote into the struct");
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

/* A length no buffer can have (a negative length cast to size_t, say) is refused before
 * anything is read: no array of that many elements fits in memory. */
static void test_impossible_lengths_are_invalid_argument(void) {
    const char *path = "/c-tests/bad-input/huge";
    uint8_t byte = 1;
    CHECK_STATUS(zkr_client_create(client, path, &byte, SIZE_MAX, ZKR_PERSISTENT, ZKR_CREATE_PARENTS, NULL),
                 ZKR_INVALID_ARGUMENT, "zkr_client_create");
    CHECK_MSG(strstr(zkr_last_error_message(), "data: length 18446744073709551615 is not a valid size") != NULL ||
                  strstr(zkr_last_error_message(), "data: length 4294967295 is not a valid size") != NULL,
              "message: %s", zkr_last_error_message());
    CHECK_STATUS(zkr_client_create(client, path, &byte, (size_t)PTRDIFF_MAX + 1, ZKR_PERSISTENT, 0, NULL),
                 ZKR_INVALID_ARGUMENT, "zkr_client_create");
    bool exists = true;
    CHECK_OK(zkr_client_exists(client, path, &exists, NULL));
    CHECK_MSG(!exists, "a refused create must create nothing");
    /* Arrays of structs and of pointers: the bound is in elements. */
    zkr_acl acl = {ZKR_PERM_ALL, "world", "anyone"};
    CHECK_STATUS(zkr_client_set_acl(client, "/", &acl, SIZE_MAX / 2, -1, NULL), ZKR_INVALID_ARGUMENT,
                 "zkr_client_set_acl");
    CHECK(strstr(zkr_last_error_message(), "acl: length") != NULL);
    const char *paths[] = {"/c-tests/bad-input/multi"};
    zkr_multi_lock *ml = (zkr_multi_lock *)SENTINEL;
    CHECK_STATUS(zkr_multi_lock_new(client, paths, SIZE_MAX, &ml), ZKR_INVALID_ARGUMENT, "zkr_multi_lock_new");
    CHECK(ml == (zkr_multi_lock *)SENTINEL);
    CHECK_STATUS(zkr_multi_lock_new(client, paths, SIZE_MAX / sizeof paths[0] + 1, &ml), ZKR_INVALID_ARGUMENT,
                 "zkr_multi_lock_new");
    zkr_transaction *t = NULL;
    CHECK_OK(zkr_transaction_new(client, &t));
    CHECK_STATUS(zkr_transaction_create(t, path, &byte, (size_t)-1, ZKR_PERSISTENT, 0), ZKR_INVALID_ARGUMENT,
                 "zkr_transaction_create");
    zkr_transaction_free(t);
    zkr_queue *q = NULL;
    CHECK_OK(zkr_queue_new(client, "/c-tests/bad-input/queue", NULL, 0, &q));
    zkr_bytes messages[1] = {{&byte, SIZE_MAX}};
    bool put = true;
    CHECK_STATUS(zkr_queue_put_multi(q, messages, 1, 1000, &put), ZKR_INVALID_ARGUMENT, "zkr_queue_put_multi");
    CHECK(strstr(zkr_last_error_message(), "messages[0].data: length") != NULL);
    CHECK_STATUS(zkr_queue_put_multi(q, messages, SIZE_MAX, 1000, &put), ZKR_INVALID_ARGUMENT, "zkr_queue_put_multi");
    CHECK(put == true);
    zkr_queue_free(q);
}

/* ---- A foreign writer: ZooKeeper's wire protocol (jute) by hand, for what a C string cannot say ---- */

typedef struct jute {
    uint8_t b[1024];
    size_t n;
} jute;

static void jute_int(jute *j, uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; i--) j->b[j->n++] = (uint8_t)(v >> (8 * i));
}
static void jute_i32(jute *j, int32_t v) { jute_int(j, (uint32_t)v, 4); }
static void jute_i64(jute *j, int64_t v) { jute_int(j, (uint64_t)v, 8); }
static void jute_buf(jute *j, const void *p, size_t len) {
    jute_i32(j, (int32_t)len);
    memcpy(j->b + j->n, p, len);
    j->n += len;
}

static bool io_all(int fd, uint8_t *p, size_t n, bool writing) {
    while (n > 0) {
        ssize_t k = writing ? write(fd, p, n) : read(fd, p, n);
        if (k <= 0) return false;
        p += k;
        n -= (size_t)k;
    }
    return true;
}

/* Sends one framed request and reads the framed reply into `reply` (its length in *len). */
static bool jute_call(int fd, jute *req, uint8_t *reply, size_t cap, size_t *len) {
    uint8_t head[4] = {(uint8_t)(req->n >> 24), (uint8_t)(req->n >> 16), (uint8_t)(req->n >> 8), (uint8_t)req->n};
    if (!io_all(fd, head, 4, true) || !io_all(fd, req->b, req->n, true) || !io_all(fd, head, 4, false)) return false;
    *len = (size_t)head[0] << 24 | (size_t)head[1] << 16 | (size_t)head[2] << 8 | head[3];
    return *len <= cap && io_all(fd, reply, *len, false);
}

/* Sets the ACL of `path` to world:anyone (all) and digest:"a\0b:x" (read), over a session of its
 * own: an id with a NUL byte, which ZooKeeper accepts (its digest check only splits at ':') and
 * a Java client can write, but no zkr_acl can hold. */
static bool set_acl_with_a_nul_byte(const char *hosts, const char *path) {
    char host[128];
    snprintf(host, sizeof host, "%s", hosts);
    char *colon = strrchr(host, ':');
    if (colon == NULL) return false;
    *colon = '\0';
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, colon + 1, &hints, &ai) != 0) return false;
    int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    bool ok = fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0;
    freeaddrinfo(ai);
    struct timeval tv = {10, 0};
    ok = ok && setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0;
    uint8_t reply[1024], zeros[16] = {0};
    size_t len = 0;
    /* ConnectRequest: protocol version, last zxid seen, timeout, session id, password, read-only. */
    jute req = {{0}, 0};
    jute_i32(&req, 0);
    jute_i64(&req, 0);
    jute_i32(&req, 10000);
    jute_i64(&req, 0);
    jute_buf(&req, zeros, sizeof zeros);
    req.b[req.n++] = 0;
    ok = ok && jute_call(fd, &req, reply, sizeof reply, &len) && len >= 16;
    /* SetACL (op 7): path, the ACL vector, any version. */
    req.n = 0;
    jute_i32(&req, 1);
    jute_i32(&req, 7);
    jute_buf(&req, path, strlen(path));
    jute_i32(&req, 2);
    jute_i32(&req, ZKR_PERM_ALL);
    jute_buf(&req, "world", 5);
    jute_buf(&req, "anyone", 6);
    jute_i32(&req, ZKR_PERM_READ);
    jute_buf(&req, "digest", 6);
    jute_buf(&req, "a\0b:x", 5);
    jute_i32(&req, -1);
    /* The reply header: xid, zxid, error (0: done). */
    ok = ok && jute_call(fd, &req, reply, sizeof reply, &len) && len >= 16 &&
         memcmp(reply + 12, "\0\0\0\0", 4) == 0;
    /* closeSession (op -11). */
    req.n = 0;
    jute_i32(&req, 2);
    jute_i32(&req, -11);
    ok = ok && jute_call(fd, &req, reply, sizeof reply, &len);
    if (fd >= 0) close(fd);
    return ok;
}

/* An ACL the C API cannot express (a NUL byte in an id) fails the read: the out-parameters keep
 * what they held (the stat included) and nothing made on the way is leaked (LSan). */
static void test_get_acl_that_cannot_be_returned_leaves_the_outputs_alone(void) {
    char path[128];
    zt_path(path, sizeof path, "nul-acl");
    CHECK_OK(zkr_client_create(client, path, NULL, 0, ZKR_PERSISTENT, ZKR_CREATE_PARENTS, NULL));
    CHECK_MSG(set_acl_with_a_nul_byte(zt_connect, path), "could not set the ACL over a raw session");
    zkr_acl_list *list = (zkr_acl_list *)SENTINEL;
    zkr_stat st, before;
    memset(&st, 0x5e, sizeof st);
    memcpy(&before, &st, sizeof st);
    CHECK_STATUS(zkr_client_get_acl(client, path, &list, &st), ZKR_INTERNAL, "zkr_client_get_acl");
    CHECK(strstr(zkr_last_error_message(), "NUL") != NULL);
    CHECK(list == (zkr_acl_list *)SENTINEL);
    CHECK_MSG(memcmp(&st, &before, sizeof st) == 0, "zkr_client_get_acl wrote *stat, then failed");
    /* Without a stat wanted, the same. */
    CHECK_STATUS(zkr_client_get_acl(client, path, &list, NULL), ZKR_INTERNAL, "zkr_client_get_acl");
    CHECK(list == (zkr_acl_list *)SENTINEL);
    CHECK_OK(zkr_client_delete(client, path, -1, 0));
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
    RUN(test_options_of_an_older_header_are_filled_in_their_bytes_only);
    RUN(test_uninitialized_owner_is_invalid_argument);
    RUN(test_use_after_close_is_closed);
    RUN(test_double_release_is_not_owner);
    RUN(test_free_while_callbacks_are_registered);
    RUN(test_free_from_inside_own_callback_does_not_deadlock);
    RUN(test_free_null_is_a_no_op);
    RUN(test_freed_or_foreign_handles_are_invalid_argument);
    RUN(test_last_error_message_is_per_thread);
    RUN(test_impossible_lengths_are_invalid_argument);
    RUN(test_get_acl_that_cannot_be_returned_leaves_the_outputs_alone);
    zkr_client_free(client);
    return zt_end("test_bad_input");
}
