/* tests/test_stats.c — the statistics registry: every kind, order, duplicates, look-up, copies,
 * allocation failures. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/stats.h"

START_TEST(test_scalars)
{
    ts_stats *s = ts_stats_create();
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(ts_stats_u64(s, "exchange.bytes", "B", "bytes sent", 123456789012345ULL), TS_OK);
    ck_assert_int_eq(ts_stats_f64(s, "ipc", "", "instructions per cycle", 1.75), TS_OK);
    ck_assert_uint_eq(ts_stats_count(s), 2);
    const ts_stat *a = ts_stats_at(s, 0);
    ck_assert_int_eq(a->kind, TS_STAT_U64);
    ck_assert_str_eq(a->name, "exchange.bytes");
    ck_assert_str_eq(a->unit, "B");
    ck_assert_str_eq(a->desc, "bytes sent");
    ck_assert_uint_eq(a->u, 123456789012345ULL);
    const ts_stat *b = ts_stats_at(s, 1);
    ck_assert_int_eq(b->kind, TS_STAT_F64);
    ck_assert_double_eq(b->f, 1.75);
    ck_assert_ptr_null(ts_stats_at(s, 2));
    ts_stats_destroy(s);
}
END_TEST

START_TEST(test_array_hist)
{
    ts_stats *s = ts_stats_create();
    double v[4] = {1, 5, 3, 2};
    ck_assert_int_eq(ts_stats_array(s, "tile.busy", "cycles", "busy cycles per tile", v, 4), TS_OK);
    v[1] = 99; /* the registry keeps its own copy */
    uint64_t counts[3] = {7, 0, 2};
    ck_assert_int_eq(ts_stats_hist(s, "msg.size", "B", "message sizes", counts, 3, 0, 64), TS_OK);
    const ts_stat *a = ts_stats_find(s, "tile.busy");
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(a->kind, TS_STAT_ARRAY);
    ck_assert_uint_eq(a->n, 4);
    ck_assert_double_eq(a->v[1], 5);
    ck_assert_double_eq(a->v[3], 2);
    const ts_stat *h = ts_stats_find(s, "msg.size");
    ck_assert_int_eq(h->kind, TS_STAT_HIST);
    ck_assert_uint_eq(h->n, 3);
    ck_assert_double_eq(h->v[0], 7);
    ck_assert_double_eq(h->v[2], 2);
    ck_assert_double_eq(h->lo, 0);
    ck_assert_double_eq(h->width, 64);
    /* An empty array is allowed; a missing one with a count is a bug. */
    ck_assert_int_eq(ts_stats_array(s, "empty", "", "", NULL, 0), TS_OK);
    ck_assert_uint_eq(ts_stats_find(s, "empty")->n, 0);
    ck_assert_int_eq(ts_stats_array(s, "bad", "", "", NULL, 3), TS_EINTERNAL);
    ck_assert_ptr_null(ts_stats_find(s, "bad"));
    ts_stats_destroy(s);
}
END_TEST

START_TEST(test_table)
{
    ts_stats *s = ts_stats_create();
    const char *cols[] = {"superstep", "compute", "exchange"};
    const char *units[] = {"", "cycles", "cycles"};
    ck_assert_int_eq(ts_stats_u64(s, "first", "", "", 1), TS_OK);
    int t = ts_stats_table(s, "bsp", "one row per superstep", 3, cols, units);
    ck_assert_int_ge(t, 0);
    for (int i = 0; i < 100; i++) {
        double row[3] = {i, 10.0 * i, 3.0 * i + 0.5};
        ck_assert_int_eq(ts_stats_row(s, t, row), TS_OK);
    }
    const ts_stat *st = ts_stats_find(s, "bsp");
    ck_assert_int_eq(st->kind, TS_STAT_TABLE);
    ck_assert_uint_eq(st->ncols, 3);
    ck_assert_uint_eq(st->nrows, 100);
    ck_assert_str_eq(st->cols[1], "compute");
    ck_assert_str_eq(st->col_units[2], "cycles");
    ck_assert_str_eq(st->col_units[0], "");
    ck_assert_double_eq(st->rows[99 * 3 + 0], 99);
    ck_assert_double_eq(st->rows[99 * 3 + 1], 990);
    ck_assert_double_eq(st->rows[42 * 3 + 2], 126.5);
    /* Rows only go to tables, and only to handles that exist. */
    double row[3] = {0, 0, 0};
    ck_assert_int_eq(ts_stats_row(s, 0, row), TS_EINTERNAL); /* "first" is a scalar */
    ck_assert_int_eq(ts_stats_row(s, 7, row), TS_EINTERNAL);
    ck_assert_int_eq(ts_stats_row(s, -1, row), TS_EINTERNAL);
    /* Column units may be left out. */
    int t2 = ts_stats_table(s, "layers", "", 2, cols, NULL);
    ck_assert_int_ge(t2, 0);
    ck_assert_int_ne(t2, t);
    ck_assert_str_eq(ts_stats_find(s, "layers")->col_units[1], "");
    ck_assert_uint_eq(ts_stats_find(s, "layers")->nrows, 0);
    ts_stats_destroy(s);
}
END_TEST

START_TEST(test_order_and_duplicates)
{
    ts_stats *s = ts_stats_create();
    char name[32];
    /* Enough names to grow the hash several times. */
    for (int i = 0; i < 500; i++) {
        snprintf(name, sizeof name, "s.%03d", 499 - i);
        ck_assert_int_eq(ts_stats_u64(s, name, "", "", (uint64_t)i), TS_OK);
    }
    ck_assert_uint_eq(ts_stats_count(s), 500);
    for (int i = 0; i < 500; i++) {
        snprintf(name, sizeof name, "s.%03d", 499 - i);
        ck_assert_str_eq(ts_stats_at(s, (size_t)i)->name, name);
        ck_assert_ptr_eq(ts_stats_find(s, name), ts_stats_at(s, (size_t)i));
        ck_assert_uint_eq(ts_stats_find(s, name)->u, (uint64_t)i);
    }
    /* A name is taken whatever the kind. */
    ck_assert_int_eq(ts_stats_u64(s, "s.010", "", "", 1), TS_EINTERNAL);
    ck_assert_int_eq(ts_stats_f64(s, "s.010", "", "", 1), TS_EINTERNAL);
    double v = 1;
    uint64_t c = 1;
    ck_assert_int_eq(ts_stats_array(s, "s.010", "", "", &v, 1), TS_EINTERNAL);
    ck_assert_int_eq(ts_stats_hist(s, "s.010", "", "", &c, 1, 0, 1), TS_EINTERNAL);
    const char *cols[] = {"a"};
    ck_assert_int_eq(ts_stats_table(s, "s.010", "", 1, cols, NULL), -1);
    ck_assert_uint_eq(ts_stats_count(s), 500);
    ck_assert_uint_eq(ts_stats_find(s, "s.010")->u, 489);
    ck_assert_ptr_null(ts_stats_find(s, "s.500"));
    ck_assert_ptr_null(ts_stats_find(s, ""));
    ck_assert_int_eq(ts_stats_u64(s, "", "", "", 1), TS_EINTERNAL);
    ts_stats_destroy(s);
}
END_TEST

START_TEST(test_strings_copied)
{
    ts_stats *s = ts_stats_create();
    char name[16] = "a.b", unit[8] = "B", desc[16] = "desc", col[8] = "col", cu[8] = "cyc";
    ck_assert_int_eq(ts_stats_u64(s, name, unit, desc, 5), TS_OK);
    const char *cols[] = {col};
    const char *units[] = {cu};
    ck_assert_int_ge(ts_stats_table(s, "t", desc, 1, cols, units), 0);
    strcpy(name, "zz");
    strcpy(unit, "zz");
    strcpy(desc, "zz");
    strcpy(col, "zz");
    strcpy(cu, "zz");
    const ts_stat *a = ts_stats_find(s, "a.b");
    ck_assert_ptr_nonnull(a);
    ck_assert_str_eq(a->unit, "B");
    ck_assert_str_eq(a->desc, "desc");
    ck_assert_str_eq(ts_stats_find(s, "t")->cols[0], "col");
    ck_assert_str_eq(ts_stats_find(s, "t")->col_units[0], "cyc");
    ck_assert_str_eq(ts_stats_find(s, "t")->desc, "desc");
    /* NULL unit and desc read as empty. */
    ck_assert_int_eq(ts_stats_f64(s, "n", NULL, NULL, 0.5), TS_OK);
    ck_assert_str_eq(ts_stats_find(s, "n")->unit, "");
    ck_assert_str_eq(ts_stats_find(s, "n")->desc, "");
    ts_stats_destroy(s);
}
END_TEST

START_TEST(test_null_and_destroy)
{
    ts_stats_destroy(NULL);
    ck_assert_uint_eq(ts_stats_count(NULL), 0);
    ck_assert_ptr_null(ts_stats_at(NULL, 0));
    ck_assert_ptr_null(ts_stats_find(NULL, "x"));
    /* A registry that could not be created reports out of memory rather than crash. */
    ck_assert_int_eq(ts_stats_u64(NULL, "x", "", "", 1), TS_ENOMEM);
    ts_stats *s = ts_stats_create();
    ck_assert_ptr_null(ts_stats_find(s, "x")); /* empty registry */
    ts_stats_destroy(s);
}
END_TEST

/* Fail each allocation in turn: every call reports TS_ENOMEM (or -1), leaks nothing (checked by
 * the address sanitizer) and leaves the registry as it was. */
/* Text columns and an appended column of a finished table. */
START_TEST(test_table_labels_and_columns)
{
    ts_stats *s = ts_stats_create();
    const char *cols[] = {"node", "cycles"};
    int t = ts_stats_table(s, "layers", "", 2, cols, NULL);
    ck_assert_int_eq(ts_stats_table_handle(s, "layers"), t);
    ck_assert_int_eq(ts_stats_table_handle(s, "nope"), -1);
    ck_assert_int_eq(ts_stats_row(s, t, (double[]){0, 10}), TS_OK);
    ck_assert_int_eq(ts_stats_row(s, t, (double[]){1, 30}), TS_OK);
    const char *lc[] = {"op_type", "name"}, *cells[] = {"Conv", "conv1", NULL, "relu"};
    ck_assert_int_eq(ts_stats_table_labels(s, t, 2, lc, cells), TS_OK);
    ck_assert_int_eq(ts_stats_table_labels(s, t, 2, lc, cells), TS_EINTERNAL); /* once */
    ck_assert_int_eq(ts_stats_table_add_column(s, t, "share", "", (double[]){0.25, 0.75}), TS_OK);
    const ts_stat *st = ts_stats_find(s, "layers");
    ck_assert_uint_eq(st->ncols, 3);
    ck_assert_str_eq(st->cols[2], "share");
    ck_assert_str_eq(st->col_units[2], "");
    ck_assert_double_eq(st->rows[1 * 3 + 1], 30);
    ck_assert_double_eq(st->rows[1 * 3 + 2], 0.75);
    ck_assert_str_eq(st->labels[0], "Conv");
    ck_assert_str_eq(st->labels[2], "");
    ck_assert_str_eq(st->labels[3], "relu");
    ck_assert_int_eq(ts_stats_row(s, t, (double[]){2, 5, 0.5}), TS_EINTERNAL); /* closed by its labels */
    ck_assert_uint_eq(ts_stats_find(s, "layers")->nrows, 2);
    ts_stats_destroy(s);
}
END_TEST

START_TEST(test_alloc_failures)
{
    for (long n = 1; n < 40; n++) {
        ts_alloc_fail_after(n);
        ts_stats *s = ts_stats_create();
        if (!s) {
            ts_alloc_fail_after(0);
            continue;
        }
        double v[2] = {1, 2};
        uint64_t c[2] = {1, 2};
        const char *cols[] = {"a", "b"};
        ts_status st1 = ts_stats_u64(s, "u", "B", "d", 1);
        ts_status st2 = ts_stats_array(s, "a", "B", "d", v, 2);
        ts_status st3 = ts_stats_hist(s, "h", "B", "d", c, 2, 0, 1);
        int t = ts_stats_table(s, "t", "d", 2, cols, cols);
        ts_status st4 = t >= 0 ? ts_stats_row(s, t, v) : TS_ENOMEM;
        ts_alloc_fail_after(0);
        ck_assert(st1 == TS_OK || st1 == TS_ENOMEM);
        ck_assert(st2 == TS_OK || st2 == TS_ENOMEM);
        ck_assert(st3 == TS_OK || st3 == TS_ENOMEM);
        ck_assert(st4 == TS_OK || st4 == TS_ENOMEM);
        size_t expect = (st1 == TS_OK) + (st2 == TS_OK) + (st3 == TS_OK) + (t >= 0);
        ck_assert_uint_eq(ts_stats_count(s), expect);
        ck_assert_int_eq(ts_stats_find(s, "u") != NULL, st1 == TS_OK);
        ck_assert_int_eq(ts_stats_find(s, "t") != NULL, t >= 0);
        if (t >= 0)
            ck_assert_uint_eq(ts_stats_find(s, "t")->nrows, st4 == TS_OK);
        ts_stats_destroy(s);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stats");
    TCase *tc = tcase_create("registry");
    tcase_add_test(tc, test_scalars);
    tcase_add_test(tc, test_array_hist);
    tcase_add_test(tc, test_table);
    tcase_add_test(tc, test_order_and_duplicates);
    tcase_add_test(tc, test_strings_copied);
    tcase_add_test(tc, test_null_and_destroy);
    tcase_add_test(tc, test_alloc_failures);
    tcase_add_test(tc, test_table_labels_and_columns);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
