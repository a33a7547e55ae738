/* mokka_shim_getenv (see shim.h): the shims' one way to read a variable. */
#include <string.h>

#include "shim.h"

/* Runs in constructors and signal handlers alike: no allocation, no lock. */
const char *mokka_shim_getenv(const char *name)
{
    extern char **environ;
    size_t n = strlen(name);
    for (char **e = environ; e != NULL && *e != NULL; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}
