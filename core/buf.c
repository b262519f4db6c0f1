/* core/buf.c — growable text buffer. */
#include "core/buf.h"

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

static int reserve(ts_buf *b, size_t add)
{
    if (b->oom)
        return -1;
    if (b->len + add + 1 <= b->cap)
        return 0;
    size_t nc = b->cap ? b->cap : 256;
    while (nc < b->len + add + 1)
        nc *= 2;
    char *p = ts_realloc(b->data, nc);
    if (!p) {
        b->oom = true;
        return -1;
    }
    b->data = p;
    b->cap = nc;
    return 0;
}

void ts_buf_put(ts_buf *b, const char *s, size_t n)
{
    if (reserve(b, n))
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
    if (reserve(b, (size_t)n))
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

void ts_buf_json_str(ts_buf *b, const char *s)
{
    ts_buf_putc(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': ts_buf_puts(b, "\\\""); break;
        case '\\': ts_buf_puts(b, "\\\\"); break;
        case '\n': ts_buf_puts(b, "\\n"); break;
        case '\r': ts_buf_puts(b, "\\r"); break;
        case '\t': ts_buf_puts(b, "\\t"); break;
        default:
            if (*p < 0x20)
                ts_buf_printf(b, "\\u%04x", *p);
            else
                ts_buf_putc(b, (char)*p);
        }
    }
    ts_buf_putc(b, '"');
}

void ts_buf_json_num(ts_buf *b, double v)
{
    if (!isfinite(v)) {
        ts_buf_puts(b, "null");
        return;
    }
    if (fabs(v) < 9.0e15 && v == (double)(long long)v) {
        ts_buf_printf(b, "%lld", (long long)v);
        return;
    }
    char tmp[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    ts_buf_puts(b, tmp);
}

const char *ts_buf_str(const ts_buf *b) { return b->data ? b->data : ""; }
