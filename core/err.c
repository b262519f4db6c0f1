/* core/err.c — error contexts. */
#include "core/err.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"

void ts_err_init(ts_err *e)
{
    memset(e, 0, sizeof *e);
    e->tile = -1;
    e->cycle = -1;
}

void ts_err_free(ts_err *e)
{
    if (!e)
        return;
    ts_free(e->detail);
    ts_err_init(e);
}

static void set_msg(ts_err *e, const char *fmt, va_list ap)
{
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
}

ts_status ts_err_set(ts_err *e, ts_status st, const char *fmt, ...)
{
    if (!e)
        return st;
    e->status = st;
    va_list ap;
    va_start(ap, fmt);
    set_msg(e, fmt, ap);
    va_end(ap);
    return st;
}

ts_status ts_err_at(ts_err *e, ts_status st, const char *file, int line, int col, const char *fmt, ...)
{
    if (!e)
        return st;
    e->status = st;
    snprintf(e->file, sizeof e->file, "%s", file ? file : "");
    e->line = line;
    e->col = col;
    va_list ap;
    va_start(ap, fmt);
    set_msg(e, fmt, ap);
    va_end(ap);
    return st;
}

ts_status ts_err_sim(ts_err *e, int64_t tile, int64_t cycle, const char *fmt, ...)
{
    if (!e)
        return TS_ESIM;
    e->status = TS_ESIM;
    e->tile = tile;
    e->cycle = cycle;
    va_list ap;
    va_start(ap, fmt);
    set_msg(e, fmt, ap);
    va_end(ap);
    return TS_ESIM;
}

void ts_err_append_detail(ts_err *e, const char *text)
{
    if (!e || !text)
        return;
    size_t old = e->detail ? strlen(e->detail) : 0, add = strlen(text);
    char *p = ts_realloc(e->detail, old + add + 1);
    if (!p)
        return;
    memcpy(p + old, text, add + 1);
    e->detail = p;
}

size_t ts_err_format(const ts_err *e, char *buf, size_t n)
{
    char where[320] = "";
    if (e->file[0] && e->line > 0 && e->col > 0)
        snprintf(where, sizeof where, "%s:%d:%d: ", e->file, e->line, e->col);
    else if (e->file[0] && e->line > 0)
        snprintf(where, sizeof where, "%s:%d: ", e->file, e->line);
    else if (e->file[0])
        snprintf(where, sizeof where, "%s: ", e->file);
    else if (e->tile >= 0 && e->cycle >= 0)
        snprintf(where, sizeof where, "tile %" PRId64 ", cycle %" PRId64 ": ", e->tile, e->cycle);
    else if (e->cycle >= 0)
        snprintf(where, sizeof where, "cycle %" PRId64 ": ", e->cycle);
    else if (e->tile >= 0)
        snprintf(where, sizeof where, "tile %" PRId64 ": ", e->tile);
    int k = snprintf(buf, n, "%s%s", where, e->msg[0] ? e->msg : ts_status_name(e->status));
    return k < 0 ? 0 : (size_t)k;
}

const char *ts_status_name(ts_status st)
{
    switch (st) {
    case TS_OK: return "ok";
    case TS_EINPUT: return "bad input";
    case TS_ESIM: return "simulation error";
    case TS_ENOMEM: return "out of memory";
    case TS_EIO: return "i/o error";
    case TS_EINTERNAL: return "internal error";
    }
    return "unknown error";
}
