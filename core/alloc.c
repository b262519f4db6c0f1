/* core/alloc.c — the allocation hook (see alloc.h). */
#include "core/alloc.h"

#include <stdlib.h>
#include <string.h>

static long fail_countdown; /* 0 = off; otherwise the allocation that reaches 1 fails */
static long failures;

static int should_fail(void)
{
    if (fail_countdown <= 0)
        return 0;
    if (--fail_countdown == 0) {
        failures++;
        return 1;
    }
    return 0;
}

void ts_alloc_fail_after(long n)
{
    fail_countdown = n > 0 ? n : 0;
    failures = 0;
}

long ts_alloc_failures(void) { return failures; }

void *ts_malloc(size_t n)
{
    if (should_fail())
        return NULL;
    return malloc(n ? n : 1);
}

void *ts_calloc(size_t n, size_t size)
{
    if (should_fail())
        return NULL;
    return calloc(n ? n : 1, size ? size : 1);
}

void *ts_realloc(void *p, size_t n)
{
    if (should_fail())
        return NULL;
    return realloc(p, n ? n : 1);
}

void ts_free(void *p) { free(p); }

char *ts_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *d = ts_malloc(len + 1);
    if (!d)
        return NULL;
    memcpy(d, s, len);
    d[len] = 0;
    return d;
}

char *ts_strdup(const char *s) { return ts_strndup(s, (size_t)-1); }

int ts_grow(void **arr, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 8;
    while (nc < need) {
        if (nc > ((size_t)-1) / 2 / size)
            return -1;
        nc *= 2;
    }
    void *p = ts_realloc(*arr, nc * size);
    if (!p)
        return -1;
    *arr = p;
    *cap = nc;
    return 0;
}
