/* zkrecipes.h must compile on its own as C99 (-pedantic -Wall -Wextra -Werror). */
#include <zkrecipes.h>

/* Use a few declarations so that they are type-checked, not just parsed. */
zkr_status header_only_c(zkr_client *c, zkr_mutex **m);
zkr_status header_only_c(zkr_client *c, zkr_mutex **m) {
    zkr_status s = zkr_mutex_new(c, "/x", m);
    zkr_owner o = zkr_owner_new();
    (void)o;
    return s == ZKR_OK ? ZKR_OK : ZKR_INVALID_ARGUMENT;
}
