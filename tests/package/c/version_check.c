/* Prints the library's version and fails unless it is the header's (ZKR_VERSION_*) and, when
 * given, argv[1] (the workspace version scripts/verify-packages expects). */
#include <stdio.h>
#include <string.h>

#include <zkrecipes.h>

#define STR2(x) #x
#define STR(x) STR2(x)

int main(int argc, char **argv) {
    const char *lib = zkr_version();
    const char *macros = STR(ZKR_VERSION_MAJOR) "." STR(ZKR_VERSION_MINOR) "." STR(ZKR_VERSION_PATCH);
    printf("zkr_version() %s, ZKR_VERSION_STRING %s, macros %s\n", lib, ZKR_VERSION_STRING, macros);
    if (strcmp(lib, ZKR_VERSION_STRING) != 0 || strncmp(ZKR_VERSION_STRING, macros, strlen(macros)) != 0) {
        fprintf(stderr, "version mismatch between the library and its header\n");
        return 1;
    }
    if (argc > 1 && strcmp(lib, argv[1]) != 0) {
        fprintf(stderr, "version %s, expected %s\n", lib, argv[1]);
        return 1;
    }
    return 0;
}
