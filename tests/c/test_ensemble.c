/* Dynamic ensembles through the C API, against the test server (a standalone server without
 * reconfigEnabled; argv[1]) and a static 3-server ensemble (argv[2]): their configurations, reconfig is refused with ZooKeeper's
 * reason, the tracked client's connect string, and bad input. The real 3 -> 5 -> 3 change with a
 * tracked session is core/tests/ensemble.rs's (and one test per binding). */
#include "testutil.h"

static const char *ensemble_connect; /* argv[2]: a static 3-server ensemble */

static void test_get_config_of_a_standalone_server_and_the_tracker_keeps_its_hosts(void) {
    zkr_client_options opts;
    CHECK_OK(zkr_client_options_init(&opts));
    CHECK(opts.version == 5 && !opts.track_ensemble);
    opts.track_ensemble = true;
    zkr_client *c = NULL;
    CHECK_OK(zkr_client_connect(zt_connect, &opts, &c));
    zkr_ensemble_config *config = NULL;
    CHECK_OK(zkr_client_get_config(c, &config));
    /* A standalone server has no member lines in /zookeeper/config: no members, version 0, an
     * empty connect string; the tracker then keeps the hosts it was given. */
    CHECK_MSG(config->len == 0 && config->members == NULL, "%zu members", config->len);
    CHECK(config->version == 0);
    CHECK(config->data != NULL && config->connect_string != NULL);
    CHECK_MSG(strcmp(config->connect_string, "") == 0, "%s", config->connect_string);
    char *hosts = NULL;
    CHECK_OK(zkr_client_current_connect_string(c, &hosts));
    CHECK_MSG(strcmp(hosts, zt_connect) == 0, "hosts %s, connect %s", hosts, zt_connect);
    zkr_string_free(hosts);
    bool exists = false;
    CHECK_OK(zkr_client_exists(c, "/zookeeper", &exists, NULL));
    CHECK(exists);
    zkr_ensemble_config_free(config);
    zkr_ensemble_config_free(NULL);
    zkr_client_free(c);
}

static void test_a_static_ensemble_lists_its_members(void) {
    CHECK_MSG(ensemble_connect != NULL, "test_ensemble needs a 3-server ensemble's connect string as argv[2]");
    zkr_client_options opts;
    CHECK_OK(zkr_client_options_init(&opts));
    opts.track_ensemble = true;
    zkr_client *c = NULL;
    CHECK_OK(zkr_client_connect(ensemble_connect, &opts, &c));
    zkr_ensemble_config *config = NULL;
    CHECK_OK(zkr_client_get_config(c, &config));
    CHECK_MSG(config->len == 3, "%zu members in %s", config->len, config->data);
    for (size_t i = 0; i < config->len; i++) {
        const zkr_ensemble_member *m = &config->members[i];
        char host[32], prefix[64];
        snprintf(host, sizeof host, "127.0.0.%zu", i + 1);
        snprintf(prefix, sizeof prefix, "server.%zu=127.0.0.%zu:", i + 1, i + 1);
        CHECK(m->id == i + 1);
        CHECK_MSG(strcmp(m->host, host) == 0, "%s", m->host);
        CHECK(m->role == ZKR_SERVER_PARTICIPANT);
        CHECK(m->quorum_port > 0 && m->election_port > 0 && m->quorum_port != m->election_port);
        CHECK_MSG(strncmp(m->server_line, prefix, strlen(prefix)) == 0, "%s", m->server_line);
        /* A static configuration names no client ports. */
        CHECK(m->client_port == 0 && m->client_host == NULL && m->client_address == NULL);
    }
    CHECK(config->version == 0);
    CHECK(strcmp(config->connect_string, "") == 0);
    /* Nothing to follow: the tracker keeps the hosts it was given, and the session works. */
    char *hosts = NULL;
    CHECK_OK(zkr_client_current_connect_string(c, &hosts));
    CHECK_MSG(strcmp(hosts, ensemble_connect) == 0, "%s", hosts);
    zkr_string_free(hosts);
    uint64_t leaving[] = {3};
    CHECK_STATUS(zkr_client_reconfig(c, NULL, 0, leaving, 1, NULL, 0, -1, NULL), ZKR_SERVER,
                 "zkr_client_reconfig");
    CHECK(strstr(zkr_last_error_message(), "reconfigEnabled") != NULL);
    zkr_ensemble_config *again = NULL;
    CHECK_OK(zkr_client_get_config(c, &again));
    CHECK(again->len == 3);
    zkr_ensemble_config_free(again);
    zkr_ensemble_config_free(config);
    zkr_client_free(c);
}

static void test_reconfig_without_reconfig_enabled_is_a_server_error_saying_why(void) {
    zkr_client *c = NULL;
    CHECK_OK(zt_connect_client(&c));
    zkr_ensemble_config *before = NULL;
    CHECK_OK(zkr_client_get_config(c, &before));
    uint64_t leaving[] = {99};
    zkr_ensemble_config *after = NULL;
    zkr_status s = zkr_client_reconfig(c, NULL, 0, leaving, 1, NULL, 0, -1, &after);
    const char *m = zkr_last_error_message();
    /* Refused by the server: reconfiguration is disabled (ZooKeeper's -123); the configuration
     * is unchanged and nothing is returned. */
    CHECK_MSG(s == ZKR_SERVER, "%s: %s", zkr_status_name(s), m);
    CHECK_MSG(strstr(m, "zkr_client_reconfig") != NULL, "%s", m);
    CHECK_MSG(strstr(m, "reconfigEnabled") != NULL && strstr(m, "-123") != NULL, "%s", m);
    CHECK(after == NULL);
    zkr_ensemble_config *again = NULL;
    CHECK_OK(zkr_client_get_config(c, &again));
    CHECK(again->version == before->version && again->len == before->len);
    zkr_ensemble_config_free(again);
    zkr_ensemble_config_free(before);
    zkr_client_free(c);
}

static void test_bad_input_is_refused_before_anything_is_sent(void) {
    zkr_client *c = NULL;
    CHECK_OK(zt_connect_client(&c));
    zkr_ensemble_config *config = NULL;
    CHECK_STATUS(zkr_client_get_config(NULL, &config), ZKR_INVALID_ARGUMENT, "zkr_client_get_config");
    CHECK_STATUS(zkr_client_get_config(c, NULL), ZKR_INVALID_ARGUMENT, "zkr_client_get_config");
    CHECK_STATUS(zkr_client_current_connect_string(c, NULL), ZKR_INVALID_ARGUMENT,
                 "zkr_client_current_connect_string");
    const char *bad_lines[][1] = {
        {"4=127.0.0.4:1:2;3"},                   /* no server. */
        {"server.x=127.0.0.4:1:2;3"},            /* id not a number */
        {"server.4=127.0.0.4:1"},                /* no election port */
        {"server.4=127.0.0.4:1:2:leader;3"},     /* no such role */
        {"server.4=127.0.0.4:1:2;3,127.0.0.5:1"}, /* two servers in a line */
    };
    for (size_t i = 0; i < sizeof bad_lines / sizeof bad_lines[0]; i++) {
        CHECK_STATUS(zkr_client_reconfig(c, bad_lines[i], 1, NULL, 0, NULL, 0, -1, NULL),
                     ZKR_INVALID_ARGUMENT, "zkr_client_reconfig");
        CHECK_STATUS(zkr_client_reconfig(c, NULL, 0, NULL, 0, bad_lines[i], 1, -1, NULL),
                     ZKR_INVALID_ARGUMENT, "zkr_client_reconfig");
    }
    const char *line[] = {"server.4=127.0.0.4:1:2;3"};
    const char *null_line[] = {NULL};
    uint64_t four[] = {4};
    /* Negative versions other than -1. */
    CHECK_STATUS(zkr_client_reconfig(c, line, 1, NULL, 0, NULL, 0, -2, NULL), ZKR_INVALID_ARGUMENT,
                 "zkr_client_reconfig");
    CHECK(strstr(zkr_last_error_message(), "from_version") != NULL);
    /* NULL arrays with a length, a NULL line, an empty new member list. */
    CHECK_STATUS(zkr_client_reconfig(c, NULL, 1, NULL, 0, NULL, 0, -1, NULL), ZKR_INVALID_ARGUMENT,
                 "zkr_client_reconfig");
    CHECK_STATUS(zkr_client_reconfig(c, NULL, 0, NULL, 2, NULL, 0, -1, NULL), ZKR_INVALID_ARGUMENT,
                 "zkr_client_reconfig");
    CHECK_STATUS(zkr_client_reconfig(c, NULL, 0, NULL, 0, NULL, 3, -1, NULL), ZKR_INVALID_ARGUMENT,
                 "zkr_client_reconfig");
    CHECK_STATUS(zkr_client_reconfig(c, null_line, 1, NULL, 0, NULL, 0, -1, NULL),
                 ZKR_INVALID_ARGUMENT, "zkr_client_reconfig");
    CHECK_STATUS(zkr_client_reconfig(c, NULL, 0, NULL, 0, line, 0, -1, NULL), ZKR_INVALID_ARGUMENT,
                 "zkr_client_reconfig");
    /* Joining and leaving at once; new members with joining or leaving. */
    CHECK_STATUS(zkr_client_reconfig(c, line, 1, four, 1, NULL, 0, -1, NULL), ZKR_INVALID_ARGUMENT,
                 "zkr_client_reconfig");
    CHECK_STATUS(zkr_client_reconfig(c, NULL, 0, four, 1, line, 1, -1, NULL), ZKR_INVALID_ARGUMENT,
                 "zkr_client_reconfig");
    CHECK_STATUS(zkr_client_reconfig(NULL, NULL, 0, NULL, 0, NULL, 0, -1, NULL),
                 ZKR_INVALID_ARGUMENT, "zkr_client_reconfig");
    /* The tracker cannot follow TLS ports: refused before connecting. */
    zkr_client_options opts;
    CHECK_OK(zkr_client_options_init(&opts));
    opts.track_ensemble = true;
    opts.tls = true;
    zkr_client *tls = NULL;
    CHECK_STATUS(zkr_client_connect("127.0.0.1:1", &opts, &tls), ZKR_INVALID_ARGUMENT,
                 "zkr_client_connect");
    CHECK(tls == NULL);
    /* A closed client. */
    CHECK_OK(zkr_client_close(c));
    CHECK_STATUS(zkr_client_get_config(c, &config), ZKR_CLOSED, "zkr_client_get_config");
    CHECK_STATUS(zkr_client_reconfig(c, NULL, 0, NULL, 0, NULL, 0, -1, NULL), ZKR_CLOSED,
                 "zkr_client_reconfig");
    zkr_client_free(c);
}

int main(int argc, char **argv) {
    zt_begin(argc, argv);
    ensemble_connect = argc > 2 ? argv[2] : NULL;
    RUN(test_get_config_of_a_standalone_server_and_the_tracker_keeps_its_hosts);
    RUN(test_a_static_ensemble_lists_its_members);
    RUN(test_reconfig_without_reconfig_enabled_is_a_server_error_saying_why);
    RUN(test_bad_input_is_refused_before_anything_is_sent);
    return zt_end("test_ensemble");
}
