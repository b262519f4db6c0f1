/* core/err.h — errors as values.
 *
 * Every library function that can fail returns a ts_status and fills a caller-owned ts_err with
 * what is wrong and where (file:line:col for input, tile and cycle for a simulation). Only cli/
 * prints and exits. Messages start lowercase, say what is wrong first, and carry no full stop.
 */
#ifndef TS_CORE_ERR_H
#define TS_CORE_ERR_H

#include <stddef.h>
#include <stdint.h>

/* Status codes. The CLI maps TS_ESIM to exit code 1 and every other failure to 2. */
typedef enum ts_status {
    TS_OK = 0,
    TS_EINPUT,    /* bad input: config, assembly, binary program, model, command line */
    TS_ESIM,      /* the simulated program failed: hang, hazard, out-of-range access */
    TS_ENOMEM,    /* a host allocation failed */
    TS_EIO,       /* a host file could not be read or written */
    TS_EINTERNAL, /* a bug in tessera: an invariant did not hold */
} ts_status;

/* Context of an error. Caller-owned; ts_err_init before use, ts_err_free after (frees detail). */
typedef struct ts_err {
    ts_status status;
    char file[256]; /* input file, "" when none */
    int line, col;  /* 1-based position in file, 0 when unknown */
    int64_t tile;   /* tile, PE, slice or queue index concerned, -1 when none */
    int64_t cycle;  /* simulated cycle, -1 when none */
    char msg[1024]; /* what is wrong */
    char *detail;   /* owned, optional multi-line context (e.g. a hang's dump of blocked units) */
} ts_err;

void ts_err_init(ts_err *e);
void ts_err_free(ts_err *e);

/* Set status and message; returns st so callers can `return ts_err_set(...)`. */
ts_status ts_err_set(ts_err *e, ts_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same, with an input position. */
ts_status ts_err_at(ts_err *e, ts_status st, const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* Same, with a simulated unit and cycle (either may be -1). */
ts_status ts_err_sim(ts_err *e, int64_t tile, int64_t cycle, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Append text to the detail block. Silently drops text if memory runs out. */
void ts_err_append_detail(ts_err *e, const char *text);

/* One line: "file:line:col: msg", "tile 5, cycle 120: msg" or plain "msg". Returns chars needed. */
size_t ts_err_format(const ts_err *e, char *buf, size_t n);

/* Name of a status, e.g. "bad input". */
const char *ts_status_name(ts_status st);

#endif
