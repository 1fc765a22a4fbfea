/* Linked against libzkrecipes.a (not the shared library): connects, makes and removes a node,
 * takes and releases a mutex. Proves the static library and its Libs.private are complete. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <zkrecipes.h>

#define TRY(call)                                                                                  \
    do {                                                                                           \
        zkr_status s_ = (call);                                                                    \
        if (s_ != ZKR_OK) {                                                                        \
            fprintf(stderr, "static_link_check: %s: %s\n", #call, zkr_last_error_message());       \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    if (strcmp(zkr_version(), ZKR_VERSION_STRING) != 0) return 1;
    char path[96];
    snprintf(path, sizeof path, "/c-tests/static-%ld", (long)getpid());
    zkr_client *c = NULL;
    zkr_mutex *m = NULL;
    bool ok = false;
    TRY(zkr_client_connect(argv[1], NULL, &c));
    TRY(zkr_mutex_new(c, path, &m));
    TRY(zkr_mutex_acquire(m, 5000, &ok));
    TRY(zkr_mutex_release(m));
    zkr_mutex_free(m);
    /* The lock path is a container node: the server may have removed it already. */
    zkr_status cleaned = zkr_client_delete(c, path, -1, ZKR_DELETE_RECURSIVE);
    if (cleaned != ZKR_OK && cleaned != ZKR_NO_NODE) {
        fprintf(stderr, "static_link_check: cleanup: %s\n", zkr_last_error_message());
        return 1;
    }
    zkr_client_free(c);
    int passed = 1;
    /* argv[2..5]: a server requiring SASL (DIGEST-MD5 user alice:secret) and mutual TLS, its CA,
     * a client certificate and key: the SASL mechanism (registered at link time) and rustls work
     * from the static library. */
    if (argc >= 6) {
        zkr_client_options o;
        TRY(zkr_client_options_init(&o));
        o.tls = true;
        o.tls_ca = argv[3];
        o.tls_cert = argv[4];
        o.tls_key = argv[5];
        o.sasl_username = "alice";
        o.sasl_password = "secret";
        o.connection_timeout_ms = 10000;
        TRY(zkr_client_connect(argv[2], &o, &c));
        bool exists = false;
        TRY(zkr_client_exists(c, "/", &exists, NULL));
        zkr_client_free(c);
        if (!exists) return 1;
        passed++;
    }
    printf("static_link_check: %d passed, 0 failed (libzkrecipes.a %s)\n", passed, zkr_version());
    return ok ? 0 : 1;
}
