// The C++ RAII layer (zkrecipes.hpp): standard guards on zkr::mutex across std::threads,
// exceptions carrying the status, and handles freed by their unique_ptr deleters (ASan/LSan).
#include <zkrecipes.hpp>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

static int passed = 0, failed = 0;

#define EXPECT(cond)                                                                   \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            std::fprintf(stderr, "    FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);   \
            throw std::runtime_error("expectation failed");                           \
        }                                                                              \
    } while (0)

// Lock paths are container nodes the server reaps once empty: a subtree may vanish first.
static void remove_tree(zkr::client &c, const std::string &path) {
    try {
        c.remove(path, -1, ZKR_DELETE_RECURSIVE);
    } catch (const zkr::error &e) {
        if (e.status() != ZKR_NO_NODE) throw;
    }
}

template <typename F>
static void run(const char *name, F f) {
    try {
        f();
        std::printf("  %-58s ok\n", name);
        passed++;
    } catch (const std::exception &e) {
        std::printf("  %-58s FAILED (%s)\n", name, e.what());
        failed++;
    }
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    const std::string hosts = argv[1];
    const std::string base = "/c-tests/cpp-" + std::to_string(getpid());
    std::printf("%s (zkrecipes %s)\n", argv[0], zkr_version());

    run("guards_serialize_std_threads", [&] {
        zkr::client c(hosts);
        zkr::mutex m(c, base + "/guards");
        std::atomic<int> inside{0}, overlaps{0};
        int last = 0;
        std::vector<std::thread> threads;
        for (int i = 0; i < 8; i++)
            threads.emplace_back([&] {
                std::lock_guard<zkr::mutex> hold(m);
                if (inside.fetch_add(1) != 0) overlaps++;
                last++;
                inside.fetch_sub(1);
            });
        for (auto &t : threads) t.join();
        EXPECT(overlaps == 0 && last == 8);
        EXPECT(m.participant_nodes().empty());
    });

    run("cohort_guards_hand_over_in_memory_with_increasing_wide_tokens", [&] {
        zkr::client c(hosts);
        zkr::mutex m = zkr::mutex::cohort(c, base + "/cohort", 64, std::chrono::milliseconds(20));
        std::mutex seen_lock;
        std::vector<zkr::wide_token> seen;
        std::atomic<int> inside{0}, overlaps{0};
        std::vector<std::thread> threads;
        for (int i = 0; i < 8; i++)
            threads.emplace_back([&] {
                for (int k = 0; k < 10; k++) {
                    std::lock_guard<zkr::mutex> hold(m);
                    if (inside.fetch_add(1) != 0) overlaps++;
                    {
                        std::lock_guard<std::mutex> g(seen_lock);
                        seen.push_back(m.wide_fencing_token());
                    }
                    inside.fetch_sub(1);
                }
            });
        for (auto &t : threads) t.join();
        EXPECT(overlaps == 0 && seen.size() == 80);
        size_t handed = 0;
        for (size_t i = 1; i < seen.size(); i++) {
            EXPECT(seen[i - 1] < seen[i]);
            if (seen[i].handoff > 0) handed++;
        }
        EXPECT(handed > 0);
        EXPECT(m.local_waiters() == 0);
    });

    run("unique_lock_try_lock_for_times_out_against_another_owner", [&] {
        zkr::client c(hosts);
        zkr::mutex m(c, base + "/timed");
        zkr::owner other = zkr::owner::make();
        EXPECT(m.acquire_as(other, -1));
        {
            std::unique_lock<zkr::mutex> lk(m, std::chrono::milliseconds(100));
            EXPECT(!lk.owns_lock());
        }
        m.release_as(other);
        std::unique_lock<zkr::mutex> lk(m, std::chrono::seconds(5));
        EXPECT(lk.owns_lock());
        EXPECT(m.fencing_token() > 0);
    });

    run("errors_carry_their_status", [&] {
        zkr::client c(hosts);
        try {
            zkr::mutex bad(c, "relative/path");
            EXPECT(false);
        } catch (const zkr::error &e) {
            EXPECT(e.status() == ZKR_INVALID_ARGUMENT);
            EXPECT(std::strstr(e.what(), "zkr_mutex_new") != nullptr);
        }
        zkr::mutex m(c, base + "/not-owner");
        try {
            m.release();
            EXPECT(false);
        } catch (const zkr::error &e) {
            EXPECT(e.status() == ZKR_NOT_OWNER);
            EXPECT(std::string(e.status_name()) == "ZKR_NOT_OWNER");
        }
    });

    run("latch_counter_and_plain_ops", [&] {
        zkr::client c(hosts);
        zkr::leader_latch l(c, base + "/latch", "cpp");
        l.start();
        EXPECT(l.await(10000));
        EXPECT(l.leadership_epoch() > 0);
        zkr::atomic_long counter(c, base + "/counter");
        EXPECT(counter.add_and_get(5) == 5);
        EXPECT(counter.get().post_value == 5);
        zkr::shared_count sc(c, base + "/count", 3);
        sc.start();
        sc.set_count(4);
        EXPECT(sc.get_count() == 4);
        c.create(base + "/plain", "data", ZKR_PERSISTENT, ZKR_CREATE_PARENTS);
        EXPECT(c.get_data(base + "/plain") == "data");
        l.close();
        remove_tree(c, base);
        EXPECT(!c.exists(base));
    });

    run("semaphore_leases_return_by_hand_and_by_destructor", [&] {
        zkr::client c(hosts);
        const std::string path = base + "/semaphore";
        zkr::semaphore s(c, path, 2);
        zkr::leases two = s.acquire(2, 10000);
        EXPECT(two && two.size() == 2 && two.paths().size() == 2);
        EXPECT(s.participant_nodes().size() == 2);
        // Full: a third lease times out, empty.
        zkr::leases none = s.try_acquire_for(1, std::chrono::milliseconds(50));
        EXPECT(!none && none.size() == 0 && none.paths().empty());
        try {
            (void)none.wait_lost(0);
            EXPECT(false);
        } catch (const zkr::error &e) {
            EXPECT(e.status() == ZKR_CLOSED);
        }
        s.return_leases(none);  // nothing to return
        // Held and good: no loss within the wait.
        EXPECT(two.wait_lost(0) == ZKR_LEASE_LOST_NONE);
        s.return_leases(two);
        EXPECT(two.size() == 0 && s.participant_nodes().empty());
        {
            zkr::leases one = s.acquire(1, 10000);
            EXPECT(one.size() == 1 && s.participant_nodes().size() == 1);
        }  // the destructor returns it in the background
        bool gone = false;
        for (int i = 0; i < 1000 && !gone; i++) {
            gone = s.participant_nodes().empty();
            if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        EXPECT(gone);
        // A closed client: a lease of it is lost, CLOSED.
        zkr::leases last = s.acquire(1, 10000);
        EXPECT(last.size() == 1);
        c.close();
        EXPECT(last.wait_lost(10000) == ZKR_LEASE_LOST_CLOSED);
        EXPECT(std::strcmp(zkr_lease_lost_name(ZKR_LEASE_LOST_CLOSED), "CLOSED") == 0);
        zkr::client cleanup(hosts);
        remove_tree(cleanup, base);
    });

    run("semaphore_on_a_shared_count_and_a_bad_quantity", [&] {
        zkr::client c(hosts);
        zkr::shared_count count(c, base + "/max", 1);
        count.start();
        zkr::semaphore s(c, base + "/counted", count);
        zkr::leases first = s.acquire(1, 10000);
        EXPECT(first.size() == 1);
        EXPECT(!s.acquire(1, 0));
        count.set_count(2);
        zkr::leases second = s.acquire(1, 10000);
        EXPECT(second.size() == 1);
        zkr::semaphore fixed(c, base + "/fixed", 1);
        try {
            (void)fixed.acquire(2, 0);
            EXPECT(false);
        } catch (const zkr::error &e) {
            EXPECT(e.status() == ZKR_INVALID_ARGUMENT);
        }
        s.return_leases(first);
        s.return_leases(second);
        remove_tree(c, base);
    });

    run("read_write_lock_and_selector_wrappers", [&] {
        zkr::client c(hosts);
        zkr::read_write_lock rw(c, base + "/rw");
        {
            std::lock_guard<zkr::mutex> w(rw.write());
            EXPECT(rw.write().is_owned());
        }
        std::atomic<int> terms{0};
        {
            zkr::leader_selector sel(c, base + "/selector", "cpp", [&](zkr_leadership_context *ctx) {
                terms++;
                bool cancelled = false;
                zkr::check(zkr_leadership_wait_cancelled(ctx, -1, &cancelled));
            });
            sel.start();
            for (int i = 0; i < 1000 && !sel.has_leadership(); i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
            EXPECT(sel.has_leadership());
        }  // the destructor cancels the term and waits for the callable
        EXPECT(terms == 1);
        remove_tree(c, base);
    });

    run("ensemble_calls_of_a_standalone_server", [&] {
        zkr_client_options opts = zkr::client_options();
        EXPECT(opts.version == ZKR_CLIENT_OPTIONS_VERSION && !opts.track_ensemble);
        opts.track_ensemble = true;
        zkr::client c(hosts, opts);
        // A standalone server has no member lines: the tracker keeps the hosts it was given.
        zkr::ensemble_config config = c.get_config();
        EXPECT(config.members.empty() && config.version == 0 && config.connect_string.empty());
        EXPECT(c.current_connect_string() == hosts);
        try {
            c.reconfig({}, {99});
            EXPECT(false);
        } catch (const zkr::error &e) {
            EXPECT(e.status() == ZKR_SERVER);
            EXPECT(std::strstr(e.what(), "reconfigEnabled") != nullptr);
        }
        // Bad input: refused before anything is sent.
        const std::vector<std::vector<std::string>> bad = {{"4=127.0.0.4:1:2;3"}, {"server.4=127.0.0.4:1"}};
        for (const auto &lines : bad) {
            for (int members = 0; members < 2; members++) {
                try {
                    if (members) c.reconfig_members(lines);
                    else c.reconfig(lines, {});
                    EXPECT(false);
                } catch (const zkr::error &e) {
                    EXPECT(e.status() == ZKR_INVALID_ARGUMENT);
                }
            }
        }
        for (int which = 0; which < 3; which++) {
            try {
                if (which == 0) c.reconfig_members({});
                if (which == 1) c.reconfig({"server.4=127.0.0.4:1:2;3"}, {4});
                if (which == 2) c.reconfig({}, {}, -2);
                EXPECT(false);
            } catch (const zkr::error &e) {
                EXPECT(e.status() == ZKR_INVALID_ARGUMENT);
            }
        }
        // The TLS refusal of the tracker comes from the constructor.
        opts.tls = true;
        try {
            zkr::client tls("127.0.0.1:1", opts);
            EXPECT(false);
        } catch (const zkr::error &e) {
            EXPECT(e.status() == ZKR_INVALID_ARGUMENT);
        }
        c.close();
        try {
            c.get_config();
            EXPECT(false);
        } catch (const zkr::error &e) {
            EXPECT(e.status() == ZKR_CLOSED);
        }
    });

    run("ensemble_calls_of_a_static_3_server_ensemble", [&] {
        EXPECT(argc > 2);  // test_cpp needs the ensemble's connect string as argv[2]
        const std::string ensemble = argv[2];
        zkr_client_options opts = zkr::client_options();
        opts.track_ensemble = true;
        zkr::client c(ensemble, opts);
        zkr::ensemble_config config = c.get_config();
        EXPECT(config.members.size() == 3);
        for (size_t i = 0; i < config.members.size(); i++) {
            const zkr::ensemble_member &m = config.members[i];
            const std::string host = "127.0.0." + std::to_string(i + 1);
            EXPECT(m.id == i + 1 && m.host == host && m.role == ZKR_SERVER_PARTICIPANT);
            EXPECT(m.quorum_port > 0 && m.election_port > 0 && m.quorum_port != m.election_port);
            EXPECT(m.server_line.rfind("server." + std::to_string(i + 1) + "=" + host + ":", 0) == 0);
            // A static configuration names no client ports.
            EXPECT(m.client_port == 0 && m.client_host.empty() && m.client_address.empty());
        }
        EXPECT(config.version == 0 && config.connect_string.empty());
        EXPECT(config.data.find("server.3=") != std::string::npos);
        EXPECT(c.current_connect_string() == ensemble);
        try {
            c.reconfig({}, {3}, config.version);
            EXPECT(false);
        } catch (const zkr::error &e) {
            EXPECT(e.status() == ZKR_SERVER);
        }
        EXPECT(c.get_config().members.size() == 3);
    });

    std::printf("test_cpp: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
