/* core/asm.c — the text assembler, generic over a family's ISA table (syntax: docs/assembly.md).
 *
 * One pass over the lines, then label fix-ups. Each line is split into tokens (words, commas,
 * colons, strings); leading "name:" tokens define labels, the rest is a directive or an
 * instruction. Labels are per stream and keyed by the stream's (kind, index), because adding a
 * stream may move others in the program's sorted stream table. Tokens point into the caller's
 * text, which outlives the call, so names are copied only when they are stored.
 */
#include "core/program.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/limit.h"
#include "core/suggest.h"

/* What the assembler builds is bounded by the limits of core/limit.h, checked before it
 * allocates: one .data segment (data_bytes), the units of one range A-B (range_units) and the
 * whole program with its ranges expanded (program_bytes: instructions, streams, segments, labels
 * and marks at their in-memory sizes), so `.zero` or a range over 65,536 tiles cannot ask the host
 * for terabytes. */

enum { T_WORD, T_COMMA, T_COLON, T_STRING };

typedef struct tok {
    int kind;
    const char *s; /* for T_STRING: the text between the quotes, escapes undecoded */
    size_t n;
    int col;
} tok;

/* A label or constant, in a hash table keyed by (kind, index, name). Constants use kind
 * CONST_KIND so both share one table. */
#define CONST_KIND UINT32_MAX
typedef struct entry {
    const char *name; /* points into the source text; NULL marks an empty slot */
    size_t n;
    uint32_t kind, index;
    int64_t value; /* pc of a label, value of a constant */
    int line, col;
} entry;

typedef struct fixup {
    uint32_t kind, index, pc;
    int opnd;
    const char *name;
    size_t n;
    int line, col;
} fixup;

typedef struct seginfo {
    uint32_t kind, index;
    uint64_t addr, len;
    int line, col;
} seginfo;

typedef struct as {
    const ts_isa *isa;
    const char *file;
    ts_err *err;
    ts_program *p;
    int line;       /* physical line, for messages */
    long lline;     /* logical line recorded in instructions (.line) */
    bool lzero;     /* after ".line 0": record 0 */
    enum { SEC_NONE, SEC_STREAM, SEC_DATA } sec;
    uint32_t skind, sindex;
    /* the open .data segment */
    uint32_t dkind, dindex;
    uint64_t daddr;
    uint8_t *dbytes;
    size_t dlen, dcap;
    int dline, dcol;
    seginfo *segs;
    size_t nsegs, capsegs;
    entry *tab;
    size_t ntab, captab; /* captab is a power of two */
    fixup *fix;
    size_t nfix, capfix;
    tok *toks;
    size_t ntoks, captoks;
    /* ".stream KIND A-B" / ".data KIND A-B ADDR": the body is assembled once into A and copied
     * to A+1..B when the file ends (streams) or when the segment closes (data). */
    struct range { uint32_t kind, first, last; int line, col; } *ranges;
    size_t nranges, capranges;
    uint32_t dlast; /* last index of the open .data segment's range (== dindex when none) */
    uint64_t bytes; /* what the program holds so far, ranges expanded, against program_bytes */
} as;

static ts_status fail(as *a, int col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static ts_status fail(as *a, int col, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ts_err_at(a->err, TS_EINPUT, a->file, a->line, col, "%s", msg);
}

static ts_status oom(as *a) { return ts_err_set(a->err, TS_ENOMEM, "out of memory"); }

/* Account for n more bytes of program (n units of `each` bytes), or fail at col of the current
 * line naming the program_bytes limit. */
static ts_status grow_program(as *a, int col, uint64_t units, uint64_t each)
{
    uint64_t limit = ts_limit(TS_LIMIT_PROGRAM_BYTES), more;
    if (__builtin_mul_overflow(units, each, &more) || __builtin_add_overflow(a->bytes, more, &more) ||
        more > limit)
        return fail(a, col, "the program would pass the limit of %" PRIu64 " bytes of instructions and data, "
                    "ranges expanded " TS_LIMIT_HINT_FMT, limit, ts_limit_name(TS_LIMIT_PROGRAM_BYTES));
    a->bytes = more;
    return TS_OK;
}

/* Text of a token, shortened for messages. */
#define TOKF "%.*s"
#define TOKA(t) (int)((t)->n > 64 ? 64 : (t)->n), (t)->s

/* ---- did you mean ------------------------------------------------------------------------ */


/* The closest of names[0..n) to (s, len), or NULL when none is within 2 edits and closer than the
 * length of s (so "x" does not suggest everything). */
static const char *closest(const char *s, size_t len, const char *const *names, size_t n,
                           size_t stride)
{
    const char *best = NULL;
    size_t bd = 3;
    for (size_t i = 0; i < n; i++) {
        const char *c = *(const char *const *)((const char *)names + i * stride);
        if (!c)
            continue;
        size_t d = ts_edit_distance(s, len, c, strlen(c), true);
        if (d < bd && d < len) {
            bd = d;
            best = c;
        }
    }
    return best;
}

/* " (did you mean 'x'?)" or "". */
static void hint(char *buf, size_t n, const char *best)
{
    if (best)
        snprintf(buf, n, " (did you mean '%s'?)", best);
    else
        buf[0] = 0;
}

/* ---- tokens ------------------------------------------------------------------------------ */

static bool tok_is(const tok *t, const char *s)
{
    return t->kind == T_WORD && strlen(s) == t->n && !strncasecmp(t->s, s, t->n);
}

static bool is_word_char(unsigned char c)
{
    return c > 0x20 && c != 0x7f && c != ',' && c != ':' && c != '"' && c != '#' && c != ';';
}

static ts_status push_tok(as *a, int kind, const char *s, size_t n, int col)
{
    void *arr = a->toks;
    if (ts_grow(&arr, &a->captoks, a->ntoks + 1, sizeof *a->toks))
        return oom(a);
    a->toks = arr;
    a->toks[a->ntoks++] = (tok){kind, s, n, col};
    return TS_OK;
}

static ts_status tokenize(as *a, const char *s, size_t n)
{
    a->ntoks = 0;
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        int col = (int)i + 1;
        ts_status st = TS_OK;
        if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            i++;
        } else if (c == '#' || c == ';') {
            break;
        } else if (c == ',') {
            st = push_tok(a, T_COMMA, s + i, 1, col);
            i++;
        } else if (c == ':') {
            st = push_tok(a, T_COLON, s + i, 1, col);
            i++;
        } else if (c == '"') {
            size_t j = i + 1;
            while (j < n && s[j] != '"') {
                if (s[j] == '\\' && j + 1 < n)
                    j++;
                j++;
            }
            if (j >= n)
                return fail(a, col, "unterminated string");
            st = push_tok(a, T_STRING, s + i + 1, j - i - 1, col);
            i = j + 1;
        } else if (c < 0x20 || c == 0x7f) {
            return fail(a, col, "unexpected character 0x%02x", c);
        } else {
            size_t j = i;
            while (j < n && is_word_char((unsigned char)s[j]))
                j++;
            st = push_tok(a, T_WORD, s + i, j - i, col);
            i = j;
        }
        if (st)
            return st;
    }
    return TS_OK;
}

/* ---- numbers ----------------------------------------------------------------------------- */

static bool looks_numeric(const tok *t)
{
    const char *s = t->s;
    size_t n = t->n;
    if (n && (*s == '-' || *s == '+'))
        s++, n--;
    return n && (isdigit((unsigned char)*s) || (*s == '.' && n > 1 && isdigit((unsigned char)s[1])));
}

/* Parse an integer token: [+-] then decimal digits or 0x hex digits. Fails with "bad number"
 * or an out-of-range message naming `what` and the range [lo, hi]. */
static ts_status parse_int(as *a, const tok *t, int64_t lo, int64_t hi, const char *what,
                           int64_t *out)
{
    const char *s = t->s, *e = t->s + t->n;
    bool neg = false;
    if (s < e && (*s == '-' || *s == '+'))
        neg = *s++ == '-';
    int base = 10;
    if (e - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        base = 16, s += 2;
    if (s == e)
        return fail(a, t->col, "bad number '" TOKF "'", TOKA(t));
    uint64_t mag = 0;
    bool over = false;
    for (; s < e; s++) {
        int d;
        unsigned char c = (unsigned char)*s;
        if (isdigit(c))
            d = c - '0';
        else if (base == 16 && isxdigit(c))
            d = tolower(c) - 'a' + 10;
        else
            return fail(a, t->col, "bad number '" TOKF "'", TOKA(t));
        if (mag > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
            over = true;
        else
            mag = mag * (uint64_t)base + (uint64_t)d;
    }
    int64_t v = 0;
    if (!over && !neg && mag <= (uint64_t)INT64_MAX)
        v = (int64_t)mag;
    else if (!over && neg && mag <= (uint64_t)INT64_MAX + 1)
        v = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
    else
        over = true;
    if (over || v < lo || v > hi)
        return fail(a, t->col, "%s " TOKF " is out of range (%" PRId64 "..%" PRId64 ")", what,
                    TOKA(t), lo, hi);
    *out = v;
    return TS_OK;
}

/* An unsigned 64-bit number (decimal or 0x hex), for .config and .data addresses. */
static ts_status parse_u64(as *a, const tok *t, const char *what, uint64_t *out)
{
    const char *s = t->s, *e = t->s + t->n;
    int base = 10;
    if (e - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        base = 16, s += 2;
    if (s == e)
        return fail(a, t->col, "bad number '" TOKF "'", TOKA(t));
    uint64_t v = 0;
    for (; s < e; s++) {
        unsigned char c = (unsigned char)*s;
        int d;
        if (isdigit(c))
            d = c - '0';
        else if (base == 16 && isxdigit(c))
            d = tolower(c) - 'a' + 10;
        else
            return fail(a, t->col, "bad number '" TOKF "'", TOKA(t));
        if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
            return fail(a, t->col, "%s " TOKF " does not fit in 64 bits", what, TOKA(t));
        v = v * (uint64_t)base + (uint64_t)d;
    }
    *out = v;
    return TS_OK;
}

static bool word_eq_ci(const char *s, size_t n, const char *w)
{
    return strlen(w) == n && !strncasecmp(s, w, n);
}

/* A float literal: decimal or hex float as strtof reads it, inf/infinity, nan, or nan(0xM) with a
 * 23-bit payload M > 0; each with an optional sign. Gives IEEE binary32 bits, and the value as a
 * double for .f16 (which rounds from binary64). */
static ts_status parse_float(as *a, const tok *t, const char *what, bool want_f16, uint32_t *bits,
                             double *dval)
{
    const char *s = t->s;
    size_t n = t->n;
    uint32_t sign = 0;
    if (n && (*s == '-' || *s == '+')) {
        sign = *s == '-' ? 0x80000000u : 0;
        s++, n--;
    }
    if (word_eq_ci(s, n, "inf") || word_eq_ci(s, n, "infinity")) {
        *bits = sign | 0x7f800000u;
        *dval = sign ? -INFINITY : INFINITY;
        return TS_OK;
    }
    if (word_eq_ci(s, n, "nan")) {
        *bits = sign | 0x7fc00000u;
        *dval = sign ? -(double)NAN : (double)NAN;
        return TS_OK;
    }
    if (n > 6 && !strncasecmp(s, "nan(0x", 6) && s[n - 1] == ')') {
        tok inner = {T_WORD, s + 4, n - 5, t->col};
        int64_t m;
        ts_status st = parse_int(a, &inner, 1, 0x7fffff, "nan payload", &m);
        if (st)
            return st;
        *bits = sign | 0x7f800000u | (uint32_t)m;
        *dval = sign ? -(double)NAN : (double)NAN;
        return TS_OK;
    }
    if (!looks_numeric(t))
        return fail(a, t->col, "%s: expected a float, got '" TOKF "'", what, TOKA(t));
    char buf[80];
    if (t->n >= sizeof buf)
        return fail(a, t->col, "bad number '" TOKF "'", TOKA(t));
    memcpy(buf, t->s, t->n);
    buf[t->n] = 0;
    char *end;
    errno = 0;
    if (want_f16) {
        double d = strtod(buf, &end);
        if (*end)
            return fail(a, t->col, "bad number '" TOKF "'", TOKA(t));
        if (errno == ERANGE && isinf(d))
            return fail(a, t->col, "%s " TOKF " is out of range", what, TOKA(t));
        *dval = d;
        *bits = 0;
        return TS_OK;
    }
    float f = strtof(buf, &end);
    if (*end)
        return fail(a, t->col, "bad number '" TOKF "'", TOKA(t));
    if (errno == ERANGE && isinf(f))
        return fail(a, t->col, "%s " TOKF " is out of range for binary32", what, TOKA(t));
    memcpy(bits, &f, sizeof f);
    *dval = f;
    return TS_OK;
}

/* binary64 to binary16, rounding to nearest even. Returns -1 when the value rounds past the
 * largest half (65504), whose rounding boundary is 65520. */
static int to_f16(double x, uint16_t *out)
{
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    double m = fabs(x);
    if (isnan(x)) {
        *out = sign | 0x7e00;
        return 0;
    }
    if (isinf(x)) {
        *out = sign | 0x7c00;
        return 0;
    }
    if (m >= 65520.0)
        return -1;
    if (m < 0x1p-14) { /* subnormal: units of 2^-24, rint rounds to nearest even */
        *out = sign | (uint16_t)rint(m * 0x1p24);
        return 0;
    }
    int e;
    double fr = frexp(m, &e); /* m = fr * 2^e, fr in [0.5, 1) */
    double q = rint(fr * 2048.0); /* 11 significant bits, exact scaling */
    e -= 1;
    if (q >= 2048.0) {
        q = 1024.0;
        e++;
    }
    *out = sign | (uint16_t)((e + 15) << 10) | (uint16_t)((int)q - 1024);
    return 0;
}

/* ---- symbol table ------------------------------------------------------------------------ */

static uint64_t entry_hash(uint32_t kind, uint32_t index, const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
    h = (h ^ kind) * 0x100000001b3ULL;
    return (h ^ index) * 0x100000001b3ULL;
}

static entry *lookup(as *a, uint32_t kind, uint32_t index, const char *s, size_t n)
{
    if (!a->captab)
        return NULL;
    size_t mask = a->captab - 1;
    for (size_t i = entry_hash(kind, index, s, n) & mask;; i = (i + 1) & mask) {
        entry *e = &a->tab[i];
        if (!e->name)
            return NULL;
        if (e->kind == kind && e->index == index && e->n == n && !memcmp(e->name, s, n))
            return e;
    }
}

static ts_status insert(as *a, const entry *src)
{
    if ((a->ntab + 1) * 2 > a->captab) {
        size_t nc = a->captab ? a->captab * 2 : 64;
        entry *nt = ts_calloc(nc, sizeof *nt);
        if (!nt)
            return oom(a);
        for (size_t i = 0; i < a->captab; i++) {
            entry *e = &a->tab[i];
            if (!e->name)
                continue;
            size_t j = entry_hash(e->kind, e->index, e->name, e->n) & (nc - 1);
            while (nt[j].name)
                j = (j + 1) & (nc - 1);
            nt[j] = *e;
        }
        ts_free(a->tab);
        a->tab = nt;
        a->captab = nc;
    }
    size_t mask = a->captab - 1;
    size_t i = entry_hash(src->kind, src->index, src->name, src->n) & mask;
    while (a->tab[i].name)
        i = (i + 1) & mask;
    a->tab[i] = *src;
    a->ntab++;
    return TS_OK;
}

static bool ident_start(unsigned char c) { return isalpha(c) || c == '_'; }
static bool ident_char(unsigned char c) { return isalnum(c) || c == '_' || c == '.' || c == '$'; }

/* [A-Za-z_][A-Za-z0-9_.$]*, or a local label ".L" followed by at least one such character. */
static bool valid_name(const tok *t, bool allow_local)
{
    size_t i = 0;
    if (allow_local && t->n > 2 && t->s[0] == '.' && t->s[1] == 'L')
        i = 2;
    else if (!t->n || !ident_start((unsigned char)t->s[0]))
        return false;
    for (; i < t->n; i++)
        if (!ident_char((unsigned char)t->s[i]))
            return false;
    return true;
}

/* ---- sections ---------------------------------------------------------------------------- */

static size_t cur_stream_index(as *a)
{
    /* The stream exists: it was created by .stream. Binary search through the builder. */
    ts_stream *s = ts_program_stream(a->p, a->skind, a->sindex);
    return (size_t)(s - a->p->streams);
}

/* INDEX or FIRST-LAST (inclusive, FIRST <= LAST). */
static ts_status parse_index_range(as *a, const tok *t, int64_t *first, int64_t *last)
{
    const char *dash = t->n > 1 ? memchr(t->s + 1, '-', t->n - 1) : NULL;
    if (!dash) {
        ts_status st = parse_int(a, t, 0, UINT32_MAX, "index", first);
        *last = *first;
        return st;
    }
    tok lo = {T_WORD, t->s, (size_t)(dash - t->s), t->col};
    tok hi = {T_WORD, dash + 1, t->n - lo.n - 1, t->col + (int)lo.n + 1};
    ts_status st;
    if ((st = parse_int(a, &lo, 0, UINT32_MAX, "index", first)) ||
        (st = parse_int(a, &hi, 0, UINT32_MAX, "index", last)))
        return st;
    if (*last < *first)
        return fail(a, t->col, "range '" TOKF "' ends before it starts", TOKA(t));
    return TS_OK;
}

static ts_status close_data(as *a)
{
    if (a->sec != SEC_DATA)
        return TS_OK;
    a->sec = SEC_NONE;
    int line = a->line;
    a->line = a->dline;
    ts_status gst = grow_program(a, a->dcol, (uint64_t)a->dlast - a->dindex + 1,
                                 a->dlen + sizeof(ts_segment) + sizeof(seginfo));
    a->line = line;
    if (gst)
        return gst;
    for (uint64_t idx = a->dindex; idx <= a->dlast; idx++) {
        ts_status st = ts_program_add_segment(a->p, a->dkind, (uint32_t)idx, a->daddr, a->dbytes,
                                              (uint32_t)a->dlen, a->err);
        if (st == TS_EINPUT) {
            char msg[sizeof a->err->msg];
            memcpy(msg, a->err->msg, sizeof msg);
            return ts_err_at(a->err, TS_EINPUT, a->file, a->dline, a->dcol, "%s", msg);
        }
        if (st)
            return st;
        void *arr = a->segs;
        if (ts_grow(&arr, &a->capsegs, a->nsegs + 1, sizeof *a->segs))
            return oom(a);
        a->segs = arr;
        a->segs[a->nsegs++] = (seginfo){a->dkind, (uint32_t)idx, a->daddr, a->dlen, a->dline, a->dcol};
    }
    a->dlen = 0;
    return TS_OK;
}

static ts_status data_put(as *a, const tok *t, const void *bytes, size_t n)
{
    uint64_t limit = ts_limit(TS_LIMIT_DATA_BYTES);
    if (a->dlen + n > limit)
        return fail(a, t->col, "the data segment would pass the limit of %" PRIu64 " bytes " TS_LIMIT_HINT_FMT,
                    limit, ts_limit_name(TS_LIMIT_DATA_BYTES));
    if (n == 0)
        return TS_OK;
    if (a->dlen + n > a->dcap) {
        void *arr = a->dbytes;
        if (ts_grow(&arr, &a->dcap, a->dlen + n, 1))
            return oom(a);
        a->dbytes = arr;
    }
    if (bytes)
        memcpy(a->dbytes + a->dlen, bytes, n);
    else
        memset(a->dbytes + a->dlen, 0, n);
    a->dlen += n;
    return TS_OK;
}

/* Stream kind by name, with a suggestion when unknown. */
static ts_status parse_kind(as *a, const tok *t, uint32_t *kind)
{
    for (size_t i = 0; i < a->isa->nstream_kinds; i++) {
        const char *k = a->isa->stream_kinds[i];
        if (strlen(k) == t->n && !memcmp(k, t->s, t->n)) {
            *kind = (uint32_t)i;
            return TS_OK;
        }
    }
    char h[96];
    hint(h, sizeof h, closest(t->s, t->n, a->isa->stream_kinds, a->isa->nstream_kinds,
                              sizeof(char *)));
    return fail(a, t->col, "unknown stream kind '" TOKF "'%s", TOKA(t), h);
}

/* ---- directives -------------------------------------------------------------------------- */

/* Arguments of a fixed-arity directive: words (and strings), commas between them optional. */
static ts_status fixed_args(as *a, const tok *d, const tok *t, size_t n, const tok **args,
                            size_t want, const char *usage)
{
    size_t got = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i].kind == T_COMMA)
            continue;
        if (t[i].kind == T_COLON)
            return fail(a, t[i].col, "unexpected ':'");
        if (got < want)
            args[got] = &t[i];
        got++;
    }
    if (got != want)
        return fail(a, d->col, "'" TOKF "' takes %zu argument%s (%s), got %zu", TOKA(d), want,
                    want == 1 ? "" : "s", usage, got);
    return TS_OK;
}

/* Items of a list directive: words separated by commas. */
static ts_status list_args(as *a, const tok *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        bool want_word = i % 2 == 0;
        if (want_word && t[i].kind != T_WORD)
            return fail(a, t[i].col, "expected a value, got '" TOKF "'", TOKA(&t[i]));
        if (!want_word && t[i].kind != T_COMMA)
            return fail(a, t[i].col, "expected ',' before '" TOKF "'", TOKA(&t[i]));
    }
    if (n && n % 2 == 0)
        return fail(a, t[n - 1].col, "expected a value after ','");
    return TS_OK;
}

static ts_status decode_string(as *a, const tok *t, char **out)
{
    char *s = ts_malloc(t->n + 1);
    if (!s)
        return oom(a);
    size_t k = 0;
    for (size_t i = 0; i < t->n; i++) {
        char c = t->s[i];
        if (c != '\\') {
            s[k++] = c;
            continue;
        }
        int col = t->col + 1 + (int)i;
        char e = ++i < t->n ? t->s[i] : 0;
        int v = -1;
        switch (e) {
        case '\\': v = '\\'; break;
        case '"': v = '"'; break;
        case 'n': v = '\n'; break;
        case 't': v = '\t'; break;
        case 'r': v = '\r'; break;
        case 'x':
            if (i + 2 < t->n && isxdigit((unsigned char)t->s[i + 1]) &&
                isxdigit((unsigned char)t->s[i + 2])) {
                char hx[3] = {t->s[i + 1], t->s[i + 2], 0};
                v = (int)strtol(hx, NULL, 16);
                i += 2;
                if (v == 0) {
                    ts_free(s);
                    return fail(a, col, "a string cannot hold a NUL byte");
                }
            } else {
                ts_free(s);
                return fail(a, col, "'\\x' needs two hex digits");
            }
            break;
        default:
            ts_free(s);
            return fail(a, col, "unknown escape '\\%c' in string", e ? e : ' ');
        }
        s[k++] = (char)v;
    }
    s[k] = 0;
    *out = s;
    return TS_OK;
}

static ts_status need_stream(as *a, const tok *d)
{
    if (a->sec == SEC_STREAM)
        return TS_OK;
    if (a->sec == SEC_DATA)
        return fail(a, d->col, "'" TOKF "' inside a .data segment (start a .stream first)", TOKA(d));
    return fail(a, d->col, "'" TOKF "' before any .stream directive", TOKA(d));
}

static ts_status data_items(as *a, const tok *d, const tok *t, size_t n, int size, bool isfloat)
{
    if (a->sec != SEC_DATA)
        return fail(a, d->col, "'" TOKF "' outside a .data segment", TOKA(d));
    ts_status st = list_args(a, t, n);
    if (st)
        return st;
    static const int64_t lo[] = {0, -128, -32768, 0, INT32_MIN};
    static const int64_t hi[] = {0, 255, 65535, 0, UINT32_MAX};
    for (size_t i = 0; i < n; i += 2) {
        unsigned char b[4];
        uint32_t v;
        if (isfloat) {
            double dv;
            char what[32];
            snprintf(what, sizeof what, TOKF " item", TOKA(d));
            if ((st = parse_float(a, &t[i], what, size == 2, &v, &dv)))
                return st;
            if (size == 2) {
                uint16_t hbits;
                if (to_f16(dv, &hbits))
                    return fail(a, t[i].col, "%s " TOKF " is out of range for binary16", what,
                                TOKA(&t[i]));
                v = hbits;
            }
        } else {
            int64_t x;
            char what[32];
            snprintf(what, sizeof what, TOKF " item", TOKA(d));
            if ((st = parse_int(a, &t[i], lo[size], hi[size], what, &x)))
                return st;
            v = (uint32_t)x;
        }
        for (int k = 0; k < size; k++)
            b[k] = (unsigned char)(v >> (8 * k));
        if ((st = data_put(a, &t[i], b, (size_t)size)))
            return st;
    }
    return TS_OK;
}

static const char *const directives[] = {".arch", ".config", ".workload", ".stream", ".superstep",
                                         ".equ", ".line", ".data", ".byte", ".half", ".word",
                                         ".f32", ".f16", ".zero"};

static ts_status directive(as *a, const tok *d, const tok *t, size_t n)
{
    const tok *arg[3];
    ts_status st;
    if (tok_is(d, ".arch")) {
        if ((st = fixed_args(a, d, t, n, arg, 1, "NAME")))
            return st;
        if (strlen(a->isa->arch) != arg[0]->n || memcmp(a->isa->arch, arg[0]->s, arg[0]->n))
            return fail(a, arg[0]->col, "'.arch " TOKF "' does not match this assembler's arch "
                        "'%s'", TOKA(arg[0]), a->isa->arch);
        return TS_OK;
    }
    if (tok_is(d, ".config")) {
        if ((st = fixed_args(a, d, t, n, arg, 1, "FINGERPRINT")))
            return st;
        return parse_u64(a, arg[0], "config fingerprint", &a->p->config_fp);
    }
    if (tok_is(d, ".workload")) {
        if ((st = fixed_args(a, d, t, n, arg, 1, "\"TEXT\"")))
            return st;
        if (arg[0]->kind != T_STRING)
            return fail(a, arg[0]->col, "expected a string in double quotes, got '" TOKF "'",
                        TOKA(arg[0]));
        char *w = NULL;
        if ((st = decode_string(a, arg[0], &w)))
            return st;
        ts_free(a->p->workload);
        a->p->workload = w;
        return TS_OK;
    }
    if (tok_is(d, ".stream") || tok_is(d, ".data")) {
        bool data = tok_is(d, ".data");
        if ((st = fixed_args(a, d, t, n, arg, data ? 3 : 2, data ? "KIND INDEX ADDR" :
                             "KIND INDEX")))
            return st;
        uint32_t kind = 0;
        int64_t index = 0, last = 0;
        if ((st = parse_kind(a, arg[0], &kind)) || (st = parse_index_range(a, arg[1], &index, &last)) ||
            (st = close_data(a)))
            return st;
        uint64_t units = (uint64_t)(last - index) + 1;
        if (units > ts_limit(TS_LIMIT_RANGE_UNITS))
            return fail(a, arg[1]->col, "range '" TOKF "' has %" PRIu64 " units, more than the limit of %" PRIu64
                        " " TS_LIMIT_HINT_FMT, TOKA(arg[1]), units, ts_limit(TS_LIMIT_RANGE_UNITS),
                        ts_limit_name(TS_LIMIT_RANGE_UNITS));
        if (data) {
            uint64_t addr;
            if ((st = parse_u64(a, arg[2], "address", &addr)))
                return st;
            a->sec = SEC_DATA;
            a->dkind = kind;
            a->dindex = (uint32_t)index;
            a->dlast = (uint32_t)last;
            a->daddr = addr;
            a->dlen = 0;
            a->dline = a->line;
            a->dcol = d->col;
            return TS_OK;
        }
        if (!ts_program_stream_find(a->p, kind, (uint32_t)index) &&
            (st = grow_program(a, arg[1]->col, 1, sizeof(ts_stream))))
            return st;
        if (!ts_program_stream(a->p, kind, (uint32_t)index))
            return oom(a);
        if (last > index) {
            for (size_t r = 0; r < a->nranges; r++)
                if (a->ranges[r].kind == kind && a->ranges[r].first == (uint32_t)index)
                    return fail(a, arg[1]->col, "a range starting at %" PRId64 " was already given at "
                                "line %d", index, a->ranges[r].line);
            void *arr = a->ranges;
            if (ts_grow(&arr, &a->capranges, a->nranges + 1, sizeof *a->ranges))
                return oom(a);
            a->ranges = arr;
            a->ranges[a->nranges++] = (struct range){kind, (uint32_t)index, (uint32_t)last, a->line,
                                                     arg[1]->col};
        }
        a->sec = SEC_STREAM;
        a->skind = kind;
        a->sindex = (uint32_t)index;
        return TS_OK;
    }
    if (tok_is(d, ".superstep")) {
        int64_t id;
        if ((st = need_stream(a, d)) || (st = fixed_args(a, d, t, n, arg, 1, "ID")) ||
            (st = parse_int(a, arg[0], 0, UINT32_MAX, "superstep id", &id)))
            return st;
        size_t si = cur_stream_index(a);
        return ts_program_add_mark(a->p, (uint32_t)si, a->p->streams[si].n, (uint32_t)id, a->err);
    }
    if (tok_is(d, ".equ")) {
        if ((st = fixed_args(a, d, t, n, arg, 2, "NAME, VALUE")))
            return st;
        if (arg[0]->kind != T_WORD || !valid_name(arg[0], false))
            return fail(a, arg[0]->col, "bad constant name '" TOKF "'", TOKA(arg[0]));
        entry *old = lookup(a, CONST_KIND, 0, arg[0]->s, arg[0]->n);
        if (old)
            return fail(a, arg[0]->col, "duplicate constant '" TOKF "', first defined at %d:%d",
                        TOKA(arg[0]), old->line, old->col);
        int64_t v;
        if (looks_numeric(arg[1])) {
            if ((st = parse_int(a, arg[1], INT64_MIN, INT64_MAX, "constant", &v)))
                return st;
        } else {
            entry *e = arg[1]->kind == T_WORD ? lookup(a, CONST_KIND, 0, arg[1]->s, arg[1]->n) : NULL;
            if (!e)
                return fail(a, arg[1]->col, "undefined constant '" TOKF "'", TOKA(arg[1]));
            v = e->value;
        }
        char *name = ts_strndup(arg[0]->s, arg[0]->n);
        if (!name)
            return oom(a);
        st = ts_program_add_symbol(a->p, name, TS_SYM_CONST, 0, v, a->err);
        ts_free(name);
        if (st)
            return st;
        entry e = {arg[0]->s, arg[0]->n, CONST_KIND, 0, v, a->line, arg[0]->col};
        return insert(a, &e);
    }
    if (tok_is(d, ".line")) {
        int64_t v;
        if ((st = fixed_args(a, d, t, n, arg, 1, "LINE")) ||
            (st = parse_int(a, arg[0], 0, 65535, "line", &v)))
            return st;
        a->lzero = v == 0;
        a->lline = v - 1; /* the next line is line v */
        return TS_OK;
    }
    if (tok_is(d, ".byte"))
        return data_items(a, d, t, n, 1, false);
    if (tok_is(d, ".half"))
        return data_items(a, d, t, n, 2, false);
    if (tok_is(d, ".word"))
        return data_items(a, d, t, n, 4, false);
    if (tok_is(d, ".f32"))
        return data_items(a, d, t, n, 4, true);
    if (tok_is(d, ".f16"))
        return data_items(a, d, t, n, 2, true);
    if (tok_is(d, ".zero")) {
        if (a->sec != SEC_DATA)
            return fail(a, d->col, "'" TOKF "' outside a .data segment", TOKA(d));
        int64_t v;
        if ((st = fixed_args(a, d, t, n, arg, 1, "COUNT")) ||
            (st = parse_int(a, arg[0], 0, INT64_MAX, ".zero count", &v)))
            return st;
        uint64_t limit = ts_limit(TS_LIMIT_DATA_BYTES);
        if ((uint64_t)v > limit || a->dlen + (uint64_t)v > limit)
            return fail(a, arg[0]->col, ".zero %" PRId64 " would pass the data segment limit of %" PRIu64
                        " bytes " TS_LIMIT_HINT_FMT, v, limit, ts_limit_name(TS_LIMIT_DATA_BYTES));
        return data_put(a, arg[0], NULL, (size_t)v);
    }
    char h[96];
    hint(h, sizeof h, closest(d->s, d->n, directives, sizeof directives / sizeof *directives,
                              sizeof(char *)));
    return fail(a, d->col, "unknown directive '" TOKF "'%s", TOKA(d), h);
}

/* ---- instructions ------------------------------------------------------------------------ */

static ts_status operand(as *a, const ts_opinfo *oi, int j, const tok *t, ts_insn *in, size_t si)
{
    int kind = oi->opnd[j] & TS_OK_KIND_MASK;
    char what[96];
    snprintf(what, sizeof what, "operand %d of '%s'", j + 1, oi->mnemonic);
    int reg = ts_isa_reg(a->isa, t->s, t->n);
    ts_status st;
    switch (kind) {
    case TS_OK_REG:
        if (reg >= 0) {
            in->a[j] = reg;
            return TS_OK;
        }
        if (looks_numeric(t)) {
            return fail(a, t->col, "%s: expected a register, got '" TOKF "'", what, TOKA(t));
        } else {
            char h[96];
            hint(h, sizeof h, closest(t->s, t->n, a->isa->regs, a->isa->nregs, sizeof(char *)));
            return fail(a, t->col, "%s: unknown register '" TOKF "'%s", what, TOKA(t), h);
        }
    case TS_OK_IMM: {
        int64_t v;
        if (looks_numeric(t)) {
            char w2[128];
            snprintf(w2, sizeof w2, "%s: immediate", what);
            if ((st = parse_int(a, t, INT32_MIN, INT32_MAX, w2, &v)))
                return st;
        } else {
            entry *e = lookup(a, CONST_KIND, 0, t->s, t->n);
            if (!e && reg >= 0)
                return fail(a, t->col, "%s: expected an immediate, got '" TOKF "'", what, TOKA(t));
            if (!e)
                return fail(a, t->col, "%s: undefined constant '" TOKF "'", what, TOKA(t));
            v = e->value;
            if (v < INT32_MIN || v > INT32_MAX)
                return fail(a, t->col, "%s: constant '" TOKF "' = %" PRId64 " is out of range "
                            "(%d..%d)", what, TOKA(t), v, INT32_MIN, INT32_MAX);
        }
        in->a[j] = (int32_t)v;
        return TS_OK;
    }
    case TS_OK_FIMM: {
        uint32_t bits;
        double dv;
        if (reg >= 0)
            return fail(a, t->col, "%s: expected a float, got '" TOKF "'", what, TOKA(t));
        if ((st = parse_float(a, t, what, false, &bits, &dv)))
            return st;
        in->a[j] = (int32_t)bits;
        return TS_OK;
    }
    case TS_OK_LABEL: {
        if (looks_numeric(t) || !valid_name(t, true))
            return fail(a, t->col, "%s: expected a label, got '" TOKF "'", what, TOKA(t));
        void *arr = a->fix;
        if (ts_grow(&arr, &a->capfix, a->nfix + 1, sizeof *a->fix))
            return oom(a);
        a->fix = arr;
        a->fix[a->nfix++] = (fixup){a->skind, a->sindex, a->p->streams[si].n - 1, j, t->s, t->n,
                                    a->line, t->col};
        return TS_OK;
    }
    default:
        return ts_err_at(a->err, TS_EINTERNAL, a->file, a->line, t->col,
                         "%s has operand kind %d, which the assembler does not know", what, kind);
    }
}

static ts_status instruction(as *a, const tok *m, const tok *t, size_t n)
{
    char mn[64];
    int op = -1;
    if (m->n < sizeof mn) {
        for (size_t i = 0; i < m->n; i++)
            mn[i] = (char)tolower((unsigned char)m->s[i]);
        mn[m->n] = 0;
        op = ts_isa_find(a->isa, mn, m->n);
    }
    if (op < 0) {
        char h[96];
        hint(h, sizeof h, closest(m->s, m->n, &a->isa->ops[0].mnemonic, a->isa->nops,
                                  sizeof(ts_opinfo)));
        return fail(a, m->col, "unknown mnemonic '" TOKF "'%s", TOKA(m), h);
    }
    const ts_opinfo *oi = &a->isa->ops[op];
    if (a->sec != SEC_STREAM) {
        if (a->sec == SEC_DATA)
            return fail(a, m->col, "instruction inside a .data segment (start a .stream first)");
        return fail(a, m->col, "instruction before any .stream directive");
    }
    /* Operands: words separated by commas. */
    const tok *opnd[TS_MAX_OPNDS + 1];
    size_t got = 0;
    for (size_t i = 0; i < n; i++) {
        bool want_word = i % 2 == 0;
        if (want_word && t[i].kind != T_WORD)
            return fail(a, t[i].col, "operand %zu of '%s' is missing", got + 1, oi->mnemonic);
        if (!want_word && t[i].kind != T_COMMA)
            return fail(a, t[i].col, "expected ',' before '" TOKF "'", TOKA(&t[i]));
        if (want_word) {
            if (got < TS_MAX_OPNDS + 1)
                opnd[got] = &t[i];
            got++;
        }
    }
    if (n && n % 2 == 0)
        return fail(a, t[n - 1].col + 1, "operand %zu of '%s' is missing", got + 1, oi->mnemonic);
    int want = ts_isa_nopnds(oi);
    if (got != (size_t)want)
        return fail(a, m->col, "'%s' takes %d operand%s, got %zu", oi->mnemonic, want,
                    want == 1 ? "" : "s", got);
    ts_status gst = grow_program(a, m->col, 1, sizeof(ts_insn));
    if (gst)
        return gst;
    size_t si = cur_stream_index(a);
    ts_insn *in = ts_stream_emit(&a->p->streams[si], (uint16_t)op);
    if (!in)
        return oom(a);
    in->line = a->lzero ? 0 : (uint16_t)(a->lline & 0xffff);
    for (int j = 0; j < want; j++) {
        ts_status st = operand(a, oi, j, opnd[j], in, si);
        if (st)
            return st;
    }
    return TS_OK;
}

static ts_status define_label(as *a, const tok *t)
{
    if (!valid_name(t, true))
        return fail(a, t->col, "bad label name '" TOKF "'", TOKA(t));
    if (a->sec != SEC_STREAM)
        return fail(a, t->col, "label '" TOKF "' %s", TOKA(t),
                    a->sec == SEC_DATA ? "inside a .data segment" : "before any .stream directive");
    entry *old = lookup(a, a->skind, a->sindex, t->s, t->n);
    if (old)
        return fail(a, t->col, "duplicate label '" TOKF "', first defined at %d:%d", TOKA(t),
                    old->line, old->col);
    size_t si = cur_stream_index(a);
    entry e = {t->s, t->n, a->skind, a->sindex, a->p->streams[si].n, a->line, t->col};
    return insert(a, &e);
}

static ts_status line(as *a, const char *s, size_t n)
{
    ts_status st = tokenize(a, s, n);
    if (st)
        return st;
    tok *t = a->toks;
    size_t i = 0, nt = a->ntoks;
    while (i + 1 < nt && t[i].kind == T_WORD && t[i + 1].kind == T_COLON) {
        if ((st = define_label(a, &t[i])))
            return st;
        i += 2;
    }
    if (i == nt)
        return TS_OK;
    if (t[i].kind != T_WORD)
        return fail(a, t[i].col, "unexpected '%s'", t[i].kind == T_COMMA ? "," :
                    t[i].kind == T_COLON ? ":" : "\"");
    if (t[i].s[0] == '.')
        return directive(a, &t[i], t + i + 1, nt - i - 1);
    return instruction(a, &t[i], t + i + 1, nt - i - 1);
}

/* ---- finishing --------------------------------------------------------------------------- */

static ts_status resolve(as *a)
{
    ts_status st;
    for (size_t i = 0; i < a->nfix; i++) {
        fixup *f = &a->fix[i];
        entry *e = lookup(a, f->kind, f->index, f->name, f->n);
        a->line = f->line;
        if (!e)
            return fail(a, f->col, "undefined label '%.*s'", (int)f->n, f->name);
        ts_stream *s = ts_program_stream(a->p, f->kind, f->index);
        if ((uint64_t)e->value >= s->n)
            return fail(a, f->col, "label '%.*s' is at the end of the stream, after the last "
                        "instruction", (int)f->n, f->name);
        s->insn[f->pc].a[f->opnd] = (int32_t)e->value;
    }
    /* Labels become symbols, except local ones (".L..."). */
    for (size_t i = 0; i < a->captab; i++) {
        entry *e = &a->tab[i];
        if (!e->name || e->kind == CONST_KIND || e->name[0] == '.')
            continue;
        size_t si = (size_t)(ts_program_stream(a->p, e->kind, e->index) - a->p->streams);
        char *name = ts_strndup(e->name, e->n);
        if (!name)
            return oom(a);
        st = ts_program_add_symbol(a->p, name, TS_SYM_LABEL, (uint32_t)si, e->value, a->err);
        ts_free(name);
        if (st)
            return st;
    }
    return TS_OK;
}

/* (kind, index) of a stream, packed for sorting and searching. */
static uint64_t stream_key(const ts_stream *s) { return (uint64_t)s->kind << 32 | s->index; }

static int u64_cmp(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* The streams that have labels or marks of their own, as sorted keys: a stream of a range may have
 * neither (the range's copy would add a second label of one name to it, a program the reader
 * refuses). */
static uint64_t *own_symbols(const ts_program *p, size_t *n)
{
    uint64_t *k = ts_malloc((p->nsyms + p->nmarks + 1) * sizeof *k);
    if (!k)
        return NULL;
    *n = 0;
    for (size_t i = 0; i < p->nsyms; i++)
        if (p->syms[i].kind == TS_SYM_LABEL)
            k[(*n)++] = stream_key(&p->streams[p->syms[i].stream]);
    for (size_t i = 0; i < p->nmarks; i++)
        k[(*n)++] = stream_key(&p->streams[p->marks[i].stream]);
    qsort(k, *n, sizeof *k, u64_cmp);
    return k;
}

static int range_cmp(const void *x, const void *y)
{
    const struct range *a = x, *b = y;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    return a->first < b->first ? -1 : a->first > b->first;
}

/* Ranges of one kind may not overlap: a stream in two ranges would take two bodies (or one body's
 * labels twice). Sorts the ranges. */
static ts_status check_range_overlaps(as *a)
{
    if (a->nranges < 2)
        return TS_OK;
    qsort(a->ranges, a->nranges, sizeof *a->ranges, range_cmp);
    for (size_t r = 1; r < a->nranges; r++) {
        const struct range *p = &a->ranges[r - 1], *g = &a->ranges[r];
        if (p->kind == g->kind && g->first <= p->last) {
            const struct range *later = g->line > p->line ? g : p, *earlier = later == g ? p : g;
            a->line = later->line;
            return fail(a, later->col, "range %u-%u overlaps the range %u-%u at line %d", later->first, later->last,
                        earlier->first, earlier->last, earlier->line);
        }
    }
    return TS_OK;
}

/* Copy each range's first stream, with its labels and marks, to the rest of the range. The
 * labels and marks of the first stream are gathered once per range, so a range costs its units
 * times its body, not times every symbol of the program; the whole expansion is accounted against
 * program_bytes before anything is copied. */
static ts_status replicate(as *a)
{
    ts_program *p = a->p;
    size_t *lab = NULL, *mk = NULL, nown = 0;
    ts_status st = check_range_overlaps(a);
    if (st)
        return st;
    uint64_t *own = a->nranges ? own_symbols(p, &nown) : NULL;
    if (a->nranges && !own)
        return oom(a);
    for (size_t r = 0; r < a->nranges && !st; r++) {
        const struct range *g = &a->ranges[r];
        size_t si = (size_t)(ts_program_stream(p, g->kind, g->first) - p->streams);
        size_t nlab = 0, nmk = 0, nsyms = p->nsyms, nmarks = p->nmarks;
        uint64_t body = sizeof(ts_stream) + (uint64_t)p->streams[si].n * sizeof(ts_insn);
        ts_free(lab);
        ts_free(mk);
        lab = ts_malloc((nsyms + 1) * sizeof *lab);
        mk = ts_malloc((nmarks + 1) * sizeof *mk);
        if (!lab || !mk) {
            st = oom(a);
            break;
        }
        for (size_t k = 0; k < nsyms; k++)
            if (p->syms[k].kind == TS_SYM_LABEL && p->syms[k].stream == si) {
                lab[nlab++] = k;
                body += sizeof(ts_symbol) + strlen(p->syms[k].name) + 1;
            }
        for (size_t k = 0; k < nmarks; k++)
            if (p->marks[k].stream == si) {
                mk[nmk++] = k;
                body += sizeof(ts_mark);
            }
        a->line = g->line;
        if ((st = grow_program(a, g->col, (uint64_t)g->last - g->first, body)))
            break;
        for (uint64_t idx = (uint64_t)g->first + 1; idx <= g->last && !st; idx++) {
            ts_stream *d = ts_program_stream(p, g->kind, (uint32_t)idx);
            if (!d) {
                st = oom(a);
                break;
            }
            uint64_t key = (uint64_t)g->kind << 32 | idx;
            bool labelled = bsearch(&key, own, nown, sizeof *own, u64_cmp) != NULL;
            if (d->n || labelled) {
                st = fail(a, g->col, "stream %s %" PRIu64 " has its own %s and is also in the range %u-%u",
                          a->isa->stream_kinds[g->kind], idx, d->n ? "code" : "labels or marks", g->first, g->last);
                break;
            }
            size_t di = (size_t)(d - p->streams);
            /* Found again: adding d may have moved it (and the streams after it, which the
             * program renumbers in its labels and marks). */
            si = (size_t)(ts_program_stream(p, g->kind, g->first) - p->streams);
            const ts_stream *s = &p->streams[si];
            if (s->n) {
                d->insn = ts_malloc((size_t)s->n * sizeof *d->insn);
                if (!d->insn) {
                    st = oom(a);
                    break;
                }
                memcpy(d->insn, s->insn, (size_t)s->n * sizeof *d->insn);
                d->n = d->cap = s->n;
            }
            for (size_t k = 0; k < nlab && !st; k++)
                st = ts_program_add_symbol(p, p->syms[lab[k]].name, TS_SYM_LABEL, (uint32_t)di,
                                           p->syms[lab[k]].value, a->err);
            for (size_t k = 0; k < nmk && !st; k++)
                st = ts_program_add_mark(p, (uint32_t)di, p->marks[mk[k]].pc, p->marks[mk[k]].id, a->err);
        }
    }
    ts_free(lab);
    ts_free(mk);
    ts_free(own);
    return st;
}

static int seginfo_cmp(const void *x, const void *y)
{
    const seginfo *a = x, *b = y;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    if (a->index != b->index)
        return a->index < b->index ? -1 : 1;
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    if (a->line != b->line)
        return a->line < b->line ? -1 : 1;
    return 0;
}

static ts_status check_overlaps(as *a)
{
    if (a->nsegs < 2)
        return TS_OK;
    qsort(a->segs, a->nsegs, sizeof *a->segs, seginfo_cmp);
    const seginfo *far = NULL; /* the segment reaching furthest on the current target */
    for (size_t i = 0; i < a->nsegs; i++) {
        const seginfo *s = &a->segs[i];
        if (i && (s->kind != a->segs[i - 1].kind || s->index != a->segs[i - 1].index))
            far = NULL;
        if (!s->len)
            continue;
        if (far && s->addr < far->addr + far->len) {
            a->line = s->line > far->line ? s->line : far->line;
            return fail(a, s->line > far->line ? s->col : far->col,
                        "data segment overlaps the one at line %d",
                        s->line > far->line ? far->line : s->line);
        }
        if (!far || s->addr + s->len > far->addr + far->len)
            far = s;
    }
    return TS_OK;
}

ts_status ts_asm(ts_program **out, const char *file, const char *text, size_t len, const ts_isa *isa,
                 ts_err *err)
{
    *out = NULL;
    as a = {.isa = isa, .file = file ? file : "", .err = err, .lline = 1};
    a.p = ts_program_create(isa->arch);
    if (!a.p)
        return oom(&a);
    ts_status st = TS_OK;
    size_t pos = 0;
    while (pos < len && !st) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        a.line++;
        st = line(&a, text + pos, end - pos);
        a.lline++;
        pos = end + 1;
    }
    if (!st)
        st = close_data(&a);
    if (!st)
        st = resolve(&a);
    if (!st)
        st = replicate(&a);
    if (!st)
        st = check_overlaps(&a);
    ts_free(a.dbytes);
    ts_free(a.segs);
    ts_free(a.tab);
    ts_free(a.fix);
    ts_free(a.toks);
    ts_free(a.ranges);
    if (st) {
        ts_program_destroy(a.p);
        return st;
    }
    *out = a.p;
    return TS_OK;
}
