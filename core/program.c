/* core/program.c — the program container: builders, canonical order, binary form.
 *
 * Binary layout, version 2 (all integers little-endian; every section starts 8-byte aligned;
 * docs/program-format.md has the long version):
 *
 *   offset  size  header (80 bytes)
 *   ------  ----  ------------------------------------------------------------
 *        0     8  magic "TSPROG\0\1"
 *        8     4  u32 format version (TS_PROGRAM_VERSION)
 *       12     4  u32 header size (80)
 *       16    16  arch name, NUL-padded (at most 15 characters)
 *       32     8  u64 config fingerprint (0 = any config)
 *       40     4  u32 number of streams        S
 *       44     4  u32 number of data segments  D
 *       48     4  u32 number of symbols        Y
 *       52     4  u32 number of marks          M
 *       56     4  u32 string table size in bytes
 *       60     4  u32 workload name: string offset, 0xffffffff when there is none
 *       64     8  u64 payload size (bytes after the header)
 *       72     4  u32 CRC-32 (IEEE) of the whole file except these 4 bytes
 *       76     4  reserved, zero
 *
 *   payload, in this order
 *   ------------------------------------------------------------------------------------
 *   stream table    S x 16   u32 kind | u32 index | u32 instruction count | u32 packed bytes
 *   instructions             each stream's instructions packed (ts_insn_pack: op, line and the
 *                            operands up to the last non-zero one, as varints), stream after
 *                            stream, then zero padding to 8
 *   segment table   D x 24   u32 kind | u32 index | u64 addr | u32 len | u32 bytes of (the
 *                            first segment with the same bytes: itself when it stores them)
 *   segment bytes            each storing segment's bytes, zero-padded to a multiple of 8
 *   symbol table    Y x 24   u32 name offset | u32 kind | u32 stream | u32 zero | i64 value
 *   mark table      M x 12   u32 stream | u32 pc | u32 id, then zero padding to 8
 *   string table             NUL-terminated strings, zero-padded to 8 (size field excludes it)
 *
 * Every table is written in canonical order (ts_program_canonicalize), so equal programs encode
 * to equal bytes, and the reader requires that order: a decoded program is canonical.
 */
#include "core/program.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/alloc.h"
#include "core/fileio.h"

#define HDR_SIZE 80u
#define STREAM_REC 16u
#define SEG_REC 24u
#define SYM_REC 24u
#define MARK_REC 12u
#define NO_STRING 0xffffffffu

static const unsigned char magic[8] = {'T', 'S', 'P', 'R', 'O', 'G', 0, 1};

/* The contents of a program's segments, by hash (open addressing, at most half full), so that
 * equal bytes are held once. Entries point at bytes owned by a segment. */
typedef struct segix_ent {
    uint64_t h;
    const uint8_t *bytes; /* NULL: empty */
    uint32_t len;
} segix_ent;

struct ts_segix {
    segix_ent *v;
    size_t n, cap;
};

/* ---- builders ---------------------------------------------------------------------------- */

ts_program *ts_program_create(const char *arch)
{
    ts_program *p = ts_calloc(1, sizeof *p);
    if (!p)
        return NULL;
    if (arch) {
        size_t n = strnlen(arch, sizeof p->arch - 1);
        memcpy(p->arch, arch, n);
    }
    return p;
}

void ts_program_destroy(ts_program *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nstreams; i++)
        ts_stream_release(&p->streams[i]);
    for (size_t i = 0; i < p->nsegs; i++)
        if (!p->segs[i].shared)
            ts_free(p->segs[i].bytes);
    if (p->segix)
        ts_free(p->segix->v);
    ts_free(p->segix);
    for (size_t i = 0; i < p->nsyms; i++)
        ts_free(p->syms[i].name);
    ts_free(p->streams);
    ts_free(p->segs);
    ts_free(p->syms);
    ts_free(p->marks);
    ts_free(p->workload);
    ts_free(p);
}

static int key_cmp(uint32_t ka, uint32_t ia, uint32_t kb, uint32_t ib)
{
    if (ka != kb)
        return ka < kb ? -1 : 1;
    if (ia != ib)
        return ia < ib ? -1 : 1;
    return 0;
}

/* Streams are kept sorted by (kind, index), so look-up is a binary search: a lowering that adds
 * 850,000 PE streams must not pay a linear scan per stream. Returns the position of the stream or
 * where it would be inserted; *found tells which. */
static size_t stream_pos(const ts_program *p, uint32_t kind, uint32_t index, int *found)
{
    size_t lo = 0, hi = p->nstreams;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = key_cmp(p->streams[mid].kind, p->streams[mid].index, kind, index);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = 0;
    return lo;
}

ts_stream *ts_program_stream_find(const ts_program *p, uint32_t kind, uint32_t index)
{
    int found;
    size_t pos = stream_pos(p, kind, index, &found);
    return found ? &p->streams[pos] : NULL;
}

ts_stream *ts_program_stream(ts_program *p, uint32_t kind, uint32_t index)
{
    int found;
    size_t pos = stream_pos(p, kind, index, &found);
    if (found)
        return &p->streams[pos];
    if (p->nstreams >= UINT32_MAX)
        return NULL;
    void *arr = p->streams;
    if (ts_grow(&arr, &p->cap_streams, p->nstreams + 1, sizeof *p->streams))
        return NULL;
    p->streams = arr;
    memmove(&p->streams[pos + 1], &p->streams[pos], (p->nstreams - pos) * sizeof *p->streams);
    memset(&p->streams[pos], 0, sizeof *p->streams);
    p->streams[pos].kind = kind;
    p->streams[pos].index = index;
    p->nstreams++;
    /* Streams after pos moved up by one: keep the indexes held by labels and marks right. */
    if (pos + 1 < p->nstreams) {
        for (size_t i = 0; i < p->nsyms; i++)
            if (p->syms[i].kind == TS_SYM_LABEL && p->syms[i].stream >= pos)
                p->syms[i].stream++;
        for (size_t i = 0; i < p->nmarks; i++)
            if (p->marks[i].stream >= pos)
                p->marks[i].stream++;
    }
    return &p->streams[pos];
}

ts_insn *ts_stream_emit(ts_stream *s, uint16_t op)
{
    if (s->n == UINT32_MAX || s->packed)
        return NULL;
    if (s->n == s->cap) {
        size_t cap = s->cap;
        void *arr = s->insn;
        if (ts_grow(&arr, &cap, (size_t)s->n + 1, sizeof *s->insn))
            return NULL;
        s->insn = arr;
        s->cap = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
    }
    ts_insn *in = &s->insn[s->n++];
    memset(in, 0, sizeof *in);
    in->op = op;
    return in;
}

/* ---- packed instructions --------------------------------------------------------------------
 *
 * One instruction: varint(op << 4 | has_line << 3 | k), then varint(line) when has_line, then its
 * first k operands as zigzag varints, k = 1 + the index of its last non-zero operand (0 when all
 * are zero). Varints are little-endian groups of 7 bits, the high bit set on every byte but the
 * last, and minimal (no final 0x00 group after the first byte): one instruction has one form. */

static size_t put_varint(uint8_t *d, uint32_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        d[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    d[n++] = (uint8_t)v;
    return n;
}

/* Reads a minimal varint of at most 32 bits; -1 when malformed or past end. */
static inline int get_varint(const uint8_t **at, const uint8_t *end, uint32_t *v)
{
    const uint8_t *d = *at;
    if (d < end && !(*d & 0x80)) { /* one byte (most operands: registers, small immediates) */
        *v = *d;
        *at = d + 1;
        return 0;
    }
    uint64_t x = 0;
    for (int sh = 0; sh < 35; sh += 7) {
        if (d >= end)
            return -1;
        uint8_t b = *d++;
        x |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80)) {
            if ((sh && !b) || x > UINT32_MAX)
                return -1;
            *v = (uint32_t)x;
            *at = d;
            return 0;
        }
    }
    return -1;
}

size_t ts_insn_pack(const ts_insn *in, uint8_t *out)
{
    int k = TS_MAX_OPNDS;
    while (k > 0 && !in->a[k - 1])
        k--;
    size_t n = put_varint(out, (uint32_t)in->op << 4 | (in->line ? 8u : 0u) | (uint32_t)k);
    if (in->line)
        n += put_varint(out + n, in->line);
    for (int j = 0; j < k; j++) {
        uint32_t a = (uint32_t)in->a[j];
        n += put_varint(out + n, a << 1 ^ (uint32_t)(in->a[j] >> 31)); /* zigzag */
    }
    return n;
}

int ts_insn_unpack(const uint8_t **at, const uint8_t *end, ts_insn *out)
{
    uint32_t h, v;
    if (get_varint(at, end, &h) || h >> 4 > UINT16_MAX || (h & 7) > TS_MAX_OPNDS)
        return -1;
    memset(out, 0, sizeof *out);
    out->op = (uint16_t)(h >> 4);
    if (h & 8) {
        if (get_varint(at, end, &v) || !v || v > UINT16_MAX)
            return -1;
        out->line = (uint16_t)v;
    }
    int k = (int)(h & 7);
    for (int j = 0; j < k; j++) {
        if (get_varint(at, end, &v))
            return -1;
        out->a[j] = (int32_t)(v >> 1 ^ (0u - (v & 1)));
    }
    return k && !out->a[k - 1] ? -1 : 0;
}

int ts_stream_emit_packed(ts_stream *s, const ts_insn *in)
{
    if (s->insn || s->n == UINT32_MAX)
        return -1;
    if ((size_t)s->cap - s->packed_len < TS_INSN_PACKED_MAX) {
        size_t cap = s->cap;
        void *arr = s->packed;
        if ((uint64_t)s->packed_len + TS_INSN_PACKED_MAX > UINT32_MAX ||
            ts_grow(&arr, &cap, (size_t)s->packed_len + TS_INSN_PACKED_MAX, 1))
            return -1;
        s->packed = arr;
        s->cap = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
    }
    s->packed_len += (uint32_t)ts_insn_pack(in, s->packed + s->packed_len);
    s->n++;
    return 0;
}

ts_status ts_stream_unpack(const ts_stream *s, ts_insn *out, ts_err *err)
{
    if (!s->packed) {
        if (s->n)
            memcpy(out, s->insn, (size_t)s->n * sizeof *out);
        return TS_OK;
    }
    const uint8_t *at = s->packed, *end = s->packed + s->packed_len;
    for (uint32_t k = 0; k < s->n; k++)
        if (ts_insn_unpack(&at, end, &out[k]))
            return ts_err_set(err, TS_EINTERNAL, "stream %" PRIu32 ": packed instruction %" PRIu32 " is malformed",
                              s->index, k);
    return TS_OK;
}

ts_status ts_program_unpack(ts_program *p, ts_err *err)
{
    for (size_t i = 0; i < p->nstreams; i++) {
        ts_stream *s = &p->streams[i];
        if (!s->packed)
            continue;
        ts_insn *v = ts_malloc((s->n ? s->n : 1) * sizeof *v);
        if (!v)
            return ts_err_set(err, TS_ENOMEM, "out of memory");
        ts_status st = ts_stream_unpack(s, v, err);
        if (st) {
            ts_free(v);
            return st;
        }
        ts_free(s->packed);
        s->packed = NULL;
        s->packed_len = 0;
        s->insn = v;
        s->cap = s->n;
    }
    return TS_OK;
}

void ts_stream_release(ts_stream *s)
{
    ts_free(s->insn);
    ts_free(s->packed);
    s->insn = NULL;
    s->packed = NULL;
    s->packed_len = s->cap = 0;
}

/* A hash of len bytes, 8 at a time. */
static uint64_t bytes_hash(const uint8_t *b, uint32_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ len;
    uint32_t k = 0;
    for (; k + 8 <= len; k += 8) {
        uint64_t w;
        memcpy(&w, b + k, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    for (; k < len; k++)
        h = (h ^ b[k]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

static segix_ent *segix_find(struct ts_segix *x, uint64_t h, const uint8_t *b, uint32_t len)
{
    size_t i = (size_t)h & (x->cap - 1);
    for (; x->v[i].bytes; i = (i + 1) & (x->cap - 1))
        if (x->v[i].h == h && x->v[i].len == len && !memcmp(x->v[i].bytes, b, len))
            return &x->v[i];
    return &x->v[i];
}

/* Room for one more entry; -1 when out of memory. */
static int segix_room(ts_program *p)
{
    struct ts_segix *x = p->segix;
    if (!x && !(x = p->segix = ts_calloc(1, sizeof *x)))
        return -1;
    if (2 * (x->n + 1) <= x->cap)
        return 0;
    size_t cap = x->cap ? 2 * x->cap : 1024;
    segix_ent *old = x->v, *v = ts_calloc(cap, sizeof *v);
    if (!v)
        return -1;
    size_t ocap = x->cap;
    x->v = v;
    x->cap = cap;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].bytes)
            *segix_find(x, old[i].h, old[i].bytes, old[i].len) = old[i];
    ts_free(old);
    return 0;
}

ts_status ts_program_add_segment(ts_program *p, uint32_t kind, uint32_t index, uint64_t addr,
                                 const void *bytes, uint32_t len, ts_err *err)
{
    if (len && addr + len < addr)
        return ts_err_set(err, TS_EINPUT, "data segment at 0x%" PRIx64 " of %" PRIu32
                          " bytes runs past the end of the 64-bit address space", addr, len);
    void *arr = p->segs;
    if (ts_grow(&arr, &p->cap_segs, p->nsegs + 1, sizeof *p->segs))
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    p->segs = arr;
    uint8_t *copy = NULL;
    uint32_t shared = 0;
    if (len) {
        if (segix_room(p))
            return ts_err_set(err, TS_ENOMEM, "out of memory");
        uint64_t h = bytes_hash(bytes, len);
        segix_ent *e = segix_find(p->segix, h, bytes, len);
        if (e->bytes) {
            copy = (uint8_t *)e->bytes;
            shared = 1;
        } else {
            if (!(copy = ts_malloc(len)))
                return ts_err_set(err, TS_ENOMEM, "out of memory");
            memcpy(copy, bytes, len);
            *e = (segix_ent){.h = h, .bytes = copy, .len = len};
            p->segix->n++;
        }
    }
    p->segs[p->nsegs++] = (ts_segment){.kind = kind, .index = index, .addr = addr, .len = len,
                                       .shared = shared, .bytes = copy};
    return TS_OK;
}

/* A symbol name must read back as one assembler token: [A-Za-z_][A-Za-z0-9_.$]*. */
static int is_ident(const char *s)
{
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
        return 0;
    for (s++; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '.' || *s == '$'))
            return 0;
    return 1;
}

ts_status ts_program_add_symbol(ts_program *p, const char *name, uint32_t kind, uint32_t stream,
                                int64_t value, ts_err *err)
{
    if (!is_ident(name))
        return ts_err_set(err, TS_EINPUT, "symbol name '%s' is not an identifier", name);
    if (kind == TS_SYM_LABEL) {
        if (stream >= p->nstreams)
            return ts_err_set(err, TS_EINPUT, "label '%s': stream %" PRIu32 " does not exist", name,
                              stream);
        if (value < 0 || value > UINT32_MAX)
            return ts_err_set(err, TS_EINPUT, "label '%s': pc %" PRId64 " is out of range", name,
                              value);
    } else if (kind == TS_SYM_CONST) {
        if (stream != 0)
            return ts_err_set(err, TS_EINPUT, "constant '%s': stream must be 0, not %" PRIu32, name,
                              stream);
    } else {
        return ts_err_set(err, TS_EINPUT, "symbol '%s': kind %" PRIu32 " is neither label nor "
                          "constant", name, kind);
    }
    void *arr = p->syms;
    if (ts_grow(&arr, &p->cap_syms, p->nsyms + 1, sizeof *p->syms))
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    p->syms = arr;
    char *copy = ts_strdup(name);
    if (!copy)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    p->syms[p->nsyms++] = (ts_symbol){.name = copy, .kind = kind, .stream = stream, .value = value};
    return TS_OK;
}

ts_status ts_program_add_mark(ts_program *p, uint32_t stream, uint32_t pc, uint32_t id, ts_err *err)
{
    if (stream >= p->nstreams)
        return ts_err_set(err, TS_EINPUT, "superstep mark: stream %" PRIu32 " does not exist",
                          stream);
    void *arr = p->marks;
    if (ts_grow(&arr, &p->cap_marks, p->nmarks + 1, sizeof *p->marks))
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    p->marks = arr;
    p->marks[p->nmarks++] = (ts_mark){.stream = stream, .pc = pc, .id = id};
    return TS_OK;
}

/* ---- canonical order --------------------------------------------------------------------- */

static int stream_cmp(const void *a, const void *b)
{
    const ts_stream *x = a, *y = b;
    return key_cmp(x->kind, x->index, y->kind, y->index);
}

static int seg_cmp(const void *a, const void *b)
{
    const ts_segment *x = a, *y = b;
    int c = key_cmp(x->kind, x->index, y->kind, y->index);
    if (c)
        return c;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    /* Same place and size: order by content so the order is total and the bytes canonical. */
    return x->len ? memcmp(x->bytes, y->bytes, x->len) : 0;
}

static int sym_cmp(const void *a, const void *b)
{
    const ts_symbol *x = a, *y = b;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    int c = strcmp(x->name, y->name);
    if (c)
        return c < 0 ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return 0;
}

static int mark_cmp(const void *a, const void *b)
{
    const ts_mark *x = a, *y = b;
    int c = key_cmp(x->stream, x->pc, y->stream, y->pc);
    if (c)
        return c;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return 0;
}

static int stream_sorted(const ts_program *p)
{
    for (size_t i = 1; i < p->nstreams; i++)
        if (stream_cmp(&p->streams[i - 1], &p->streams[i]) >= 0)
            return 0;
    return 1;
}

static int marks_sorted(const ts_program *p)
{
    for (size_t i = 1; i < p->nmarks; i++)
        if (mark_cmp(&p->marks[i - 1], &p->marks[i]) > 0)
            return 0;
    return 1;
}

void ts_program_canonicalize(ts_program *p)
{
    if (!stream_sorted(p) && p->nstreams < 0x80000000u) {
        /* Sort the streams and renumber the stream indexes of labels and marks, without
         * allocating (this function cannot fail). Each stream's old position is parked in its
         * `cap` field; after the sort, cap[new] = old is inverted in place (following each
         * permutation cycle, bit 31 marking visited entries) into cap[old] = new. The real
         * capacities are lost, so cap is set to n afterwards: smaller than the allocation, which
         * is always safe (the next emit reallocates). */
        const uint32_t mark = 0x80000000u;
        uint32_t n = (uint32_t)p->nstreams;
        for (uint32_t i = 0; i < n; i++)
            p->streams[i].cap = i;
        qsort(p->streams, n, sizeof *p->streams, stream_cmp);
        for (uint32_t s = 0; s < n; s++) {
            if (p->streams[s].cap & mark)
                continue;
            uint32_t prev = s, cur = p->streams[s].cap;
            while (cur != s) {
                uint32_t next = p->streams[cur].cap;
                p->streams[cur].cap = prev | mark;
                prev = cur;
                cur = next;
            }
            p->streams[s].cap = prev | mark;
        }
        for (size_t i = 0; i < p->nsyms; i++)
            if (p->syms[i].kind == TS_SYM_LABEL && p->syms[i].stream < n)
                p->syms[i].stream = p->streams[p->syms[i].stream].cap & ~mark;
        for (size_t i = 0; i < p->nmarks; i++)
            if (p->marks[i].stream < n)
                p->marks[i].stream = p->streams[p->marks[i].stream].cap & ~mark;
        for (uint32_t i = 0; i < n; i++)
            p->streams[i].cap = p->streams[i].packed ? p->streams[i].packed_len : p->streams[i].n;
    }
    if (p->nsegs > 1)
        qsort(p->segs, p->nsegs, sizeof *p->segs, seg_cmp);
    if (p->nsyms > 1)
        qsort(p->syms, p->nsyms, sizeof *p->syms, sym_cmp);
    if (p->nmarks > 1 && !marks_sorted(p)) /* a sorted array is its own sort (mark_cmp is total) */
        qsort(p->marks, p->nmarks, sizeof *p->marks, mark_cmp);
}

/* ---- encoding ---------------------------------------------------------------------------- */

static uint64_t pad8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

static void put_u32(ts_buf *b, uint32_t v)
{
    char c[4];
    for (int i = 0; i < 4; i++)
        c[i] = (char)((v >> (8 * i)) & 0xff);
    ts_buf_put(b, c, 4);
}

static void put_u64(ts_buf *b, uint64_t v)
{
    put_u32(b, (uint32_t)v);
    put_u32(b, (uint32_t)(v >> 32));
}

static void put_pad8(ts_buf *b, size_t start)
{
    static const char zeros[8] = {0};
    size_t used = (b->len - start) % 8;
    if (used)
        ts_buf_put(b, zeros, 8 - used);
}

static uint32_t get_u32(const unsigned char *d)
{
    return (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24;
}

static uint64_t get_u64(const unsigned char *d)
{
    return (uint64_t)get_u32(d) | (uint64_t)get_u32(d + 4) << 32;
}

/* The checksum covers the whole file except its own field (bytes 72..75): the header's counts,
 * sizes and fingerprint matter as much as the payload. */
static uint32_t file_crc(const unsigned char *d, size_t len)
{
    uLong crc = crc32_z(0, d, 72); /* zlib's CRC-32 (IEEE) */
    return (uint32_t)crc32_z(crc, d + 76, len - 76);
}

/* A shallow copy (tables copied, pointed-to data shared) that can be canonicalized without
 * touching the caller's program. Free with free_shallow. */
static ts_status shallow_copy(const ts_program *p, ts_program *c, ts_err *err)
{
    *c = *p;
    c->streams = NULL;
    c->segs = NULL;
    c->syms = NULL;
    c->marks = NULL;
    if ((p->nstreams && !(c->streams = ts_malloc(p->nstreams * sizeof *p->streams))) ||
        (p->nsegs && !(c->segs = ts_malloc(p->nsegs * sizeof *p->segs))) ||
        (p->nsyms && !(c->syms = ts_malloc(p->nsyms * sizeof *p->syms))) ||
        (p->nmarks && !(c->marks = ts_malloc(p->nmarks * sizeof *p->marks)))) {
        ts_free(c->streams);
        ts_free(c->segs);
        ts_free(c->syms);
        ts_free(c->marks);
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    }
    if (p->nstreams)
        memcpy(c->streams, p->streams, p->nstreams * sizeof *p->streams);
    if (p->nsegs)
        memcpy(c->segs, p->segs, p->nsegs * sizeof *p->segs);
    if (p->nsyms)
        memcpy(c->syms, p->syms, p->nsyms * sizeof *p->syms);
    if (p->nmarks)
        memcpy(c->marks, p->marks, p->nmarks * sizeof *p->marks);
    c->cap_streams = p->nstreams;
    c->cap_segs = p->nsegs;
    c->cap_syms = p->nsyms;
    c->cap_marks = p->nmarks;
    return TS_OK;
}

static void free_shallow(ts_program *c)
{
    ts_free(c->streams);
    ts_free(c->segs);
    ts_free(c->syms);
    ts_free(c->marks);
}

/* What the writer checks without an ISA: every index it writes must be readable again. */
static ts_status check_encodable(const ts_program *p, ts_err *err)
{
    if (p->nstreams > UINT32_MAX || p->nsegs > UINT32_MAX || p->nsyms > UINT32_MAX ||
        p->nmarks > UINT32_MAX)
        return ts_err_set(err, TS_EINPUT, "cannot encode: more than 2^32-1 entries in a table");
    if (memchr(p->arch, 0, sizeof p->arch) == NULL)
        return ts_err_set(err, TS_EINPUT, "cannot encode: arch name is not NUL-terminated");
    for (size_t i = 1; i < p->nstreams; i++)
        if (stream_cmp(&p->streams[i - 1], &p->streams[i]) == 0)
            return ts_err_set(err, TS_EINPUT, "cannot encode: two streams have kind %" PRIu32
                              " index %" PRIu32, p->streams[i].kind, p->streams[i].index);
    for (size_t i = 0; i < p->nsyms; i++) {
        const ts_symbol *y = &p->syms[i];
        if (!y->name || !is_ident(y->name))
            return ts_err_set(err, TS_EINPUT, "cannot encode: symbol %zu has no valid name", i);
        if (y->kind == TS_SYM_LABEL) {
            if (y->stream >= p->nstreams)
                return ts_err_set(err, TS_EINPUT, "cannot encode: label '%s' is in stream %" PRIu32
                                  " of %zu", y->name, y->stream, p->nstreams);
            if (y->value < 0 || y->value > p->streams[y->stream].n)
                return ts_err_set(err, TS_EINPUT, "cannot encode: label '%s' is at pc %" PRId64
                                  ", outside its stream of %" PRIu32 " instructions", y->name,
                                  y->value, p->streams[y->stream].n);
        } else if (y->kind != TS_SYM_CONST || y->stream != 0) {
            return ts_err_set(err, TS_EINPUT, "cannot encode: symbol '%s' is not a valid label or "
                              "constant", y->name);
        }
    }
    for (size_t i = 0; i < p->nmarks; i++) {
        const ts_mark *m = &p->marks[i];
        if (m->stream >= p->nstreams || m->pc > p->streams[m->stream].n)
            return ts_err_set(err, TS_EINPUT, "cannot encode: superstep mark %" PRIu32 " is "
                              "outside its stream", m->id);
    }
    return TS_OK;
}

/* Segments with the same bytes: first[i] is the first segment (in table order) whose length and
 * bytes equal segment i's (i itself when there is none), found through a hash table of the
 * segments that store their bytes. NULL when out of memory. Owned by the caller (ts_free). */
static uint32_t *seg_firsts(const ts_segment *segs, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    uint32_t *first = ts_malloc((n ? n : 1) * sizeof *first);
    uint32_t *slot = ts_malloc(cap * sizeof *slot); /* a stored segment's index + 1; 0 empty */
    if (!first || !slot) {
        ts_free(first);
        ts_free(slot);
        return NULL;
    }
    memset(slot, 0, cap * sizeof *slot);
    for (size_t i = 0; i < n; i++) {
        const ts_segment *g = &segs[i];
        size_t h = (size_t)bytes_hash(g->bytes, g->len) & (cap - 1);
        first[i] = (uint32_t)i;
        for (; slot[h]; h = (h + 1) & (cap - 1)) {
            const ts_segment *o = &segs[slot[h] - 1];
            if (o->len == g->len && (!g->len || !memcmp(o->bytes, g->bytes, g->len))) {
                first[i] = slot[h] - 1;
                break;
            }
        }
        if (first[i] == i)
            slot[h] = (uint32_t)i + 1;
    }
    ts_free(slot);
    return first;
}

static ts_status encode_canonical(const ts_program *p, ts_buf *out, ts_err *err)
{
    /* String table: workload first, then symbol names in canonical order. */
    uint64_t strsize = 0;
    if (p->workload)
        strsize += strlen(p->workload) + 1;
    for (size_t i = 0; i < p->nsyms; i++)
        strsize += strlen(p->syms[i].name) + 1;
    if (strsize >= UINT32_MAX)
        return ts_err_set(err, TS_EINPUT, "cannot encode: string table exceeds 4 GiB");

    /* the whole file's size, reserved at once (a ResNet-50 for tsp_v1 is 167 MB: growing the buffer
     * by doubling copied it over and over) */
    uint64_t total = HDR_SIZE + STREAM_REC * (uint64_t)p->nstreams + SEG_REC * (uint64_t)p->nsegs +
                     SYM_REC * (uint64_t)p->nsyms + pad8(MARK_REC * (uint64_t)p->nmarks) + pad8(strsize);
    /* the packed size of each stream held as insn (streams held packed know theirs) */
    uint32_t *plen = p->nstreams ? ts_calloc(p->nstreams, sizeof *plen) : NULL;
    if (p->nstreams && !plen)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    uint64_t code = 0;
    uint8_t tmp[TS_INSN_PACKED_MAX];
    for (size_t i = 0; i < p->nstreams; i++) {
        const ts_stream *s = &p->streams[i];
        uint64_t b = s->packed_len;
        for (uint32_t k = 0; !s->packed && k < s->n; k++)
            b += ts_insn_pack(&s->insn[k], tmp);
        if (b > UINT32_MAX) {
            ts_free(plen);
            return ts_err_set(err, TS_EINPUT, "cannot encode: stream %" PRIu32 " packs to more than 4 GiB", s->index);
        }
        plen[i] = (uint32_t)b;
        code += b;
    }
    total += pad8(code);
    uint32_t *first = seg_firsts(p->segs, p->nsegs);
    if (!first) {
        ts_free(plen);
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < p->nsegs; i++)
        total += first[i] == i ? pad8(p->segs[i].len) : 0;
    if (total > SIZE_MAX / 2 || !ts_buf_reserve(out, (size_t)total)) {
        ts_free(plen);
        ts_free(first);
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    }

    size_t start = out->len;
    ts_buf_put(out, (const char *)magic, sizeof magic);
    put_u32(out, TS_PROGRAM_VERSION);
    put_u32(out, HDR_SIZE);
    char arch[16] = {0};
    memcpy(arch, p->arch, strnlen(p->arch, sizeof arch - 1));
    ts_buf_put(out, arch, sizeof arch);
    put_u64(out, p->config_fp);
    put_u32(out, (uint32_t)p->nstreams);
    put_u32(out, (uint32_t)p->nsegs);
    put_u32(out, (uint32_t)p->nsyms);
    put_u32(out, (uint32_t)p->nmarks);
    put_u32(out, (uint32_t)strsize);
    put_u32(out, p->workload ? 0 : NO_STRING);
    put_u64(out, 0); /* payload size, patched below */
    put_u32(out, 0); /* CRC, patched below */
    put_u32(out, 0);

    size_t payload = out->len;
    for (size_t i = 0; i < p->nstreams; i++) {
        put_u32(out, p->streams[i].kind);
        put_u32(out, p->streams[i].index);
        put_u32(out, p->streams[i].n);
        put_u32(out, plen[i]);
    }
    ts_free(plen);
    for (size_t i = 0; i < p->nstreams; i++) {
        const ts_stream *s = &p->streams[i];
        if (s->packed) {
            ts_buf_put(out, (const char *)s->packed, s->packed_len);
            continue;
        }
        for (uint32_t k = 0; k < s->n; k++)
            ts_buf_put(out, (const char *)tmp, ts_insn_pack(&s->insn[k], tmp));
    }
    put_pad8(out, start);
    for (size_t i = 0; i < p->nsegs; i++) {
        put_u32(out, p->segs[i].kind);
        put_u32(out, p->segs[i].index);
        put_u64(out, p->segs[i].addr);
        put_u32(out, p->segs[i].len);
        put_u32(out, first[i]);
    }
    for (size_t i = 0; i < p->nsegs; i++) {
        if (first[i] != i)
            continue;
        if (p->segs[i].len)
            ts_buf_put(out, (const char *)p->segs[i].bytes, p->segs[i].len);
        put_pad8(out, start);
    }
    ts_free(first);
    uint32_t stroff = p->workload ? (uint32_t)strlen(p->workload) + 1 : 0;
    for (size_t i = 0; i < p->nsyms; i++) {
        put_u32(out, stroff);
        stroff += (uint32_t)strlen(p->syms[i].name) + 1;
        put_u32(out, p->syms[i].kind);
        put_u32(out, p->syms[i].stream);
        put_u32(out, 0);
        put_u64(out, (uint64_t)p->syms[i].value);
    }
    for (size_t i = 0; i < p->nmarks; i++) {
        put_u32(out, p->marks[i].stream);
        put_u32(out, p->marks[i].pc);
        put_u32(out, p->marks[i].id);
    }
    put_pad8(out, start);
    if (p->workload)
        ts_buf_put(out, p->workload, strlen(p->workload) + 1);
    for (size_t i = 0; i < p->nsyms; i++)
        ts_buf_put(out, p->syms[i].name, strlen(p->syms[i].name) + 1);
    put_pad8(out, start);
    if (out->oom)
        return ts_err_set(err, TS_ENOMEM, "out of memory");

    uint64_t psize = out->len - payload;
    unsigned char *h = (unsigned char *)out->data + start;
    for (int i = 0; i < 8; i++)
        h[64 + i] = (unsigned char)(psize >> (8 * i));
    uint32_t crc = file_crc(h, HDR_SIZE + (size_t)psize);
    for (int i = 0; i < 4; i++)
        h[72 + i] = (unsigned char)(crc >> (8 * i));
    return TS_OK;
}

ts_status ts_program_encode(const ts_program *p, ts_buf *out, ts_err *err)
{
    ts_status st = check_encodable(p, err);
    if (st)
        return st;
    ts_program c;
    if ((st = shallow_copy(p, &c, err)))
        return st;
    ts_program_canonicalize(&c);
    size_t start = out->len;
    st = encode_canonical(&c, out, err);
    free_shallow(&c);
    if (st && out->data && !out->oom) {
        out->len = start;
        out->data[start] = 0;
    }
    return st;
}

/* ---- decoding ---------------------------------------------------------------------------- */

typedef struct rd {
    const unsigned char *d;
    size_t len;
    const char *name;
    const ts_isa *isa;
    bool packed; /* keep streams packed */
    ts_err *err;
} rd;

static ts_status bad(rd *r, uint64_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static ts_status bad(rd *r, uint64_t off, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ts_err_at(r->err, TS_EINPUT, r->name, 0, 0, "offset %" PRIu64 ": %s", off, what);
}

static const char *kind_name(const ts_isa *isa, uint32_t kind)
{
    return kind < isa->nstream_kinds ? isa->stream_kinds[kind] : "?";
}

/* Check that bytes [off, off+n) are zero. */
static int all_zero(const unsigned char *d, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (d[i])
            return 0;
    return 1;
}


typedef struct symref {
    const ts_symbol *s;
    uint64_t off;
} symref;

static int symref_cmp(const void *a, const void *b)
{
    const ts_symbol *x = ((const symref *)a)->s, *y = ((const symref *)b)->s;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    if (x->kind == TS_SYM_LABEL && x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    uint64_t ox = ((const symref *)a)->off, oy = ((const symref *)b)->off;
    return ox < oy ? -1 : ox > oy;
}

/* Reads a string at table offset `so`; NULL with an error when it is not a string in the table. */
static const char *get_string(rd *r, uint64_t tab, uint32_t tabsize, uint32_t so, uint64_t where,
                              const char *what)
{
    if (so >= tabsize) {
        bad(r, where, "%s: string offset %" PRIu32 " is outside the string table (%" PRIu32
            " bytes)", what, so, tabsize);
        return NULL;
    }
    const char *s = (const char *)r->d + tab + so;
    if (!memchr(s, 0, tabsize - so)) {
        bad(r, where, "%s: string at offset %" PRIu32 " is not NUL-terminated", what, so);
        return NULL;
    }
    return s;
}

/* One stream's packed instructions at file offset off (st->n of them in st->packed_len bytes),
 * each checked against the ISA; kept packed (a copy of the bytes) or as an insn array. */
static ts_status decode_stream(rd *r, ts_stream *st, uint64_t off, bool keep_packed)
{
    const ts_isa *isa = r->isa;
    uint32_t n = st->n, len = st->packed_len;
    const uint8_t *at = r->d + off, *end = at + len;
    const char *kn = kind_name(isa, st->kind);
    ts_insn one, *v = NULL;
    if (n && !keep_packed && !(v = ts_malloc((size_t)n * sizeof *v)))
        return ts_err_set(r->err, TS_ENOMEM, "out of memory");
    for (uint32_t k = 0; k < n; k++) {
        uint64_t io = (uint64_t)(at - r->d);
        ts_insn *in = v ? &v[k] : &one;
        if (ts_insn_unpack(&at, end, in)) {
            ts_free(v);
            return bad(r, io, "stream %s %" PRIu32 ", pc %" PRIu32 ": not a packed instruction", kn, st->index, k);
        }
        ts_status bst = TS_OK;
        if (in->op >= isa->nops)
            bst = bad(r, io, "stream %s %" PRIu32 ", pc %" PRIu32 ": op %u is not in the %s ISA (%zu ops)", kn,
                      st->index, k, in->op, isa->arch, isa->nops);
        const ts_opinfo *oi = bst ? NULL : &isa->ops[in->op];
        int no = oi ? ts_isa_nopnds(oi) : 0;
        for (int j = 0; oi && !bst && j < TS_MAX_OPNDS; j++) {
            int32_t a = in->a[j];
            int kind = oi->opnd[j] & TS_OK_KIND_MASK;
            if (j >= no && a)
                bst = bad(r, io, "stream %s %" PRIu32 ", pc %" PRIu32 ": '%s' has %d operands but operand %d is %"
                          PRId32 ", not 0", kn, st->index, k, oi->mnemonic, no, j + 1, a);
            else if (j < no && kind == TS_OK_REG && (a < 0 || (uint64_t)a >= isa->nregs))
                bst = bad(r, io, "stream %s %" PRIu32 ", pc %" PRIu32 ": operand %d of '%s' is register %" PRId32
                          ", but %s has %zu registers", kn, st->index, k, j + 1, oi->mnemonic, a, isa->arch,
                          isa->nregs);
            else if (j < no && kind == TS_OK_LABEL && (a < 0 || (uint32_t)a >= n))
                bst = bad(r, io, "stream %s %" PRIu32 ", pc %" PRIu32 ": operand %d of '%s' is pc %" PRId32
                          ", outside the stream (%" PRIu32 " instructions)", kn, st->index, k, j + 1, oi->mnemonic,
                          a, n);
        }
        if (bst) {
            ts_free(v);
            return bst;
        }
    }
    if (at != end) {
        ts_free(v);
        return bad(r, (uint64_t)(at - r->d), "stream %s %" PRIu32 ": %zu bytes left after its %" PRIu32
                   " instructions", kn, st->index, (size_t)(end - at), n);
    }
    if (v) {
        st->insn = v;
        st->cap = n;
    } else if (len) {
        if (!(st->packed = ts_malloc(len)))
            return ts_err_set(r->err, TS_ENOMEM, "out of memory");
        memcpy(st->packed, r->d + off, len);
        st->cap = len;
    }
    return TS_OK;
}

static ts_status decode_payload(rd *r, ts_program *p, const unsigned char *h)
{
    const ts_isa *isa = r->isa;
    uint32_t ns = get_u32(h + 40), nd = get_u32(h + 44), ny = get_u32(h + 48), nm = get_u32(h + 52);
    uint32_t strsize = get_u32(h + 56), wl = get_u32(h + 60);
    uint64_t off = HDR_SIZE, end = r->len;

    /* Stream table. */
    if ((uint64_t)ns * STREAM_REC > end - off)
        return bad(r, 40, "%" PRIu32 " streams do not fit in the file", ns);
    uint64_t total = 0, bytes = 0;
    for (uint32_t i = 0; i < ns; i++) {
        const unsigned char *s = r->d + off + (uint64_t)i * STREAM_REC;
        uint64_t so = off + (uint64_t)i * STREAM_REC;
        uint32_t kind = get_u32(s), index = get_u32(s + 4), n = get_u32(s + 8);
        if (kind >= isa->nstream_kinds)
            return bad(r, so, "stream %" PRIu32 ": kind %" PRIu32 " is not a %s stream kind (%zu "
                       "kinds)", i, kind, isa->arch, isa->nstream_kinds);
        if (i > 0 && key_cmp(p->streams[i - 1].kind, p->streams[i - 1].index, kind, index) >= 0)
            return bad(r, so, "stream %" PRIu32 " (%s %" PRIu32 ") is a duplicate or out of order",
                       i, kind_name(isa, kind), index);
        if (n > get_u32(s + 12))
            return bad(r, so + 8, "stream %" PRIu32 ": %" PRIu32 " instructions cannot pack into %" PRIu32
                       " bytes", i, n, get_u32(s + 12));
        total += n;
        bytes += get_u32(s + 12);
        /* Allocated up front only as far as the file can hold it: every count is checked
         * against the bytes left before anything is sized from it. */
        ts_stream *st = ts_program_stream(p, kind, index);
        if (!st)
            return ts_err_set(r->err, TS_ENOMEM, "out of memory");
        st->n = n;
        st->packed_len = get_u32(s + 12);
    }
    off += (uint64_t)ns * STREAM_REC;
    if (pad8(bytes) > end - off)
        return bad(r, off, "%" PRIu64 " instructions (%" PRIu64 " bytes) do not fit in the file", total, bytes);

    /* Instructions. */
    for (uint32_t i = 0; i < ns; i++) {
        ts_status st = decode_stream(r, &p->streams[i], off, r->packed);
        if (st)
            return st;
        off += p->streams[i].packed_len;
        if (!r->packed)
            p->streams[i].packed_len = 0;
    }
    if (!all_zero(r->d + off, (size_t)(pad8(off) - off)))
        return bad(r, off, "padding after the instructions is not zero");
    off = pad8(off);

    /* Segment table and bytes: a segment stores its bytes, or names the earlier segment that
     * does (the first with the same bytes), so that equal contents are stored once. */
    if ((uint64_t)nd * SEG_REC > end - off)
        return bad(r, 44, "%" PRIu32 " data segments do not fit in the file", nd);
    uint64_t segtab = off, segbytes = off + (uint64_t)nd * SEG_REC;
    off = segbytes;
    for (uint32_t i = 0; i < nd; i++) {
        const unsigned char *s = r->d + segtab + (uint64_t)i * SEG_REC;
        uint64_t so = segtab + (uint64_t)i * SEG_REC;
        uint32_t kind = get_u32(s), index = get_u32(s + 4), len = get_u32(s + 16), of = get_u32(s + 20);
        uint64_t addr = get_u64(s + 8);
        if (kind >= isa->nstream_kinds)
            return bad(r, so, "data segment %" PRIu32 ": kind %" PRIu32 " is not a %s stream kind "
                       "(%zu kinds)", i, kind, isa->arch, isa->nstream_kinds);
        if (of > i || (of < i && get_u32(r->d + segtab + (uint64_t)of * SEG_REC + 20) != of))
            return bad(r, so + 20, "data segment %" PRIu32 ": its bytes are segment %" PRIu32 "'s, which is not an "
                       "earlier segment that stores its own", i, of);
        if (of < i && p->segs[of].len != len)
            return bad(r, so + 16, "data segment %" PRIu32 ": %" PRIu32 " bytes, but segment %" PRIu32 ", whose "
                       "bytes it shares, has %" PRIu32, i, len, of, p->segs[of].len);
        if (of == i && pad8(len) > end - off)
            return bad(r, so + 16, "data segment %" PRIu32 ": %" PRIu32 " bytes do not fit in "
                       "the file", i, len);
        if (len && addr + len < addr)
            return bad(r, so + 8, "data segment %" PRIu32 ": runs past the end of the 64-bit "
                       "address space", i);
        if (of == i && !all_zero(r->d + off + len, (size_t)(pad8(len) - len)))
            return bad(r, off + len, "data segment %" PRIu32 ": padding is not zero", i);
        const void *src = of == i ? (const void *)(r->d + off) : (const void *)p->segs[of].bytes;
        ts_status st = ts_program_add_segment(p, kind, index, addr, src, len, r->err);
        if (st)
            return st;
        off += of == i ? pad8(len) : 0;
        if (i > 0) {
            const ts_segment *a = &p->segs[i - 1], *b = &p->segs[i];
            if (seg_cmp(a, b) > 0)
                return bad(r, so, "data segment %" PRIu32 " is out of order", i);
        }
    }
    if (nd) { /* stored bytes are stored once: the writer's choice, so each program has one file */
        uint32_t *first = seg_firsts(p->segs, nd);
        if (!first)
            return ts_err_set(r->err, TS_ENOMEM, "out of memory");
        for (uint32_t i = 0; i < nd; i++)
            if (first[i] != get_u32(r->d + segtab + (uint64_t)i * SEG_REC + 20)) {
                uint32_t f = first[i];
                ts_free(first);
                return bad(r, segtab + (uint64_t)i * SEG_REC + 20, "data segment %" PRIu32 ": its bytes are "
                           "segment %" PRIu32 "'s, stored again", i, f);
            }
        ts_free(first);
    }
    /* Overlaps: segments are sorted, so track the furthest end seen for the current target. */
    uint64_t reach = 0;
    for (uint32_t i = 0; i < nd; i++) {
        const ts_segment *s = &p->segs[i];
        if (i == 0 || key_cmp(s->kind, s->index, p->segs[i - 1].kind, p->segs[i - 1].index))
            reach = 0;
        if (s->len && s->addr < reach)
            return bad(r, segtab + (uint64_t)i * SEG_REC, "data segment %" PRIu32 " (%s %" PRIu32
                       " at 0x%" PRIx64 ") overlaps an earlier one", i, kind_name(isa, s->kind),
                       s->index, s->addr);
        if (s->len && s->addr + s->len > reach)
            reach = s->addr + s->len;
    }

    /* Symbol table, mark table, string table. */
    if ((uint64_t)ny * SYM_REC > end - off)
        return bad(r, 48, "%" PRIu32 " symbols do not fit in the file", ny);
    uint64_t symtab = off;
    off += (uint64_t)ny * SYM_REC;
    if (pad8((uint64_t)nm * MARK_REC) > end - off)
        return bad(r, 52, "%" PRIu32 " marks do not fit in the file", nm);
    uint64_t marktab = off;
    off += (uint64_t)nm * MARK_REC;
    if (!all_zero(r->d + off, (size_t)(pad8(off) - off)))
        return bad(r, off, "padding after the mark table is not zero");
    off = pad8(off);
    if (pad8(strsize) != end - off)
        return bad(r, 56, "string table of %" PRIu32 " bytes does not match the %" PRIu64
                   " bytes left in the file", strsize, end - off);
    uint64_t strtab = off;
    if (!all_zero(r->d + off + strsize, (size_t)(pad8(strsize) - strsize)))
        return bad(r, off + strsize, "padding after the string table is not zero");

    if (wl != NO_STRING) {
        const char *w = get_string(r, strtab, strsize, wl, 60, "workload name");
        if (!w)
            return TS_EINPUT;
        if (!(p->workload = ts_strdup(w)))
            return ts_err_set(r->err, TS_ENOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < ny; i++) {
        const unsigned char *s = r->d + symtab + (uint64_t)i * SYM_REC;
        uint64_t so = symtab + (uint64_t)i * SYM_REC;
        char what[40];
        snprintf(what, sizeof what, "symbol %" PRIu32, i);
        const char *name = get_string(r, strtab, strsize, get_u32(s), so, what);
        if (!name)
            return TS_EINPUT;
        uint32_t kind = get_u32(s + 4), stream = get_u32(s + 8);
        int64_t value = (int64_t)get_u64(s + 16);
        if (get_u32(s + 12))
            return bad(r, so + 12, "symbol '%s': reserved field is not zero", name);
        if (!is_ident(name))
            return bad(r, so, "symbol name '%s' is not an identifier", name);
        if (kind == TS_SYM_LABEL) {
            if (stream >= ns)
                return bad(r, so + 8, "label '%s': stream %" PRIu32 " does not exist (%" PRIu32
                           " streams)", name, stream, ns);
            if (value < 0 || value > p->streams[stream].n)
                return bad(r, so + 16, "label '%s': pc %" PRId64 " is outside its stream (%" PRIu32
                           " instructions)", name, value, p->streams[stream].n);
        } else if (kind == TS_SYM_CONST) {
            if (stream != 0)
                return bad(r, so + 8, "constant '%s': stream is %" PRIu32 ", not 0", name, stream);
        } else {
            return bad(r, so + 4, "symbol '%s': kind %" PRIu32 " is neither label (0) nor "
                       "constant (1)", name, kind);
        }
        ts_status st = ts_program_add_symbol(p, name, kind, stream, value, r->err);
        if (st)
            return st;
        if (i > 0 && sym_cmp(&p->syms[i - 1], &p->syms[i]) >= 0)
            return bad(r, so, "symbol '%s' is a duplicate or out of order", name);
    }
    if (ny > 1) { /* one label name per stream, one constant name per program */
        symref *ix = ts_malloc(ny * sizeof *ix);
        if (!ix)
            return ts_err_set(r->err, TS_ENOMEM, "out of memory");
        for (uint32_t i = 0; i < ny; i++)
            ix[i] = (symref){&p->syms[i], symtab + (uint64_t)i * SYM_REC};
        qsort(ix, ny, sizeof *ix, symref_cmp);
        for (uint32_t i = 1; i < ny; i++) {
            const ts_symbol *a = ix[i - 1].s, *b = ix[i].s;
            if (a->kind == b->kind && (a->kind == TS_SYM_CONST || a->stream == b->stream) &&
                !strcmp(a->name, b->name)) {
                uint64_t o = ix[i].off;
                ts_free(ix);
                return bad(r, o, "%s '%s' is defined twice", b->kind == TS_SYM_LABEL ? "label" :
                           "constant", b->name);
            }
        }
        ts_free(ix);
    }
    for (uint32_t i = 0; i < nm; i++) {
        const unsigned char *s = r->d + marktab + (uint64_t)i * MARK_REC;
        uint64_t so = marktab + (uint64_t)i * MARK_REC;
        uint32_t stream = get_u32(s), pc = get_u32(s + 4), id = get_u32(s + 8);
        if (stream >= ns)
            return bad(r, so, "mark %" PRIu32 ": stream %" PRIu32 " does not exist (%" PRIu32
                       " streams)", i, stream, ns);
        if (pc > p->streams[stream].n)
            return bad(r, so + 4, "mark %" PRIu32 ": pc %" PRIu32 " is past the end of its stream "
                       "(%" PRIu32 " instructions)", i, pc, p->streams[stream].n);
        ts_status st = ts_program_add_mark(p, stream, pc, id, r->err);
        if (st)
            return st;
        if (i > 0 && mark_cmp(&p->marks[i - 1], &p->marks[i]) > 0)
            return bad(r, so, "mark %" PRIu32 " is out of order", i);
    }
    return TS_OK;
}

ts_status ts_program_decode(ts_program **out, const char *name, const void *data, size_t len,
                            const ts_isa *isa, ts_err *err)
{
    return ts_program_decode_opt(out, name, data, len, isa, false, err);
}

ts_status ts_program_decode_opt(ts_program **out, const char *name, const void *data, size_t len,
                                const ts_isa *isa, bool packed, ts_err *err)
{
    *out = NULL;
    rd r = {.d = data, .len = len, .name = name ? name : "", .isa = isa, .packed = packed, .err = err};
    const unsigned char *h = data;
    if (len < sizeof magic || memcmp(h, magic, sizeof magic))
        return bad(&r, 0, "not a tessera program (bad magic)");
    if (len < HDR_SIZE)
        return bad(&r, len, "truncated header (%zu of %u bytes)", len, HDR_SIZE);
    uint32_t version = get_u32(h + 8);
    if (version > TS_PROGRAM_VERSION)
        return bad(&r, 8, "program format version %" PRIu32 " is newer than this tessera (%d)",
                   version, TS_PROGRAM_VERSION);
    if (version == 0)
        return bad(&r, 8, "program format version 0 is not valid");
    if (version < TS_PROGRAM_VERSION)
        return bad(&r, 8, "program format version %" PRIu32 " is no longer read (this tessera reads %d): "
                   "recompile the program", version, TS_PROGRAM_VERSION);
    if (get_u32(h + 12) != HDR_SIZE)
        return bad(&r, 12, "header size is %" PRIu32 ", expected %u", get_u32(h + 12), HDR_SIZE);
    const char *arch = (const char *)h + 16;
    size_t alen = strnlen(arch, 16);
    if (alen == 16)
        return bad(&r, 16, "arch name is not NUL-terminated");
    if (!all_zero(h + 16 + alen, 16 - alen))
        return bad(&r, 16 + alen, "arch name padding is not zero");
    if (strcmp(arch, isa->arch))
        return bad(&r, 16, "program is for arch '%s', not '%s'", arch, isa->arch);
    if (get_u32(h + 76))
        return bad(&r, 76, "reserved header field is not zero");
    uint64_t psize = get_u64(h + 64);
    if (psize != len - HDR_SIZE)
        return bad(&r, 64, "payload size is %" PRIu64 " bytes, but %zu follow the header%s", psize,
                   len - HDR_SIZE, psize > len - HDR_SIZE ? " (truncated file)" : "");
    uint32_t crc = file_crc(h, len), stored = get_u32(h + 72);
    if (crc != stored)
        return bad(&r, 72, "checksum mismatch (stored 0x%08" PRIx32 ", computed 0x%08" PRIx32
                   "): the file is corrupt", stored, crc);

    ts_program *p = ts_program_create(isa->arch);
    if (!p)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    p->config_fp = get_u64(h + 32);
    ts_status st = decode_payload(&r, p, h);
    if (st) {
        ts_program_destroy(p);
        return st;
    }
    *out = p;
    return TS_OK;
}

ts_status ts_program_write(const ts_program *p, const char *path, ts_err *err)
{
    ts_buf b = TS_BUF_INIT;
    ts_status st = ts_program_encode(p, &b, err);
    if (!st)
        st = ts_write_file_atomic(path, b.data, b.len, err);
    ts_buf_free(&b);
    return st;
}

ts_status ts_program_read(ts_program **out, const char *path, const ts_isa *isa, ts_err *err)
{
    *out = NULL;
    char *data;
    size_t len;
    ts_status st = ts_read_file(path, &data, &len, err);
    if (st)
        return st;
    st = ts_program_decode(out, path, data, len, isa, err);
    ts_free(data);
    return st;
}

int ts_program_peek_arch(const void *data, size_t len, char arch[16])
{
    const unsigned char *h = data;
    if (len < HDR_SIZE || memcmp(h, magic, sizeof magic) || !memchr(h + 16, 0, 16))
        return -1;
    memcpy(arch, h + 16, 16);
    return 0;
}

ts_status ts_program_check_config(const ts_program *p, uint64_t config_fp, const char *config_name,
                                  ts_err *err)
{
    if (p->config_fp == 0 || p->config_fp == config_fp)
        return TS_OK;
    return ts_err_set(err, TS_EINPUT, "program was compiled for config fingerprint %016" PRIx64
                      ", not for '%s' (%016" PRIx64 "): recompile it for this config", p->config_fp,
                      config_name ? config_name : "", config_fp);
}
