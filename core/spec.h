/* core/spec.h — generator specs "name:key=value,key=value" (built-in program generators such as
 * the wafer's `stencil:nz=128,radius=4`): split once, then read typed values by key. Keys that
 * nothing read are reported with a did-you-mean among the keys that were read. */
#ifndef TS_CORE_SPEC_H
#define TS_CORE_SPEC_H

#include <stdbool.h>
#include <stdint.h>
#include "core/err.h"

#define TS_SPEC_MAX_KEYS 16

typedef struct ts_spec {
    char text[256];                          /* the spec, split in place */
    const char *name;                        /* borrowed from text */
    const char *key[TS_SPEC_MAX_KEYS], *value[TS_SPEC_MAX_KEYS];
    bool used[TS_SPEC_MAX_KEYS];
    size_t nkeys;
    const char *known[TS_SPEC_MAX_KEYS];     /* keys asked for, for the did-you-mean */
    size_t nknown;
} ts_spec;

/* Split `spec`; TS_EINPUT for a spec over 255 bytes, more than TS_SPEC_MAX_KEYS keys, a key
 * without '=', an empty key or a repeated key. */
ts_status ts_spec_parse(ts_spec *s, const char *spec, ts_err *err);
/* True when the spec's name is `name`. */
bool ts_spec_is(const ts_spec *s, const char *name);
/* The unsigned value of `key` in [lo, hi] (a decimal integer), or `dflt` when absent. */
ts_status ts_spec_u64(ts_spec *s, const char *key, uint64_t dflt, uint64_t lo, uint64_t hi, uint64_t *out,
                      ts_err *err);
/* The finite value of `key` in [lo, hi], or `dflt` when absent. */
ts_status ts_spec_f64(ts_spec *s, const char *key, double dflt, double lo, double hi, double *out, ts_err *err);
/* The index in names[0..n) of `key`'s value, or `dflt` when absent; TS_EINPUT listing the names
 * (with the closest one) otherwise. */
ts_status ts_spec_choice(ts_spec *s, const char *key, const char *const *names, int n, int dflt, int *out,
                         ts_err *err);
/* TS_EINPUT naming the first key no ts_spec_* call read, with the closest known key. */
ts_status ts_spec_done(const ts_spec *s, ts_err *err);

#endif
