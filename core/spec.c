/* core/spec.c — generator specs "name:key=value,..." (core/spec.h). */
#include "core/spec.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/suggest.h"

ts_status ts_spec_parse(ts_spec *s, const char *spec, ts_err *err)
{
    memset(s, 0, sizeof *s);
    size_t n = strlen(spec);
    if (n >= sizeof s->text)
        return ts_err_set(err, TS_EINPUT, "spec '%.40s...' is longer than %zu bytes", spec, sizeof s->text - 1);
    memcpy(s->text, spec, n + 1);
    s->name = s->text;
    char *p = strchr(s->text, ':');
    if (!p)
        return TS_OK;
    *p++ = '\0';
    while (*p) {
        char *end = strchr(p, ',');
        if (end)
            *end = '\0';
        char *eq = strchr(p, '=');
        if (!eq || eq == p)
            return ts_err_set(err, TS_EINPUT, "%s: '%s' is not key=value", s->name, p);
        *eq = '\0';
        for (size_t i = 0; i < s->nkeys; i++)
            if (!strcmp(s->key[i], p))
                return ts_err_set(err, TS_EINPUT, "%s: key '%s' given twice", s->name, p);
        if (s->nkeys == TS_SPEC_MAX_KEYS)
            return ts_err_set(err, TS_EINPUT, "%s: more than %d keys", s->name, TS_SPEC_MAX_KEYS);
        s->key[s->nkeys] = p;
        s->value[s->nkeys++] = eq + 1;
        if (!end)
            break;
        p = end + 1;
    }
    return TS_OK;
}

bool ts_spec_is(const ts_spec *s, const char *name)
{
    return !strcmp(s->name, name);
}

/* The value of key, marking it read, or NULL; remembers key for the did-you-mean. */
static const char *lookup(ts_spec *s, const char *key)
{
    if (s->nknown < TS_SPEC_MAX_KEYS)
        s->known[s->nknown++] = key;
    for (size_t i = 0; i < s->nkeys; i++)
        if (!strcmp(s->key[i], key)) {
            s->used[i] = true;
            return s->value[i];
        }
    return NULL;
}

ts_status ts_spec_u64(ts_spec *s, const char *key, uint64_t dflt, uint64_t lo, uint64_t hi, uint64_t *out,
                      ts_err *err)
{
    const char *v = lookup(s, key);
    *out = dflt;
    if (!v)
        return TS_OK;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (!*v || *end || *v == '-' || errno || x < lo || x > hi)
        return ts_err_set(err, TS_EINPUT, "%s: %s=%s: expected an integer in %" PRIu64 "..%" PRIu64, s->name, key,
                          v, lo, hi);
    *out = x;
    return TS_OK;
}

ts_status ts_spec_f64(ts_spec *s, const char *key, double dflt, double lo, double hi, double *out, ts_err *err)
{
    const char *v = lookup(s, key);
    *out = dflt;
    if (!v)
        return TS_OK;
    char *end;
    double x = strtod(v, &end);
    if (!*v || *end || !isfinite(x) || x < lo || x > hi)
        return ts_err_set(err, TS_EINPUT, "%s: %s=%s: expected a number in %g..%g", s->name, key, v, lo, hi);
    *out = x;
    return TS_OK;
}

ts_status ts_spec_choice(ts_spec *s, const char *key, const char *const *names, int n, int dflt, int *out,
                         ts_err *err)
{
    const char *v = lookup(s, key);
    *out = dflt;
    if (!v)
        return TS_OK;
    char list[200] = "";
    const char *best = NULL;
    size_t bd = 3;
    for (int i = 0, at = 0; i < n; i++) {
        if (!strcmp(v, names[i])) {
            *out = i;
            return TS_OK;
        }
        size_t d = ts_edit_distance(v, strlen(v), names[i], strlen(names[i]), true);
        if (d < bd && d < strlen(v)) {
            bd = d;
            best = names[i];
        }
        if ((size_t)at < sizeof list)
            at += snprintf(list + at, sizeof list - (size_t)at, "%s%s", i ? ", " : "", names[i]);
    }
    if (best)
        return ts_err_set(err, TS_EINPUT, "%s: %s=%s: not one of %s (did you mean '%s'?)", s->name, key, v, list, best);
    return ts_err_set(err, TS_EINPUT, "%s: %s=%s: not one of %s", s->name, key, v, list);
}

ts_status ts_spec_done(const ts_spec *s, ts_err *err)
{
    for (size_t i = 0; i < s->nkeys; i++) {
        if (s->used[i])
            continue;
        const char *best = NULL;
        size_t bd = 3; /* suggest within two edits, fewer than the key's length */
        for (size_t k = 0; k < s->nknown; k++) {
            size_t d = ts_edit_distance(s->key[i], strlen(s->key[i]), s->known[k], strlen(s->known[k]), true);
            if (d < bd && d < strlen(s->key[i])) {
                bd = d;
                best = s->known[k];
            }
        }
        if (best)
            return ts_err_set(err, TS_EINPUT, "%s: unknown key '%s' (did you mean '%s'?)", s->name, s->key[i], best);
        char keys[200] = "";
        for (size_t k = 0, at = 0; k < s->nknown && at < sizeof keys; k++)
            at += (size_t)snprintf(keys + at, sizeof keys - at, "%s%s", k ? ", " : "", s->known[k]);
        return ts_err_set(err, TS_EINPUT, "%s: unknown key '%s' (keys: %s)", s->name, s->key[i], keys);
    }
    return TS_OK;
}
