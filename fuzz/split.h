/* fuzz/split.h — how the workload targets read their input: a workload file, then after the first
 * NUL byte (if any) parameter overrides ("m=4,dtype=f16"). */
#ifndef TS_FUZZ_SPLIT_H
#define TS_FUZZ_SPLIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The workload's length in *ylen and, when there is a NUL, a new NUL-terminated copy of what
 * follows it in *params (else NULL; the caller frees it). False when memory runs out. */
static inline bool ts_fuzz_split(const uint8_t *data, size_t size, size_t *ylen, char **params)
{
    const uint8_t *nul = memchr(data, 0, size);
    *ylen = nul ? (size_t)(nul - data) : size;
    *params = NULL;
    if (!nul)
        return true;
    size_t plen = size - *ylen - 1;
    if (!(*params = malloc(plen + 1)))
        return false;
    memcpy(*params, nul + 1, plen);
    (*params)[plen] = 0;
    return true;
}

#endif
