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
/* Room for n more bytes (and the NUL) at once, the capacity exactly that where it must grow, so that
 * a writer that knows its size appends without reallocating; false (oom set) when out of memory. */
bool ts_buf_reserve(ts_buf *b, size_t n);
void ts_buf_puts(ts_buf *b, const char *s);
void ts_buf_putc(ts_buf *b, char c);
void ts_buf_printf(ts_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ts_buf_vprintf(ts_buf *b, const char *fmt, va_list ap);
/* JSON goes through jansson: these build its values and append its text. */
struct json_t;
/* Significant digits of the reals in reports (JSON_REAL_PRECISION): 15, so a figure reads as it
 * was computed (0.0003, not 0.00029999999999999997) and text read and written again does not
 * change (every 15-digit decimal survives a double); the last bit or two of a double are not kept. */
#define TS_JSON_DIGITS 15
/* Append v as jansson writes it with these json_dump flags (JSON_ENCODE_ANY is added, so a scalar
 * is fine); v NULL (a failed allocation) or a failed dump marks the buffer out of memory. */
void ts_buf_json(ts_buf *b, const struct json_t *v, size_t flags);
/* A new JSON string of s; text that is not UTF-8 has its bytes past ASCII replaced by '?'. NULL
 * when out of memory. */
struct json_t *ts_json_str(const char *s);
/* A new JSON number: an integer when v is integral and below 9e15, else a real; NaN/inf give null. */
struct json_t *ts_json_num(double v);
/* Append s as a JSON string literal, quotes included. */
void ts_buf_json_str(ts_buf *b, const char *s);
/* Append a double as JSON, as the reports write it: an integer when integral, else TS_JSON_DIGITS
 * significant digits, exponents as jansson writes them (1e19, 3.3e-5); NaN/inf become null. */
void ts_buf_json_num(ts_buf *b, double v);
const char *ts_buf_str(const ts_buf *b); /* "" when empty */

#endif
