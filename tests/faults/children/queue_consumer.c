/* Fault suite child (tests/faults/tests/queue.rs): an exactly-once queue consumer through the C
 * API; the protocol is queue_consumer.py's (READY, WRITE DATA TOKEN -> OK | STALE, DONE DATA
 * TOKEN | DONEFAIL DATA STATUS, FINISHED after 5 s without an item). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zkrecipes.h>

static void check(zkr_status s, const char *what) {
    if (s != ZKR_OK) {
        fprintf(stderr, "queue_consumer.c: %s: %s\n", what, zkr_last_error_message());
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: queue_consumer CONNECT PATH\n");
        return 2;
    }
    char locks[512], reply[128];
    snprintf(locks, sizeof locks, "%s-locks", argv[2]);
    zkr_client_options opts;
    zkr_client *client = NULL;
    zkr_queue *q = NULL;
    check(zkr_client_options_init(&opts), "zkr_client_options_init");
    opts.session_timeout_ms = 2000;
    check(zkr_client_connect(argv[1], &opts, &client), "zkr_client_connect");
    check(zkr_queue_new(client, argv[2], locks, 0, &q), "zkr_queue_new");
    printf("ZKR_CHILD_READY\n");
    fflush(stdout);
    for (;;) {
        zkr_queue_item *item = NULL;
        check(zkr_queue_take(q, 5000, &item), "zkr_queue_take");
        if (!item) break;
        const uint8_t *data = NULL;
        size_t len = 0;
        int64_t token = 0;
        check(zkr_queue_item_data(item, &data, &len), "zkr_queue_item_data");
        check(zkr_queue_item_fencing_token(item, &token), "zkr_queue_item_fencing_token");
        printf("ZKR_CHILD_WRITE %.*s %lld\n", (int)len, (const char *)data, (long long)token);
        fflush(stdout);
        if (!fgets(reply, sizeof reply, stdin)) return 0; /* the parent (the sink) is gone */
        if (strncmp(reply, "OK", 2) != 0) {
            printf("ZKR_CHILD_STALE %.*s\n", (int)len, (const char *)data);
            check(zkr_queue_item_release(item), "zkr_queue_item_release");
        } else {
            zkr_status s = zkr_queue_item_done(item);
            if (s == ZKR_OK) printf("ZKR_CHILD_DONE %.*s %lld\n", (int)len, (const char *)data, (long long)token);
            else printf("ZKR_CHILD_DONEFAIL %.*s %s\n", (int)len, (const char *)data, zkr_status_name(s));
        }
        fflush(stdout);
        zkr_queue_item_free(item);
    }
    printf("ZKR_CHILD_FINISHED\n");
    fflush(stdout);
    zkr_queue_free(q);
    zkr_client_close(client);
    zkr_client_free(client);
    return 0;
}
