/* core/npy.c — NumPy .npy and .npz reading and writing (core/npy.h). */
#include "core/npy.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/half.h"
#include "core/limit.h"

static const struct {
    const char *descr, *name;
    size_t size;
} dtypes[TS_NPY_DTYPE_COUNT] = {
    [TS_NPY_F32] = {"<f4", "f32", 4}, [TS_NPY_F16] = {"<f2", "f16", 2}, [TS_NPY_F64] = {"<f8", "f64", 8},
    [TS_NPY_I8] = {"|i1", "i8", 1},   [TS_NPY_U8] = {"|u1", "u8", 1},   [TS_NPY_I32] = {"<i4", "i32", 4},
    [TS_NPY_I64] = {"<i8", "i64", 8}, [TS_NPY_BOOL] = {"|b1", "bool", 1},
};

size_t ts_npy_dtype_size(ts_npy_dtype dt) { return dt < TS_NPY_DTYPE_COUNT ? dtypes[dt].size : 0; }
const char *ts_npy_dtype_descr(ts_npy_dtype dt) { return dt < TS_NPY_DTYPE_COUNT ? dtypes[dt].descr : "?"; }
const char *ts_npy_dtype_name(ts_npy_dtype dt) { return dt < TS_NPY_DTYPE_COUNT ? dtypes[dt].name : "?"; }

uint64_t ts_npy_elems(const ts_npy_array *a)
{
    uint64_t n = 1;
    for (int i = 0; i < a->rank; i++)
        n *= (uint64_t)a->dims[i];
    return n;
}

double ts_npy_get(const ts_npy_array *a, uint64_t i)
{
    const unsigned char *p = (const unsigned char *)a->data + i * dtypes[a->dtype].size;
    switch (a->dtype) {
    case TS_NPY_F32: { float v; memcpy(&v, p, 4); return v; }
    case TS_NPY_F16: { uint16_t h; memcpy(&h, p, 2); return ts_f16_to_f32(h); }
    case TS_NPY_F64: { double v; memcpy(&v, p, 8); return v; }
    case TS_NPY_I8: return (double)(int8_t)p[0];
    case TS_NPY_U8: return p[0];
    case TS_NPY_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case TS_NPY_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case TS_NPY_BOOL: return p[0] ? 1 : 0;
    default: return 0;
    }
}

/* "file: entry 'x': msg" (the entry part only for an archive's entry). */
static ts_status fail(ts_err *err, ts_status st, const char *file, const char *entry, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static ts_status fail(ts_err *err, ts_status st, const char *file, const char *entry, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (entry)
        return ts_err_at(err, st, file ? file : "", 0, 0, "entry '%.200s': %s", entry, msg);
    return ts_err_at(err, st, file ? file : "", 0, 0, "%s", msg);
}

/* ---- the .npy header: a Python dict literal ---- */

typedef struct hdr {
    const char *p, *end;
} hdr;

static void skip_ws(hdr *h)
{
    while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r'))
        h->p++;
}

static bool take(hdr *h, char c)
{
    skip_ws(h);
    if (h->p < h->end && *h->p == c) {
        h->p++;
        return true;
    }
    return false;
}

/* A quoted string ('...' or "...", no escapes) into out (at most n - 1 bytes); false if malformed. */
static bool quoted(hdr *h, char *out, size_t n)
{
    skip_ws(h);
    if (h->p >= h->end || (*h->p != '\'' && *h->p != '"'))
        return false;
    char q = *h->p++;
    size_t k = 0;
    while (h->p < h->end && *h->p != q) {
        if (*h->p == '\\' || k + 1 >= n)
            return false;
        out[k++] = *h->p++;
    }
    if (h->p >= h->end)
        return false;
    h->p++;
    out[k] = 0;
    return true;
}

static bool word(hdr *h, const char *w)
{
    skip_ws(h);
    size_t n = strlen(w);
    if ((size_t)(h->end - h->p) >= n && !memcmp(h->p, w, n)) {
        h->p += n;
        return true;
    }
    return false;
}

/* (d0, d1, ...) with an optional trailing comma; -1 malformed, -2 too many dimensions. */
static int shape_tuple(hdr *h, int64_t *dims, int *rank)
{
    if (!take(h, '('))
        return -1;
    *rank = 0;
    for (;;) {
        if (take(h, ')'))
            return 0;
        skip_ws(h);
        if (h->p >= h->end || *h->p < '0' || *h->p > '9')
            return -1;
        uint64_t v = 0;
        while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
            v = v * 10 + (uint64_t)(*h->p++ - '0');
            if (v > ((uint64_t)1 << 50))
                return -3;
        }
        if (*rank >= TS_NPY_MAX_RANK)
            return -2;
        dims[(*rank)++] = (int64_t)v;
        if (take(h, ','))
            continue;
        if (take(h, ')'))
            return *rank == 1 ? -1 : 0; /* "(5)" is not a tuple */
        return -1;
    }
}

static ts_status parse_descr(const char *d, ts_npy_dtype *out, const char *file, const char *entry, ts_err *err)
{
    for (int i = 0; i < TS_NPY_DTYPE_COUNT; i++) {
        const char *w = dtypes[i].descr;
        if (!strcmp(d, w) || (dtypes[i].size == 1 && d[0] == '<' && !strcmp(d + 1, w + 1)) ||
            (dtypes[i].size == 1 && d[0] == '>' && !strcmp(d + 1, w + 1))) {
            *out = (ts_npy_dtype)i;
            return TS_OK;
        }
    }
    if (d[0] == '>')
        return fail(err, TS_EINPUT, file, entry, "big-endian data ('%s') is not supported: save it little-endian", d);
    return fail(err, TS_EINPUT, file, entry,
                "dtype '%s' is not supported (f32, f16, f64, i8, u8, i32, i64 or bool: '<f4', '<f2', '<f8', '|i1', "
                "'|u1', '<i4', '<i8', '|b1')", d);
}

/* The header dict into a (dtype, rank, dims); every key exactly once, no other key. */
static ts_status parse_header(const char *p, size_t n, ts_npy_array *a, const char *file, const char *entry,
                              ts_err *err)
{
    hdr h = {p, p + n};
    bool seen[3] = {false, false, false};
    if (!take(&h, '{'))
        return fail(err, TS_EINPUT, file, entry, "the header is not a dict (it must start with '{')");
    for (;;) {
        if (take(&h, '}'))
            break;
        char key[32], val[32];
        if (!quoted(&h, key, sizeof key) || !take(&h, ':'))
            return fail(err, TS_EINPUT, file, entry, "the header's dict is malformed at byte %td", h.p - p);
        if (!strcmp(key, "descr")) {
            if (seen[0] || !quoted(&h, val, sizeof val))
                return fail(err, TS_EINPUT, file, entry, "the header's 'descr' is malformed or repeated");
            ts_status rc = parse_descr(val, &a->dtype, file, entry, err);
            if (rc != TS_OK)
                return rc;
            seen[0] = true;
        } else if (!strcmp(key, "fortran_order")) {
            if (seen[1])
                return fail(err, TS_EINPUT, file, entry, "the header's 'fortran_order' is repeated");
            if (word(&h, "True"))
                return fail(err, TS_EINPUT, file, entry, "Fortran-order data is not supported: save it in C order");
            if (!word(&h, "False"))
                return fail(err, TS_EINPUT, file, entry, "the header's 'fortran_order' is neither True nor False");
            seen[1] = true;
        } else if (!strcmp(key, "shape")) {
            if (seen[2])
                return fail(err, TS_EINPUT, file, entry, "the header's 'shape' is repeated");
            int rc = shape_tuple(&h, a->dims, &a->rank);
            if (rc == -2)
                return fail(err, TS_EINPUT, file, entry, "the shape has more than %d dimensions", TS_NPY_MAX_RANK);
            if (rc == -3)
                return fail(err, TS_EINPUT, file, entry, "a dimension of the shape is above 2^50");
            if (rc)
                return fail(err, TS_EINPUT, file, entry, "the header's 'shape' is not a tuple of whole numbers");
            seen[2] = true;
        } else {
            return fail(err, TS_EINPUT, file, entry, "the header has an unknown key '%s'", key);
        }
        if (!take(&h, ','))  {
            if (take(&h, '}'))
                break;
            return fail(err, TS_EINPUT, file, entry, "the header's dict is malformed at byte %td", h.p - p);
        }
    }
    skip_ws(&h);
    if (h.p != h.end)
        return fail(err, TS_EINPUT, file, entry, "the header has text after its dict");
    static const char *const keys[3] = {"descr", "fortran_order", "shape"};
    for (int i = 0; i < 3; i++)
        if (!seen[i])
            return fail(err, TS_EINPUT, file, entry, "the header has no '%s'", keys[i]);
    return TS_OK;
}

/* Elements and bytes against core/limit.h. */
static ts_status check_size(const ts_npy_array *a, uint64_t *bytes, const char *file, const char *entry,
                            ts_err *err)
{
    uint64_t elems = 1, max_e = ts_limit(TS_LIMIT_TENSOR_ELEMS), max_b = ts_limit(TS_LIMIT_TENSOR_BYTES);
    for (int i = 0; i < a->rank; i++) {
        if (a->dims[i] && elems > UINT64_MAX / 8 / (uint64_t)a->dims[i])
            return fail(err, TS_EINPUT, file, entry, "the shape has more than 2^61 elements");
        elems *= (uint64_t)a->dims[i];
    }
    if (elems > max_e)
        return fail(err, TS_EINPUT, file, entry,
                    "the array has %" PRIu64 " elements, more than the limit of %" PRIu64 " " TS_LIMIT_HINT_FMT, elems,
                    max_e, ts_limit_name(TS_LIMIT_TENSOR_ELEMS));
    *bytes = elems * dtypes[a->dtype].size;
    if (*bytes > max_b)
        return fail(err, TS_EINPUT, file, entry,
                    "the array has %" PRIu64 " bytes, more than the limit of %" PRIu64 " " TS_LIMIT_HINT_FMT, *bytes,
                    max_b, ts_limit_name(TS_LIMIT_TENSOR_BYTES));
    return TS_OK;
}

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

ts_status ts_npy_parse(const void *data, size_t len, const char *file, const char *entry, ts_npy_array *out,
                       ts_err *err)
{
    memset(out, 0, sizeof *out);
    const unsigned char *d = data;
    if (len < 10 || memcmp(d, "\x93NUMPY", 6))
        return fail(err, TS_EINPUT, file, entry, "not a .npy array (no \\x93NUMPY magic)");
    unsigned major = d[6], minor = d[7];
    if (major < 1 || major > 3 || minor != 0)
        return fail(err, TS_EINPUT, file, entry, ".npy format %u.%u is not supported (1.0, 2.0 or 3.0)", major, minor);
    size_t pre = major == 1 ? 10 : 12;
    if (len < pre)
        return fail(err, TS_EINPUT, file, entry, "the file ends inside its preamble");
    uint64_t hlen = major == 1 ? rd16(d + 8) : rd32(d + 8);
    if (hlen > len - pre)
        return fail(err, TS_EINPUT, file, entry, "the header of %" PRIu64 " bytes runs past the end of the %zu-byte file",
                    hlen, len);
    ts_npy_array a = {0};
    ts_status rc = parse_header((const char *)d + pre, (size_t)hlen, &a, file, entry, err);
    uint64_t bytes = 0;
    if (rc == TS_OK)
        rc = check_size(&a, &bytes, file, entry, err);
    if (rc != TS_OK)
        return rc;
    uint64_t have = len - pre - hlen;
    if (have != bytes)
        return fail(err, TS_EINPUT, file, entry, "the data has %" PRIu64 " bytes, the header's shape and dtype say %" PRIu64,
                    have, bytes);
    a.data = ts_malloc(bytes ? (size_t)bytes : 1);
    a.name = entry ? ts_strdup(entry) : NULL;
    if (!a.data || (entry && !a.name)) {
        ts_npy_array_free(&a);
        return fail(err, TS_ENOMEM, file, entry, "out of memory for %" PRIu64 " bytes", bytes);
    }
    memcpy(a.data, d + pre + hlen, (size_t)bytes);
    a.nbytes = (size_t)bytes;
    if (a.dtype == TS_NPY_BOOL)
        for (size_t i = 0; i < a.nbytes; i++)
            if (((unsigned char *)a.data)[i] > 1) {
                ts_npy_array_free(&a);
                return fail(err, TS_EINPUT, file, entry, "bool element %zu is %u, not 0 or 1", i,
                            d[pre + hlen + i]);
            }
    *out = a;
    return TS_OK;
}

void ts_npy_array_free(ts_npy_array *a)
{
    if (!a)
        return;
    ts_free(a->name);
    ts_free(a->data);
    memset(a, 0, sizeof *a);
}

void ts_npz_free(ts_npz *z)
{
    if (!z)
        return;
    for (size_t i = 0; i < z->n; i++)
        ts_npy_array_free(&z->v[i]);
    ts_free(z->v);
    z->v = NULL;
    z->n = 0;
}

const ts_npy_array *ts_npz_find(const ts_npz *z, const char *name)
{
    for (size_t i = 0; i < z->n; i++)
        if (z->v[i].name && !strcmp(z->v[i].name, name))
            return &z->v[i];
    return NULL;
}

/* ---- .npz: a zip archive ---- */

#define ZIP_MAX_ENTRIES 100000 /* more than any model has tensors (graph_nodes is 100,000) */

typedef struct zip_dir {
    uint64_t n, size, off; /* entries, bytes and offset of the central directory */
} zip_dir;

/* The end-of-central-directory record (and its zip64 form when the record says so). */
static ts_status zip_end(const unsigned char *d, size_t len, const char *file, zip_dir *z, ts_err *err)
{
    if (len < 22)
        return fail(err, TS_EINPUT, file, NULL, "the archive is shorter than a zip end record");
    size_t lo = len - 22 > 65535 ? len - 22 - 65535 : 0;
    size_t e = len - 22 + 1;
    while (e-- > lo)
        if (!memcmp(d + e, "PK\5\6", 4) && e + 22 + rd16(d + e + 20) == len)
            break;
    if (e + 1 == lo || memcmp(d + e, "PK\5\6", 4))
        return fail(err, TS_EINPUT, file, NULL, "not a .npz archive (no zip end record)");
    if (rd16(d + e + 4) || rd16(d + e + 6) || rd16(d + e + 8) != rd16(d + e + 10))
        return fail(err, TS_EINPUT, file, NULL, "multi-disk zip archives are not supported");
    z->n = rd16(d + e + 10);
    z->size = rd32(d + e + 12);
    z->off = rd32(d + e + 16);
    if (z->n == 0xffff || z->size == 0xffffffffu || z->off == 0xffffffffu) {
        if (e < 20 || memcmp(d + e - 20, "PK\6\7", 4))
            return fail(err, TS_EINPUT, file, NULL, "the zip64 end locator is missing");
        uint64_t o = rd64(d + e - 20 + 8);
        if (len < 56 || o > len - 56 || memcmp(d + o, "PK\6\6", 4))
            return fail(err, TS_EINPUT, file, NULL, "the zip64 end record is missing or out of the file");
        z->n = rd64(d + o + 32);
        z->size = rd64(d + o + 40);
        z->off = rd64(d + o + 48);
    }
    if (z->off > len || z->size > len - z->off)
        return fail(err, TS_EINPUT, file, NULL, "the zip central directory lies outside the file");
    if (z->n > ZIP_MAX_ENTRIES)
        return fail(err, TS_EINPUT, file, NULL, "the archive has %" PRIu64 " entries, more than %d", z->n,
                    ZIP_MAX_ENTRIES);
    return TS_OK;
}

/* One central-directory entry's facts. */
typedef struct zip_entry {
    char name[256];
    unsigned method, flags;
    uint32_t crc;
    uint64_t csize, usize, lho;
    size_t next; /* offset of the next central entry */
} zip_entry;

static ts_status zip_central(const unsigned char *d, size_t len, size_t at, size_t cd_end, const char *file,
                             zip_entry *e, ts_err *err)
{
    if (at > cd_end || cd_end - at < 46 || memcmp(d + at, "PK\1\2", 4))
        return fail(err, TS_EINPUT, file, NULL, "a zip central directory entry is malformed at byte %zu", at);
    e->flags = rd16(d + at + 8);
    e->method = rd16(d + at + 10);
    e->crc = rd32(d + at + 16);
    e->csize = rd32(d + at + 20);
    e->usize = rd32(d + at + 24);
    size_t nl = rd16(d + at + 28), xl = rd16(d + at + 30), cl = rd16(d + at + 32);
    e->lho = rd32(d + at + 42);
    if (46 + nl + xl + cl > cd_end - at)
        return fail(err, TS_EINPUT, file, NULL, "a zip central directory entry runs past the directory at byte %zu", at);
    if (nl == 0 || nl >= sizeof e->name)
        return fail(err, TS_EINPUT, file, NULL, "a zip entry's name is empty or longer than %zu bytes",
                    sizeof e->name - 1);
    memcpy(e->name, d + at + 46, nl);
    e->name[nl] = 0;
    if (memchr(e->name, 0, nl))
        return fail(err, TS_EINPUT, file, NULL, "a zip entry's name holds a NUL byte");
    /* zip64 extra field (id 1): the fields that are 0xffffffff above, in this order */
    const unsigned char *x = d + at + 46 + nl, *xe = x + xl;
    while (xe - x >= 4) {
        unsigned id = rd16(x), sz = rd16(x + 2);
        if ((size_t)(xe - x - 4) < sz)
            break;
        if (id == 1) {
            const unsigned char *f = x + 4, *fe = f + sz;
            if (e->usize == 0xffffffffu && fe - f >= 8) { e->usize = rd64(f); f += 8; }
            if (e->csize == 0xffffffffu && fe - f >= 8) { e->csize = rd64(f); f += 8; }
            if (e->lho == 0xffffffffu && fe - f >= 8) { e->lho = rd64(f); f += 8; }
        }
        x += 4 + sz;
    }
    e->next = at + 46 + nl + xl + cl;
    (void)len;
    return TS_OK;
}

/* An entry's bytes: a view of the archive (stored) or a new buffer (deflated; *owned). */
static ts_status zip_data(const unsigned char *d, size_t len, const zip_entry *e, const char *file,
                          const unsigned char **out, unsigned char **owned, ts_err *err)
{
    *owned = NULL;
    const char *en = e->name;
    if (e->flags & 1)
        return fail(err, TS_EINPUT, file, en, "encrypted zip entries are not supported");
    if (e->lho > len || len - e->lho < 30 || memcmp(d + e->lho, "PK\3\4", 4))
        return fail(err, TS_EINPUT, file, en, "the zip local header is missing or out of the file");
    uint64_t start = e->lho + 30 + (uint64_t)rd16(d + e->lho + 26) + rd16(d + e->lho + 28);
    if (start > len || e->csize > len - start)
        return fail(err, TS_EINPUT, file, en, "the entry's %" PRIu64 " bytes run past the end of the archive", e->csize);
    /* no .npy the limits accept is larger than its data plus a header (which is 4 GiB at most in
     * format 2.0, but a real one is under 64 KiB) */
    uint64_t max = ts_limit(TS_LIMIT_TENSOR_BYTES);
    max = max > UINT64_MAX - 65536 ? UINT64_MAX : max + 65536;
    if (e->usize > max)
        return fail(err, TS_EINPUT, file, en,
                    "the entry has %" PRIu64 " bytes, more than the limit of %" PRIu64 " " TS_LIMIT_HINT_FMT, e->usize,
                    max, ts_limit_name(TS_LIMIT_TENSOR_BYTES));
    if (e->method == 0) {
        if (e->csize != e->usize)
            return fail(err, TS_EINPUT, file, en, "a stored entry's sizes differ (%" PRIu64 " and %" PRIu64 ")",
                        e->csize, e->usize);
        *out = d + start;
    } else if (e->method == 8) {
        unsigned char *buf = ts_malloc(e->usize ? (size_t)e->usize : 1);
        if (!buf)
            return fail(err, TS_ENOMEM, file, en, "out of memory for %" PRIu64 " bytes", e->usize);
        z_stream zs;
        memset(&zs, 0, sizeof zs);
        if (inflateInit2(&zs, -15) != Z_OK) {
            ts_free(buf);
            return fail(err, TS_ENOMEM, file, en, "zlib could not start");
        }
        /* sizes are in uInt steps: an entry is at most the tensor limit (1 GiB by default) */
        const unsigned char *src = d + start;
        uint64_t src_left = e->csize, dst_done = 0;
        int zr = Z_OK;
        while (zr == Z_OK) {
            uInt in = src_left > 0x40000000u ? 0x40000000u : (uInt)src_left;
            uint64_t room = e->usize - dst_done;
            uInt outn = room > 0x40000000u ? 0x40000000u : (uInt)room;
            zs.next_in = (Bytef *)(uintptr_t)src;
            zs.avail_in = in;
            zs.next_out = buf + dst_done;
            zs.avail_out = outn;
            zr = inflate(&zs, Z_NO_FLUSH);
            src += in - zs.avail_in;
            src_left -= in - zs.avail_in;
            dst_done += outn - zs.avail_out;
            if (zr == Z_OK && in == zs.avail_in && outn == zs.avail_out)
                zr = Z_BUF_ERROR; /* no progress: input or room used up */
        }
        inflateEnd(&zs);
        if (zr != Z_STREAM_END || dst_done != e->usize) {
            ts_free(buf);
            return fail(err, TS_EINPUT, file, en, "the deflated data is corrupt or not %" PRIu64 " bytes long", e->usize);
        }
        *out = *owned = buf;
    } else {
        return fail(err, TS_EINPUT, file, en, "zip compression method %u is not supported (stored or deflate)",
                    e->method);
    }
    if ((uint32_t)crc32_z(0, *out, (size_t)e->usize) != e->crc) {
        ts_free(*owned);
        *owned = NULL;
        return fail(err, TS_EINPUT, file, en, "the entry's CRC-32 does not match its data");
    }
    return TS_OK;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(((const ts_npy_array *)a)->name, ((const ts_npy_array *)b)->name);
}

/* Two arrays of one name: sort a copy of the list by name and compare neighbours. */
static ts_status check_unique(const ts_npz *z, const char *file, ts_err *err)
{
    if (z->n < 2)
        return TS_OK;
    ts_npy_array *s = ts_malloc(z->n * sizeof *s);
    if (!s)
        return fail(err, TS_ENOMEM, file, NULL, "out of memory");
    memcpy(s, z->v, z->n * sizeof *s);
    qsort(s, z->n, sizeof *s, cmp_names);
    ts_status rc = TS_OK;
    for (size_t i = 1; i < z->n && rc == TS_OK; i++)
        if (!strcmp(s[i].name, s[i - 1].name))
            rc = fail(err, TS_EINPUT, file, s[i].name, "the archive has two entries of this name");
    ts_free(s);
    return rc;
}

ts_status ts_npz_parse(const void *data, size_t len, const char *file, ts_npz *z, ts_err *err)
{
    z->v = NULL;
    z->n = 0;
    const unsigned char *d = data;
    zip_dir dir = {0, 0, 0};
    ts_status rc = zip_end(d, len, file, &dir, err);
    if (rc != TS_OK)
        return rc;
    if (dir.n) {
        z->v = ts_calloc((size_t)dir.n, sizeof *z->v);
        if (!z->v)
            return fail(err, TS_ENOMEM, file, NULL, "out of memory");
    }
    size_t at = (size_t)dir.off, cd_end = (size_t)(dir.off + dir.size);
    for (uint64_t i = 0; i < dir.n && rc == TS_OK; i++) {
        zip_entry e;
        rc = zip_central(d, len, at, cd_end, file, &e, err);
        if (rc != TS_OK)
            break;
        at = e.next;
        size_t nl = strlen(e.name);
        if (nl < 5 || strcmp(e.name + nl - 4, ".npy")) {
            rc = fail(err, TS_EINPUT, file, e.name, "not a .npy entry (a .npz holds only NAME.npy entries)");
            break;
        }
        const unsigned char *bytes = NULL;
        unsigned char *owned;
        rc = zip_data(d, len, &e, file, &bytes, &owned, err);
        if (rc != TS_OK)
            break;
        e.name[nl - 4] = 0;
        rc = ts_npy_parse(bytes, (size_t)e.usize, file, e.name, &z->v[z->n], err);
        ts_free(owned);
        if (rc == TS_OK)
            z->n++;
    }
    if (rc == TS_OK)
        rc = check_unique(z, file, err);
    if (rc != TS_OK)
        ts_npz_free(z);
    return rc;
}

ts_status ts_npz_read(const char *path, ts_npz *z, ts_err *err)
{
    z->v = NULL;
    z->n = 0;
    char *data;
    size_t len;
    ts_status rc = ts_read_file(path, &data, &len, err);
    if (rc != TS_OK)
        return rc;
    if (len >= 6 && !memcmp(data, "\x93NUMPY", 6)) {
        /* one array, named after the file's stem */
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        char stem[256];
        snprintf(stem, sizeof stem, "%s", base);
        char *dot = strrchr(stem, '.');
        if (dot && dot != stem)
            *dot = 0;
        z->v = ts_calloc(1, sizeof *z->v);
        rc = z->v ? ts_npy_parse(data, len, path, NULL, &z->v[0], err) : fail(err, TS_ENOMEM, path, NULL, "out of memory");
        if (rc == TS_OK && !(z->v[0].name = ts_strdup(stem))) {
            ts_npy_array_free(&z->v[0]);
            rc = fail(err, TS_ENOMEM, path, NULL, "out of memory");
        }
        if (rc == TS_OK)
            z->n = 1;
        else
            ts_npz_free(z);
    } else {
        rc = ts_npz_parse(data, len, path, z, err);
    }
    ts_free(data);
    return rc;
}

/* ---- writing ---- */

void ts_npy_encode(const ts_npy_array *a, ts_buf *out)
{
    ts_buf h = TS_BUF_INIT;
    ts_buf_printf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", dtypes[a->dtype].descr);
    for (int i = 0; i < a->rank; i++)
        ts_buf_printf(&h, "%s%" PRId64, i ? ", " : "", a->dims[i]);
    ts_buf_puts(&h, a->rank == 1 ? ",), }" : "), }");
    size_t total = 10 + h.len + 1; /* preamble, dict, newline */
    while (total % 64) {
        ts_buf_putc(&h, ' ');
        total++;
    }
    ts_buf_putc(&h, '\n');
    char pre[10] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0, (char)(h.len & 0xff), (char)(h.len >> 8)};
    ts_buf_put(out, pre, 10);
    ts_buf_put(out, ts_buf_str(&h), h.len);
    ts_buf_put(out, a->data, a->nbytes);
    if (h.oom)
        out->oom = true;
    ts_buf_free(&h);
}

static void put16(ts_buf *b, unsigned v)
{
    char c[2] = {(char)(v & 0xff), (char)(v >> 8 & 0xff)};
    ts_buf_put(b, c, 2);
}

static void put32(ts_buf *b, uint32_t v)
{
    put16(b, v & 0xffff);
    put16(b, v >> 16);
}

/* A zip header's fixed part after the signature, up to the name length (stored, 1980-01-01). */
static void zip_fields(ts_buf *b, uint32_t crc, uint32_t size, size_t nl)
{
    put16(b, 20);     /* version needed: 2.0 */
    put16(b, 0);      /* flags */
    put16(b, 0);      /* stored */
    put16(b, 0);      /* time 00:00 */
    put16(b, 0x21);   /* date 1980-01-01 */
    put32(b, crc);
    put32(b, size);   /* compressed */
    put32(b, size);   /* uncompressed */
    put16(b, (unsigned)nl);
    put16(b, 0);      /* extra */
}

ts_status ts_npz_encode(const ts_npy_array *v, size_t n, ts_buf *out, ts_err *err)
{
    if (n > ZIP_MAX_ENTRIES)
        return ts_err_set(err, TS_EINPUT, "%zu arrays are more than an archive holds here (%d)", n, ZIP_MAX_ENTRIES);
    uint32_t *crc = ts_calloc(n ? n : 1, sizeof *crc), *size = ts_calloc(n ? n : 1, sizeof *size);
    uint64_t *off = ts_calloc(n ? n : 1, sizeof *off);
    ts_status rc = crc && size && off ? TS_OK : ts_err_set(err, TS_ENOMEM, "out of memory");
    size_t base = out->len;
    ts_buf one = TS_BUF_INIT;
    for (size_t i = 0; i < n && rc == TS_OK; i++) {
        size_t nl = v[i].name ? strlen(v[i].name) : 0;
        if (!nl || nl + 4 > 65000) {
            rc = ts_err_set(err, TS_EINPUT, "array %zu has an empty or too long name for a .npz entry", i);
            break;
        }
        ts_buf_reset(&one);
        ts_npy_encode(&v[i], &one);
        if ((uint64_t)one.len >= 0xffffffffu || (uint64_t)(out->len - base) >= 0xffffffffu - one.len - 65100) {
            rc = ts_err_set(err, TS_EINPUT, "the arrays make an archive over 4 GiB, which needs zip64 (not written)");
            break;
        }
        off[i] = out->len - base;
        crc[i] = (uint32_t)crc32_z(0, (const Bytef *)one.data, one.len);
        size[i] = (uint32_t)one.len;
        ts_buf_put(out, "PK\3\4", 4);
        zip_fields(out, crc[i], size[i], nl + 4);
        ts_buf_puts(out, v[i].name);
        ts_buf_puts(out, ".npy");
        ts_buf_put(out, one.data ? one.data : "", one.len);
    }
    size_t cd = out->len - base;
    for (size_t i = 0; i < n && rc == TS_OK; i++) {
        size_t nl = strlen(v[i].name) + 4;
        ts_buf_put(out, "PK\1\2", 4);
        put16(out, 20); /* version made by */
        zip_fields(out, crc[i], size[i], nl);
        put16(out, 0);  /* comment */
        put16(out, 0);  /* disk */
        put16(out, 0);  /* internal attributes */
        put32(out, 0);  /* external attributes */
        put32(out, (uint32_t)off[i]);
        ts_buf_puts(out, v[i].name);
        ts_buf_puts(out, ".npy");
    }
    if (rc == TS_OK) {
        size_t cd_size = out->len - base - cd;
        ts_buf_put(out, "PK\5\6", 4);
        put16(out, 0);
        put16(out, 0);
        put16(out, (unsigned)n);
        put16(out, (unsigned)n);
        put32(out, (uint32_t)cd_size);
        put32(out, (uint32_t)cd);
        put16(out, 0);
        if (n > 0xffff)
            rc = ts_err_set(err, TS_EINPUT, "%zu arrays are more than a zip archive without zip64 holds", n);
    }
    if (rc == TS_OK && (out->oom || one.oom))
        rc = ts_err_set(err, TS_ENOMEM, "out of memory");
    ts_buf_free(&one);
    ts_free(crc);
    ts_free(size);
    ts_free(off);
    return rc;
}

ts_status ts_npz_write(const char *path, const ts_npy_array *v, size_t n, ts_err *err)
{
    ts_buf b = TS_BUF_INIT;
    size_t pl = strlen(path);
    ts_status rc = TS_OK;
    if (n == 1 && pl >= 4 && !strcmp(path + pl - 4, ".npy")) {
        ts_npy_encode(&v[0], &b);
        if (b.oom)
            rc = ts_err_set(err, TS_ENOMEM, "out of memory");
    } else {
        rc = ts_npz_encode(v, n, &b, err);
    }
    if (rc == TS_OK)
        rc = ts_write_file_atomic(path, b.data ? b.data : "", b.len, err);
    ts_buf_free(&b);
    return rc;
}
