/* tests/arch/arch_test.h — helpers every family's tests share: load a config from the source tree
 * for one family, aborting the test with the loader's message when it does not load. */
#ifndef TS_TESTS_ARCH_TEST_H
#define TS_TESTS_ARCH_TEST_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/config.h"

/* Load configs/<name>.yaml from the source tree (TS_SOURCE_ROOT, else ".") with "key=value"
 * overrides (NULL-terminated, or NULL), the arch looked up with lookup. Owned by the caller. */
static inline ts_config *arch_test_config(const char *name, const char *const *sets,
                                          ts_schema_lookup_fn lookup)
{
    const char *root = getenv("TS_SOURCE_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/configs/%s.yaml", root ? root : ".", name);
    size_t n = 0;
    while (sets && sets[n])
        n++;
    ts_config_opts o = {.schema = lookup, .builtin = NULL, .sets = sets, .nsets = n};
    ts_err e;
    ts_err_init(&e);
    ts_config *c = NULL;
    if (ts_config_load(&c, path, &o, &e) != TS_OK) {
        char line[1400];
        ts_err_format(&e, line, sizeof line);
        ck_abort_msg("config %s: %s", path, line);
    }
    ts_err_free(&e);
    return c;
}

#endif
