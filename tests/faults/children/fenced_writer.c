/* Fault suite child (tests/faults, scenario 6): a lock holder that writes to a fenced resource
 * through the C API. The protocol is in docs/FAULTS.md ("The fenced writer"): take the lock
 * (2 s session), print ZKR_CHILD_HELD, then loop "check the hold, work, write with my token"
 * until the check or the resource says the hold is gone; wait for the lost callback, release.
 * The suite builds it against the installed header and debug library (scripts/install-c). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zkrecipes.h>

enum { WORK_MS = 300, IDLE_MS = 300 }; /* between the check and the write; after the write */

static atomic_bool lost;

static void on_lost(zkr_owner owner, void *user_data) {
    (void)owner;
    (void)user_data;
    printf("ZKR_CHILD_SIGNAL\n"); /* before the flag: the main thread says DONE only after it */
    fflush(stdout);
    atomic_store(&lost, true);
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

static void check(zkr_status s, const char *what) {
    if (s != ZKR_OK) {
        fprintf(stderr, "fenced_writer.c: %s: %s\n", what, zkr_last_error_message());
        exit(1);
    }
}

static bool held_valid(const zkr_mutex *m) {
    bool valid = false;
    check(zkr_mutex_is_held_valid(m, &valid), "zkr_mutex_is_held_valid");
    return valid;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: fenced_writer CONNECT PATH\n");
        return 2;
    }
    zkr_client_options opts;
    zkr_client *client = NULL;
    zkr_mutex *m = NULL;
    bool acquired = false;
    int64_t token = 0, session = 0;
    zkr_string_list *nodes = NULL;
    check(zkr_client_options_init(&opts), "zkr_client_options_init");
    opts.session_timeout_ms = 2000;
    check(zkr_client_connect(argv[1], &opts, &client), "zkr_client_connect");
    check(zkr_mutex_new(client, argv[2], &m), "zkr_mutex_new");
    check(zkr_mutex_set_lost_callback(m, on_lost, NULL), "zkr_mutex_set_lost_callback");
    check(zkr_mutex_acquire(m, 30000, &acquired), "zkr_mutex_acquire");
    if (!acquired) {
        fprintf(stderr, "fenced_writer.c: the lock was not acquired within 30 s\n");
        return 1;
    }
    check(zkr_mutex_fencing_token(m, &token), "zkr_mutex_fencing_token");
    check(zkr_client_session_id(client, &session), "zkr_client_session_id");
    check(zkr_mutex_participant_nodes(m, &nodes), "zkr_mutex_participant_nodes");
    printf("ZKR_CHILD_HELD %lld %lld %s\n", (long long)token, (long long)session, nodes->items[0]);
    fflush(stdout);
    zkr_string_list_free(nodes);
    char reply[256];
    for (long n = 1;; n++) {
        if (atomic_load(&lost) || !held_valid(m)) {
            printf("ZKR_CHILD_LOST %s\n", atomic_load(&lost) ? "callback" : "invalid");
            break;
        }
        printf("ZKR_CHILD_CHECKED %ld\n", n);
        fflush(stdout);
        sleep_ms(WORK_MS);
        printf("ZKR_CHILD_WRITE %lld %ld\n", (long long)token, n);
        fflush(stdout);
        if (!fgets(reply, sizeof reply, stdin)) {
            return 0; /* the parent (the resource) is gone */
        }
        if (strncmp(reply, "OK", 2) != 0) {
            printf("ZKR_CHILD_REJECTED %s", strchr(reply, ' ') ? strchr(reply, ' ') + 1 : "?\n");
            break;
        }
        printf("ZKR_CHILD_IDLE %ld\n", n);
        fflush(stdout);
        sleep_ms(IDLE_MS);
    }
    fflush(stdout);
    for (int waited = 0; !atomic_load(&lost) || held_valid(m); waited += 10) {
        if (waited > 30000) {
            fprintf(stderr, "fenced_writer.c: no lost callback within 30 s of learning the hold was gone\n");
            return 1;
        }
        sleep_ms(10);
    }
    printf("ZKR_CHILD_DONE\n");
    fflush(stdout);
    check(zkr_mutex_release(m), "zkr_mutex_release of a lost hold");
    zkr_mutex_free(m);
    check(zkr_client_close(client), "zkr_client_close");
    zkr_client_free(client);
    return 0;
}
