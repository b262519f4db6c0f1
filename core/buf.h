/* core/buf.h — a growable text buffer (owned bytes, always NUL-terminated). */
#ifndef TS_CORE_BUF_H
#define TS_CORE_BUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct ts_buf {
    char *data;  /* owned; NULL until the first append */
    size_t len;
    size_t cap;
    bool oom;    /* set when an append could not allocate; later appends are dropped */
} ts_buf;

#define TS_BUF_INIT {0}

void ts_buf_free(ts_buf *b);
void ts_buf_reset(ts_buf *b);            /* len = 0, keeps memory */
void ts_buf_put(ts_buf *b, const char *s, size_t n);
void ts_buf_puts(ts_buf *b, const char *s);
void ts_buf_putc(ts_buf *b, char c);
void ts_buf_printf(ts_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ts_buf_vprintf(ts_buf *b, const char *fmt, va_list ap);
/* Append s as a JSON string literal, quotes included. */
void ts_buf_json_str(ts_buf *b, const char *s);
/* Append a double as JSON: shortest form that reads back the same value; NaN/inf become null. */
void ts_buf_json_num(ts_buf *b, double v);
const char *ts_buf_str(const ts_buf *b); /* "" when empty */

#endif
