/* fuzz/fuzz_npy.c — libFuzzer target for the NumPy reader (core/npy.c).
 *
 * The input is parsed as a .npz archive and as one .npy array, with the tensor limits at 2^20
 * elements and 16 MiB (a crafted size field must be refused before it is allocated, not after).
 * Every array that parses is encoded again, as .npy and inside a .npz, and must read back to the
 * same dtype, shape and bytes. Nothing may crash or leak.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/limit.h"
#include "core/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same(const ts_npy_array *a, const ts_npy_array *b, const char *what)
{
    if (a->dtype != b->dtype || a->rank != b->rank || a->nbytes != b->nbytes ||
        memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank) || (a->nbytes && memcmp(a->data, b->data, a->nbytes))) {
        fprintf(stderr, "fuzz_npy: %s does not read back the same array\n", what);
        abort();
    }
}

/* Encode a as .npy and .npz and read both back. */
static void roundtrip(const ts_npy_array *a)
{
    ts_err err;
    ts_err_init(&err);
    ts_buf b = TS_BUF_INIT;
    ts_npy_encode(a, &b);
    ts_npy_array back;
    if (ts_npy_parse(b.data, b.len, "re.npy", NULL, &back, &err) != TS_OK) {
        fprintf(stderr, "fuzz_npy: an encoded array does not parse: %s\n", err.msg);
        abort();
    }
    same(a, &back, ".npy");
    ts_npy_array_free(&back);
    ts_buf_reset(&b);
    ts_npy_array named = *a;
    named.name = (char *)"x";
    ts_npz z;
    if (ts_npz_encode(&named, 1, &b, &err) != TS_OK || ts_npz_parse(b.data, b.len, "re.npz", &z, &err) != TS_OK ||
        z.n != 1) {
        fprintf(stderr, "fuzz_npy: an encoded archive does not parse: %s\n", err.msg);
        abort();
    }
    same(a, &z.v[0], ".npz");
    ts_npz_free(&z);
    ts_buf_free(&b);
    ts_err_free(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ts_limit_set(TS_LIMIT_TENSOR_ELEMS, 1 << 20);
    ts_limit_set(TS_LIMIT_TENSOR_BYTES, 16 << 20);
    ts_err err;
    ts_err_init(&err);
    ts_npz z;
    if (ts_npz_parse(data, size, "fuzz.npz", &z, &err) == TS_OK) {
        for (size_t i = 0; i < z.n; i++)
            roundtrip(&z.v[i]);
        ts_npz_free(&z);
    }
    ts_err_free(&err);
    ts_err_init(&err);
    ts_npy_array a;
    if (ts_npy_parse(data, size, "fuzz.npy", NULL, &a, &err) == TS_OK) {
        roundtrip(&a);
        ts_npy_array_free(&a);
    }
    ts_err_free(&err);
    return 0;
}
