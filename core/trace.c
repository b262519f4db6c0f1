/* core/trace.c — streaming Chrome / Perfetto trace-event JSON.
 *
 * Layout of the file:
 *
 *   {"traceEvents":[
 *   {"name":"process_name","ph":"M","pid":0,"args":{"name":"ipu0"}},
 *   {"name":"compute","cat":"phase","ph":"X","ts":0.000625,"dur":1.25,"pid":0,"tid":3},
 *   ...
 *   ],
 *   "displayTimeUnit":"ns",
 *   "otherData":{"generator":"tessera","clock_hz":1600000000,"dropped_events":0}}
 *
 * Each event is rendered into a small buffer first so its size is known before it is written:
 * once the bytes written plus the event plus TRAILER_RESERVE would pass max_bytes, that slice or
 * counter and every later one are dropped and counted, while metadata (names of processes and threads) is still
 * written so the events that did make it stay labelled. The trailer is always written, so the
 * file is valid JSON whatever was dropped.
 *
 * Each event is a jansson object written compact; the array and trailer around them are the only
 * text written here.
 *
 * Times: ts and dur are microseconds, written exactly to the picosecond (6 decimals at most).
 * A cycle count is turned into whole picoseconds with integer arithmetic when the clock is a
 * whole number of hertz (every shipped config), rounding half up; dur is end minus start in
 * picoseconds, so slices that abut in cycles abut in the trace.
 */
#include "core/trace.h"

#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/buf.h"
#include "core/fileio.h"

#define TRACE_DEFAULT_MAX ((uint64_t)200 * 1000 * 1000) /* 200 MB, the size Perfetto's UI loads well */
#define TRACE_BUFSIZE ((size_t)1 << 20)                 /* stdio buffer: 1 MiB */
#define TRAILER_RESERVE 256                             /* the trailer is under 160 bytes */

struct ts_trace {
    FILE *f;
    char *path;      /* owned: final name */
    char *tmp;       /* owned: "<path>.tmp.<pid>" */
    int tmp_slot;    /* its slot in the table of temporary files (core/fileio.h), or -1 */
    char *iobuf;     /* owned: stdio buffer of f */
    double clock_hz;
    uint64_t clock_int; /* clock in whole Hz, 0 when it is not a whole number */
    uint64_t max_bytes;
    uint64_t written;
    uint64_t dropped;
    bool full;          /* the size bound was reached: drop every later slice and counter */
    uint64_t nevents;   /* events written, for the separating commas */
    int io_errno;       /* first write error, 0 if none */
    ts_buf ev;          /* scratch: the event being rendered */
    struct trace_layer { ts_trace_key key; uint64_t lo, hi; char *label; } *layers; /* owned */
    size_t nlayers, caplayers;
    ts_buf lab;         /* scratch: a slice's layer labels */
};

/* Picoseconds from cycle 0 to cycle c. */
static uint64_t cycles_to_ps(const ts_trace *t, uint64_t c)
{
    if (t->clock_int) {
        /* c = q * f + r. q whole seconds, then r / f in two steps of 10^6 so that no product
         * passes 2^64 for clocks below 1.8e13 Hz. */
        uint64_t f = t->clock_int, q = c / f, r = c % f;
        uint64_t us = r * 1000000u / f, r2 = r * 1000000u % f;
        uint64_t ps = r2 * 1000000u / f, r3 = r2 * 1000000u % f;
        if (r3 * 2 >= f)
            ps++;
        return q * 1000000000000u + us * 1000000u + ps;
    }
    long double v = (long double)c * 1e12L / (long double)t->clock_hz;
    return (uint64_t)llroundl(v);
}

/* Picoseconds as a JSON number of microseconds: an integer when whole, else a real that needs
 * *prec significant digits to be written exactly (6 decimals; 17 at most, past 10^11 us). */
static json_t *us_json(uint64_t ps, int *prec)
{
    uint64_t whole = ps / 1000000u;
    if (ps % 1000000u == 0)
        return json_integer((json_int_t)whole);
    int digits = 6;
    for (uint64_t w = whole; w; w /= 10)
        digits++;
    if (digits > *prec)
        *prec = digits > 17 ? 17 : digits;
    return json_real((double)ps / 1e6);
}

/* Render the event e (a new reference, consumed) into t->ev with jansson, compact, reals with
 * prec significant digits. */
static void render(ts_trace *t, json_t *e, int prec)
{
    ts_buf_reset(&t->ev);
    ts_buf_json(&t->ev, e, JSON_COMPACT | JSON_REAL_PRECISION(prec));
    json_decref(e);
}

static json_t *meta(const char *what, int pid, const char *name)
{
    json_t *e = json_object(), *args = json_object();
    json_object_set_new(e, "name", json_string(what));
    json_object_set_new(e, "ph", json_string("M"));
    json_object_set_new(e, "pid", json_integer(pid));
    json_object_set_new(args, "name", ts_json_str(name ? name : ""));
    json_object_set_new(e, "args", args);
    return e;
}

ts_status ts_trace_open(ts_trace **out, const char *path, double clock_hz, uint64_t max_bytes, ts_err *err)
{
    *out = NULL;
    if (!path || !*path)
        return ts_err_set(err, TS_EINPUT, "trace path is empty");
    if (!(clock_hz > 0) || !isfinite(clock_hz))
        return ts_err_set(err, TS_EINPUT, "trace clock %g Hz is not a positive frequency", clock_hz);
    ts_trace *t = ts_calloc(1, sizeof *t);
    if (!t)
        return ts_err_set(err, TS_ENOMEM, "out of memory opening trace");
    t->tmp_slot = -1;
    t->path = ts_strdup(path);
    t->tmp = ts_tmp_name(path);
    t->iobuf = ts_malloc(TRACE_BUFSIZE);
    if (!t->path || !t->tmp || !t->iobuf) {
        ts_trace_abort(t);
        return ts_err_set(err, TS_ENOMEM, "out of memory opening trace");
    }
    ts_tmp_remove_stale(path);
    t->tmp_slot = ts_tmp_track(t->tmp);
    t->f = fopen(t->tmp, "wb");
    if (!t->f) {
        ts_status st = ts_err_at(err, TS_EIO, path, 0, 0, "cannot write trace: %s", strerror(errno));
        ts_trace_abort(t);
        return st;
    }
    setvbuf(t->f, t->iobuf, _IOFBF, TRACE_BUFSIZE);
    t->clock_hz = clock_hz;
    if (clock_hz == floor(clock_hz) && clock_hz < 1.8e13)
        t->clock_int = (uint64_t)clock_hz;
    t->max_bytes = max_bytes ? max_bytes : TRACE_DEFAULT_MAX;
    static const char head[] = "{\"traceEvents\":[";
    if (fwrite(head, 1, sizeof head - 1, t->f) != sizeof head - 1)
        t->io_errno = errno ? errno : EIO;
    t->written = sizeof head - 1;
    *out = t;
    return TS_OK;
}

/* Write the event in t->ev; metadata is never dropped. */
static void emit(ts_trace *t, bool metadata)
{
    if (t->ev.oom) {
        /* The event could not be rendered: count it as dropped and start afresh. */
        ts_buf_free(&t->ev);
        t->dropped++;
        return;
    }
    size_t n = t->ev.len + 2; /* ",\n" before it */
    if (!metadata && (t->full || t->written + n + TRAILER_RESERVE > t->max_bytes)) {
        /* Once full, stay full: the trace is a clean prefix of the run, not one with holes
         * where later small events happened to fit. */
        t->full = true;
        t->dropped++;
        return;
    }
    if (t->io_errno)
        return;
    const char *sep = t->nevents ? ",\n" : "\n";
    size_t sl = strlen(sep);
    if (fwrite(sep, 1, sl, t->f) != sl || fwrite(t->ev.data, 1, t->ev.len, t->f) != t->ev.len)
        t->io_errno = errno ? errno : EIO;
    t->written += sl + t->ev.len;
    t->nevents++;
}

void ts_trace_process(ts_trace *t, int pid, const char *name)
{
    if (!t)
        return;
    render(t, meta("process_name", pid, name), 15);
    emit(t, true);
}

void ts_trace_thread(ts_trace *t, int pid, int tid, const char *name)
{
    if (!t)
        return;
    json_t *e = meta("thread_name", pid, name);
    json_object_set_new(e, "tid", json_integer(tid));
    json_t *args = json_object_get(e, "args");
    json_incref(args);
    json_object_del(e, "args"); /* args last, as the other events have it */
    json_object_set_new(e, "args", args);
    render(t, e, 15);
    emit(t, true);
}

ts_status ts_trace_layer(ts_trace *t, ts_trace_key key, uint64_t lo, uint64_t hi, const char *label)
{
    if (!t)
        return TS_OK;
    if (t->nlayers == t->caplayers) {
        size_t cap = t->caplayers ? 2 * t->caplayers : 16;
        struct trace_layer *l = ts_realloc(t->layers, cap * sizeof *l);
        if (!l)
            return TS_ENOMEM;
        t->layers = l;
        t->caplayers = cap;
    }
    char *s = ts_strdup(label);
    if (!s)
        return TS_ENOMEM;
    t->layers[t->nlayers++] = (struct trace_layer){key, lo, hi, s};
    return TS_OK;
}

/* The labels of the layers a chip slice starting at cycle start, with arguments args, belongs to,
 * joined in t->lab; false when none. */
static bool slice_layers(ts_trace *t, uint64_t start, const json_t *args)
{
    const json_t *ss = json_object_get(args, "superstep");
    ts_buf_reset(&t->lab);
    bool any = false;
    for (size_t i = 0; i < t->nlayers; i++) {
        const struct trace_layer *l = &t->layers[i];
        uint64_t at = start;
        if (l->key == TS_TRACE_BY_SUPERSTEP) {
            if (!json_is_integer(ss) || json_integer_value(ss) < 0)
                continue;
            at = (uint64_t)json_integer_value(ss);
        }
        if (at < l->lo || at > l->hi)
            continue;
        if (any)
            ts_buf_puts(&t->lab, ", ");
        ts_buf_puts(&t->lab, l->label);
        any = true;
    }
    return any;
}

void ts_trace_slice(ts_trace *t, int pid, int tid, const char *name, const char *cat,
                    uint64_t start, uint64_t dur, const char *args_json)
{
    if (!t)
        return;
    uint64_t ps0 = cycles_to_ps(t, start), ps1 = cycles_to_ps(t, start + dur);
    int prec = 15;
    json_t *e = json_object();
    json_object_set_new(e, "name", ts_json_str(name ? name : ""));
    if (cat)
        json_object_set_new(e, "cat", ts_json_str(cat));
    json_object_set_new(e, "ph", json_string("X"));
    json_object_set_new(e, "ts", us_json(ps0, &prec));
    json_object_set_new(e, "dur", us_json(ps1 - ps0, &prec));
    json_object_set_new(e, "pid", json_integer(pid));
    json_object_set_new(e, "tid", json_integer(tid));
    /* arguments that do not read as a JSON object are left out rather than break the file */
    json_t *args = args_json ? json_loads(args_json, 0, NULL) : NULL;
    if (args && !json_is_object(args)) {
        json_decref(args);
        args = NULL;
    }
    if (pid == 0 && t->nlayers && slice_layers(t, start, args)) {
        if (!args)
            args = json_object();
        json_object_set_new(args, "layer", ts_json_str(ts_buf_str(&t->lab)));
    }
    if (args)
        json_object_set(e, "args", args);
    json_decref(args);
    render(t, e, prec);
    emit(t, false);
}

void ts_trace_counter(ts_trace *t, int pid, const char *name, uint64_t at, double value)
{
    if (!t)
        return;
    int prec = 15;
    json_t *e = json_object(), *args = json_object();
    json_object_set_new(e, "name", ts_json_str(name ? name : ""));
    json_object_set_new(e, "ph", json_string("C"));
    json_object_set_new(e, "ts", us_json(cycles_to_ps(t, at), &prec));
    json_object_set_new(e, "pid", json_integer(pid));
    json_object_set_new(args, "value", ts_json_num(value));
    json_object_set_new(e, "args", args);
    render(t, e, prec);
    emit(t, false);
}

uint64_t ts_trace_dropped(const ts_trace *t)
{
    return t ? t->dropped : 0;
}

uint64_t ts_trace_bytes(const ts_trace *t) { return t ? t->written : 0; }
uint64_t ts_trace_limit(const ts_trace *t) { return t ? t->max_bytes : 0; }

static void trace_free(ts_trace *t)
{
    ts_tmp_untrack(t->tmp_slot); /* renamed or removed by now */
    for (size_t i = 0; i < t->nlayers; i++)
        ts_free(t->layers[i].label);
    ts_free(t->layers);
    ts_buf_free(&t->lab);
    ts_buf_free(&t->ev);
    ts_free(t->path);
    ts_free(t->tmp);
    ts_free(t->iobuf);
    ts_free(t);
}

ts_status ts_trace_close(ts_trace *t, ts_err *err)
{
    if (!t)
        return TS_OK;
    ts_buf tail = TS_BUF_INIT;
    json_t *other = json_object();
    json_object_set_new(other, "generator", json_string("tessera"));
    json_object_set_new(other, "clock_hz", ts_json_num(t->clock_hz));
    json_object_set_new(other, "dropped_events", json_integer((json_int_t)t->dropped));
    ts_buf_puts(&tail, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":");
    ts_buf_json(&tail, other, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(other);
    ts_buf_puts(&tail, "}\n");
    int e = t->io_errno;
    if (tail.oom)
        e = ENOMEM;
    else if (!e && fwrite(tail.data, 1, tail.len, t->f) != tail.len)
        e = errno ? errno : EIO;
    ts_buf_free(&tail);
    if (fflush(t->f) != 0 && !e)
        e = errno ? errno : EIO;
    if (fclose(t->f) != 0 && !e)
        e = errno ? errno : EIO;
    t->f = NULL;
    if (!e && rename(t->tmp, t->path) != 0)
        e = errno ? errno : EIO;
    ts_status st = TS_OK;
    if (e) {
        remove(t->tmp);
        st = e == ENOMEM ? ts_err_set(err, TS_ENOMEM, "out of memory finishing trace")
                         : ts_err_at(err, TS_EIO, t->path, 0, 0, "cannot write trace: %s", strerror(e));
    }
    trace_free(t);
    return st;
}

void ts_trace_abort(ts_trace *t)
{
    if (!t)
        return;
    if (t->f) {
        fclose(t->f);
        remove(t->tmp);
    }
    trace_free(t);
}
