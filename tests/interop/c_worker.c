/* The C worker of the interop runner (tests/interop/run), built against an installed
 * zkrecipes (pkg-config):
 *   c_worker --role mutex|counter --connect HOST:PORT --path P --iterations N --id ID --log FILE [--go FILE]
 * Same log lines as every worker: "start c ID TOKEN NS" / "end c ID TOKEN NS" (CLOCK_MONOTONIC),
 * "inc c ID VALUE" / "fail c ID", then "done c ID COUNT". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zkrecipes.h>

static long long mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void check(zkr_status st, const char *what) {
    if (st != ZKR_OK) {
        fprintf(stderr, "c_worker: %s failed: %s (%s)\n", what, zkr_status_name(st), zkr_last_error_message());
        exit(2);
    }
}

int main(int argc, char **argv) {
    const char *role = "", *connect = NULL, *path = NULL, *id = "c", *log_path = NULL, *go = NULL;
    long iterations = 20, expect = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--role")) role = argv[i + 1];
        else if (!strcmp(argv[i], "--connect")) connect = argv[i + 1];
        else if (!strcmp(argv[i], "--path")) path = argv[i + 1];
        else if (!strcmp(argv[i], "--iterations")) iterations = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--id")) id = argv[i + 1];
        else if (!strcmp(argv[i], "--log")) log_path = argv[i + 1];
        else if (!strcmp(argv[i], "--go")) go = argv[i + 1];
        else if (!strcmp(argv[i], "--expect")) expect = atol(argv[i + 1]);
        else { fprintf(stderr, "c_worker: unknown option %s\n", argv[i]); return 2; }
    }
    if (!connect || !path) { fprintf(stderr, "c_worker: --connect and --path are required\n"); return 2; }
    FILE *log = log_path ? fopen(log_path, "a") : fopen("/dev/null", "w");
    if (!log) { perror("c_worker: log"); return 2; }

    zkr_client *client = NULL;
    check(zkr_client_connect(connect, NULL, &client), "zkr_client_connect");
    zkr_leader_latch *latch = NULL;
    if (!strcmp(role, "latch")) { /* join, then wait until every runtime's participant is listed */
        check(zkr_leader_latch_new(client, path, id, &latch), "zkr_leader_latch_new");
        check(zkr_leader_latch_start(latch), "zkr_leader_latch_start");
        zkr_participant_list *list = NULL;
        for (int tries = 0; tries < 3000; tries++) {
            check(zkr_leader_latch_get_participants(latch, &list), "zkr_leader_latch_get_participants");
            if ((long)list->len >= expect) break;
            zkr_participant_list_free(list);
            list = NULL;
            struct timespec ms20 = {0, 20000000};
            nanosleep(&ms20, NULL);
        }
        /* ids sorted by the runner; here in node order */
        fprintf(log, "participants c %s ", id);
        for (size_t i = 0; list && i < list->len; i++) fprintf(log, "%s%s", i ? "," : "", list->items[i].id);
        fprintf(log, "\n");
        zkr_participant_list_free(list);
    }
    if (go) { /* start barrier: ready, then wait for the runner's go file */
        fprintf(log, "ready c %s\n", id);
        fflush(log);
        struct timespec ms = {0, 1000000};
        while (access(go, F_OK) != 0) nanosleep(&ms, NULL);
    }
    if (!strcmp(role, "mutex")) {
        zkr_mutex *m = NULL;
        check(zkr_mutex_new(client, path, &m), "zkr_mutex_new");
        for (long i = 0; i < iterations; i++) {
            bool ok = false;
            check(zkr_mutex_acquire(m, -1, &ok), "zkr_mutex_acquire");
            if (!ok) { fprintf(stderr, "c_worker: acquire returned false\n"); return 2; }
            int64_t token = 0;
            check(zkr_mutex_fencing_token(m, &token), "zkr_mutex_fencing_token");
            fprintf(log, "start c %s %lld %lld\n", id, (long long)token, mono_ns());
            fflush(log);
            struct timespec pause = {0, 200000};
            nanosleep(&pause, NULL);
            fprintf(log, "end c %s %lld %lld\n", id, (long long)token, mono_ns());
            fflush(log);
            check(zkr_mutex_release(m), "zkr_mutex_release");
        }
        fprintf(log, "done c %s %ld\n", id, iterations);
        zkr_mutex_free(m);
    } else if (!strcmp(role, "latch")) {
        for (long round = 0; round < iterations; round++) {
            if (round > 0) {
                check(zkr_leader_latch_new(client, path, id, &latch), "zkr_leader_latch_new");
                check(zkr_leader_latch_start(latch), "zkr_leader_latch_start");
            }
            bool leads = false;
            check(zkr_leader_latch_await(latch, 60000, &leads), "zkr_leader_latch_await");
            if (!leads) { fprintf(stderr, "c_worker: never led\n"); return 2; }
            fprintf(log, "lead c %s %lld\n", id, mono_ns());
            fflush(log);
            struct timespec ms20 = {0, 20000000};
            nanosleep(&ms20, NULL);
            check(zkr_leader_latch_has_leadership(latch, &leads), "zkr_leader_latch_has_leadership");
            if (!leads) { fprintf(stderr, "c_worker: lost leadership while leading\n"); return 2; }
            fprintf(log, "unlead c %s %lld\n", id, mono_ns());
            fflush(log);
            check(zkr_leader_latch_close(latch), "zkr_leader_latch_close");
            zkr_leader_latch_free(latch);
            latch = NULL;
        }
        fprintf(log, "done c %s %ld\n", id, iterations);
    } else if (!strcmp(role, "counter")) {
        zkr_atomic_long *a = NULL;
        check(zkr_atomic_long_new(client, path, &a), "zkr_atomic_long_new");
        long ok = 0;
        for (long i = 0; i < iterations; i++) {
            int64_t v = 0;
            zkr_status st = zkr_atomic_long_add_and_get(a, 1, 30000, &v);
            if (st == ZKR_OK) {
                ok++;
                fprintf(log, "inc c %s %lld\n", id, (long long)v);
            } else {
                fprintf(log, "fail c %s %s\n", id, zkr_status_name(st));
            }
        }
        fprintf(log, "done c %s %ld\n", id, ok);
        zkr_atomic_long_free(a);
    } else {
        fprintf(stderr, "c_worker: unknown role %s\n", role);
        return 2;
    }
    fclose(log);
    zkr_client_close(client);
    zkr_client_free(client);
    return 0;
}
