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
    printf("static_link_check: 1 passed, 0 failed (libzkrecipes.a %s)\n", zkr_version());
    return ok ? 0 : 1;
}
