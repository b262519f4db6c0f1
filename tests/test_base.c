/* tests/test_base.c — errors, the allocation hook, text buffers, file I/O, hashes. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/fileio.h"
#include "core/half.h"
#include "core/limit.h"
#include "core/spec.h"
#include "core/suggest.h"

START_TEST(err_formats_position_unit_and_plain)
{
    ts_err e;
    char line[512];
    ts_err_init(&e);
    ck_assert_int_eq(ts_err_at(&e, TS_EINPUT, "chip.yaml", 3, 7, "unknown key '%s'", "clok"), TS_EINPUT);
    ts_err_format(&e, line, sizeof line);
    ck_assert_str_eq(line, "chip.yaml:3:7: unknown key 'clok'");
    ts_err_free(&e);

    ck_assert_int_eq(ts_err_sim(&e, 12, 3456, "load from 0x%x is out of range", 0x40000), TS_ESIM);
    ts_err_format(&e, line, sizeof line);
    ck_assert_str_eq(line, "tile 12, cycle 3456: load from 0x40000 is out of range");
    ts_err_append_detail(&e, "a\n");
    ts_err_append_detail(&e, "b\n");
    ck_assert_str_eq(e.detail, "a\nb\n");
    ts_err_free(&e);
    ck_assert_ptr_null(e.detail);

    ts_err_set(&e, TS_EIO, "cannot write");
    ts_err_format(&e, line, sizeof line);
    ck_assert_str_eq(line, "cannot write");
    ts_err_set(&e, TS_ENOMEM, "%s", "");
    ts_err_format(&e, line, sizeof line);
    ck_assert_str_eq(line, "out of memory");
    ts_err_free(&e);
}
END_TEST

START_TEST(alloc_hook_fails_nth_allocation)
{
    ts_alloc_fail_after(3);
    void *a = ts_malloc(8), *b = ts_malloc(8), *c = ts_malloc(8), *d = ts_malloc(8);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_null(c);
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(ts_alloc_failures(), 1);
    ts_alloc_fail_after(0);
    ts_free(a);
    ts_free(b);
    ts_free(d);
}
END_TEST

START_TEST(grow_doubles_capacity)
{
    int *v = NULL;
    size_t cap = 0;
    ck_assert_int_eq(ts_grow((void **)&v, &cap, 9, sizeof *v), 0);
    ck_assert_uint_eq(cap, 16);
    ck_assert_int_eq(ts_grow((void **)&v, &cap, 16, sizeof *v), 0);
    ck_assert_uint_eq(cap, 16);
    ts_alloc_fail_after(1);
    ck_assert_int_eq(ts_grow((void **)&v, &cap, 17, sizeof *v), -1);
    ck_assert_uint_eq(cap, 16);
    ts_alloc_fail_after(0);
    ts_free(v);
}
END_TEST

START_TEST(buf_appends_and_escapes)
{
    ts_buf b = TS_BUF_INIT;
    ck_assert_str_eq(ts_buf_str(&b), "");
    ts_buf_puts(&b, "x=");
    ts_buf_printf(&b, "%d;", 42);
    for (int i = 0; i < 100; i++)
        ts_buf_printf(&b, "%s", "0123456789");
    ck_assert_uint_eq(b.len, 5 + 1000);
    ts_buf_reset(&b);
    ts_buf_json_str(&b, "a\"b\\c\n\x01");
    ck_assert_str_eq(ts_buf_str(&b), "\"a\\\"b\\\\c\\n\\u0001\"");
    /* UTF-8 as it is; bytes that are not UTF-8 (a Latin-1 path) become '?' rather than lose it */
    ts_buf_reset(&b);
    ts_buf_json_str(&b, "caf\xc3\xa9");
    ck_assert_str_eq(ts_buf_str(&b), "\"caf\xc3\xa9\"");
    ts_buf_reset(&b);
    ts_buf_json_str(&b, "caf\xe9.s");
    ck_assert_str_eq(ts_buf_str(&b), "\"caf?.s\"");
    ts_buf_reset(&b);
    ts_buf_json_num(&b, 3.0);
    ts_buf_putc(&b, ' ');
    ts_buf_json_num(&b, 0.1);
    ts_buf_putc(&b, ' ');
    ts_buf_json_num(&b, 1.0 / 0.0);
    ts_buf_putc(&b, ' ');
    ts_buf_json_num(&b, 1e19); /* above 2^63: must not be converted to long long (fuzzer find) */
    ts_buf_putc(&b, ' ');
    ts_buf_json_num(&b, -9.5e15);
    ck_assert_str_eq(ts_buf_str(&b), "3 0.1 null 1e19 -9.5e15");
    ts_buf_free(&b);

    ts_alloc_fail_after(1);
    ts_buf_puts(&b, "lost");
    ts_alloc_fail_after(0);
    ck_assert(b.oom);
    ts_buf_puts(&b, "also lost");
    ck_assert_uint_eq(b.len, 0);
    ts_buf_free(&b);
}
END_TEST

START_TEST(buf_reserve_is_exact_and_holds)
{
    /* a reservation grows the buffer to exactly what it asks (and the NUL), and appends within it
     * keep the same memory; one that cannot allocate marks the buffer out of memory */
    ts_buf b = TS_BUF_INIT;
    ts_buf_puts(&b, "ab");
    ck_assert(ts_buf_reserve(&b, 1000));
    ck_assert_uint_eq(b.cap, 2 + 1000 + 1);
    const char *at = b.data;
    for (int i = 0; i < 100; i++)
        ts_buf_put(&b, "0123456789", 10);
    ck_assert_ptr_eq(b.data, at);
    ck_assert_uint_eq(b.len, 1002);
    ck_assert(ts_buf_reserve(&b, 0)); /* room already */
    ck_assert_uint_eq(b.cap, 1003);
    ts_alloc_fail_after(1);
    ck_assert(!ts_buf_reserve(&b, 1));
    ts_alloc_fail_after(0);
    ck_assert(b.oom);
    ts_buf_free(&b);
}
END_TEST

START_TEST(atomic_write_leaves_no_partial_file)
{
    char dir[] = "/tmp/ts_test_base_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256], bad[256];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    snprintf(bad, sizeof bad, "%s/missing/out.txt", dir);
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_write_file_atomic(path, "hello", 5, &e), TS_OK);
    char *data;
    size_t len;
    ck_assert_int_eq(ts_read_file(path, &data, &len, &e), TS_OK);
    ck_assert_uint_eq(len, 5);
    ck_assert_str_eq(data, "hello");
    ts_free(data);
    ck_assert_int_eq(ts_write_file_atomic(bad, "x", 1, &e), TS_EIO);
    ck_assert_str_eq(e.file, bad);
    ck_assert_int_eq(ts_read_file(bad, &data, &len, &e), TS_EIO);
    ck_assert_ptr_null(data);
    ts_err_free(&e);
    unlink(path);
    ck_assert_int_eq(rmdir(dir), 0); /* empty: no temporary file left behind */
}
END_TEST

/* The input limits: parsed from the TESSERA_LIMITS syntax, all or nothing; a file over
 * input_bytes is refused before it is read. */
START_TEST(limits_parse_and_bound_reads)
{
    char why[256];
    ck_assert_uint_eq(ts_limit(TS_LIMIT_TENSOR_ELEMS), UINT64_C(1) << 28);
    ck_assert_int_eq(ts_limits_parse("tensor_elems=64Mi,input_bytes=none,yaml_nodes=2k,graph_nodes=0", why,
                                     sizeof why), 0);
    ck_assert_uint_eq(ts_limit(TS_LIMIT_TENSOR_ELEMS), UINT64_C(64) << 20);
    ck_assert_uint_eq(ts_limit(TS_LIMIT_INPUT_BYTES), UINT64_MAX);
    ck_assert_uint_eq(ts_limit(TS_LIMIT_YAML_NODES), 2000);
    ck_assert_uint_eq(ts_limit(TS_LIMIT_GRAPH_NODES), UINT64_MAX);
    ck_assert_int_eq(ts_limits_parse("data_bytes=1G,tensor_bytes=12x", why, sizeof why), -1);
    ck_assert_str_eq(why, "limit 'tensor_bytes' needs a whole number like 4096, 64Mi or 2G, or none, got '12x'");
    ck_assert_uint_eq(ts_limit(TS_LIMIT_DATA_BYTES), UINT64_C(64) << 20); /* nothing applied */
    ck_assert_int_eq(ts_limits_parse("tensor=1", why, sizeof why), -1);
    ck_assert_str_eq(why, "unknown limit 'tensor' (limits: input_bytes, yaml_nodes, tensor_elems, tensor_bytes, "
                          "graph_nodes, range_units, data_bytes, program_bytes, sweep_points)");
    ck_assert_int_eq(ts_limits_parse("range_units=99999999999999999999", why, sizeof why), -1);
    ck_assert_int_eq(ts_limits_parse("range_units=20000000Ti", why, sizeof why), -1);
    ck_assert_int_eq(ts_limits_parse("range_units", why, sizeof why), -1);
    ts_limits_reset();
    ck_assert_uint_eq(ts_limit(TS_LIMIT_YAML_NODES), 1000000);

    char path[] = "/tmp/ts_test_limit_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "0123456789", 10), 10);
    close(fd);
    ts_limit_set(TS_LIMIT_INPUT_BYTES, 9);
    ts_err e;
    ts_err_init(&e);
    char *data = NULL;
    size_t len;
    ck_assert_int_eq(ts_read_file(path, &data, &len, &e), TS_EINPUT);
    ck_assert_ptr_null(data);
    ck_assert_str_eq(e.msg, "the file is 10 bytes, more than the limit of 9 bytes (raise it with "
                            "TESSERA_LIMITS=input_bytes=N)");
    ts_limit_set(TS_LIMIT_INPUT_BYTES, 10);
    ck_assert_int_eq(ts_read_file(path, &data, &len, &e), TS_OK);
    ck_assert_uint_eq(len, 10);
    ts_free(data);
    ts_limits_reset();
    ts_err_free(&e);
    unlink(path);
}
END_TEST

/* Temporary files: tracked ones are removed by ts_tmp_remove_all (what the CLI's signal handler
 * calls); stale ones of an output, whose process is gone, by ts_tmp_remove_stale. */
START_TEST(temporary_files)
{
    char dir[] = "/tmp/ts_test_tmp_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char names[5][300];
    const char *what[5] = {"out.txt.tmp.999999999", "out.txt.tmp.%ld", "out.txt.tmp.12x", "other.tmp.999999999",
                           "out.txt.tmp.%ld"};
    for (int i = 0; i < 5; i++) {
        char leaf[64];
        snprintf(leaf, sizeof leaf, what[i], i == 1 ? (long)getppid() : (long)getpid());
        snprintf(names[i], sizeof names[i], "%s/%s", dir, leaf);
        FILE *f = fopen(names[i], "w");
        ck_assert_ptr_nonnull(f);
        fclose(f);
    }
    char out[300];
    snprintf(out, sizeof out, "%s/out.txt", dir);
    ts_tmp_remove_stale(out);
    /* gone: the dead process's; kept: a live process's (the parent), not a pid, another output,
     * this process's own */
    ck_assert_int_ne(access(names[0], F_OK), 0);
    for (int i = 1; i < 5; i++)
        ck_assert_msg(access(names[i], F_OK) == 0, "%s was removed", names[i]);
    int slot = ts_tmp_track(names[4]);
    ck_assert_int_ge(slot, 0);
    ts_tmp_remove_all();
    ck_assert_int_ne(access(names[4], F_OK), 0);
    ts_tmp_untrack(slot);
    ts_tmp_untrack(-1);
    FILE *f = fopen(names[4], "w");
    fclose(f);
    ts_tmp_remove_all(); /* untracked: kept */
    ck_assert_int_eq(access(names[4], F_OK), 0);
    char huge[TS_TMP_PATH_MAX + 8];
    memset(huge, 'a', sizeof huge - 1);
    huge[sizeof huge - 1] = 0;
    ck_assert_int_eq(ts_tmp_track(huge), -1);
    for (int i = 1; i < 5; i++)
        unlink(names[i]);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(hashes_match_reference_values)
{
    /* Reference value: FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c. */
    ck_assert_uint_eq(ts_fnv1a(TS_FNV_SEED, "a", 1), 0xaf63dc4c8601ec8cULL);
}
END_TEST

START_TEST(half_conversions_round_to_nearest_even)
{
    ck_assert_uint_eq(ts_f32_to_f16(1.0f), 0x3c00);
    ck_assert_uint_eq(ts_f32_to_f16(-2.0f), 0xc000);
    ck_assert_uint_eq(ts_f32_to_f16(65504.0f), 0x7bff);         /* largest finite */
    ck_assert_uint_eq(ts_f32_to_f16(65520.0f), 0x7c00);         /* halfway above it: to infinity */
    ck_assert_uint_eq(ts_f32_to_f16(2049.0f), 0x6800);          /* tie between 2048 and 2050: even */
    ck_assert_uint_eq(ts_f32_to_f16(2051.0f), 0x6802);          /* tie between 2050 and 2052: even */
    ck_assert_uint_eq(ts_f32_to_f16(0x1p-24f), 0x0001);         /* smallest subnormal */
    ck_assert_uint_eq(ts_f32_to_f16(0x1p-25f), 0x0000);         /* half of it: tie to even zero */
    ck_assert_uint_eq(ts_f32_to_f16(0x1.8p-24f), 0x0002);       /* 1.5 subnormals: to even 2 */
    ck_assert_uint_eq(ts_f32_to_f16(-0.0f), 0x8000);
    ck_assert_uint_eq(ts_f32_to_f16(1.0f / 0.0f), 0x7c00);
    ck_assert_uint_eq(ts_f32_to_f16(0.0f / 0.0f) & 0x7e00, 0x7e00); /* NaN stays a quiet NaN */
    /* every finite f16 converts to f32 and back to itself */
    for (uint32_t h = 0; h < 0x10000; h++)
        if ((h & 0x7c00) != 0x7c00)
            ck_assert_uint_eq(ts_f32_to_f16(ts_f16_to_f32((uint16_t)h)), h);
    ck_assert(ts_f16_to_f32(0x0001) == 0x1p-24f);
    ck_assert(ts_f16_to_f32(0xfc00) == -1.0f / 0.0f);
}
END_TEST

START_TEST(edit_distance_counts_swaps_once)
{
    ck_assert_uint_eq(ts_edit_distance("tile.sarm", 9, "tile.sram", 9, false), 1);
    ck_assert_uint_eq(ts_edit_distance("clok", 4, "clock", 5, false), 1);
    ck_assert_uint_eq(ts_edit_distance("ADD", 3, "add", 3, false), 3);
    ck_assert_uint_eq(ts_edit_distance("ADD", 3, "add", 3, true), 0);
    ck_assert_uint_eq(ts_edit_distance("", 0, "abc", 3, false), 3);
    char longer[70];
    memset(longer, 'a', sizeof longer);
    ck_assert_uint_eq(ts_edit_distance(longer, sizeof longer, "a", 1, false), 99);
}
END_TEST

START_TEST(spec_reads_typed_keys_and_names_unknown_ones)
{
    ts_err e;
    ts_err_init(&e);
    ts_spec s;
    uint64_t u;
    double d;
    ck_assert_int_eq(ts_spec_parse(&s, "stencil:nz=128,rate=0.25", &e), TS_OK);
    ck_assert(ts_spec_is(&s, "stencil"));
    ck_assert_int_eq(ts_spec_u64(&s, "nz", 8, 1, 600, &u, &e), TS_OK);
    ck_assert_uint_eq(u, 128);
    ck_assert_int_eq(ts_spec_u64(&s, "w", 16, 1, 64, &u, &e), TS_OK); /* absent: the default */
    ck_assert_uint_eq(u, 16);
    ck_assert_int_eq(ts_spec_f64(&s, "rate", 0.1, 0, 1, &d, &e), TS_OK);
    ck_assert(d == 0.25);
    ck_assert_int_eq(ts_spec_done(&s, &e), TS_OK);
    /* out of range, not a number, a negative unsigned */
    ck_assert_int_eq(ts_spec_u64(&s, "nz", 8, 1, 100, &u, &e), TS_EINPUT);
    ck_assert_str_eq(e.msg, "stencil: nz=128: expected an integer in 1..100");
    ck_assert_int_eq(ts_spec_parse(&s, "g:a=-1,b=x", &e), TS_OK);
    ck_assert_int_eq(ts_spec_u64(&s, "a", 0, 0, 9, &u, &e), TS_EINPUT);
    ck_assert_int_eq(ts_spec_f64(&s, "b", 0, 0, 9, &d, &e), TS_EINPUT);
    /* a key nothing read: the closest known key, or the list */
    ck_assert_int_eq(ts_spec_parse(&s, "g:radiu=3", &e), TS_OK);
    ck_assert_int_eq(ts_spec_u64(&s, "radius", 4, 1, 4, &u, &e), TS_OK);
    ck_assert_int_eq(ts_spec_u64(&s, "steps", 1, 1, 4, &u, &e), TS_OK);
    ck_assert_int_eq(ts_spec_done(&s, &e), TS_EINPUT);
    ck_assert_str_eq(e.msg, "g: unknown key 'radiu' (did you mean 'radius'?)");
    ck_assert_int_eq(ts_spec_parse(&s, "g:zzzzz=3", &e), TS_OK);
    ck_assert_int_eq(ts_spec_u64(&s, "radius", 4, 1, 4, &u, &e), TS_OK);
    ck_assert_int_eq(ts_spec_u64(&s, "steps", 1, 1, 4, &u, &e), TS_OK);
    ck_assert_int_eq(ts_spec_done(&s, &e), TS_EINPUT);
    ck_assert_str_eq(e.msg, "g: unknown key 'zzzzz' (keys: radius, steps)");
    /* a choice among names */
    static const char *const names[] = {"uniform", "transpose", "xy"};
    int c;
    ck_assert_int_eq(ts_spec_parse(&s, "t:pattern=transpose,route=zz,p2=unifrom", &e), TS_OK);
    ck_assert_int_eq(ts_spec_choice(&s, "pattern", names, 3, 0, &c, &e), TS_OK);
    ck_assert_int_eq(c, 1);
    ck_assert_int_eq(ts_spec_choice(&s, "absent", names, 3, 2, &c, &e), TS_OK);
    ck_assert_int_eq(c, 2);
    ck_assert_int_eq(ts_spec_choice(&s, "p2", names, 3, 0, &c, &e), TS_EINPUT);
    ck_assert_str_eq(e.msg, "t: p2=unifrom: not one of uniform, transpose, xy (did you mean 'uniform'?)");
    ck_assert_int_eq(ts_spec_choice(&s, "route", names, 3, 0, &c, &e), TS_EINPUT); /* too short to guess */
    ck_assert_str_eq(e.msg, "t: route=zz: not one of uniform, transpose, xy");
    /* malformed specs */
    ck_assert_int_eq(ts_spec_parse(&s, "g:a", &e), TS_EINPUT);
    ck_assert_int_eq(ts_spec_parse(&s, "g:=1", &e), TS_EINPUT);
    ck_assert_int_eq(ts_spec_parse(&s, "g:a=1,a=2", &e), TS_EINPUT);
    ck_assert_str_eq(e.msg, "g: key 'a' given twice");
    char big[300];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ck_assert_int_eq(ts_spec_parse(&s, big, &e), TS_EINPUT);
    ck_assert_int_eq(ts_spec_parse(&s, "plain", &e), TS_OK); /* a name alone has no keys */
    ck_assert(ts_spec_is(&s, "plain"));
    ck_assert_int_eq(ts_spec_done(&s, &e), TS_OK);
    ts_err_free(&e);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("base");
    TCase *t = tcase_create("core");
    tcase_add_test(t, err_formats_position_unit_and_plain);
    tcase_add_test(t, alloc_hook_fails_nth_allocation);
    tcase_add_test(t, grow_doubles_capacity);
    tcase_add_test(t, buf_appends_and_escapes);
    tcase_add_test(t, buf_reserve_is_exact_and_holds);
    tcase_add_test(t, atomic_write_leaves_no_partial_file);
    tcase_add_test(t, limits_parse_and_bound_reads);
    tcase_add_test(t, temporary_files);
    tcase_add_test(t, hashes_match_reference_values);
    tcase_add_test(t, half_conversions_round_to_nearest_even);
    tcase_add_test(t, edit_distance_counts_swaps_once);
    tcase_add_test(t, spec_reads_typed_keys_and_names_unknown_ones);
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
