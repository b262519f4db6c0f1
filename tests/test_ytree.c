/* tests/test_ytree.c — the YAML tree (core/ytree.h): shapes and positions, each reader option
 * (depth, documents, libyaml detail, map keys), the helpers, nodes made by hand with their own
 * file, and allocation failures. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/limit.h"
#include "core/ytree.h"

static const ts_ytree_opts plain_opts = {.max_depth = 32};
static const ts_ytree_opts full_opts = {.max_depth = 64, .one_doc = "one document only", .detail = true,
                                        .key_kind = true};

/* The error of parsing text, as `file:line:col: message`. */
static const char *parse_error(const char *text, const ts_ytree_opts *o)
{
    static char line[1200];
    ts_err err;
    ts_err_init(&err);
    ts_ynode *root = (ts_ynode *)1;
    ts_status st = ts_ytree_parse("f.yaml", text, strlen(text), o, &root, &err);
    ck_assert_int_eq(st, TS_EINPUT);
    ck_assert_ptr_null(root);
    ts_err_format(&err, line, sizeof line);
    ts_err_free(&err);
    return line;
}

static ts_ynode *parse_ok(const char *text, const ts_ytree_opts *o)
{
    ts_err err;
    ts_err_init(&err);
    ts_ynode *root = NULL;
    ts_status st = ts_ytree_parse("f.yaml", text, strlen(text), o, &root, &err);
    ck_assert_msg(st == TS_OK, "%s", err.msg);
    ts_err_free(&err);
    return root;
}

START_TEST(test_shape)
{
    const char *text = "a: [1, 'x', ~]\nb:\n  c: \"null\"\n  d:\n";
    ts_ynode *root = parse_ok(text, &full_opts);
    ck_assert_int_eq(root->kind, TS_Y_MAP);
    ck_assert_int_eq(root->n, 4);
    ck_assert_str_eq(root->file, "f.yaml");
    ck_assert_int_eq(root->line, 1);
    ck_assert_int_eq(root->col, 1);

    const ts_ynode *a = ts_ynode_get(root, "a");
    ck_assert_ptr_eq(a, root->kids[1]);
    ck_assert_int_eq(a->kind, TS_Y_SEQ);
    ck_assert_int_eq(a->n, 3);
    ck_assert_int_eq(a->col, 4);
    ck_assert_str_eq(a->kids[1]->text, "x");
    ck_assert_int_eq(a->kids[1]->col, 8);
    ck_assert(!a->kids[1]->plain);
    ck_assert(a->kids[0]->plain);
    ck_assert(!ts_ynode_is_null(a->kids[0]));
    ck_assert(ts_ynode_is_null(a->kids[2]));

    const ts_ynode *b = ts_ynode_get(root, "b");
    ck_assert_int_eq(b->line, 3);
    ck_assert_int_eq(b->col, 3);
    const ts_ynode *c = ts_ynode_get(b, "c"), *d = ts_ynode_get(b, "d");
    ck_assert_str_eq(c->text, "null");
    ck_assert(!ts_ynode_is_null(c)); /* quoted: text, not null */
    ck_assert_str_eq(d->text, "");
    ck_assert(ts_ynode_is_null(d));
    ck_assert_int_eq(d->line, 4);

    ck_assert_ptr_null(ts_ynode_get(root, "c"));
    ck_assert_ptr_null(ts_ynode_get(a, "a"));
    ck_assert_ptr_null(ts_ynode_get(NULL, "a"));
    ck_assert_str_eq(ts_ynode_kind_name(root), "a map");
    ck_assert_str_eq(ts_ynode_kind_name(a), "a list");
    ck_assert_str_eq(ts_ynode_kind_name(c), "text");
    ts_ynode_destroy(root);

    /* An empty stream has no root; a document that says nothing is one null scalar. */
    ck_assert_ptr_null(parse_ok("# nothing\n", &full_opts));
    root = parse_ok("---\n", &full_opts);
    ck_assert(ts_ynode_is_null(root));
    ts_ynode_destroy(root);
    ts_ynode_destroy(NULL);
}
END_TEST

START_TEST(test_libyaml_errors)
{
    /* detail adds libyaml's context and finds a reader error at its offset */
    ck_assert_str_eq(parse_error("a: [1, 2\nb: 3\n", &full_opts),
                     "f.yaml:2:2: bad yaml: did not find expected ',' or ']' (while parsing a flow sequence at "
                     "line 1, col 4)");
    ck_assert_str_eq(parse_error("a: [1, 2\nb: 3\n", &plain_opts),
                     "f.yaml:2:2: bad yaml: did not find expected ',' or ']'");
    ck_assert_str_eq(parse_error("a: 1\nb: \"\xff\"\n", &full_opts),
                     "f.yaml:2:5: bad yaml: invalid leading UTF-8 octet");
    ck_assert_str_eq(parse_error("a: 1\nb: \"\xff\"\n", &plain_opts),
                     "f.yaml:1:1: bad yaml: invalid leading UTF-8 octet");
    ck_assert_str_eq(parse_error("a: &n 4\nb: *n\n", &full_opts), "f.yaml:2:4: yaml aliases (*n) are not supported");
    ck_assert_str_eq(parse_error("a: &n 4\nb: *n\n", &plain_opts), "f.yaml:2:4: yaml aliases are not supported");
}
END_TEST

START_TEST(test_options)
{
    /* A second document: an error with one_doc, else it replaces the first. */
    ck_assert_str_eq(parse_error("a: 1\n---\nb: 2\n", &full_opts), "f.yaml:2:1: one document only");
    ts_ynode *root = parse_ok("a: 1\n---\nb: 2\n", &plain_opts);
    ck_assert_ptr_null(ts_ynode_get(root, "a"));
    ck_assert_str_eq(ts_ynode_get(root, "b")->text, "2");
    ts_ynode_destroy(root);

    /* A collection as a map key. */
    ck_assert_str_eq(parse_error("a: 1\n? [x]\n: 2\n", &full_opts),
                     "f.yaml:2:3: a map key must be plain text, not a list");
    ck_assert_str_eq(parse_error("a: 1\n? {x: y}\n: 2\n", &plain_opts), "f.yaml:2:3: a map key must be plain text");

    /* Depth: three collections fit in max_depth 3, a fourth does not; with depth_all, a scalar
     * inside three does not either. */
    ts_ytree_opts o = {.max_depth = 3};
    ts_ynode_destroy(parse_ok("[[[x]]]", &o));
    ck_assert_str_eq(parse_error("[[[[x]]]]", &o), "f.yaml:1:4: yaml nested deeper than 3 levels");
    o.depth_all = true;
    ts_ynode_destroy(parse_ok("[[x]]", &o));
    ts_ynode_destroy(parse_ok("[[[]]]", &o));
    ck_assert_str_eq(parse_error("[[[x]]]", &o), "f.yaml:1:4: yaml nested too deep");
    /* Beyond the parser's own stack the limit is TS_YTREE_MAX_DEPTH. */
    o = (ts_ytree_opts){.max_depth = 1000};
    char deep[2 * TS_YTREE_MAX_DEPTH + 8];
    memset(deep, '[', TS_YTREE_MAX_DEPTH + 1);
    memset(deep + TS_YTREE_MAX_DEPTH + 1, ']', TS_YTREE_MAX_DEPTH + 1);
    deep[2 * TS_YTREE_MAX_DEPTH + 2] = 0;
    ck_assert_str_eq(parse_error(deep, &o), "f.yaml:1:65: yaml nested deeper than 64 levels");
    deep[2 * TS_YTREE_MAX_DEPTH + 1] = 0;
    ts_ynode_destroy(parse_ok(deep + 1, &o));
}
END_TEST

/* Nodes made by hand keep their own file name (a config's `--set` values). */
/* A document of more nodes than the yaml_nodes limit is refused at the first node past it, so a
 * 100 MB flow list cannot grow the tree to gigabytes (about 100 bytes of host memory a node). */
START_TEST(test_node_limit)
{
    ts_limit_set(TS_LIMIT_YAML_NODES, 5);
    ts_ynode_destroy(parse_ok("[1, 2, 3, 4]\n", &plain_opts));
    ck_assert_str_eq(parse_error("[1, 2, 3, 4, 5]\n", &plain_opts),
                     "f.yaml:1:14: yaml has more than 5 values, maps and lists (raise it with "
                     "TESSERA_LIMITS=yaml_nodes=N)");
    ts_limits_reset();
    /* the default: a flow list of a million and one numbers */
    size_t n = 1000001, len = 2 * n + 2;
    char *text = malloc(len + 1);
    text[0] = '[';
    for (size_t i = 0; i < n; i++)
        memcpy(text + 1 + 2 * i, i + 1 < n ? "0," : "0]", 2);
    text[len - 1] = '\n';
    text[len] = 0;
    ck_assert_str_eq(parse_error(text, &plain_opts),
                     "f.yaml:1:2000000: yaml has more than 1000000 values, maps and lists (raise it with "
                     "TESSERA_LIMITS=yaml_nodes=N)");
    free(text);
}
END_TEST

/* The first repeated key of a map in document order, small maps and sorted large ones alike. */
START_TEST(test_first_dup)
{
    size_t dup = 0, first = 0;
    ts_ynode *r = parse_ok("{a: 1, b: 2, c: 3}\n", &plain_opts);
    ck_assert_int_eq(ts_ynode_first_dup(r, &dup, &first), 0);
    ck_assert_int_eq(ts_ynode_first_dup(r->kids[1], &dup, &first), 0); /* not a map */
    ts_ynode_destroy(r);
    r = parse_ok("{a: 1, b: 2, b: 3, a: 4}\n", &plain_opts);
    ck_assert_int_eq(ts_ynode_first_dup(r, &dup, &first), 1);
    ck_assert_uint_eq(dup, 4);
    ck_assert_uint_eq(first, 2);
    ts_ynode_destroy(r);
    /* 40 keys: z repeated three times (keys 30, 35, 39), then y (keys 37 and 38) */
    char text[1024] = "{";
    for (int i = 0; i < 40; i++) {
        char k[16];
        snprintf(k, sizeof k, "k%d", i);
        if (i == 30 || i == 35 || i == 39)
            snprintf(k, sizeof k, "z");
        if (i == 37 || i == 38)
            snprintf(k, sizeof k, "y");
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s%s: %d", i ? ", " : "", k, i);
    }
    strcat(text, "}\n");
    r = parse_ok(text, &plain_opts);
    ck_assert_int_eq(ts_ynode_first_dup(r, &dup, &first), 1);
    ck_assert_uint_eq(dup, 2 * 35);
    ck_assert_uint_eq(first, 2 * 30);
    ts_alloc_fail_after(1);
    ck_assert_int_eq(ts_ynode_first_dup(r, &dup, &first), -1);
    ts_alloc_fail_after(0);
    ts_ynode_destroy(r);
}
END_TEST

START_TEST(test_made_nodes)
{
    ts_ynode *seq = ts_ynode_create(TS_Y_SEQ, "--set", 2, 7);
    ck_assert_ptr_nonnull(seq);
    ts_ynode *it = ts_ynode_scalar("--set", 2, 8, "16 KiBxx", 6, false);
    ck_assert_ptr_nonnull(it);
    ck_assert_str_eq(it->text, "16 KiB");
    ck_assert_int_eq(ts_ynode_add(seq, it), 0);
    ck_assert_int_eq(seq->n, 1);
    ts_err err;
    ts_err_init(&err);
    ck_assert_int_eq(ts_ynode_err(&err, seq->kids[0], "bad %s", "value"), TS_EINPUT);
    char line[200];
    ts_err_format(&err, line, sizeof line);
    ck_assert_str_eq(line, "--set:2:8: bad value");
    ts_err_free(&err);
    ts_ynode_destroy(seq);
}
END_TEST

START_TEST(test_alloc_failures)
{
    const char *text = "a: [1, 'x', {b: c}]\nd: {e: [f]}\n";
    for (long n = 1; n < 1000; n++) {
        ts_err err;
        ts_err_init(&err);
        ts_ynode *root = NULL;
        ts_alloc_fail_after(n);
        ts_status st = ts_ytree_parse("f.yaml", text, strlen(text), &full_opts, &root, &err);
        long failed = ts_alloc_failures();
        ts_alloc_fail_after(0);
        if (!failed) {
            ck_assert_int_eq(st, TS_OK);
            ck_assert_str_eq(ts_ynode_get(ts_ynode_get(root, "d"), "e")->kids[0]->text, "f");
            ts_ynode_destroy(root);
            ts_err_free(&err);
            return;
        }
        ck_assert_msg(st == TS_ENOMEM, "allocation %ld: status %d: %s", n, (int)st, err.msg);
        ck_assert_str_eq(err.msg, "out of memory parsing f.yaml");
        ck_assert_ptr_null(root);
        ts_err_free(&err);
    }
    ck_abort_msg("the text never parsed");
}
END_TEST

int main(void)
{
    Suite *su = suite_create("ytree");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_shape);
    tcase_add_test(tc, test_libyaml_errors);
    tcase_add_test(tc, test_options);
    tcase_add_test(tc, test_node_limit);
    tcase_add_test(tc, test_first_dup);
    tcase_add_test(tc, test_made_nodes);
    tcase_add_test(tc, test_alloc_failures);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
