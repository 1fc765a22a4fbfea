/* Service discovery through the C API: instances as Curator's JSON in and out, registrations,
 * queries, a service cache's events and a provider's picks, against a real server. */
#include "testutil.h"

typedef struct seen {
    zt_event ev;
    pthread_mutex_t mu;
    int kinds[64];
    char ids[64][64];
} seen;

static void on_event(const zkr_service_cache_event *e, void *ud) {
    seen *s = ud;
    pthread_mutex_lock(&s->mu);
    int n = zt_event_count(&s->ev);
    if (n < 64) {
        s->kinds[n] = (int)e->type;
        s->ids[n][0] = 0;
        if (e->instance_json) {
            const char *id = strstr(e->instance_json, "\"id\":\"");
            if (id) {
                id += 6;
                size_t len = strcspn(id, "\"");
                if (len > 63) len = 63;
                memcpy(s->ids[n], id, len);
                s->ids[n][len] = 0;
            }
        }
        if (e->type == ZKR_SERVICE_INVALID && (e->error == NULL || e->instance_json != NULL)) s->kinds[n] = -1;
    }
    pthread_mutex_unlock(&s->mu);
    zt_event_signal(&s->ev, (int)e->type);
}

static void test_register_query_update_and_unregister(void) {
    zkr_client *c = NULL;
    CHECK_OK(zt_connect_client(&c));
    char base[96];
    zt_path(base, sizeof base, "services");
    zkr_discovery *d = NULL;
    CHECK_OK(zkr_discovery_new(c, base, &d));
    zkr_registration *r = NULL;
    CHECK_OK(zkr_discovery_register(
        d, "{\"name\":\"orders\",\"id\":\"c1\",\"address\":\"10.0.0.7\",\"port\":8080,"
           "\"payload\":{\"@class\":\"java.util.LinkedHashMap\",\"region\":\"eu\"},\"registrationTimeUTC\":1700000000000}",
        &r));
    char *path = NULL;
    CHECK_OK(zkr_registration_path(r, &path));
    char expect[160];
    snprintf(expect, sizeof expect, "%s/orders/c1", base);
    CHECK_MSG(strcmp(path, expect) == 0, "%s", path);
    zkr_string_free(path);
    /* Curator's bytes on the node, field order included. */
    zkr_buffer *data = NULL;
    CHECK_OK(zkr_client_get_data(c, expect, &data, NULL));
    const char *prefix = "{\"name\":\"orders\",\"id\":\"c1\",\"address\":\"10.0.0.7\",\"port\":8080,\"sslPort\":null,"
                         "\"payload\":{\"@class\":\"java.util.LinkedHashMap\",\"region\":\"eu\"},\"registrationTimeUTC\":";
    CHECK_MSG(data->len > strlen(prefix) && memcmp(data->data, prefix, strlen(prefix)) == 0, "%.*s", (int)data->len,
              (const char *)data->data);
    zkr_buffer_free(data);

    zkr_string_list *names = NULL;
    CHECK_OK(zkr_discovery_query_for_names(d, &names));
    CHECK(names->len == 1 && strcmp(names->items[0], "orders") == 0);
    zkr_string_list_free(names);
    zkr_string_list *all = NULL;
    CHECK_OK(zkr_discovery_query_for_instances(d, "orders", &all));
    CHECK(all->len == 1 && strstr(all->items[0], "\"enabled\":true") != NULL);
    zkr_string_list_free(all);
    char *one = NULL;
    CHECK_OK(zkr_discovery_query_for_instance(d, "orders", "nope", &one));
    CHECK(one == NULL);

    /* An update without registrationTimeUTC keeps the registration's time (not "now"). */
    char *after = NULL;
    CHECK_OK(zkr_registration_update(r, "{\"name\":\"orders\",\"id\":\"c1\",\"address\":\"10.0.0.8\",\"port\":8081}"));
    CHECK_OK(zkr_registration_instance(r, &after));
    const char *time_after = strstr(after, "\"registrationTimeUTC\":");
    CHECK(time_after != NULL);
    CHECK_MSG(strtoll(time_after + 22, NULL, 10) == 1700000000000LL, "%s", after);
    zkr_string_free(after);
    CHECK_STATUS(zkr_registration_update(r, "{\"name\":\"orders\",\"id\":\"other\"}"), ZKR_INVALID_ARGUMENT,
                 "zkr_registration_update");
    CHECK_OK(zkr_registration_set_enabled(r, false));
    bool disabled = false;
    for (int i = 0; i < 500 && !disabled; i++) {
        CHECK_OK(zkr_discovery_query_for_instance(d, "orders", "c1", &one));
        disabled = one && strstr(one, "\"enabled\":false") && strstr(one, "10.0.0.8");
        zkr_string_free(one);
        one = NULL;
        if (!disabled) {
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL);
        }
    }
    CHECK_MSG(disabled, "the update and the disable never reached the node");
    CHECK_OK(zkr_registration_unregister(r));
    CHECK_OK(zkr_registration_unregister(r));
    bool exists = true;
    CHECK_OK(zkr_client_exists(c, expect, &exists, NULL));
    CHECK(!exists);
    zkr_registration_free(r);

    /* Bad input. */
    zkr_registration *bad = NULL;
    CHECK_STATUS(zkr_discovery_register(d, "not json", &bad), ZKR_INVALID_ARGUMENT, "zkr_discovery_register");
    CHECK_STATUS(zkr_discovery_register(d, "{\"id\":\"x\"}", &bad), ZKR_INVALID_ARGUMENT, "zkr_discovery_register");
    CHECK_STATUS(zkr_discovery_register(d, NULL, &bad), ZKR_INVALID_ARGUMENT, "zkr_discovery_register");
    CHECK_STATUS(zkr_discovery_register(d, "{\"name\":\"a\",\"id\":\"b/c\"}", &bad), ZKR_INVALID_ARGUMENT,
                 "zkr_discovery_register");
    CHECK_OK(zkr_discovery_close(d));
    CHECK_STATUS(zkr_discovery_register(d, "{\"name\":\"a\"}", &bad), ZKR_CLOSED, "zkr_discovery_register");
    zkr_discovery_free(d);
    zkr_client_free(c);
}

static void test_conflict_cache_events_and_provider(void) {
    zkr_client *a = NULL, *b = NULL;
    CHECK_OK(zt_connect_client(&a));
    CHECK_OK(zt_connect_client(&b));
    char base[96];
    zt_path(base, sizeof base, "svc");
    zkr_discovery *da = NULL, *db = NULL;
    CHECK_OK(zkr_discovery_new(a, base, &da));
    CHECK_OK(zkr_discovery_new(b, base, &db));

    zkr_service_cache *cache = NULL;
    CHECK_OK(zkr_service_cache_new(db, "s", &cache));
    seen s;
    zt_event_init(&s.ev);
    pthread_mutex_init(&s.mu, NULL);
    uint64_t id = 0;
    CHECK_OK(zkr_service_cache_add_listener(cache, on_event, &s, &id));
    CHECK_OK(zkr_service_cache_start(cache));
    bool ok = false;
    CHECK_OK(zkr_service_cache_await_initialized(cache, 10000, &ok));
    CHECK(ok);

    zkr_registration *r1 = NULL, *r2 = NULL, *r3 = NULL;
    CHECK_OK(zkr_discovery_register(da, "{\"name\":\"s\",\"id\":\"i1\",\"port\":1}", &r1));
    CHECK_OK(zkr_discovery_register(da, "{\"name\":\"s\",\"id\":\"i2\",\"port\":2,\"enabled\":false}", &r2));
    CHECK_STATUS(zkr_discovery_register(db, "{\"name\":\"s\",\"id\":\"i1\"}", &r3), ZKR_CONFLICT, "zkr_discovery_register");
    CHECK_MSG(zt_event_wait(&s.ev, 3, 10000), "events: %d", zt_event_count(&s.ev));
    pthread_mutex_lock(&s.mu);
    CHECK(s.kinds[0] == ZKR_SERVICE_INITIALIZED);
    CHECK(s.kinds[1] == ZKR_SERVICE_ADDED && strcmp(s.ids[1], "i1") == 0);
    CHECK(s.kinds[2] == ZKR_SERVICE_ADDED && strcmp(s.ids[2], "i2") == 0);
    pthread_mutex_unlock(&s.mu);
    zkr_string_list *all = NULL;
    CHECK_OK(zkr_service_cache_instances(cache, &all));
    CHECK(all->len == 2);
    zkr_string_list_free(all);

    zkr_service_provider *p = NULL;
    CHECK_STATUS(zkr_service_provider_new(db, "s", "fastest", &p), ZKR_INVALID_ARGUMENT, "zkr_service_provider_new");
    CHECK_OK(zkr_service_provider_new(db, "s", "round_robin", &p));
    CHECK_OK(zkr_service_provider_start(p));
    for (int i = 0; i < 10; i++) {
        char *json = NULL;
        CHECK_OK(zkr_service_provider_get_instance(p, &json));
        CHECK_MSG(json && strstr(json, "\"id\":\"i1\""), "picked %s (i2 is disabled)", json ? json : "nothing");
        zkr_string_free(json);
    }
    CHECK_OK(zkr_service_provider_note_error(p, "i1"));
    CHECK_OK(zkr_service_provider_note_error(p, "i1"));
    char *none = NULL;
    CHECK_OK(zkr_service_provider_get_instance(p, &none));
    CHECK_MSG(none == NULL, "i1 is down, i2 disabled: %s", none ? none : "");
    zkr_service_provider_free(p);

    CHECK_OK(zkr_registration_unregister(r1));
    CHECK_MSG(zt_event_wait(&s.ev, 4, 10000), "no REMOVED");
    pthread_mutex_lock(&s.mu);
    CHECK(s.kinds[3] == ZKR_SERVICE_REMOVED && strcmp(s.ids[3], "i1") == 0);
    pthread_mutex_unlock(&s.mu);
    CHECK_OK(zkr_service_cache_remove_listener(cache, id));
    zkr_service_cache_free(cache);
    zkr_registration_free(r1);
    zkr_registration_free(r2);
    zkr_discovery_free(da);
    zkr_discovery_free(db);
    zkr_client_free(a);
    zkr_client_free(b);
    pthread_mutex_destroy(&s.mu);
    zt_event_destroy(&s.ev);
}

int main(int argc, char **argv) {
    zt_begin(argc, argv);
    RUN(test_register_query_update_and_unregister);
    RUN(test_conflict_cache_events_and_provider);
    return zt_end("test_discovery");
}
