/* core/energy.c — energy tables read from YAML (format: docs/energy.md).
 *
 * The whole document is loaded with libyaml's document API and walked at fixed depth (top
 * mapping, `entries` mapping, one mapping per entry), so no input can make the walk recurse.
 * Every rejection names file:line:col of the offending node. Entries keep the order of the file.
 */
#include "core/energy.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/limit.h"
#include "core/units.h"

struct ts_energy_table {
    char *name;              /* owned */
    char *node;              /* owned: the table's default node, "" when absent */
    ts_energy_entry *e;      /* owned, file order; strings in each entry owned */
    size_t n, cap;
};

/* Components an entry may be charged to; "static" is reserved for static power. */
static const char *const components[] = {"compute", "sram", "network", "offchip", "control"};
#define NCOMPONENTS (sizeof components / sizeof components[0])

void ts_energy_destroy(ts_energy_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++) {
        ts_free((char *)t->e[i].name);
        ts_free((char *)t->e[i].node);
        ts_free((char *)t->e[i].component);
        ts_free((char *)t->e[i].source);
    }
    ts_free(t->e);
    ts_free(t->name);
    ts_free(t->node);
    ts_free(t);
}

const char *ts_energy_name(const ts_energy_table *t) { return t ? t->name : ""; }
size_t ts_energy_count(const ts_energy_table *t) { return t ? t->n : 0; }

const ts_energy_entry *ts_energy_at(const ts_energy_table *t, size_t i)
{
    return t && i < t->n ? &t->e[i] : NULL;
}

const ts_energy_entry *ts_energy_find(const ts_energy_table *t, const char *event)
{
    if (!t || !event)
        return NULL;
    /* Tables hold a few dozen entries and pricing looks each event up once per run. */
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->e[i].name, event))
            return &t->e[i];
    return NULL;
}

/* Parsing state: the document and where messages point. */
typedef struct parse {
    yaml_document_t doc;
    const char *file;
    ts_err *err;
} parse;

static ts_status at(parse *p, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* An input error at node n. */
static ts_status at(parse *p, const yaml_node_t *n, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ts_err_at(p->err, TS_EINPUT, p->file, (int)n->start_mark.line + 1,
                     (int)n->start_mark.column + 1, "%s", msg);
}

static const char *scalar(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* Is the scalar node a plain (unquoted) scalar? Quoted "true" is a string, not a boolean. */
static int plain(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

/* Does a string, trimmed, end in an energy unit symbol? A bare number is refused: a table that
 * leaves out the unit is more likely wrong than written in joules. */
static int has_energy_unit(const char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    return n && s[n - 1] == 'J';
}

/* Find a duplicate key earlier in the same mapping. */
static const yaml_node_t *dup_key(parse *p, const yaml_node_t *map, const yaml_node_pair_t *pair)
{
    const char *k = scalar(yaml_document_get_node(&p->doc, pair->key));
    for (const yaml_node_pair_t *q = map->data.mapping.pairs.start; q < pair; q++) {
        const char *k2 = scalar(yaml_document_get_node(&p->doc, q->key));
        if (k && k2 && !strcmp(k, k2))
            return yaml_document_get_node(&p->doc, pair->key);
    }
    return NULL;
}

/* The first entry, in document order, whose name an earlier entry has: its index among the
 * entries, or SIZE_MAX when the names are unique; SIZE_MAX - 1 without memory. Sorting (n log n):
 * looking each new name up among the entries so far took 17 s for 100,000 entries. */
typedef struct named {
    const char *name;
    size_t at;
} named;

static int named_cmp(const void *x, const void *y)
{
    const named *a = x, *b = y;
    int c = strcmp(a->name, b->name);
    return c ? c : a->at < b->at ? -1 : a->at > b->at;
}

static size_t first_dup_entry(parse *p, const yaml_node_t *entries)
{
    size_t n = (size_t)(entries->data.mapping.pairs.top - entries->data.mapping.pairs.start), k = 0;
    named *v = ts_malloc((n + 1) * sizeof *v);
    if (!v)
        return SIZE_MAX - 1;
    for (size_t i = 0; i < n; i++) {
        const char *name = scalar(yaml_document_get_node(&p->doc, entries->data.mapping.pairs.start[i].key));
        if (name)
            v[k++] = (named){name, i};
    }
    qsort(v, k, sizeof *v, named_cmp);
    size_t dup = SIZE_MAX;
    for (size_t i = 1; i < k; i++)
        if (!strcmp(v[i].name, v[i - 1].name) && v[i].at < dup)
            dup = v[i].at;
    ts_free(v);
    return dup;
}

static ts_status parse_entry(parse *p, ts_energy_table *t, const yaml_node_t *key, const yaml_node_t *val,
                             bool dup)
{
    const char *name = scalar(key);
    if (!name || !*name)
        return at(p, key, "energy entry name must be a non-empty string");
    if (dup)
        return at(p, key, "duplicate energy entry '%s'", name);
    if (val->type != YAML_MAPPING_NODE)
        return at(p, val, "energy entry '%s' must be a mapping like {value: 3.7 pJ, ...}", name);
    if (ts_grow((void **)&t->e, &t->cap, t->n + 1, sizeof *t->e))
        return ts_err_set(p->err, TS_ENOMEM, "out of memory reading energy table");

    ts_energy_entry e = {0};
    const char *value = NULL, *node = NULL, *component = NULL, *source = NULL;
    const yaml_node_t *value_node = NULL, *comp_node = NULL;
    int bits = 0;
    bool confirmed = false;
    for (yaml_node_pair_t *pr = val->data.mapping.pairs.start; pr < val->data.mapping.pairs.top; pr++) {
        const yaml_node_t *k = yaml_document_get_node(&p->doc, pr->key);
        const yaml_node_t *v = yaml_document_get_node(&p->doc, pr->value);
        const char *ks = scalar(k);
        if (!ks)
            return at(p, k, "field names of energy entry '%s' must be strings", name);
        if (dup_key(p, val, pr))
            return at(p, k, "duplicate field '%s' in energy entry '%s'", ks, name);
        const char *vs = scalar(v);
        if (!vs)
            return at(p, v, "field '%s' of energy entry '%s' must be a scalar", ks, name);
        if (!strcmp(ks, "value")) {
            value = vs;
            value_node = v;
        } else if (!strcmp(ks, "bits")) {
            char *end;
            long b = strtol(vs, &end, 10);
            if (!plain(v) || end == vs || *end || b < 1 || b > 65536)
                return at(p, v, "bits of energy entry '%s' must be a whole number from 1 to 65536, got '%s'",
                          name, vs);
            bits = (int)b;
        } else if (!strcmp(ks, "node")) {
            node = vs;
        } else if (!strcmp(ks, "component")) {
            component = vs;
            comp_node = v;
        } else if (!strcmp(ks, "source")) {
            source = vs;
        } else if (!strcmp(ks, "confirmed")) {
            if (plain(v) && !strcmp(vs, "true"))
                confirmed = true;
            else if (plain(v) && !strcmp(vs, "false"))
                confirmed = false;
            else
                return at(p, v, "confirmed of energy entry '%s' must be true or false, got '%s'", name, vs);
        } else {
            return at(p, k, "unknown field '%s' in energy entry '%s' (expected value, bits, node, "
                      "component, source or confirmed)", ks, name);
        }
    }
    if (!value)
        return at(p, val, "energy entry '%s' has no value", name);
    if (!source || !*source)
        return at(p, val, "energy entry '%s' has no source", name);
    if (!component)
        return at(p, val, "energy entry '%s' has no component", name);
    size_t c = 0;
    while (c < NCOMPONENTS && strcmp(components[c], component))
        c++;
    if (c == NCOMPONENTS)
        return at(p, comp_node, "unknown component '%s' in energy entry '%s' (expected compute, sram, "
                  "network, offchip or control)", component, name);
    char why[256];
    if (!has_energy_unit(value) ||
        ts_unit_parse(value, TS_UNIT_ENERGY, &e.joules, why, sizeof why) != 0)
        return at(p, value_node, "value '%s' of energy entry '%s' is not an energy (write it like '3.7 pJ')",
                  value, name);
    if (!isfinite(e.joules) || e.joules < 0)
        return at(p, value_node, "value '%s' of energy entry '%s' is negative or not finite", value, name);
    e.bits = bits;
    e.confirmed = confirmed;
    e.name = ts_strdup(name);
    e.node = ts_strdup(node ? node : t->node);
    e.component = ts_strdup(component);
    e.source = ts_strdup(source);
    if (!e.name || !e.node || !e.component || !e.source) {
        ts_free((char *)e.name);
        ts_free((char *)e.node);
        ts_free((char *)e.component);
        ts_free((char *)e.source);
        return ts_err_set(p->err, TS_ENOMEM, "out of memory reading energy table");
    }
    t->e[t->n++] = e;
    return TS_OK;
}

static ts_status parse_doc(parse *p, ts_energy_table *t)
{
    const yaml_node_t *root = yaml_document_get_root_node(&p->doc);
    if (!root)
        return ts_err_at(p->err, TS_EINPUT, p->file, 1, 1, "energy table is empty");
    if (root->type != YAML_MAPPING_NODE)
        return at(p, root, "energy table must be a mapping with name, node and entries");
    const yaml_node_t *entries = NULL;
    /* First pass: the table's own keys, so `node:` applies whatever its position. */
    for (yaml_node_pair_t *pr = root->data.mapping.pairs.start; pr < root->data.mapping.pairs.top; pr++) {
        const yaml_node_t *k = yaml_document_get_node(&p->doc, pr->key);
        const yaml_node_t *v = yaml_document_get_node(&p->doc, pr->value);
        const char *ks = scalar(k);
        if (!ks)
            return at(p, k, "energy table keys must be strings");
        if (dup_key(p, root, pr))
            return at(p, k, "duplicate key '%s' in energy table", ks);
        if (!strcmp(ks, "entries")) {
            if (v->type != YAML_MAPPING_NODE)
                return at(p, v, "entries must be a mapping of event name to entry");
            entries = v;
        } else if (!strcmp(ks, "name") || !strcmp(ks, "node") || !strcmp(ks, "description")) {
            const char *vs = scalar(v);
            if (!vs)
                return at(p, v, "'%s' must be a string", ks);
            if (strcmp(ks, "description")) {
                char *copy = ts_strdup(vs);
                if (!copy)
                    return ts_err_set(p->err, TS_ENOMEM, "out of memory reading energy table");
                char **dst = !strcmp(ks, "name") ? &t->name : &t->node;
                ts_free(*dst);
                *dst = copy;
            }
        } else {
            return at(p, k, "unknown key '%s' in energy table (expected name, node, description or "
                      "entries)", ks);
        }
    }
    if (!entries)
        return at(p, root, "energy table has no entries");
    size_t dup = first_dup_entry(p, entries);
    if (dup == SIZE_MAX - 1)
        return ts_err_set(p->err, TS_ENOMEM, "out of memory reading energy table");
    for (yaml_node_pair_t *pr = entries->data.mapping.pairs.start; pr < entries->data.mapping.pairs.top;
         pr++) {
        ts_status st = parse_entry(p, t, yaml_document_get_node(&p->doc, pr->key),
                                   yaml_document_get_node(&p->doc, pr->value),
                                   (size_t)(pr - entries->data.mapping.pairs.start) == dup);
        if (st)
            return st;
    }
    return TS_OK;
}

/* "dir/horowitz45.yaml" -> "horowitz45". */
static char *stem(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b);
    if (n > 5 && !strcmp(b + n - 5, ".yaml"))
        n -= 5;
    else if (n > 4 && !strcmp(b + n - 4, ".yml"))
        n -= 4;
    return ts_strndup(b, n);
}

/* The table is read as a whole libyaml document: count its nodes with the event parser first
 * (which holds one event at a time), so a document past the yaml_nodes limit is refused before
 * it is built. A text libyaml refuses is left to the load below, which reports it. */
static ts_status check_size(const char *name, const char *text, size_t len, ts_err *err)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return ts_err_set(err, TS_ENOMEM, "out of memory reading energy table");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    uint64_t nodes = 0, max = ts_limit(TS_LIMIT_YAML_NODES);
    ts_status st = TS_OK;
    for (bool done = false; !done;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev))
            break;
        done = ev.type == YAML_STREAM_END_EVENT;
        if ((ev.type == YAML_SCALAR_EVENT || ev.type == YAML_SEQUENCE_START_EVENT ||
             ev.type == YAML_MAPPING_START_EVENT || ev.type == YAML_ALIAS_EVENT) && ++nodes > max) {
            st = ts_err_at(err, TS_EINPUT, name, (int)ev.start_mark.line + 1, (int)ev.start_mark.column + 1,
                           "yaml has more than %" PRIu64 " values, maps and lists " TS_LIMIT_HINT_FMT, max,
                           ts_limit_name(TS_LIMIT_YAML_NODES));
            done = true;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    return st;
}

ts_status ts_energy_load_string(ts_energy_table **out, const char *name, const char *text, size_t len,
                                ts_err *err)
{
    *out = NULL;
    if (!name)
        name = "<energy>";
    ts_status cst = check_size(name, text, len, err);
    if (cst != TS_OK)
        return cst;
    ts_energy_table *t = ts_calloc(1, sizeof *t);
    if (!t)
        return ts_err_set(err, TS_ENOMEM, "out of memory reading energy table");
    t->name = stem(name);
    t->node = ts_strdup("");
    if (!t->name || !t->node) {
        ts_energy_destroy(t);
        return ts_err_set(err, TS_ENOMEM, "out of memory reading energy table");
    }
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        ts_energy_destroy(t);
        return ts_err_set(err, TS_ENOMEM, "out of memory reading energy table");
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    parse p = {.file = name, .err = err};
    ts_status st = TS_OK;
    if (!yaml_parser_load(&parser, &p.doc)) {
        if (parser.error == YAML_MEMORY_ERROR)
            st = ts_err_set(err, TS_ENOMEM, "out of memory reading energy table");
        else
            st = ts_err_at(err, TS_EINPUT, name, (int)parser.problem_mark.line + 1,
                           (int)parser.problem_mark.column + 1, "invalid yaml: %s",
                           parser.problem ? parser.problem : "parse error");
        yaml_parser_delete(&parser);
        ts_energy_destroy(t);
        return st;
    }
    st = parse_doc(&p, t);
    yaml_document_delete(&p.doc);
    yaml_parser_delete(&parser);
    if (st) {
        ts_energy_destroy(t);
        return st;
    }
    *out = t;
    return TS_OK;
}

ts_status ts_energy_load(ts_energy_table **out, const char *path, ts_builtin_fn builtin, ts_err *err)
{
    *out = NULL;
    if (!path || !*path)
        return ts_err_set(err, TS_EINPUT, "energy table name is empty");
    ts_err ferr;
    ts_err_init(&ferr);
    char *data;
    size_t len;
    ts_status st = ts_read_file(path, &data, &len, &ferr);
    if (st == TS_OK) {
        ts_err_free(&ferr);
        st = ts_energy_load_string(out, path, data, len, err);
        ts_free(data);
        return st;
    }
    const char *text;
    if (st != TS_ENOMEM && builtin && builtin(path, &text, &len) == 0) {
        ts_err_free(&ferr);
        return ts_energy_load_string(out, path, text, len, err);
    }
    if (st == TS_ENOMEM) {
        ts_err_free(&ferr);
        return ts_err_set(err, TS_ENOMEM, "out of memory reading energy table '%s'", path);
    }
    ts_err_free(&ferr);
    return ts_err_set(err, TS_EINPUT, "energy table '%s' is neither a readable file nor a built-in table",
                      path);
}

/* ---------------------------------------------------------------------------------------------
 * The power model's scaling of a table to one chip config (docs/energy.md, "scaling rules"). */

/* Horowitz ISSCC 2014 gives his 45 nm table at 0.9 V; every entry is taken at that voltage
 * (assumed for the 40 nm wire entry of Keckler et al. 2011, whose voltage is not given). */
#define TABLE_VDD 0.9
/* The SRAM the table's sram_read_64b and sram_write_64b were measured on: 8 KB (Horowitz 2014). */
#define TABLE_SRAM_BYTES 8192.0

/* "45 nm" -> 45e-9; 0 when the text is not a length (e.g. "n/a"). */
static double node_metres(const char *text)
{
    double v = 0;
    char why[128];
    if (!text || ts_unit_parse(text, TS_UNIT_LENGTH, &v, why, sizeof why))
        return 0;
    return v;
}

double ts_energy_scale_factor(const ts_energy_entry *e, double node_m, double vdd, double sram_bytes)
{
    if (!(node_m > 0))
        return 1;
    double f = 1;
    double v = vdd > 0 ? vdd / TABLE_VDD : 1;
    double from = node_metres(e->node);
    if (!strcmp(e->component, "offchip"))
        return 1; /* I/O runs at its own supply and reach: not scaled */
    if (!strcmp(e->component, "network"))
        return v * v; /* wire capacitance per mm barely changes with the node: only V^2 */
    if (from > 0)
        f = node_m / from; /* C ~ feature size */
    if ((!strcmp(e->name, "sram_read_64b") || !strcmp(e->name, "sram_write_64b")) && sram_bytes > 0)
        f *= sqrt(sram_bytes / TABLE_SRAM_BYTES); /* Horowitz: 8 KB 10 pJ, 32 KB 20 pJ, 1 MB 100 pJ */
    return f * v * v;
}

void ts_energy_scale(ts_energy_table *t, double node_m, double vdd, double sram_bytes)
{
    if (!t || !(node_m > 0))
        return;
    for (size_t i = 0; i < t->n; i++)
        t->e[i].joules *= ts_energy_scale_factor(&t->e[i], node_m, vdd, sram_bytes);
}
