/* The client through the C API: options, connect/close/free, plain operations, namespace,
 * connection-state callbacks (with a real server-side session expiry). */
#include "testutil.h"

static void test_version_matches_header(void) {
    CHECK(strcmp(zkr_version(), ZKR_VERSION_STRING) == 0);
    char expect[32];
    snprintf(expect, sizeof expect, "%d.%d.%d", ZKR_VERSION_MAJOR, ZKR_VERSION_MINOR, ZKR_VERSION_PATCH);
    CHECK(strcmp(expect, ZKR_VERSION_STRING) == 0);
}

static void test_status_names_are_stable(void) {
    CHECK(ZKR_OK == 0);
    CHECK(strcmp(zkr_status_name(ZKR_OK), "ZKR_OK") == 0);
    CHECK(strcmp(zkr_status_name(ZKR_NO_NODE), "ZKR_NO_NODE") == 0);
    CHECK(strcmp(zkr_status_name(ZKR_NOT_OWNER), "ZKR_NOT_OWNER") == 0);
    CHECK(strcmp(zkr_status_name(ZKR_INTERNAL), "ZKR_INTERNAL") == 0);
    CHECK(ZKR_CONFLICT == 305 && strcmp(zkr_status_name(ZKR_CONFLICT), "ZKR_CONFLICT") == 0);
    CHECK(strcmp(zkr_status_name(12345), "ZKR_UNKNOWN_STATUS") == 0);
    CHECK(strcmp(zkr_connection_state_name(ZKR_STATE_LOST), "LOST") == 0);
    CHECK(strcmp(zkr_connection_state_name(99), "UNKNOWN") == 0);
}

static void test_options_init_sets_size_version_and_defaults(void) {
    zkr_client_options opts;
    memset(&opts, 0xAB, sizeof opts);
    CHECK_OK(zkr_client_options_init(&opts));
    CHECK(opts.size == sizeof(zkr_client_options));
    CHECK(opts.version == ZKR_CLIENT_OPTIONS_VERSION);
    CHECK(opts.session_timeout_ms == 60000);
    CHECK(opts.connection_timeout_ms == 15000);
    CHECK(opts.retry.kind == ZKR_RETRY_EXPONENTIAL_BACKOFF);
    CHECK(opts.retry.base_sleep_ms == 1000 && opts.retry.max_retries == 3);
    CHECK(opts.namespace_name == NULL && opts.auth_scheme == NULL && !opts.can_be_read_only);
}

static void test_connect_with_default_options_and_close_twice(void) {
    zkr_client *c = NULL;
    CHECK_OK(zkr_client_connect(zt_connect, NULL, &c));
    zkr_connection_state st;
    CHECK_OK(zkr_client_state(c, &st));
    CHECK(st == ZKR_STATE_CONNECTED);
    int64_t sid = 0;
    CHECK_OK(zkr_client_session_id(c, &sid));
    CHECK(sid != 0);
    CHECK_OK(zkr_client_close(c));
    CHECK_OK(zkr_client_close(c));
    zkr_client_free(c);
}

static void test_older_smaller_options_struct_is_accepted(void) {
    /* A program built against a header whose options ended after connection_timeout_ms. */
    zkr_client_options opts;
    CHECK_OK(zkr_client_options_init(&opts));
    opts.size = offsetof(zkr_client_options, retry);
    opts.retry.kind = 77; /* beyond `size`: must be ignored */
    zkr_client *c = NULL;
    CHECK_OK(zkr_client_connect(zt_connect, &opts, &c));
    zkr_client_free(c);
}

/* ACL of created nodes (options version 2) and several auth entries: the owner session holds two
 * digest identities and creates with CREATOR_ALL ({ALL, "auth", ""}); a session without them gets
 * ZKR_NO_AUTH, a session with either one reads and deletes. */
static void test_acl_and_several_auth_entries(void) {
    char base[128], counter_path[160], lock_path[160];
    zt_path(base, sizeof base, "acl");
    snprintf(counter_path, sizeof counter_path, "%s/counter", base);
    snprintf(lock_path, sizeof lock_path, "%s/lock", base);

    zkr_client *anon = NULL, *owner = NULL, *bob = NULL, *wrong = NULL;
    CHECK_OK(zt_connect_client(&anon));
    /* Parents created by the owner would carry its ACL too: keep the shared ones open. */
    CHECK_OK(zkr_client_create(anon, base, NULL, 0, ZKR_PERSISTENT, ZKR_CREATE_PARENTS, NULL));

    const char *alice = "alice:secret", *bob_pw = "bob:pw";
    zkr_auth auth[2] = {
        {"digest", (const uint8_t *)alice, strlen(alice)},
        {"digest", (const uint8_t *)bob_pw, strlen(bob_pw)},
    };
    zkr_acl creator_all[1] = {{ZKR_PERM_ALL, "auth", ""}};
    zkr_client_options opts;
    CHECK_OK(zkr_client_options_init(&opts));
    CHECK(opts.version == 5 && !opts.track_ensemble && opts.max_request_bytes == 1048575 && opts.acl == NULL && opts.acl_len == 0 && opts.auth == NULL && opts.auth_len == 0);
    CHECK(!opts.tls && opts.tls_ca == NULL && opts.sasl_username == NULL && opts.acl_rules == NULL);
    opts.auth = auth;
    opts.auth_len = 2;
    opts.acl = creator_all;
    opts.acl_len = 1;
    CHECK_OK(zkr_client_connect(zt_connect, &opts, &owner));

    /* A counter and a lock node, created by the recipes with the owner's ACL. */
    zkr_atomic_long *counter = NULL;
    zkr_atomic_value v;
    CHECK_OK(zkr_atomic_long_new(owner, counter_path, &counter));
    CHECK_OK(zkr_atomic_long_add(counter, 7, &v));
    CHECK(v.succeeded && v.post_value == 7);
    zkr_atomic_long_free(counter);
    zkr_mutex *m = NULL;
    bool acquired = false;
    CHECK_OK(zkr_mutex_new(owner, lock_path, &m));
    CHECK_OK(zkr_mutex_acquire(m, 10000, &acquired));
    CHECK(acquired);
    zkr_string_list *nodes = NULL;
    CHECK_OK(zkr_mutex_participant_nodes(m, &nodes));
    CHECK(nodes->len == 1);
    char lock_node[256];
    snprintf(lock_node, sizeof lock_node, "%s", nodes->items[0]);
    zkr_string_list_free(nodes);

    /* Without the identities: no read, no delete, no listing. */
    zkr_client_options wrong_opts;
    CHECK_OK(zkr_client_options_init(&wrong_opts));
    wrong_opts.auth_scheme = "digest";
    wrong_opts.auth_credentials = (const uint8_t *)"alice:wrong";
    wrong_opts.auth_credentials_len = strlen("alice:wrong");
    CHECK_OK(zkr_client_connect(zt_connect, &wrong_opts, &wrong));
    zkr_client *outsiders[2] = {anon, wrong};
    for (int i = 0; i < 2; i++) {
        zkr_buffer *data = NULL;
        zkr_string_list *children = NULL;
        CHECK_STATUS(zkr_client_get_data(outsiders[i], counter_path, &data, NULL), ZKR_NO_AUTH, "zkr_client_get_data");
        CHECK_STATUS(zkr_client_get_data(outsiders[i], lock_node, &data, NULL), ZKR_NO_AUTH, "zkr_client_get_data");
        CHECK_STATUS(zkr_client_delete(outsiders[i], lock_node, -1, 0), ZKR_NO_AUTH, "zkr_client_delete");
        CHECK_STATUS(zkr_client_get_children(outsiders[i], lock_path, &children), ZKR_NO_AUTH, "zkr_client_get_children");
    }
    bool exists = false;
    CHECK_OK(zkr_client_exists(owner, lock_node, &exists, NULL));
    CHECK(exists);

    /* bob alone (the version-1 single auth fields) is one of the creator's identities. */
    zkr_client_options bob_opts;
    CHECK_OK(zkr_client_options_init(&bob_opts));
    bob_opts.auth_scheme = "digest";
    bob_opts.auth_credentials = (const uint8_t *)bob_pw;
    bob_opts.auth_credentials_len = strlen(bob_pw);
    CHECK_OK(zkr_client_connect(zt_connect, &bob_opts, &bob));
    zkr_atomic_long *bobs = NULL;
    CHECK_OK(zkr_atomic_long_new(bob, counter_path, &bobs));
    CHECK_OK(zkr_atomic_long_get(bobs, &v));
    CHECK(v.succeeded && v.post_value == 7);
    zkr_atomic_long_free(bobs);
    CHECK_OK(zkr_client_delete(bob, lock_node, -1, 0));
    CHECK_OK(zkr_client_exists(owner, lock_node, &exists, NULL));
    CHECK(!exists);

    zkr_mutex_free(m);
    CHECK_OK(zkr_client_delete(owner, base, -1, ZKR_DELETE_RECURSIVE));
    zkr_client_free(wrong);
    zkr_client_free(bob);
    zkr_client_free(owner);
    zkr_client_free(anon);
}

/* A program built against the version-1 header: its struct ends at auth_credentials_len, so the
 * version-2 fields (here garbage beyond its size) are never read, and nodes get the default
 * open ACL. */
static void test_version_1_options_ignore_acl_fields(void) {
    char path[128];
    zt_path(path, sizeof path, "v1");
    zkr_client_options opts;
    CHECK_OK(zkr_client_options_init(&opts));
    opts.version = 1;
    opts.size = offsetof(zkr_client_options, acl);
    opts.acl = (const zkr_acl *)(uintptr_t)8; /* would crash if read */
    opts.acl_len = 3;
    opts.auth = (const zkr_auth *)(uintptr_t)8;
    opts.auth_len = 2;
    opts.auth_scheme = "digest";
    opts.auth_credentials = (const uint8_t *)"v1:pw";
    opts.auth_credentials_len = 5;
    zkr_client *old = NULL, *anon = NULL;
    CHECK_OK(zkr_client_connect(zt_connect, &opts, &old));
    CHECK_OK(zkr_client_create(old, path, (const uint8_t *)"x", 1, ZKR_PERSISTENT, ZKR_CREATE_PARENTS, NULL));
    CHECK_OK(zt_connect_client(&anon));
    zkr_buffer *data = NULL;
    CHECK_OK(zkr_client_get_data(anon, path, &data, NULL));
    CHECK(data->len == 1);
    zkr_buffer_free(data);
    CHECK_OK(zkr_client_delete(anon, path, -1, 0));
    zkr_client_free(anon);
    zkr_client_free(old);
}

/* Bad ACL options are refused before connecting. */
static void test_bad_acl_options_are_refused(void) {
    zkr_client_options opts;
    zkr_client *c = NULL;
    zkr_acl bad[1] = {{64, "world", "anyone"}};
    CHECK_OK(zkr_client_options_init(&opts));
    opts.acl = bad;
    opts.acl_len = 1;
    CHECK_STATUS(zkr_client_connect(zt_connect, &opts, &c), ZKR_INVALID_ARGUMENT, "zkr_client_connect");
    bad[0].perms = ZKR_PERM_READ;
    bad[0].scheme = NULL;
    CHECK_STATUS(zkr_client_connect(zt_connect, &opts, &c), ZKR_INVALID_ARGUMENT, "zkr_client_connect");
    opts.acl = NULL; /* a length without entries */
    CHECK_STATUS(zkr_client_connect(zt_connect, &opts, &c), ZKR_INVALID_ARGUMENT, "zkr_client_connect");
    CHECK(c == NULL);
}

static void test_plain_operations_round_trip(void) {
    zkr_client *c = NULL;
    CHECK_OK(zt_connect_client(&c));
    char base[128], path[160];
    zt_path(base, sizeof base, "plain");
    snprintf(path, sizeof path, "%s/a/b", base);

    char *created = NULL;
    CHECK_OK(zkr_client_create(c, path, (const uint8_t *)"hello", 5, ZKR_PERSISTENT, ZKR_CREATE_PARENTS, &created));
    CHECK(created != NULL && strcmp(created, path) == 0);
    zkr_string_free(created);

    zkr_buffer *data = NULL;
    zkr_stat stat;
    CHECK_OK(zkr_client_get_data(c, path, &data, &stat));
    CHECK(data->len == 5 && memcmp(data->data, "hello", 5) == 0);
    CHECK(stat.version == 0 && stat.data_length == 5 && stat.czxid > 0);
    zkr_buffer_free(data);

    CHECK_OK(zkr_client_set_data(c, path, (const uint8_t *)"bye", 3, 0, &stat));
    CHECK(stat.version == 1);
    CHECK_STATUS(zkr_client_set_data(c, path, (const uint8_t *)"x", 1, 0, NULL), ZKR_BAD_VERSION, "zkr_client_set_data");
    CHECK_STATUS(zkr_client_create(c, path, NULL, 0, ZKR_PERSISTENT, 0, NULL), ZKR_NODE_EXISTS, "zkr_client_create");

    /* Empty data comes back as an empty buffer. */
    CHECK_OK(zkr_client_set_data(c, path, NULL, 0, -1, NULL));
    CHECK_OK(zkr_client_get_data(c, path, &data, NULL));
    CHECK(data->len == 0 && data->data == NULL);
    zkr_buffer_free(data);

    char prefix[192];
    snprintf(prefix, sizeof prefix, "%s/a/seq-", base);
    CHECK_OK(zkr_client_create(c, prefix, NULL, 0, ZKR_EPHEMERAL_SEQUENTIAL, 0, &created));
    CHECK(strncmp(created, prefix, strlen(prefix)) == 0 && strlen(created) == strlen(prefix) + 10);
    zkr_stat eph;
    bool exists = false;
    CHECK_OK(zkr_client_exists(c, created, &exists, &eph));
    int64_t sid;
    CHECK_OK(zkr_client_session_id(c, &sid));
    CHECK(exists && eph.ephemeral_owner == sid);
    zkr_string_free(created);

    char protected_path[192];
    snprintf(protected_path, sizeof protected_path, "%s/a/p", base);
    CHECK_OK(zkr_client_create(c, protected_path, NULL, 0, ZKR_EPHEMERAL, ZKR_CREATE_PROTECTED, &created));
    CHECK(strstr(created, "/_c_") != NULL && strlen(created) > strlen(protected_path));
    zkr_string_free(created);

    char parent[160];
    snprintf(parent, sizeof parent, "%s/a", base);
    zkr_string_list *children = NULL;
    CHECK_OK(zkr_client_get_children(c, parent, &children));
    CHECK(children->len == 3);
    int found_b = 0;
    for (size_t i = 0; i < children->len; i++) found_b += strcmp(children->items[i], "b") == 0;
    CHECK(found_b == 1);
    zkr_string_list_free(children);

    CHECK_STATUS(zkr_client_delete(c, parent, -1, 0), ZKR_NOT_EMPTY, "zkr_client_delete");
    /* base is a container parent: the server may reap it as soon as it is empty. */
    zkr_status deleted = zkr_client_delete(c, base, -1, ZKR_DELETE_RECURSIVE);
    CHECK_MSG(deleted == ZKR_OK || deleted == ZKR_NO_NODE, "%s", zkr_last_error_message());
    CHECK_OK(zkr_client_exists(c, base, &exists, NULL));
    CHECK(!exists);
    CHECK_STATUS(zkr_client_get_data(c, path, &data, NULL), ZKR_NO_NODE, "zkr_client_get_data");
    zkr_client_free(c);
}

static void test_namespace_prefixes_every_path(void) {
    char ns[64];
    snprintf(ns, sizeof ns, "c-tests-ns-%ld", (long)getpid());
    zkr_client_options opts;
    CHECK_OK(zkr_client_options_init(&opts));
    opts.namespace_name = ns;
    zkr_client *scoped = NULL, *plain = NULL;
    CHECK_OK(zkr_client_connect(zt_connect, &opts, &scoped));
    CHECK_OK(zkr_client_connect(zt_connect, NULL, &plain));
    char *created = NULL;
    CHECK_OK(zkr_client_create(scoped, "/x", NULL, 0, ZKR_PERSISTENT, ZKR_CREATE_PARENTS, &created));
    CHECK(strcmp(created, "/x") == 0);
    zkr_string_free(created);
    char full[96];
    snprintf(full, sizeof full, "/%s/x", ns);
    bool exists = false;
    CHECK_OK(zkr_client_exists(plain, full, &exists, NULL));
    CHECK(exists);
    snprintf(full, sizeof full, "/%s", ns);
    zkr_status deleted = zkr_client_delete(plain, full, -1, ZKR_DELETE_RECURSIVE);
    CHECK_MSG(deleted == ZKR_OK || deleted == ZKR_NO_NODE, "%s", zkr_last_error_message());
    zkr_client_free(scoped);
    zkr_client_free(plain);
}

static void test_state_callback_sees_lost_then_reconnected_after_session_expiry(void) {
    zkr_client *c = NULL;
    CHECK_OK(zt_connect_client(&c));
    zt_states s;
    zt_states_init(&s);
    uint64_t id = 0;
    CHECK_OK(zkr_client_add_state_listener(c, zt_record_state, &s, &id));
    int64_t before = 0, after = 0;
    CHECK_OK(zkr_client_session_id(c, &before));
    CHECK_OK(zkr_client_expire_session_for_testing(c));
    /* LOST, then RECONNECTED with a new session. SUSPENDED/RECONNECTED of the old session may
     * come first, several times: the expiring connection takes the session over before closing
     * it, and our client may take it back in between (then the expiry is tried again). */
    int lost_at = zt_states_wait(&s, 0, ZKR_STATE_LOST, 60000);
    CHECK_MSG(lost_at >= 0, "no LOST within 60 s (seen %d states)", s.n);
    bool reconnected = zt_states_wait(&s, lost_at + 1, ZKR_STATE_RECONNECTED, 30000) >= 0;
    CHECK_MSG(reconnected, "no LOST then RECONNECTED among %d states", s.n);
    CHECK(!s.on_registering_thread);
    CHECK_OK(zkr_client_session_id(c, &after));
    CHECK(after != 0 && after != before);
    CHECK_OK(zkr_client_remove_state_listener(c, id));
    CHECK_STATUS(zkr_client_remove_state_listener(c, id), ZKR_INVALID_ARGUMENT, "zkr_client_remove_state_listener");
    zkr_client_free(c);
    zt_states_destroy(&s);
}

/* The log callback: one per process (zkr_set_logger). A session expiry is a WARN record from
 * zkrecipes::client::connection; nothing below the level set is delivered; after
 * zkr_set_logger(ZKR_LOG_OFF, ...) returns, the callback never runs again (its user_data is
 * freed right after: ASan would catch a late call). */
typedef struct log_seen {
    zt_event expired;
    pthread_mutex_t mu;
    int most_verbose;
    char message[512];
} log_seen;

static void record_log(zkr_log_level level, const char *target, const char *message, void *user_data) {
    log_seen *s = (log_seen *)user_data;
    pthread_mutex_lock(&s->mu);
    if ((int)level > s->most_verbose) s->most_verbose = (int)level;
    bool expiry = level == ZKR_LOG_WARN && strcmp(target, "zkrecipes::client::connection") == 0 &&
                  strstr(message, "session expired") != NULL;
    if (expiry && s->message[0] == '\0') snprintf(s->message, sizeof s->message, "%s", message);
    pthread_mutex_unlock(&s->mu);
    if (expiry) zt_event_signal(&s->expired, 1);
}

static void test_log_callback_hears_a_session_expiry_as_warn(void) {
    CHECK(strcmp(zkr_log_level_name(ZKR_LOG_WARN), "WARN") == 0);
    CHECK(strcmp(zkr_log_level_name(ZKR_LOG_OFF), "OFF") == 0);
    CHECK(strcmp(zkr_log_level_name(42), "UNKNOWN") == 0);
    log_seen *s = calloc(1, sizeof *s);
    CHECK(s != NULL);
    zt_event_init(&s->expired);
    pthread_mutex_init(&s->mu, NULL);
    CHECK_STATUS(zkr_set_logger(ZKR_LOG_TRACE + 1, record_log, s), ZKR_INVALID_ARGUMENT, "zkr_set_logger");
    CHECK_STATUS(zkr_set_logger(ZKR_LOG_WARN, NULL, s), ZKR_INVALID_ARGUMENT, "zkr_set_logger");
    CHECK_OK(zkr_set_logger(ZKR_LOG_WARN, record_log, s));
    zkr_client *c = NULL;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_client_expire_session_for_testing(c));
    CHECK_MSG(zt_event_wait(&s->expired, 1, 20000), "no WARN record of the session expiry within 20 s");
    pthread_mutex_lock(&s->mu);
    bool fields = strstr(s->message, "session=0x") != NULL;
    int most_verbose = s->most_verbose;
    pthread_mutex_unlock(&s->mu);
    CHECK_MSG(fields, "the record lacks its session field: %s", s->message);
    CHECK_MSG(most_verbose == ZKR_LOG_WARN, "a record of level %d passed a WARN filter", most_verbose);
    CHECK_OK(zkr_set_logger(ZKR_LOG_OFF, NULL, NULL));
    pthread_mutex_destroy(&s->mu);
    zt_event_destroy(&s->expired);
    free(s);
    /* Logging is off: closing the client logs nothing, and the freed user_data is never used. */
    zkr_client_free(c);
}

/* One-shot watches: each callback once, with the event and the path. */
typedef struct watch_log {
    zt_event event;
    zkr_watch_event_type types[16];
    char paths[16][192];
} watch_log;

static void record_watch(zkr_watch_event_type type, const char *path, void *user_data) {
    watch_log *w = (watch_log *)user_data;
    int i = zt_event_count(&w->event);
    if (i < 16) {
        w->types[i] = type;
        snprintf(w->paths[i], sizeof w->paths[i], "%s", path);
    }
    zt_event_signal(&w->event, (int)type);
}

static void test_one_shot_watches(void) {
    char base[128], kid[160];
    zt_path(base, sizeof base, "watched");
    snprintf(kid, sizeof kid, "%s/kid", base);
    zkr_client *c = NULL, *other = NULL;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zt_connect_client(&other));
    watch_log w;
    memset(&w, 0, sizeof w);
    zt_event_init(&w.event);

    bool exists = true;
    CHECK_OK(zkr_client_exists_watch(c, base, &exists, NULL, record_watch, &w));
    CHECK(!exists);
    CHECK_OK(zkr_client_create(other, base, (const uint8_t *)"v1", 2, ZKR_PERSISTENT, ZKR_CREATE_PARENTS, NULL));
    CHECK_MSG(zt_event_wait(&w.event, 1, 10000), "no CREATED event");
    CHECK(w.types[0] == ZKR_WATCH_CREATED && strcmp(w.paths[0], base) == 0);

    zkr_buffer *data = NULL;
    zkr_stat st;
    CHECK_OK(zkr_client_get_data_watch(c, base, &data, &st, record_watch, &w));
    CHECK(data->len == 2 && st.version == 0);
    zkr_buffer_free(data);
    CHECK_OK(zkr_client_set_data(other, base, (const uint8_t *)"v2", 2, -1, NULL));
    CHECK_MSG(zt_event_wait(&w.event, 2, 10000), "no CHANGED event");
    CHECK(w.types[1] == ZKR_WATCH_CHANGED && strcmp(w.paths[1], base) == 0);
    CHECK_OK(zkr_client_set_data(other, base, (const uint8_t *)"v3", 2, -1, NULL)); /* one-shot: nothing */

    zkr_string_list *children = NULL;
    CHECK_OK(zkr_client_get_children_watch(c, base, &children, record_watch, &w));
    CHECK(children->len == 0);
    zkr_string_list_free(children);
    CHECK_OK(zkr_client_create(other, kid, NULL, 0, ZKR_PERSISTENT, 0, NULL));
    CHECK_MSG(zt_event_wait(&w.event, 3, 10000), "no CHILD event");
    CHECK(w.types[2] == ZKR_WATCH_CHILD && strcmp(w.paths[2], base) == 0);

    CHECK_OK(zkr_client_exists_watch(c, kid, &exists, NULL, record_watch, &w));
    CHECK(exists);
    CHECK_OK(zkr_client_delete(other, kid, -1, 0));
    CHECK_MSG(zt_event_wait(&w.event, 4, 10000), "no DELETED event");
    CHECK(w.types[3] == ZKR_WATCH_DELETED && strcmp(w.paths[3], kid) == 0);

    /* Failures leave no watch; a NULL callback is refused. */
    char missing[192];
    snprintf(missing, sizeof missing, "%s/none", base);
    CHECK_STATUS(zkr_client_get_data_watch(c, missing, &data, NULL, record_watch, &w), ZKR_NO_NODE, "zkr_client_get_data_watch");
    CHECK_STATUS(zkr_client_get_children_watch(c, base, &children, NULL, &w), ZKR_INVALID_ARGUMENT, "zkr_client_get_children_watch");

    /* A watch pending when the client closes ends with SESSION_ENDED. */
    CHECK_OK(zkr_client_get_data_watch(c, base, &data, NULL, record_watch, &w));
    zkr_buffer_free(data);
    CHECK_OK(zkr_client_close(c));
    CHECK_MSG(zt_event_wait(&w.event, 5, 10000), "no SESSION_ENDED event");
    CHECK(w.types[4] == ZKR_WATCH_SESSION_ENDED);
    CHECK(zt_event_count(&w.event) == 5);
    zkr_client_free(c);

    /* A watch pending at free: freeing ends the session, yet the callback is not called (free
     * disables the client's watch callbacks first), so user_data may go right after. */
    CHECK_OK(zkr_client_get_data_watch(other, base, &data, NULL, record_watch, &w));
    zkr_buffer_free(data);
    zkr_client_free(other);
    CHECK(zt_event_count(&w.event) == 5);
    zt_event_destroy(&w.event);
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_client_delete(c, base, -1, 0));
    zkr_client_free(c);
}

static void test_closed_client_reports_closed_and_can_still_be_freed(void) {
    zkr_client *c = NULL;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_client_close(c));
    zkr_buffer *data = NULL;
    CHECK_STATUS(zkr_client_get_data(c, "/", &data, NULL), ZKR_CLOSED, "zkr_client_get_data");
    CHECK(data == NULL);
    zkr_connection_state st;
    CHECK_STATUS(zkr_client_state(c, &st), ZKR_CLOSED, "zkr_client_state");
    zkr_client_free(c);
}

static void test_sync_reads_see_earlier_writes_and_bad_input_is_refused(void) {
    zkr_client *w = NULL, *r = NULL;
    CHECK_OK(zt_connect_client(&w));
    CHECK_OK(zt_connect_client(&r));
    char path[160];
    zt_path(path, sizeof path, "sync");
    CHECK_OK(zkr_client_create(w, path, (const uint8_t *)"0", 1, ZKR_PERSISTENT, ZKR_CREATE_PARENTS, NULL));
    for (int i = 1; i <= 20; i++) {
        char v[16];
        int n = snprintf(v, sizeof v, "%d", i);
        zkr_stat written, seen;
        CHECK_OK(zkr_client_set_data(w, path, (const uint8_t *)v, (size_t)n, -1, &written));
        CHECK_OK(zkr_client_sync(r, path));
        zkr_buffer *data = NULL;
        CHECK_OK(zkr_client_get_data(r, path, &data, &seen));
        CHECK(seen.version == written.version);
        zkr_buffer_free(data);
    }
    char missing[200];
    snprintf(missing, sizeof missing, "%s/missing", path);
    CHECK_OK(zkr_client_sync(r, missing));
    CHECK_STATUS(zkr_client_sync(r, "relative"), ZKR_INVALID_ARGUMENT, "zkr_client_sync");
    CHECK_STATUS(zkr_client_sync(r, NULL), ZKR_INVALID_ARGUMENT, "zkr_client_sync");
    CHECK_STATUS(zkr_client_sync(NULL, path), ZKR_INVALID_ARGUMENT, "zkr_client_sync");
    CHECK_OK(zkr_client_close(r));
    CHECK_STATUS(zkr_client_sync(r, path), ZKR_CLOSED, "zkr_client_sync");
    zkr_client_free(r);
    zkr_client_free(w);
}

static void test_connect_to_nothing_times_out(void) {
    zkr_client_options opts;
    CHECK_OK(zkr_client_options_init(&opts));
    opts.connection_timeout_ms = 500;
    zkr_client *c = NULL;
    double t0 = zt_now_ms();
    /* Port 1 on loopback: nothing listens there. */
    zkr_status s = zkr_client_connect("127.0.0.1:1", &opts, &c);
    CHECK_MSG(s == ZKR_TIMEOUT || s == ZKR_CONNECTION_LOSS, "got %s: %s", zkr_status_name(s), zkr_last_error_message());
    CHECK(c == NULL);
    CHECK(zt_now_ms() - t0 < 5000);
}

int main(int argc, char **argv) {
    zt_begin(argc, argv);
    RUN(test_version_matches_header);
    RUN(test_status_names_are_stable);
    RUN(test_options_init_sets_size_version_and_defaults);
    RUN(test_connect_with_default_options_and_close_twice);
    RUN(test_older_smaller_options_struct_is_accepted);
    RUN(test_plain_operations_round_trip);
    RUN(test_acl_and_several_auth_entries);
    RUN(test_version_1_options_ignore_acl_fields);
    RUN(test_bad_acl_options_are_refused);
    RUN(test_namespace_prefixes_every_path);
    RUN(test_state_callback_sees_lost_then_reconnected_after_session_expiry);
    RUN(test_one_shot_watches);
    RUN(test_log_callback_hears_a_session_expiry_as_warn);
    RUN(test_closed_client_reports_closed_and_can_still_be_freed);
    RUN(test_sync_reads_see_earlier_writes_and_bad_input_is_refused);
    RUN(test_connect_to_nothing_times_out);
    return zt_end("test_client");
}
