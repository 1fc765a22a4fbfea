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

    std::printf("test_cpp: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
