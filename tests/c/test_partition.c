/* kazoo's recipes through the C API: SetPartitioner (two members divide a set on kazoo's layout,
 * divide it again when one leaves, state callbacks, session expiry is FAILURE),
 * NonBlockingLease / MultiNonBlockingLease (held until the end, at most count holders), and bad
 * input. */
#include "testutil.h"

static void on_state(zkr_partition_state state, void *user_data) {
    zt_event_signal((zt_event *)user_data, (int)state);
}

/* Drives a member until ACQUIRED (release_set when told to); false after timeout_ms. */
static bool drive_to_acquired(zkr_set_partitioner *p, int timeout_ms) {
    double deadline = zt_now_ms() + timeout_ms;
    while (zt_now_ms() < deadline) {
        zkr_partition_state st;
        if (zkr_set_partitioner_state(p, &st) != ZKR_OK) return false;
        if (st == ZKR_PARTITION_ACQUIRED) return true;
        if (st == ZKR_PARTITION_FAILURE) return false;
        if (st == ZKR_PARTITION_RELEASE) {
            if (zkr_set_partitioner_release_set(p) != ZKR_OK) return false;
            continue;
        }
        bool acquired = false;
        if (zkr_set_partitioner_wait_for_acquire(p, 200, &acquired) != ZKR_OK) return false;
    }
    return false;
}

static size_t held_count(zkr_set_partitioner *p, zkr_partition_state *state) {
    zkr_string_list *l = NULL;
    if (zkr_set_partitioner_partitions(p, state, &l) != ZKR_OK) return (size_t)-1;
    size_t n = l->len;
    zkr_string_list_free(l);
    return n;
}

/* Drives both members (release_set when told to) until `settled(a, b)`; false after 60 s. */
static bool drive_both_until(zkr_set_partitioner *a, zkr_set_partitioner *b,
                             bool (*settled)(zkr_set_partitioner *, zkr_set_partitioner *)) {
    for (double deadline = zt_now_ms() + 60000; zt_now_ms() < deadline;) {
        if (!drive_to_acquired(a, 60000) || !drive_to_acquired(b, 60000)) return false;
        if (settled(a, b)) return true;
    }
    return false;
}

static bool three_and_two(zkr_set_partitioner *a, zkr_set_partitioner *b) {
    zkr_partition_state sa, sb;
    size_t na = held_count(a, &sa), nb = held_count(b, &sb);
    return sa == ZKR_PARTITION_ACQUIRED && sb == ZKR_PARTITION_ACQUIRED && na == 3 && nb == 2;
}

static void test_two_members_divide_the_set_and_one_takes_it_all_when_the_other_leaves(void) {
    char base[128], locks[160];
    zt_path(base, sizeof base, "partitioner");
    zkr_client *ca, *cb;
    CHECK_OK(zt_connect_client(&ca));
    CHECK_OK(zt_connect_client(&cb));
    const char *set[] = {"q1", "q2", "q3", "q4", "q5"};
    zkr_set_partitioner *a, *b;
    CHECK_OK(zkr_set_partitioner_new(ca, base, set, 5, "alpha", 300, 200, &a));
    CHECK_OK(zkr_set_partitioner_new(cb, base, set, 5, "beta", 300, 200, &b));
    zt_event states;
    zt_event_init(&states);
    uint64_t id = 0;
    CHECK_OK(zkr_set_partitioner_add_listener(a, on_state, &states, &id));
    CHECK_OK(zkr_set_partitioner_start(a));
    CHECK_OK(zkr_set_partitioner_start(b));
    CHECK_MSG(drive_both_until(a, b, three_and_two), "alpha and beta never settled on 3 + 2 partitions");
    zkr_string_list *mine = NULL;
    CHECK_OK(zkr_set_partitioner_partitions(a, NULL, &mine));
    CHECK(mine->len == 3 && strcmp(mine->items[0], "q1") == 0 && strcmp(mine->items[1], "q3") == 0 &&
          strcmp(mine->items[2], "q5") == 0);
    zkr_string_list_free(mine);
    /* kazoo's layout: one __lock__ node under path/locks/q2, holding beta's identifier. */
    snprintf(locks, sizeof locks, "%s/locks/q2", base);
    zkr_string_list *nodes = NULL;
    CHECK_OK(zkr_client_get_children(ca, locks, &nodes));
    CHECK(nodes->len == 1 && strstr(nodes->items[0], "__lock__") != NULL);
    zkr_string_list_free(nodes);
    char *ident = NULL;
    CHECK_OK(zkr_set_partitioner_identifier(b, &ident));
    CHECK(strcmp(ident, "beta") == 0);
    zkr_string_free(ident);

    /* beta leaves: alpha is told to release, then takes all five. */
    CHECK_OK(zkr_set_partitioner_finish(b));
    zkr_partition_state st = 99;
    CHECK_OK(zkr_set_partitioner_state(b, &st));
    CHECK(st == ZKR_PARTITION_FAILURE);
    CHECK_OK(zkr_set_partitioner_wait_for_change(a, ZKR_PARTITION_ACQUIRED, 60000, &st));
    CHECK(st == ZKR_PARTITION_RELEASE);
    CHECK(drive_to_acquired(a, 60000));
    CHECK(held_count(a, NULL) == 5);
    CHECK(zt_event_count(&states) >= 3); /* ACQUIRED, RELEASE, ALLOCATING, ... */

    /* The session expires: FAILURE, and it stays there. */
    CHECK_OK(zkr_client_expire_session_for_testing(ca));
    double deadline = zt_now_ms() + 60000;
    do {
        CHECK_OK(zkr_set_partitioner_wait_for_change(a, st, 1000, &st));
    } while (st != ZKR_PARTITION_FAILURE && zt_now_ms() < deadline);
    CHECK(st == ZKR_PARTITION_FAILURE);
    bool acquired = true;
    CHECK_OK(zkr_set_partitioner_wait_for_acquire(a, 0, &acquired));
    CHECK(!acquired);
    CHECK(held_count(a, NULL) == 0);
    CHECK_OK(zkr_set_partitioner_remove_listener(a, id));
    CHECK_OK(zkr_set_partitioner_close(a));
    zkr_set_partitioner_free(a);
    zkr_set_partitioner_free(b);
    zt_event_destroy(&states);
    zkr_client_free(ca);
    zkr_client_free(cb);
}

/* A partition function of contiguous runs: member i of n (identifiers sorted) takes the i-th run
 * of the set as given. `user_data` counts the calls; the member "refuses" answers false. */
static int cmp_str(const void *x, const void *y) {
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static bool contiguous(const char *identifier, const char *const *members, size_t members_len,
                       const char *const *set, size_t set_len, bool *take, void *user_data) {
    zt_event_signal((zt_event *)user_data, (int)members_len);
    if (strcmp(identifier, "refuses") == 0) return false;
    if (set_len != 5 || strcmp(set[0], "p0") != 0 || strcmp(set[4], "p4") != 0) return false; /* as given */
    const char *sorted[16];
    if (members_len > 16) return false;
    memcpy(sorted, members, members_len * sizeof *sorted);
    qsort(sorted, members_len, sizeof *sorted, cmp_str);
    size_t i = 0;
    while (i < members_len && strcmp(sorted[i], identifier) != 0) i++;
    size_t each = set_len / members_len, extra = set_len % members_len;
    size_t start = i * each + (i < extra ? i : extra);
    size_t len = each + (i < extra ? 1 : 0);
    for (size_t k = start; k < start + len && k < set_len; k++) take[k] = true;
    return true;
}

static bool holds_exactly(zkr_set_partitioner *p, const char *const *want, size_t n) {
    zkr_string_list *l = NULL;
    zkr_partition_state st;
    if (zkr_set_partitioner_partitions(p, &st, &l) != ZKR_OK) return false;
    bool same = st == ZKR_PARTITION_ACQUIRED && l->len == n;
    for (size_t k = 0; same && k < n; k++) same = strcmp(l->items[k], want[k]) == 0;
    zkr_string_list_free(l);
    return same;
}

static bool contiguous_runs(zkr_set_partitioner *a, zkr_set_partitioner *b) {
    static const char *const want_a[] = {"p0", "p1", "p2"}, *const want_b[] = {"p3", "p4"};
    return holds_exactly(a, want_a, 3) && holds_exactly(b, want_b, 2);
}

static void test_a_partition_function_divides_the_set_and_false_is_failure(void) {
    char base[128];
    zt_path(base, sizeof base, "custom");
    zkr_client *ca, *cb, *cc;
    CHECK_OK(zt_connect_client(&ca));
    CHECK_OK(zt_connect_client(&cb));
    CHECK_OK(zt_connect_client(&cc));
    const char *set[] = {"p0", "p1", "p2", "p3", "p4"};
    zt_event calls;
    zt_event_init(&calls);
    zkr_set_partitioner *a, *b, *c;
    CHECK_OK(zkr_set_partitioner_new_with_func(ca, base, set, 5, "a", 300, 200, contiguous, &calls, &a));
    CHECK_OK(zkr_set_partitioner_new_with_func(cb, base, set, 5, "b", 300, 200, contiguous, &calls, &b));
    CHECK_OK(zkr_set_partitioner_start(a));
    CHECK_OK(zkr_set_partitioner_start(b));
    CHECK_MSG(drive_both_until(a, b, contiguous_runs), "a and b never held their contiguous runs");
    CHECK(calls.count >= 2 && calls.last == 2);

    /* A member whose function answers false: FAILURE, and it leaves the party. */
    CHECK_OK(zkr_set_partitioner_new_with_func(cc, base, set, 5, "refuses", 300, 200, contiguous, &calls, &c));
    CHECK_OK(zkr_set_partitioner_start(c));
    zkr_partition_state st = ZKR_PARTITION_ALLOCATING;
    for (double deadline = zt_now_ms() + 30000; st != ZKR_PARTITION_FAILURE && zt_now_ms() < deadline;) {
        zkr_partition_state seen = st;
        CHECK_OK(zkr_set_partitioner_wait_for_change(c, seen, 1000, &st));
    }
    CHECK_MSG(st == ZKR_PARTITION_FAILURE, "a false answer left it in state %u", st);
    zkr_set_partitioner_free(c);
    CHECK_MSG(drive_both_until(a, b, contiguous_runs), "a and b did not divide the set again without the failed member");
    CHECK_STATUS(zkr_set_partitioner_new_with_func(cc, base, set, 5, "x", 300, 200, NULL, NULL, &c),
                 ZKR_INVALID_ARGUMENT, "zkr_set_partitioner_new_with_func");
    zkr_set_partitioner_free(a);
    zkr_set_partitioner_free(b);
    zkr_client_free(ca);
    zkr_client_free(cb);
    zkr_client_free(cc);
    zt_event_destroy(&calls);
}

static void test_leases_are_held_until_their_end_and_at_most_count_are_given(void) {
    char base[128], multi[160], holder[200];
    zt_path(base, sizeof base, "lease");
    snprintf(multi, sizeof multi, "%s-multi", base);
    zkr_client *c;
    CHECK_OK(zt_connect_client(&c));
    bool got = false;
    int64_t end_ms = 0;
    CHECK_OK(zkr_non_blocking_lease(c, base, 60000, "one", -1, &got, &end_ms));
    CHECK(got);
    CHECK_MSG(end_ms % 1000 == 0 && end_ms > (int64_t)time(NULL) * 1000 + 58000, "end %" PRId64, end_ms);
    CHECK_OK(zkr_non_blocking_lease(c, base, 60000, "two", -1, &got, NULL));
    CHECK_MSG(!got, "a second holder within the lease");
    CHECK_OK(zkr_non_blocking_lease(c, base, 60000, "one", -1, &got, NULL));
    CHECK_MSG(got, "the holder renews");
    snprintf(holder, sizeof holder, "%s/lease_holder", base);
    zkr_buffer *data = NULL;
    CHECK_OK(zkr_client_get_data(c, holder, &data, NULL));
    CHECK(data->len > 30 && memcmp(data->data, "{\"version\": 1, \"holder\": \"one\", \"end\": \"", 40) == 0);
    zkr_buffer_free(data);
    /* A zero duration ends at once: the next one takes it. */
    CHECK_OK(zkr_non_blocking_lease(c, multi, 0, "x", -1, &got, NULL));
    CHECK(got);

    uint32_t index = 99;
    const char *ids[] = {"a", "b", "c"};
    bool want[] = {true, true, false};
    char mpath[200];
    snprintf(mpath, sizeof mpath, "%s/m", base);
    for (int i = 0; i < 3; i++) {
        index = 99;
        CHECK_OK(zkr_multi_non_blocking_lease(c, 2, mpath, 60000, ids[i], -1, &got, &index, NULL));
        CHECK_MSG(got == want[i], "%s got %d", ids[i], got);
        CHECK(got ? index == (uint32_t)i : index == 99);
    }
    CHECK_OK(zkr_multi_non_blocking_lease(c, 2, mpath, 60000, "b", -1, &got, NULL, &end_ms));
    CHECK(got);

    /* Bad input. */
    CHECK_STATUS(zkr_non_blocking_lease(c, "bad", 1000, NULL, -1, &got, NULL), ZKR_INVALID_ARGUMENT, "zkr_non_blocking_lease");
    CHECK_STATUS(zkr_non_blocking_lease(c, base, -5, NULL, -1, &got, NULL), ZKR_INVALID_ARGUMENT, "zkr_non_blocking_lease");
    CHECK_STATUS(zkr_non_blocking_lease(c, base, 1000, NULL, -7, &got, NULL), ZKR_INVALID_ARGUMENT, "zkr_non_blocking_lease");
    CHECK_STATUS(zkr_non_blocking_lease(c, base, 1000, NULL, -1, NULL, NULL), ZKR_INVALID_ARGUMENT, "zkr_non_blocking_lease");
    CHECK_STATUS(zkr_multi_non_blocking_lease(c, 0, mpath, 1000, NULL, -1, &got, NULL, NULL), ZKR_INVALID_ARGUMENT,
                 "zkr_multi_non_blocking_lease");
    CHECK_OK(zkr_client_set_data(c, holder, (const uint8_t *)"junk", 4, -1, NULL));
    CHECK_STATUS(zkr_non_blocking_lease(c, base, 1000, "one", -1, &got, NULL), ZKR_CORRUPTED_DATA, "zkr_non_blocking_lease");
    zkr_client_free(c);
}

static void test_bad_input_is_invalid_argument(void) {
    zkr_client *c;
    CHECK_OK(zt_connect_client(&c));
    const char *set[] = {"a", "b"};
    const char *dup[] = {"a", "a"};
    const char *slash[] = {"a/b"};
    zkr_set_partitioner *p = NULL;
    CHECK_STATUS(zkr_set_partitioner_new(c, "/p", dup, 2, NULL, 1000, 1000, &p), ZKR_INVALID_ARGUMENT, "zkr_set_partitioner_new");
    CHECK_STATUS(zkr_set_partitioner_new(c, "/p", slash, 1, NULL, 1000, 1000, &p), ZKR_INVALID_ARGUMENT, "zkr_set_partitioner_new");
    CHECK_STATUS(zkr_set_partitioner_new(c, "/p", NULL, 2, NULL, 1000, 1000, &p), ZKR_INVALID_ARGUMENT, "zkr_set_partitioner_new");
    CHECK_STATUS(zkr_set_partitioner_new(c, "/p", set, 2, "", 1000, 1000, &p), ZKR_INVALID_ARGUMENT, "zkr_set_partitioner_new");
    CHECK_STATUS(zkr_set_partitioner_new(c, "/p", set, 2, NULL, 0, 1000, &p), ZKR_INVALID_ARGUMENT, "zkr_set_partitioner_new");
    CHECK_STATUS(zkr_set_partitioner_new(c, "/p", set, 2, NULL, 1000, -1, &p), ZKR_INVALID_ARGUMENT, "zkr_set_partitioner_new");
    CHECK_STATUS(zkr_set_partitioner_new(c, "p", set, 2, NULL, 1000, 1000, &p), ZKR_INVALID_ARGUMENT, "zkr_set_partitioner_new");
    CHECK_STATUS(zkr_set_partitioner_new(c, "/p", set, 2, NULL, 1000, 1000, NULL), ZKR_INVALID_ARGUMENT, "zkr_set_partitioner_new");
    CHECK(p == NULL);
    CHECK_OK(zkr_set_partitioner_new(c, "/p-bad", set, 2, NULL, ZKR_PARTITIONER_TIME_BOUNDARY_MS,
                                     ZKR_PARTITIONER_MAX_REACTION_TIME_MS, &p));
    bool acquired;
    CHECK_STATUS(zkr_set_partitioner_release_set(p), ZKR_INVALID_ARGUMENT, "zkr_set_partitioner_release_set");
    CHECK_STATUS(zkr_set_partitioner_wait_for_acquire(p, 0, &acquired), ZKR_INVALID_ARGUMENT, "zkr_set_partitioner_wait_for_acquire");
    zkr_partition_state st;
    CHECK_STATUS(zkr_set_partitioner_wait_for_change(p, 42, 0, &st), ZKR_INVALID_ARGUMENT, "zkr_set_partitioner_wait_for_change");
    CHECK_STATUS(zkr_set_partitioner_state(NULL, &st), ZKR_INVALID_ARGUMENT, "zkr_set_partitioner_state");
    CHECK_OK(zkr_set_partitioner_start(p));
    CHECK_STATUS(zkr_set_partitioner_start(p), ZKR_INVALID_ARGUMENT, "zkr_set_partitioner_start");
    char *ident = NULL;
    CHECK_OK(zkr_set_partitioner_identifier(p, &ident));
    CHECK_MSG(strchr(ident, '-') != NULL, "default identifier %s", ident);
    zkr_string_free(ident);
    CHECK_OK(zkr_set_partitioner_finish(p));
    CHECK_OK(zkr_set_partitioner_finish(p));
    zkr_set_partitioner_free(p);
    CHECK_STATUS(zkr_set_partitioner_state(p, &st), ZKR_INVALID_ARGUMENT, "zkr_set_partitioner_state");
    zkr_set_partitioner_free(NULL);
    zkr_client_free(c);
}

int main(int argc, char **argv) {
    zt_begin(argc, argv);
    RUN(test_two_members_divide_the_set_and_one_takes_it_all_when_the_other_leaves);
    RUN(test_a_partition_function_divides_the_set_and_false_is_failure);
    RUN(test_leases_are_held_until_their_end_and_at_most_count_are_given);
    RUN(test_bad_input_is_invalid_argument);
    return zt_end("test_partition");
}
