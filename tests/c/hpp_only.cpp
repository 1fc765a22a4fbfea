// zkrecipes.hpp must compile on its own as C++17 (-pedantic -Wall -Wextra -Werror).
#include <zkrecipes.hpp>

#include <mutex>

void hpp_only(zkr::client &c) {
    zkr::mutex m(c, "/x");
    std::lock_guard<zkr::mutex> hold(m);
    std::unique_lock<zkr::mutex> timed(m, std::chrono::milliseconds(10));
    (void)timed.owns_lock();
}

void hpp_only_more(zkr::client &c) {
    zkr::read_write_lock rw(c, "/rw");
    std::lock_guard<zkr::mutex> r(rw.read());
    zkr::semaphore_mutex sm(c, "/sm");
    std::lock_guard<zkr::semaphore_mutex> s(sm);
    zkr::leader_selector sel(c, "/sel", "id", [](zkr_leadership_context *ctx) {
        while (!zkr_leadership_cancelled(ctx)) {
        }
    });
}
