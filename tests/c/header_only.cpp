// zkrecipes.h must compile on its own as C++17 (-pedantic -Wall -Wextra -Werror).
#include <zkrecipes.h>

zkr_status header_only_cxx(zkr_client *c, zkr_mutex **m) {
    zkr_status s = zkr_mutex_new(c, "/x", m);
    zkr_owner o = zkr_owner_new();
    static_cast<void>(o);
    static_assert(ZKR_OK == 0, "ZKR_OK is 0");
    return s == ZKR_OK ? ZKR_OK : ZKR_INVALID_ARGUMENT;
}
