/* core/ytree.c — libyaml events into a tree of nodes with positions (see ytree.h). */
#include "core/ytree.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "core/alloc.h"
#include "core/limit.h"

ts_ynode *ts_ynode_create(ts_ykind kind, const char *file, int line, int col)
{
    ts_ynode *nd = ts_calloc(1, sizeof *nd);
    if (!nd)
        return NULL;
    nd->kind = kind;
    nd->file = file;
    nd->line = line;
    nd->col = col;
    return nd;
}

ts_ynode *ts_ynode_scalar(const char *file, int line, int col, const char *text, size_t len, bool plain)
{
    ts_ynode *nd = ts_ynode_create(TS_Y_SCALAR, file, line, col);
    if (!nd)
        return NULL;
    nd->text = ts_strndup(text, len);
    nd->plain = plain;
    if (!nd->text) {
        ts_free(nd);
        return NULL;
    }
    return nd;
}

int ts_ynode_add(ts_ynode *parent, ts_ynode *kid)
{
    if (ts_grow((void **)&parent->kids, &parent->cap, parent->n + 1, sizeof *parent->kids))
        return -1;
    parent->kids[parent->n++] = kid;
    return 0;
}

void ts_ynode_destroy(ts_ynode *nd)
{
    if (!nd)
        return;
    for (size_t i = 0; i < nd->n; i++)
        ts_ynode_destroy(nd->kids[i]);
    ts_free(nd->kids);
    ts_free(nd->text);
    ts_free(nd);
}

const ts_ynode *ts_ynode_get(const ts_ynode *map, const char *key)
{
    if (!map || map->kind != TS_Y_MAP)
        return NULL;
    for (size_t i = 0; i + 1 < map->n; i += 2)
        if (!strcmp(map->kids[i]->text, key))
            return map->kids[i + 1];
    return NULL;
}

/* Sorting key indexes by (text, position) for ts_ynode_first_dup; qsort has no context pointer,
 * so each entry carries its text. */
typedef struct keyref {
    const char *text;
    size_t at;
} keyref;

static int keyref_cmp(const void *x, const void *y)
{
    const keyref *a = x, *b = y;
    int c = strcmp(a->text, b->text);
    return c ? c : a->at < b->at ? -1 : a->at > b->at;
}

int ts_ynode_first_dup(const ts_ynode *map, size_t *dup, size_t *first)
{
    if (!map || map->kind != TS_Y_MAP)
        return 0;
    size_t nk = map->n / 2, best = SIZE_MAX, best_first = 0;
    if (nk <= 16) { /* small maps, the usual case: no allocation */
        for (size_t i = 1; i < nk && best == SIZE_MAX; i++)
            for (size_t j = 0; j < i; j++)
                if (!strcmp(map->kids[2 * j]->text, map->kids[2 * i]->text)) {
                    best = 2 * i;
                    best_first = 2 * j;
                    break;
                }
    } else {
        keyref *k = ts_malloc(nk * sizeof *k);
        if (!k)
            return -1;
        for (size_t i = 0; i < nk; i++)
            k[i] = (keyref){map->kids[2 * i]->text, 2 * i};
        qsort(k, nk, sizeof *k, keyref_cmp);
        /* In a run of equal keys, the second is the first repeat of the first. */
        for (size_t i = 1; i < nk; i++)
            if (!strcmp(k[i].text, k[i - 1].text) && (i < 2 || strcmp(k[i - 1].text, k[i - 2].text)) &&
                k[i].at < best) {
                best = k[i].at;
                best_first = k[i - 1].at;
            }
        ts_free(k);
    }
    if (best == SIZE_MAX)
        return 0;
    *dup = best;
    *first = best_first;
    return 1;
}

bool ts_ynode_is_null(const ts_ynode *nd)
{
    return nd->kind == TS_Y_SCALAR && nd->plain &&
           (!nd->text[0] || !strcmp(nd->text, "~") || !strcmp(nd->text, "null") ||
            !strcmp(nd->text, "Null") || !strcmp(nd->text, "NULL"));
}

const char *ts_ynode_kind_name(const ts_ynode *nd)
{
    return nd->kind == TS_Y_MAP ? "a map" : nd->kind == TS_Y_SEQ ? "a list" : "text";
}

ts_status ts_ynode_err(ts_err *err, const ts_ynode *nd, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ts_err_at(err, TS_EINPUT, nd->file, nd->line, nd->col, "%s", msg);
}

/* ---------------------------------------------------------------------------------------------
 * Parsing. */

static ts_status oom(ts_err *err, const char *file)
{
    return ts_err_set(err, TS_ENOMEM, "out of memory parsing %s", file);
}

/* Line and column (1-based) of a byte offset, for reader errors that carry no mark. */
static void offset_pos(const char *text, size_t len, size_t off, int *line, int *col)
{
    int l = 1, c = 1;
    for (size_t i = 0; i < off && i < len; i++) {
        if (text[i] == '\n')
            l++, c = 1;
        else if (((unsigned char)text[i] & 0xC0) != 0x80)
            c++;
    }
    *line = l;
    *col = c;
}

/* The error of a parser that refused the text. */
static ts_status yaml_failure(const yaml_parser_t *p, const char *file, const char *text, size_t len,
                              bool detail, ts_err *err)
{
    if (p->error == YAML_MEMORY_ERROR)
        return oom(err, file);
    int line = (int)p->problem_mark.line + 1, col = (int)p->problem_mark.column + 1;
    /* A reader error (bad UTF-8, say) has an offset, not a mark. */
    if (detail && p->error == YAML_READER_ERROR)
        offset_pos(text, len, p->problem_offset, &line, &col);
    const char *problem = p->problem ? p->problem : "unreadable yaml";
    if (detail && p->context)
        return ts_err_at(err, TS_EINPUT, file, line, col, "bad yaml: %s (%s at line %d, col %d)", problem,
                         p->context, (int)p->context_mark.line + 1, (int)p->context_mark.column + 1);
    return ts_err_at(err, TS_EINPUT, file, line, col, "bad yaml: %s", problem);
}

/* Hang nd under the open collection (or make it the root) and open it if it is one. Takes nd. */
static ts_status attach(ts_ynode *nd, ts_ynode **stack, int *depth, ts_ynode **root, const ts_ytree_opts *opts,
                        ts_err *err)
{
    if (*depth == 0) {
        ts_ynode_destroy(*root);
        *root = nd;
    } else {
        ts_ynode *parent = stack[*depth - 1];
        ts_status st = TS_OK;
        if (parent->kind == TS_Y_MAP && parent->n % 2 == 0 && nd->kind != TS_Y_SCALAR)
            st = opts->key_kind
                     ? ts_ynode_err(err, nd, "a map key must be plain text, not %s", ts_ynode_kind_name(nd))
                     : ts_ynode_err(err, nd, "a map key must be plain text");
        else if (ts_ynode_add(parent, nd))
            st = oom(err, nd->file);
        if (st != TS_OK) {
            ts_ynode_destroy(nd);
            return st;
        }
    }
    if (nd->kind != TS_Y_SCALAR)
        stack[(*depth)++] = nd;
    return TS_OK;
}

ts_status ts_ytree_parse(const char *file, const char *text, size_t len, const ts_ytree_opts *opts,
                         ts_ynode **root, ts_err *err)
{
    *root = NULL;
    int max = opts->max_depth < 1                    ? 1
              : opts->max_depth > TS_YTREE_MAX_DEPTH ? TS_YTREE_MAX_DEPTH
                                                     : opts->max_depth;
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return oom(err, file);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);

    ts_ynode *stack[TS_YTREE_MAX_DEPTH]; /* borrowed: the open collections, innermost last */
    int depth = 0, docs = 0;
    uint64_t nodes = 0, max_nodes = ts_limit(TS_LIMIT_YAML_NODES);
    ts_status st = TS_OK;
    for (bool done = false; !done && st == TS_OK;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            st = yaml_failure(&p, file, text, len, opts->detail, err);
            break;
        }
        int line = (int)ev.start_mark.line + 1, col = (int)ev.start_mark.column + 1;
        ts_ynode *nd = NULL;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (++docs > 1 && opts->one_doc)
                st = ts_err_at(err, TS_EINPUT, file, line, col, "%s", opts->one_doc);
            break;
        case YAML_ALIAS_EVENT:
            if (opts->detail)
                st = ts_err_at(err, TS_EINPUT, file, line, col, "yaml aliases (*%s) are not supported",
                               (const char *)ev.data.alias.anchor);
            else
                st = ts_err_at(err, TS_EINPUT, file, line, col, "yaml aliases are not supported");
            break;
        case YAML_SCALAR_EVENT:
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if ((ev.type != YAML_SCALAR_EVENT || opts->depth_all) && depth == max) {
                if (opts->depth_all)
                    st = ts_err_at(err, TS_EINPUT, file, line, col, "yaml nested too deep");
                else
                    st = ts_err_at(err, TS_EINPUT, file, line, col, "yaml nested deeper than %d levels", max);
                break;
            }
            if (++nodes > max_nodes) {
                st = ts_err_at(err, TS_EINPUT, file, line, col,
                               "yaml has more than %" PRIu64 " values, maps and lists " TS_LIMIT_HINT_FMT,
                               max_nodes, ts_limit_name(TS_LIMIT_YAML_NODES));
                break;
            }
            if (ev.type == YAML_SCALAR_EVENT)
                nd = ts_ynode_scalar(file, line, col, (const char *)ev.data.scalar.value, ev.data.scalar.length,
                                     ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE);
            else
                nd = ts_ynode_create(ev.type == YAML_MAPPING_START_EVENT ? TS_Y_MAP : TS_Y_SEQ, file, line, col);
            st = nd ? attach(nd, stack, &depth, root, opts, err) : oom(err, file);
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (depth)
                depth--;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    if (st != TS_OK) {
        ts_ynode_destroy(*root);
        *root = NULL;
    }
    return st;
}
