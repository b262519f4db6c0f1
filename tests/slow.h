/* tests/slow.h — the gate of the suite "slow" (tests/meson.build): its tests run only under
 * `meson test --setup slow`, which sets TS_SLOW_TESTS=1. */
#ifndef TS_TESTS_SLOW_H
#define TS_TESTS_SLOW_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether a test of the suite "slow" must skip (exit 77): TS_SLOW_TESTS is not 1. It then says
 * that `what` runs only with it. */
static inline bool slow_skipped(const char *what)
{
    const char *asked = getenv("TS_SLOW_TESTS");
    if (asked && !strcmp(asked, "1"))
        return false;
    printf("SKIP: %s runs only with TS_SLOW_TESTS=1 (meson test -C BUILD --setup slow --suite slow)\n", what);
    return true;
}

#endif
