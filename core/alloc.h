/* core/alloc.h — the one allocation hook.
 *
 * All library allocations go through these, so tests can fail the N-th one and check that every
 * path reports TS_ENOMEM and leaks nothing.
 */
#ifndef TS_CORE_ALLOC_H
#define TS_CORE_ALLOC_H

#include <stddef.h>

void *ts_malloc(size_t n);
void *ts_calloc(size_t n, size_t size);
void *ts_realloc(void *p, size_t n);
void ts_free(void *p);
char *ts_strdup(const char *s);
char *ts_strndup(const char *s, size_t n);
/* Grow an array to hold at least `need` elements of `size` bytes; doubles capacity. 0 on success. */
int ts_grow(void **arr, size_t *cap, size_t need, size_t size);

/* Test hook: make the n-th allocation from now fail (n >= 1); 0 turns it off. Not thread-safe. */
void ts_alloc_fail_after(long n);
/* Number of allocations that failed by the hook since it was armed. */
long ts_alloc_failures(void);

#endif
