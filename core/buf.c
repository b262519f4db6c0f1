/* core/buf.c — growable text buffer. */
#include "core/buf.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

void ts_buf_free(ts_buf *b)
{
    ts_free(b->data);
    memset(b, 0, sizeof *b);
}

void ts_buf_reset(ts_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = 0;
}

/* Room for add more bytes and the NUL: the capacity doubled until it holds them, or (exact) just
 * that. */
static int reserve(ts_buf *b, size_t add, bool exact)
{
    if (b->oom)
        return -1;
    if (b->len + add + 1 <= b->cap)
        return 0;
    size_t nc = b->len + add + 1;
    if (!exact) {
        nc = b->cap ? b->cap : 256;
        while (nc < b->len + add + 1)
            nc *= 2;
    }
    char *p = ts_realloc(b->data, nc);
    if (!p) {
        b->oom = true;
        return -1;
    }
    b->data = p;
    b->cap = nc;
    return 0;
}

bool ts_buf_reserve(ts_buf *b, size_t n) { return reserve(b, n, true) == 0; }

void ts_buf_put(ts_buf *b, const char *s, size_t n)
{
    if (reserve(b, n, false))
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

void ts_buf_puts(ts_buf *b, const char *s) { ts_buf_put(b, s, strlen(s)); }

void ts_buf_putc(ts_buf *b, char c) { ts_buf_put(b, &c, 1); }

void ts_buf_vprintf(ts_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        ts_buf_put(b, small, (size_t)n);
        return;
    }
    if (reserve(b, (size_t)n, false))
        return;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void ts_buf_printf(ts_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ts_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

static int dump_to_buf(const char *text, size_t size, void *data)
{
    ts_buf_put(data, text, size);
    return 0;
}

void ts_buf_json(ts_buf *b, const json_t *v, size_t flags)
{
    if (!v || json_dump_callback(v, dump_to_buf, b, flags | JSON_ENCODE_ANY) != 0)
        b->oom = true;
}

json_t *ts_json_str(const char *s)
{
    json_t *v = json_string(s);
    if (v)
        return v;
    /* not UTF-8 (a path, say): the bytes past ASCII become '?' rather than lose the whole text */
    char *c = ts_strdup(s);
    if (!c)
        return NULL;
    for (char *p = c; *p; p++)
        if ((unsigned char)*p >= 0x80)
            *p = '?';
    v = json_string(c);
    ts_free(c);
    return v;
}

json_t *ts_json_num(double v)
{
    if (!isfinite(v))
        return json_null();
    if (fabs(v) < 9.0e15 && v == (double)(long long)v)
        return json_integer((json_int_t)v);
    return json_real(v);
}

void ts_buf_json_str(ts_buf *b, const char *s)
{
    json_t *v = ts_json_str(s);
    ts_buf_json(b, v, 0);
    json_decref(v);
}

void ts_buf_json_num(ts_buf *b, double v)
{
    json_t *j = ts_json_num(v);
    ts_buf_json(b, j, JSON_REAL_PRECISION(TS_JSON_DIGITS));
    json_decref(j);
}

const char *ts_buf_str(const ts_buf *b) { return b->data ? b->data : ""; }
