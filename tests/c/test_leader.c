/* LeaderLatch through the C API: the seed scenario (10 clients taking turns), listeners,
 * participants, epochs, hand-over on a real session expiry, and misuse. */
#include "testutil.h"

#define LATCHES 10

static void test_seed_10_clients_take_turns(void) {
    char path[128];
    zt_path(path, sizeof path, "seed-latch");
    zkr_client *clients[LATCHES];
    zkr_leader_latch *latches[LATCHES];
    bool done[LATCHES];
    int led[LATCHES];
    for (int i = 0; i < LATCHES; i++) {
        char id[32];
        snprintf(id, sizeof id, "client-%d", i);
        CHECK_OK(zt_connect_client(&clients[i]));
        CHECK_OK(zkr_leader_latch_new(clients[i], path, id, &latches[i]));
        CHECK_OK(zkr_leader_latch_start(latches[i]));
        done[i] = false;
        led[i] = 0;
    }
    int64_t last_epoch = 0;
    for (int turn = 0; turn < LATCHES; turn++) {
        /* Ask the server who leads, from any remaining participant. */
        int any = -1;
        for (int i = 0; i < LATCHES && any < 0; i++)
            if (!done[i]) any = i;
        zkr_participant *leader = NULL;
        CHECK_OK(zkr_leader_latch_get_leader(latches[any], &leader));
        int who = -1;
        CHECK_MSG(sscanf(leader->id, "client-%d", &who) == 1 && who >= 0 && who < LATCHES && !done[who],
                  "turn %d: leader %s", turn, leader->id);
        CHECK(leader->is_leader);
        zkr_participant_free(leader);
        bool is_leader = false;
        CHECK_OK(zkr_leader_latch_await(latches[who], 10000, &is_leader));
        CHECK_MSG(is_leader, "turn %d: client-%d leads on the server but not locally", turn, who);
        for (int i = 0; i < LATCHES; i++) {
            if (done[i] || i == who) continue;
            bool other = true;
            CHECK_OK(zkr_leader_latch_has_leadership(latches[i], &other));
            CHECK_MSG(!other, "turn %d: client-%d and client-%d both lead", turn, who, i);
        }
        int64_t epoch = 0;
        CHECK_OK(zkr_leader_latch_leadership_epoch(latches[who], &epoch));
        CHECK_MSG(epoch > last_epoch, "epochs must increase (%" PRId64 " then %" PRId64 ")", last_epoch, epoch);
        last_epoch = epoch;
        led[who]++;
        CHECK_OK(zkr_leader_latch_close(latches[who]));
        CHECK_OK(zkr_leader_latch_has_leadership(latches[who], &is_leader));
        CHECK(!is_leader);
        done[who] = true;
    }
    for (int i = 0; i < LATCHES; i++) CHECK_MSG(led[i] == 1, "client-%d led %d times", i, led[i]);
    for (int i = 0; i < LATCHES; i++) {
        zkr_leader_latch_free(latches[i]);
        zkr_client_free(clients[i]);
    }
}

typedef struct leadership_seen {
    zt_event event;
    bool last;
    pthread_t caller;
    int on_caller;
} leadership_seen;

static void record_leadership(bool is_leader, void *user_data) {
    leadership_seen *s = (leadership_seen *)user_data;
    s->last = is_leader;
    if (pthread_equal(pthread_self(), s->caller)) s->on_caller = 1;
    zt_event_signal(&s->event, is_leader);
}

static void test_listener_participants_and_notify_on_close(void) {
    char path[128];
    zt_path(path, sizeof path, "latch-listener");
    zkr_client *c = NULL;
    zkr_leader_latch *a = NULL, *b = NULL;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_leader_latch_new(c, path, "alpha", &a));
    CHECK_OK(zkr_leader_latch_new(c, path, "beta", &b));
    leadership_seen s;
    memset(&s, 0, sizeof s);
    zt_event_init(&s.event);
    s.caller = pthread_self();
    uint64_t id = 0;
    CHECK_OK(zkr_leader_latch_add_listener(a, record_leadership, &s, &id));
    CHECK_OK(zkr_leader_latch_set_close_mode(a, ZKR_CLOSE_NOTIFY_LEADER));
    int64_t epoch = 0;
    CHECK_STATUS(zkr_leader_latch_leadership_epoch(a, &epoch), ZKR_NOT_OWNER, "zkr_leader_latch_leadership_epoch");
    char *our = NULL;
    CHECK_STATUS(zkr_leader_latch_our_path(a, &our), ZKR_NO_NODE, "zkr_leader_latch_our_path");
    CHECK_OK(zkr_leader_latch_start(a));
    bool lead = false;
    CHECK_OK(zkr_leader_latch_await(a, 10000, &lead));
    CHECK(lead);
    CHECK_MSG(zt_event_wait(&s.event, 1, 10000), "no is_leader callback");
    CHECK(s.last == true);
    CHECK_OK(zkr_leader_latch_start(b));
    CHECK_OK(zkr_leader_latch_await(b, 200, &lead));
    CHECK_MSG(!lead, "the second participant must wait");

    zkr_participant_list *list = NULL;
    CHECK_OK(zkr_leader_latch_get_participants(b, &list));
    CHECK(list->len == 2);
    CHECK(strcmp(list->items[0].id, "alpha") == 0 && list->items[0].is_leader);
    CHECK(strcmp(list->items[1].id, "beta") == 0 && !list->items[1].is_leader);
    zkr_participant_list_free(list);
    CHECK_OK(zkr_leader_latch_our_path(a, &our));
    CHECK(strncmp(our, path, strlen(path)) == 0 && strstr(our, "-latch-") != NULL);
    zkr_string_free(our);

    CHECK_OK(zkr_leader_latch_close(a));
    CHECK_MSG(zt_event_wait(&s.event, 2, 10000), "no not_leader callback on close with NOTIFY_LEADER");
    CHECK(s.last == false);
    CHECK(!s.on_caller);
    CHECK_OK(zkr_leader_latch_await(b, 10000, &lead));
    CHECK_MSG(lead, "the next participant takes over at once after close");
    CHECK_OK(zkr_leader_latch_remove_listener(a, id));
    CHECK_STATUS(zkr_leader_latch_remove_listener(a, id), ZKR_INVALID_ARGUMENT, "zkr_leader_latch_remove_listener");
    zkr_leader_latch_free(a);
    zkr_leader_latch_free(b);
    zkr_client_free(c);
    zt_event_destroy(&s.event);
}

static void test_leadership_moves_when_the_leaders_session_expires(void) {
    char path[128];
    zt_path(path, sizeof path, "latch-expiry");
    zkr_client *c1 = NULL, *c2 = NULL;
    zkr_leader_latch *l1 = NULL, *l2 = NULL;
    CHECK_OK(zt_connect_client(&c1));
    CHECK_OK(zt_connect_client(&c2));
    CHECK_OK(zkr_leader_latch_new(c1, path, "first", &l1));
    CHECK_OK(zkr_leader_latch_new(c2, path, "second", &l2));
    leadership_seen s;
    memset(&s, 0, sizeof s);
    zt_event_init(&s.event);
    uint64_t id;
    CHECK_OK(zkr_leader_latch_add_listener(l1, record_leadership, &s, &id));
    CHECK_OK(zkr_leader_latch_start(l1));
    bool lead = false;
    CHECK_OK(zkr_leader_latch_await(l1, 10000, &lead));
    CHECK(lead);
    CHECK_OK(zkr_leader_latch_start(l2));
    CHECK_OK(zkr_client_expire_session_for_testing(c1));
    CHECK_OK(zkr_leader_latch_await(l2, 20000, &lead));
    CHECK_MSG(lead, "the second participant must lead after the first one's session expired");
    CHECK_MSG(zt_event_wait(&s.event, 2, 20000), "the old leader must hear not_leader");
    zkr_leader_latch_free(l1); /* frees with its listener still registered */
    zkr_leader_latch_free(l2);
    zkr_client_free(c1);
    zkr_client_free(c2);
    zt_event_destroy(&s.event);
}

static void ignore_state(zkr_connection_state state, void *user_data) {
    (void)state;
    (void)user_data;
}

static void ignore_leadership(bool is_leader, void *user_data) {
    (void)is_leader;
    (void)user_data;
}

/* Listener ids are unique in the process: a latch's id given to the client's remove (each
 * registry used to count from 1, so it removed the client's own first listener) is refused. */
static void test_a_listener_id_of_another_handle_is_refused(void) {
    char path[128];
    zt_path(path, sizeof path, "latch-ids");
    zkr_client *c = NULL;
    zkr_leader_latch *l = NULL;
    uint64_t state_id = 0, latch_id = 0;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_leader_latch_new(c, path, "ids", &l));
    CHECK_OK(zkr_client_add_state_listener(c, ignore_state, NULL, &state_id));
    CHECK_OK(zkr_leader_latch_add_listener(l, ignore_leadership, NULL, &latch_id));
    CHECK(state_id != latch_id);
    CHECK_STATUS(zkr_client_remove_state_listener(c, latch_id), ZKR_INVALID_ARGUMENT,
                 "zkr_client_remove_state_listener");
    CHECK_STATUS(zkr_leader_latch_remove_listener(l, state_id), ZKR_INVALID_ARGUMENT,
                 "zkr_leader_latch_remove_listener");
    /* Both are still registered: each removes once, with its own id. */
    CHECK_OK(zkr_client_remove_state_listener(c, state_id));
    CHECK_OK(zkr_leader_latch_remove_listener(l, latch_id));
    zkr_leader_latch_free(l);
    zkr_client_free(c);
}

static void test_misuse_of_a_latch(void) {
    char path[128];
    zt_path(path, sizeof path, "latch-misuse");
    zkr_client *c = NULL;
    zkr_leader_latch *l = NULL;
    CHECK_OK(zt_connect_client(&c));
    zkr_leader_latch *bad = (zkr_leader_latch *)0x1;
    CHECK_STATUS(zkr_leader_latch_new(c, "/", "x", &bad), ZKR_INVALID_ARGUMENT, "zkr_leader_latch_new");
    CHECK_STATUS(zkr_leader_latch_new(c, path, NULL, &bad), ZKR_INVALID_ARGUMENT, "zkr_leader_latch_new");
    CHECK_STATUS(zkr_leader_latch_new(c, path, "\xc0\xaf", &bad), ZKR_INVALID_ARGUMENT, "zkr_leader_latch_new");
    CHECK(bad == (zkr_leader_latch *)0x1);
    CHECK_OK(zkr_leader_latch_new(c, path, "", &l));
    bool lead = true;
    CHECK_STATUS(zkr_leader_latch_await(l, -1, &lead), ZKR_CLOSED, "zkr_leader_latch_await"); /* not started */
    CHECK_STATUS(zkr_leader_latch_await(l, -5, &lead), ZKR_INVALID_ARGUMENT, "zkr_leader_latch_await");
    CHECK(lead == true);
    CHECK_STATUS(zkr_leader_latch_set_close_mode(l, 7), ZKR_INVALID_ARGUMENT, "zkr_leader_latch_set_close_mode");
    CHECK_OK(zkr_leader_latch_set_lost_policy(l, ZKR_LEADER_LOST_ON_SESSION_LOSS));
    CHECK_OK(zkr_leader_latch_start(l));
    CHECK_STATUS(zkr_leader_latch_start(l), ZKR_INVALID_ARGUMENT, "zkr_leader_latch_start");
    CHECK_STATUS(zkr_leader_latch_set_lost_policy(l, ZKR_LEADER_LOST_ON_SUSPENDED), ZKR_INVALID_ARGUMENT,
                 "zkr_leader_latch_set_lost_policy");
    CHECK_OK(zkr_leader_latch_close(l));
    CHECK_OK(zkr_leader_latch_close(l));
    CHECK_STATUS(zkr_leader_latch_await(l, -1, &lead), ZKR_CLOSED, "zkr_leader_latch_await");
    CHECK_OK(zkr_leader_latch_await(l, 0, &lead));
    CHECK(!lead);
    CHECK_STATUS(zkr_leader_latch_start(l), ZKR_CLOSED, "zkr_leader_latch_start");
    CHECK_STATUS(zkr_leader_latch_start(NULL), ZKR_INVALID_ARGUMENT, "zkr_leader_latch_start");
    zkr_leader_latch_free(l);
    zkr_leader_latch_free(NULL);
    zkr_participant_free(NULL);
    zkr_participant_list_free(NULL);
    zkr_client_free(c);
}


/* ---- LeaderSelector ---- */

#define SELECTORS 3

typedef struct selector_shared {
    int inside, overlaps, terms;
    int64_t tokens[16];
    int order[16];
    pthread_mutex_t mu;
} selector_shared;

typedef struct selector_arg {
    selector_shared *shared;
    int index;
    int cancelled_while_leading;
} selector_arg;

static void lead_briefly(zkr_leadership_context *ctx, void *user_data) {
    selector_arg *a = (selector_arg *)user_data;
    selector_shared *s = a->shared;
    if (__atomic_add_fetch(&s->inside, 1, __ATOMIC_SEQ_CST) > 1) __atomic_fetch_add(&s->overlaps, 1, __ATOMIC_SEQ_CST);
    if (zkr_leadership_cancelled(ctx)) a->cancelled_while_leading++;
    int64_t token = 0;
    (void)zkr_leadership_fencing_token(ctx, &token);
    pthread_mutex_lock(&s->mu);
    if (s->terms < 16) {
        s->tokens[s->terms] = token;
        s->order[s->terms] = a->index;
    }
    s->terms++;
    pthread_mutex_unlock(&s->mu);
    /* Lead for up to 30 ms (returning ends leadership). */
    bool cancelled = false;
    (void)zkr_leadership_wait_cancelled(ctx, 30, &cancelled);
    __atomic_sub_fetch(&s->inside, 1, __ATOMIC_SEQ_CST);
}

static void test_selectors_lead_one_at_a_time_with_increasing_tokens(void) {
    char path[128];
    zt_path(path, sizeof path, "selector-turns");
    selector_shared s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    zkr_client *clients[SELECTORS];
    zkr_leader_selector *sel[SELECTORS];
    selector_arg args[SELECTORS];
    for (int i = 0; i < SELECTORS; i++) {
        char id[16];
        snprintf(id, sizeof id, "sel-%d", i);
        args[i].shared = &s;
        args[i].index = i;
        args[i].cancelled_while_leading = 0;
        CHECK_OK(zt_connect_client(&clients[i]));
        CHECK_OK(zkr_leader_selector_new(clients[i], path, id, lead_briefly, &args[i], &sel[i]));
    }
    for (int i = 0; i < SELECTORS; i++) CHECK_OK(zkr_leader_selector_start(sel[i]));
    /* Each leads once (no auto requeue); wait until all have, bounded. */
    double deadline = zt_now_ms() + 20000;
    uint64_t total = 0;
    while (zt_now_ms() < deadline) {
        total = 0;
        for (int i = 0; i < SELECTORS; i++) {
            uint64_t n = 0;
            CHECK_OK(zkr_leader_selector_leadership_count(sel[i], &n));
            total += n;
        }
        bool leading = false;
        for (int i = 0; i < SELECTORS; i++) {
            bool l = false;
            CHECK_OK(zkr_leader_selector_has_leadership(sel[i], &l));
            leading = leading || l;
        }
        if (total == SELECTORS && !leading && __atomic_load_n(&s.inside, __ATOMIC_SEQ_CST) == 0) break;
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL); /* polling the counters; the deadline bounds it */
    }
    CHECK_MSG(total == SELECTORS, "%" PRIu64 " terms, expected %d", total, SELECTORS);
    CHECK_MSG(s.overlaps == 0, "two selectors led at once %d times", s.overlaps);
    for (int t = 1; t < s.terms && t < 16; t++)
        CHECK_MSG(s.tokens[t] > s.tokens[t - 1], "fencing tokens must increase");
    for (int i = 0; i < SELECTORS; i++) CHECK(args[i].cancelled_while_leading == 0);
    int64_t epoch;
    CHECK_STATUS(zkr_leader_selector_leadership_epoch(sel[0], &epoch), ZKR_NOT_OWNER,
                 "zkr_leader_selector_leadership_epoch");
    /* Requeue is refused (false) while the finished term is still being wound up; then taken. */
    uint64_t before = 0, after = 0;
    CHECK_OK(zkr_leader_selector_leadership_count(sel[0], &before));
    CHECK(before == 1);
    bool queued = false;
    deadline = zt_now_ms() + 10000;
    while (!queued && zt_now_ms() < deadline) {
        CHECK_OK(zkr_leader_selector_requeue(sel[0], &queued));
        struct timespec ts = {0, 2000000};
        if (!queued) nanosleep(&ts, NULL);
    }
    CHECK_MSG(queued, "requeue after a finished term must queue again");
    deadline = zt_now_ms() + 10000;
    while (after <= before && zt_now_ms() < deadline) {
        CHECK_OK(zkr_leader_selector_leadership_count(sel[0], &after));
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    CHECK_MSG(after == before + 1, "the requeued selector must lead again");
    for (int i = 0; i < SELECTORS; i++) {
        zkr_leader_selector_free(sel[i]);
        zkr_client_free(clients[i]);
    }
    pthread_mutex_destroy(&s.mu);
}

typedef struct blocking_leader {
    zt_event started;
    zt_event ended;
    zkr_cancel_reason reason;
    int64_t token;
    int terms;
} blocking_leader;

static void lead_until_cancelled(zkr_leadership_context *ctx, void *user_data) {
    blocking_leader *b = (blocking_leader *)user_data;
    b->terms++;
    (void)zkr_leadership_fencing_token(ctx, &b->token);
    zt_event_signal(&b->started, 1);
    bool cancelled = false;
    (void)zkr_leadership_wait_cancelled(ctx, -1, &cancelled);
    (void)zkr_leadership_cancel_reason(ctx, &b->reason);
    zt_event_signal(&b->ended, (int)b->reason);
}

static void test_selector_interrupt_requeue_and_close_cancel_the_leader(void) {
    char path[128];
    zt_path(path, sizeof path, "selector-cancel");
    zkr_client *c = NULL, *c2 = NULL;
    zkr_leader_selector *s = NULL;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zt_connect_client(&c2));
    blocking_leader *b = calloc(1, sizeof *b);
    zt_event_init(&b->started);
    zt_event_init(&b->ended);
    CHECK_OK(zkr_leader_selector_new(c, path, "blocker", lead_until_cancelled, b, &s));
    CHECK_OK(zkr_leader_selector_set_auto_requeue(s, true));
    CHECK_OK(zkr_leader_selector_start(s));
    CHECK_STATUS(zkr_leader_selector_start(s), ZKR_INVALID_ARGUMENT, "zkr_leader_selector_start");
    CHECK_MSG(zt_event_wait(&b->started, 1, 10000), "never became leader");
    bool lead = false;
    CHECK_OK(zkr_leader_selector_has_leadership(s, &lead));
    CHECK(lead);
    int64_t epoch = 0;
    CHECK_OK(zkr_leader_selector_leadership_epoch(s, &epoch));
    CHECK(epoch == b->token);
    zkr_participant *leader = NULL;
    CHECK_OK(zkr_leader_selector_get_leader(s, &leader));
    CHECK(strcmp(leader->id, "blocker") == 0 && leader->is_leader);
    zkr_participant_free(leader);

    CHECK_OK(zkr_leader_selector_interrupt_leadership(s));
    CHECK_MSG(zt_event_wait(&b->ended, 1, 10000), "interrupt did not end the term");
    CHECK(b->reason == ZKR_CANCEL_INTERRUPTED);
    /* Auto requeue: a second term starts. */
    CHECK_MSG(zt_event_wait(&b->started, 2, 10000), "auto requeue did not lead again");

    /* Free while take_leadership runs: it is cancelled and waited for, so the user_data can be
     * freed right after (ASan would catch a late call). */
    zkr_leader_selector_free(s);
    CHECK(b->reason == ZKR_CANCEL_CLOSED);
    CHECK(zt_event_count(&b->ended) == 2);
    zt_event_destroy(&b->started);
    zt_event_destroy(&b->ended);
    free(b);

    /* A leader whose session expires has its term cancelled. */
    zkr_client *c3 = NULL;
    CHECK_OK(zt_connect_client(&c3));
    blocking_leader *e = calloc(1, sizeof *e);
    zt_event_init(&e->started);
    zt_event_init(&e->ended);
    CHECK_OK(zkr_leader_selector_new(c3, path, "expiring", lead_until_cancelled, e, &s));
    CHECK_OK(zkr_leader_selector_start(s));
    CHECK_MSG(zt_event_wait(&e->started, 1, 10000), "never became leader");
    CHECK_OK(zkr_client_expire_session_for_testing(c3));
    CHECK_MSG(zt_event_wait(&e->ended, 1, 20000), "session expiry did not cancel the term");
    CHECK_MSG(e->reason == ZKR_CANCEL_CONNECTION_SUSPENDED || e->reason == ZKR_CANCEL_SESSION_LOST,
              "reason %u", e->reason);
    zkr_leader_selector_free(s);
    zkr_client_free(c3);
    zt_event_destroy(&e->started);
    zt_event_destroy(&e->ended);
    free(e);

    /* Misuse. */
    zkr_leader_selector *bad = (zkr_leader_selector *)0x1;
    CHECK_STATUS(zkr_leader_selector_new(c2, path, "x", NULL, NULL, &bad), ZKR_INVALID_ARGUMENT,
                 "zkr_leader_selector_new");
    CHECK(bad == (zkr_leader_selector *)0x1);
    CHECK(zkr_leadership_cancelled(NULL));
    zkr_leader_selector_free(NULL);
    zkr_client_free(c);
    zkr_client_free(c2);
}

/* take_leadership steps down for good by closing its own selector (allowed from inside: that
 * close does not wait for itself), then goes on using user_data for a while (finishing up: a
 * flush, a log line). */
typedef struct self_closing_leader {
    zkr_leader_selector *s;
    zkr_status close_status;
    zt_event closed;    /* take_leadership's own close returned */
    zt_event teardown;  /* the main thread is about to close or free the selector */
    zt_event returned;  /* take_leadership is about to return */
    int work;
} self_closing_leader;

static void lead_then_close_own_selector(zkr_leadership_context *ctx, void *user_data) {
    self_closing_leader *l = (self_closing_leader *)user_data;
    (void)ctx;
    l->close_status = zkr_leader_selector_close(l->s);
    zt_event_signal(&l->closed, 1);
    /* Finishing up, from when the main thread starts tearing down: the pause is the work, not
     * a wait for a condition. */
    (void)zt_event_wait(&l->teardown, 1, 10000);
    struct timespec ts = {0, 300 * 1000000L};
    nanosleep(&ts, NULL);
    l->work++;
    zt_event_signal(&l->returned, 1);
}

/* After take_leadership closed its own selector, a close from another thread (`close_first`)
 * and the free still wait for take_leadership to return, as the header promises: user_data may
 * be freed right after (ASan would catch a late use). */
static void self_closing_round(zkr_client *c, const char *path, bool close_first) {
    self_closing_leader *l = calloc(1, sizeof *l);
    CHECK(l != NULL);
    zt_event_init(&l->closed);
    zt_event_init(&l->teardown);
    zt_event_init(&l->returned);
    CHECK_OK(zkr_leader_selector_new(c, path, "self-closing", lead_then_close_own_selector, l, &l->s));
    CHECK_OK(zkr_leader_selector_start(l->s));
    CHECK_MSG(zt_event_wait(&l->closed, 1, 10000), "never led, or its own close did not return");
    CHECK_MSG(l->close_status == ZKR_OK, "close from inside take_leadership returned %s",
              zkr_status_name(l->close_status));
    zt_event_signal(&l->teardown, 1);
    if (close_first) {
        CHECK_OK(zkr_leader_selector_close(l->s));
        CHECK_MSG(zt_event_count(&l->returned) == 1,
                  "zkr_leader_selector_close returned while take_leadership still ran");
    }
    zkr_leader_selector_free(l->s);
    CHECK_MSG(zt_event_count(&l->returned) == 1,
              "zkr_leader_selector_free returned while take_leadership still ran (user_data in use)");
    CHECK(l->work == 1);
    zt_event_destroy(&l->closed);
    zt_event_destroy(&l->teardown);
    zt_event_destroy(&l->returned);
    free(l);
}

static void test_selector_free_waits_for_a_take_leadership_that_closed_it(void) {
    char path[128];
    zt_path(path, sizeof path, "selector-self-close");
    zkr_client *c = NULL;
    CHECK_OK(zt_connect_client(&c));
    self_closing_round(c, path, false);
    if (zt_failed_in_test) return;
    self_closing_round(c, path, true);
    if (zt_failed_in_test) return;
    zkr_client_free(c);
}

/* ---- LeaderObserver ---- */

typedef struct observed {
    zt_event event;
    char last[64];
} observed;

static void record_leader(const zkr_participant *leader, void *user_data) {
    observed *o = (observed *)user_data;
    snprintf(o->last, sizeof o->last, "%s", leader->id);
    zt_event_signal(&o->event, leader->is_leader);
}

static void test_observer_follows_the_leader_without_joining(void) {
    char path[128];
    zt_path(path, sizeof path, "observed");
    zkr_client *c = NULL;
    zkr_leader_observer *obs = NULL;
    zkr_leader_latch *l = NULL;
    CHECK_OK(zt_connect_client(&c));
    CHECK_OK(zkr_leader_observer_start(c, path, &obs));
    observed o;
    memset(&o, 0, sizeof o);
    zt_event_init(&o.event);
    uint64_t id = 0;
    CHECK_OK(zkr_leader_observer_add_listener(obs, record_leader, &o, &id));
    zkr_participant *p = NULL;
    CHECK_OK(zkr_leader_observer_leader(obs, &p));
    CHECK(strcmp(p->id, "") == 0 && !p->is_leader);
    zkr_participant_free(p);
    p = (zkr_participant *)0x1;
    CHECK_OK(zkr_leader_observer_wait_changed(obs, 100, &p));
    CHECK_MSG(p == NULL, "no change yet: NULL after the timeout");
    CHECK_OK(zkr_leader_latch_new(c, path, "watched-one", &l));
    CHECK_OK(zkr_leader_latch_start(l));
    CHECK_OK(zkr_leader_observer_wait_changed(obs, 10000, &p));
    CHECK(p != NULL && strcmp(p->id, "watched-one") == 0 && p->is_leader);
    zkr_participant_free(p);
    CHECK_MSG(zt_event_wait(&o.event, 1, 10000), "the listener did not hear the new leader");
    CHECK(strcmp(o.last, "watched-one") == 0);
    CHECK_OK(zkr_leader_latch_close(l));
    CHECK_OK(zkr_leader_observer_wait_changed(obs, 10000, &p));
    CHECK(p != NULL && strcmp(p->id, "") == 0 && !p->is_leader);
    zkr_participant_free(p);
    CHECK_OK(zkr_leader_observer_close(obs));
    CHECK_STATUS(zkr_leader_observer_wait_changed(obs, -1, &p), ZKR_CLOSED, "zkr_leader_observer_wait_changed");
    zkr_leader_observer_free(obs); /* listener still registered */
    zkr_leader_observer_free(NULL);
    zkr_leader_latch_free(l);
    zkr_client_free(c);
    zt_event_destroy(&o.event);
}

/* A listener that waits, inside its call, for the next change of leader: only the observer's
 * close ends that wait. */
typedef struct blocked_listener {
    zkr_leader_observer *obs;
    zt_event inside;   /* the listener is in its wait */
    zt_event freed;    /* zkr_leader_observer_free returned */
    zkr_status waited; /* what the wait returned */
} blocked_listener;

static void wait_inside_the_listener(const zkr_participant *leader, void *user_data) {
    blocked_listener *b = (blocked_listener *)user_data;
    if (!leader->is_leader || b->inside.count > 0) return;
    /* The change not yet seen by a wait first (it would return at once), then the wait. */
    zkr_participant *p = NULL;
    (void)zkr_leader_observer_wait_changed(b->obs, 0, &p);
    zkr_participant_free(p);
    p = NULL;
    zt_event_signal(&b->inside, 1);
    b->waited = zkr_leader_observer_wait_changed(b->obs, -1, &p);
    zkr_participant_free(p);
}

static void *free_the_observer(void *arg) {
    blocked_listener *b = (blocked_listener *)arg;
    zkr_leader_observer_free(b->obs);
    zt_event_signal(&b->freed, 1);
    return NULL;
}

static void test_free_ends_a_wait_its_own_listener_is_blocked_in(void) {
    /* Before, free waited for the running listener first and closed after: the listener's wait
     * (ended only by the close) and the free waited for each other for good. */
    char path[128];
    zt_path(path, sizeof path, "blocked");
    zkr_client *c = NULL;
    zkr_leader_latch *l = NULL;
    CHECK_OK(zt_connect_client(&c));
    /* On the heap: if the free hangs, its threads keep using it (leaked then, on purpose). */
    blocked_listener *b = calloc(1, sizeof *b);
    CHECK(b != NULL);
    zt_event_init(&b->inside);
    zt_event_init(&b->freed);
    CHECK_OK(zkr_leader_observer_start(c, path, &b->obs));
    uint64_t id = 0;
    CHECK_OK(zkr_leader_observer_add_listener(b->obs, wait_inside_the_listener, b, &id));
    CHECK_OK(zkr_leader_latch_new(c, path, "someone", &l));
    CHECK_OK(zkr_leader_latch_start(l));
    CHECK_MSG(zt_event_wait(&b->inside, 1, 10000), "the listener never heard the leader");
    pthread_t t;
    CHECK(pthread_create(&t, NULL, free_the_observer, b) == 0);
    if (!zt_event_wait(&b->freed, 1, 10000)) {
        pthread_detach(t);
        CHECK_MSG(false, "zkr_leader_observer_free hung behind its own blocked listener");
    }
    pthread_join(t, NULL);
    /* ZKR_CLOSED; or, if the free began before the wait did, the freed handle refused. */
    CHECK_MSG(b->waited == ZKR_CLOSED || b->waited == ZKR_INVALID_ARGUMENT,
              "the listener's wait returned %d", (int)b->waited);
    zkr_leader_latch_free(l);
    zkr_client_free(c);
    zt_event_destroy(&b->inside);
    zt_event_destroy(&b->freed);
    free(b);
}

static void test_a_participant_id_with_a_nul_byte_is_data(void) {
    /* Another process's node data can hold a NUL byte, which a C string cannot: it comes as
     * U+FFFD (before: ZKR_INTERNAL, "a bug in zkrecipes", and observers heard nothing). */
    char path[128], node[160];
    zt_path(path, sizeof path, "nul");
    snprintf(node, sizeof node, "%s/latch-", path);
    zkr_client *c = NULL;
    zkr_leader_latch *l = NULL;
    zkr_leader_observer *obs = NULL;
    CHECK_OK(zt_connect_client(&c));
    const uint8_t data[] = {'a', 0, 'b'};
    CHECK_OK(zkr_client_create(c, node, data, sizeof data, ZKR_EPHEMERAL_SEQUENTIAL, ZKR_CREATE_PARENTS, NULL));
    CHECK_OK(zkr_leader_latch_new(c, path, "me", &l));
    zkr_participant *p = NULL;
    CHECK_OK(zkr_leader_latch_get_leader(l, &p));
    CHECK_MSG(strcmp(p->id, "a\xEF\xBF\xBD" "b") == 0 && p->is_leader, "leader id %s", p->id);
    zkr_participant_free(p);
    zkr_participant_list *all = NULL;
    CHECK_OK(zkr_leader_latch_get_participants(l, &all));
    CHECK(all->len == 1 && strcmp(all->items[0].id, "a\xEF\xBF\xBD" "b") == 0);
    zkr_participant_list_free(all);
    CHECK_OK(zkr_leader_observer_start(c, path, &obs));
    /* The observer's first reading of the group, as it comes (a bounded wait on it). */
    bool seen = false;
    for (double deadline = zt_now_ms() + 10000; !seen && zt_now_ms() < deadline;) {
        p = NULL;
        CHECK_OK(zkr_leader_observer_leader(obs, &p));
        seen = strcmp(p->id, "a\xEF\xBF\xBD" "b") == 0 && p->is_leader;
        zkr_participant_free(p);
        if (!seen) {
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL);
        }
    }
    CHECK_MSG(seen, "the observer never saw the leader");
    zkr_leader_observer_free(obs);
    zkr_leader_latch_free(l);
    zkr_client_free(c);
}

int main(int argc, char **argv) {
    zt_begin(argc, argv);
    RUN(test_seed_10_clients_take_turns);
    RUN(test_listener_participants_and_notify_on_close);
    RUN(test_a_listener_id_of_another_handle_is_refused);
    RUN(test_leadership_moves_when_the_leaders_session_expires);
    RUN(test_misuse_of_a_latch);
    RUN(test_selectors_lead_one_at_a_time_with_increasing_tokens);
    RUN(test_selector_interrupt_requeue_and_close_cancel_the_leader);
    RUN(test_selector_free_waits_for_a_take_leadership_that_closed_it);
    RUN(test_observer_follows_the_leader_without_joining);
    RUN(test_free_ends_a_wait_its_own_listener_is_blocked_in);
    RUN(test_a_participant_id_with_a_nul_byte_is_data);
    return zt_end("test_leader");
}
