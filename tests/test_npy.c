/* tests/test_npy.c — NumPy arrays (core/npy.h): files numpy wrote (tests/data/npy/, made by
 * numpy 1.24's np.save, np.savez and np.savez_compressed) read back, every dtype written and
 * read again, and malformed input refused with a message naming the file and entry. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/limit.h"
#include "core/npy.h"

static char *data_path(const char *name)
{
    const char *r = getenv("TS_SOURCE_ROOT");
    static char p[4][1024];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/tests/data/npy/%s", r ? r : ".", name);
    return p[k];
}

START_TEST(test_numpy_files)
{
    ts_err e;
    ts_err_init(&e);
    ts_npz z;
    ck_assert_int_eq(ts_npz_read(data_path("stored.npz"), &z, &e), TS_OK);
    ck_assert_uint_eq(z.n, 2);
    const ts_npy_array *a = ts_npz_find(&z, "a"), *b = ts_npz_find(&z, "b");
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(a->dtype, TS_NPY_F32);
    ck_assert_int_eq(a->rank, 2);
    ck_assert_int_eq(a->dims[0], 2);
    ck_assert_int_eq(a->dims[1], 3);
    for (int i = 0; i < 6; i++)
        ck_assert_double_eq(ts_npy_get(a, (uint64_t)i), i);
    ck_assert_int_eq(b->dtype, TS_NPY_I8);
    ck_assert_double_eq(ts_npy_get(b, 1), -2);
    ts_npz_free(&z);

    ck_assert_int_eq(ts_npz_read(data_path("deflated.npz"), &z, &e), TS_OK);
    ck_assert_uint_eq(z.n, 6);
    const ts_npy_array *x = ts_npz_find(&z, "x");
    ck_assert_int_eq(x->dtype, TS_NPY_F16);
    ck_assert_double_eq(ts_npy_get(x, 99), 99);
    const ts_npy_array *s = ts_npz_find(&z, "s");
    ck_assert_int_eq(s->rank, 0);
    ck_assert_double_eq(ts_npy_get(s, 0), 2.5);
    ck_assert_double_eq(ts_npy_get(ts_npz_find(&z, "t"), 0), 1);
    ck_assert_double_eq(ts_npy_get(ts_npz_find(&z, "u"), 2), 2);
    ck_assert_double_eq(ts_npy_get(ts_npz_find(&z, "v"), 3), 3);
    ck_assert_double_eq(ts_npy_get(ts_npz_find(&z, "w"), 4), 4);
    ts_npz_free(&z);

    static const char *const one[] = {"one.npy", "v2.npy", "v3.npy"};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(ts_npz_read(data_path(one[i]), &z, &e), TS_OK);
        ck_assert_uint_eq(z.n, 1);
        ck_assert_double_eq(ts_npy_get(&z.v[0], 2), 2);
        ts_npz_free(&z);
    }
    ck_assert_int_eq(ts_npz_read(data_path("one.npy"), &z, &e), TS_OK);
    ck_assert_str_eq(z.v[0].name, "one");
    ck_assert_int_eq(z.v[0].rank, 3);
    ts_npz_free(&z);

    ck_assert_int_eq(ts_npz_read(data_path("big.npy"), &z, &e), TS_EINPUT);
    ck_assert_ptr_nonnull(strstr(e.msg, "big-endian"));
    ck_assert_int_eq(ts_npz_read(data_path("fortran.npy"), &z, &e), TS_EINPUT);
    ck_assert_ptr_nonnull(strstr(e.msg, "Fortran"));
    ts_err_free(&e);
}
END_TEST

START_TEST(test_roundtrip)
{
    /* every dtype, ranks 0 to 8, through .npz and .npy files */
    ts_npy_array v[TS_NPY_DTYPE_COUNT];
    char names[TS_NPY_DTYPE_COUNT][16];
    for (int t = 0; t < TS_NPY_DTYPE_COUNT; t++) {
        ts_npy_array *a = &v[t];
        memset(a, 0, sizeof *a);
        snprintf(names[t], sizeof names[t], "t%d", t);
        a->name = names[t];
        a->dtype = (ts_npy_dtype)t;
        a->rank = t;
        for (int i = 0; i < t; i++)
            a->dims[i] = i == 0 ? 3 : 1;
        a->nbytes = ts_npy_elems(a) * ts_npy_dtype_size(a->dtype);
        a->data = ts_calloc(1, a->nbytes);
        memset(a->data, 1, a->nbytes);
    }
    char path[] = "/tmp/ts_test_npy_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_npz_write(path, v, TS_NPY_DTYPE_COUNT, &e), TS_OK);
    ts_npz z;
    ck_assert_int_eq(ts_npz_read(path, &z, &e), TS_OK);
    ck_assert_uint_eq(z.n, TS_NPY_DTYPE_COUNT);
    for (int t = 0; t < TS_NPY_DTYPE_COUNT; t++) {
        ck_assert_str_eq(z.v[t].name, names[t]);
        ck_assert_int_eq(z.v[t].dtype, t);
        ck_assert_int_eq(z.v[t].rank, t);
        ck_assert_uint_eq(z.v[t].nbytes, v[t].nbytes);
        ck_assert_int_eq(memcmp(z.v[t].data, v[t].data, v[t].nbytes), 0);
    }
    ts_npz_free(&z);
    unlink(path);
    char npy[64];
    snprintf(npy, sizeof npy, "%s.npy", path);
    ck_assert_int_eq(ts_npz_write(npy, &v[0], 1, &e), TS_OK);
    ck_assert_int_eq(ts_npz_read(npy, &z, &e), TS_OK);
    ck_assert_uint_eq(z.n, 1);
    ck_assert_uint_eq(z.v[0].nbytes, v[0].nbytes);
    ts_npz_free(&z);
    unlink(npy);
    for (int t = 0; t < TS_NPY_DTYPE_COUNT; t++)
        ts_free(v[t].data);
    ts_err_free(&e);
}
END_TEST

/* Parse a .npy header (with a correct preamble) followed by `data` bytes. */
static ts_status parse_hdr(const char *dict, size_t data, ts_err *e)
{
    size_t hl = strlen(dict);
    unsigned char *buf = ts_calloc(1, 10 + hl + data);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)(hl & 0xff);
    buf[9] = (unsigned char)(hl >> 8);
    memcpy(buf + 10, dict, hl);
    ts_npy_array a;
    ts_status rc = ts_npy_parse(buf, 10 + hl + data, "x.npz", "w", &a, e);
    if (rc == TS_OK)
        ts_npy_array_free(&a);
    ts_free(buf);
    return rc;
}

START_TEST(test_errors)
{
    static const struct {
        const char *dict;
        size_t data;
        const char *want;
    } cases[] = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", 8, NULL},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", 7, "the data has 7 bytes"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", 9, "the data has 9 bytes"},
        {"{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }\n", 16, "dtype '<c8' is not supported"},
        {"{'descr': '<f4', 'fortran_order': False}\n", 4, "has no 'shape'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}\n", 8, "unknown key 'x'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2), }\n", 8, "not a tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }\n", 4, "more than 8 dimensions"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000), }\n", 0, "more than the limit"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999,), }\n", 0, "above 2^50"},
        {"['descr']\n", 0, "not a dict"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ts_err e;
        ts_err_init(&e);
        ts_status rc = parse_hdr(cases[i].dict, cases[i].data, &e);
        if (!cases[i].want) {
            ck_assert_msg(rc == TS_OK, "case %zu: %s", i, e.msg);
        } else {
            ck_assert_msg(rc == TS_EINPUT && strstr(e.msg, cases[i].want), "case %zu: got '%s'", i, e.msg);
            ck_assert_str_eq(e.file, "x.npz");
            ck_assert_msg(!strncmp(e.msg, "entry 'w': ", 11), "case %zu: '%s'", i, e.msg);
        }
        ts_err_free(&e);
    }
}
END_TEST

START_TEST(test_zip_errors)
{
    /* a stored archive with a byte of its data changed fails its CRC; cut short, it has no end */
    char *d;
    size_t n;
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_read_file(data_path("stored.npz"), &d, &n, &e), TS_OK);
    ts_npz z;
    d[200] ^= 1;
    ck_assert_int_eq(ts_npz_parse(d, n, "s.npz", &z, &e), TS_EINPUT);
    ck_assert_ptr_nonnull(strstr(e.msg, "CRC-32"));
    d[200] ^= 1;
    ck_assert_int_eq(ts_npz_parse(d, n - 1, "s.npz", &z, &e), TS_EINPUT);
    ck_assert_ptr_nonnull(strstr(e.msg, "no zip end record"));
    /* the same archive with a tensor limit below its arrays */
    ts_limit_set(TS_LIMIT_TENSOR_ELEMS, 4);
    ck_assert_int_eq(ts_npz_parse(d, n, "s.npz", &z, &e), TS_EINPUT);
    ck_assert_ptr_nonnull(strstr(e.msg, "entry 'a': the array has 6 elements, more than the limit of 4"));
    ts_limits_reset();
    ck_assert_int_eq(ts_npz_parse(d, n, "s.npz", &z, &e), TS_OK);
    ts_npz_free(&z);
    ts_free(d);
    ts_err_free(&e);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("npy");
    TCase *t = tcase_create("npy");
    tcase_add_test(t, test_numpy_files);
    tcase_add_test(t, test_roundtrip);
    tcase_add_test(t, test_errors);
    tcase_add_test(t, test_zip_errors);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
