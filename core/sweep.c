/* core/sweep.c — sweep specs: parse (core/ytree), check against the family schema, expand points,
 * filter them, and format their CSV rows from JSON reports.
 *
 * The spec is read into a small tree of scalars, maps and sequences with positions, then walked
 * once. Axis values are parsed with ts_config_parse_value, so a value the config loader would
 * refuse is refused here with the spec's line and column. Filters are a small expression
 * language (see docs/sweep.md), parsed and evaluated in one recursive-descent pass per point.
 */
#include "core/sweep.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/limit.h"
#include "core/suggest.h"
#include "core/units.h"
#include "core/ytree.h"

/* How sweep specs read YAML (core/ytree): one document; a node, scalar or not, inside 32 open
 * collections is too deep; libyaml's problem without its context. */
static const ts_ytree_opts yaml_opts = {
    .max_depth = 32,
    .depth_all = true,
    .one_doc = "more than one yaml document",
    .key_kind = true,
};

/* ---------------------------------------------------------------------------------------------
 * The spec. */

typedef union value {
    int64_t i;
    uint64_t u;
    double d;
    bool b;
    int e;
    char *s;
    ts_strlist sl;
    ts_intlist il;
} value;

typedef struct axis {
    char *key;               /* owned */
    const ts_cfg_key *ck;    /* borrowed: schema row (or one of common_keys) */
    char **vals;             /* owned: canonical text per value */
    double *num;             /* owned: numeric value per value (base units), for filters */
    bool numeric;            /* num is meaningful */
    bool setting;            /* a setting of the lowering (planner), not a config key */
    int line, col;           /* where the key is written */
    size_t n, cap, numcap;   /* values; room in vals and in num */
} axis;

/* A lowering setting the spec pins for every point (`planner: t10`, `max_tiles: 304`). */
typedef struct pin {
    char *value;             /* owned; NULL: not pinned (the compiler chooses) */
    int line, col;
} pin;

typedef struct filter {
    char *text;              /* owned */
    int line, col;           /* where the expression text starts */
} filter;

struct ts_sweep {
    char *file;              /* owned: name in messages */
    char *dir;               /* owned: directory of relative paths, "" for the current one */
    char *config;            /* owned: path or built-in name for the loader */
    char **wl_name, **wl_path; /* owned */
    int *wl_line, *wl_col;   /* owned: where each workload is written */
    size_t nwl;
    pin pins[TS_SWEEP_SETTINGS]; /* the settings the spec pins (setting_keys order) */
    axis *axes;              /* owned */
    size_t naxes;
    char **metrics;          /* owned */
    size_t nmetrics;
    uint64_t max_cycles;
    bool zip;
    size_t per_wl;           /* points per workload */
    size_t ntotal;
    uint64_t *ids;           /* owned: ids of the points that pass the filters, increasing */
    size_t npoints;
    filter *filters;         /* owned */
    size_t nfilters;
};

/* Keys every config has that may be swept (the family schema holds the others). */
static const ts_cfg_key common_keys[] = {
    {"energy.table", TS_CFG_STRING, TS_UNIT_NONE, 0, -1, "horowitz45", "energy table", 0, NULL},
    {"energy.static_power", TS_CFG_FLOAT, TS_UNIT_POWER, 0, 1e6, "0 W", "static power", 0, NULL},
    {"power.node", TS_CFG_FLOAT, TS_UNIT_LENGTH, 0, 1e-6, "0 nm", "process node", 0, NULL},
    {"power.vdd", TS_CFG_FLOAT, TS_UNIT_NONE, 0, 5, "0", "supply at power.vdd_clock, V", 0, NULL},
    {"power.vdd_clock", TS_CFG_FLOAT, TS_UNIT_FREQ, 0, 1e10, "0 Hz", "clock of power.vdd", 0, NULL},
    {"power.vdd_per_ghz", TS_CFG_FLOAT, TS_UNIT_NONE, 0, 10, "0", "V-f slope, V per GHz", 0, NULL},
    {"power.vdd_min", TS_CFG_FLOAT, TS_UNIT_NONE, 0, 5, "0", "V-f floor, V", 0, NULL},
    {"power.clock_share", TS_CFG_FLOAT, TS_UNIT_NONE, 0, 1, "0", "clock-tree share of static power", 0, NULL},
    {"power.sram_array", TS_CFG_UINT, TS_UNIT_BYTES, 0, 1e12, "0 B", "one unit's SRAM array", 0, NULL},
};

/* Settings of the lowering that the spec may pin or an axis sweep (values checked by
 * ts_sweep_check against the lowerings that declare them): the mapping of a model. */
static const ts_cfg_key setting_keys[TS_SWEEP_SETTINGS] = {
    {"planner", TS_CFG_STRING, TS_UNIT_NONE, 0, -1, NULL, "how the lowering plans a model's operators", 0, NULL},
    {"max_tiles", TS_CFG_UINT, TS_UNIT_NONE, 1, 1e9, NULL, "the most tiles a model's plan may use", 0, NULL},
};

/* Index of setting `name` in setting_keys, or -1. */
static int setting_index(const char *name)
{
    for (size_t k = 0; k < TS_SWEEP_SETTINGS; k++)
        if (!strcmp(setting_keys[k].path, name))
            return (int)k;
    return -1;
}

/* Config keys no lowering reads (docs/sweep.md, "Workloads: programs and models"): the clock
 * (plans are made in cycles), the energy table and power keys (priced after the run). A key
 * ending in '.' is a prefix. Points that differ only in these share one compile;
 * tests/sweep/run.sh compiles a model on every family with them changed and checks the program
 * is the same. */
static const char *const not_lowered[] = {"clock", "energy.", "power.", NULL};

/* Top-level fields of a JSON report (docs/report-schema.md): a metric starts with one. */
static const char *const report_fields[] = {
    "schema_version", "arch", "config", "workload", "cycles", "time_s", "clock_hz", "network_name",
    "bytes", "bytes_per_cycle", "bandwidth_bytes_per_s", "utilization", "macs", "flops", "ops", "ops_per_s",
    "flops_per_s", "energy", "stats", "layers", "outputs",
    "sweep", /* added by tessera sweep: planner, runs_per_s, runs_per_j, peak_macs_per_cycle, mac_share */
    NULL,
};

static const char *const spec_keys[] = {
    "config", "workloads", "axes", "combine", "filter", "metrics", "max_cycles", "description", "planner",
    "max_tiles", NULL,
};

static const char *const default_metrics[] = {"cycles", "time_s", "energy.total_j", "bytes.network", NULL};

/* The closest of cands (NULL-terminated) to word: distance <= 2 and below its length, else NULL. */
static const char *closest(const char *word, const char *const *cands)
{
    size_t best = 3, wl = strlen(word);
    const char *pick = NULL;
    for (size_t i = 0; cands[i]; i++) {
        size_t d = ts_edit_distance(word, wl, cands[i], strlen(cands[i]), false);
        if (d < best && d < wl) {
            best = d;
            pick = cands[i];
        }
    }
    return pick;
}

void ts_sweep_destroy(ts_sweep *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nwl; i++) {
        if (s->wl_name)
            ts_free(s->wl_name[i]);
        if (s->wl_path)
            ts_free(s->wl_path[i]);
    }
    ts_free(s->wl_name);
    ts_free(s->wl_path);
    ts_free(s->wl_line);
    ts_free(s->wl_col);
    for (size_t k = 0; k < TS_SWEEP_SETTINGS; k++)
        ts_free(s->pins[k].value);
    for (size_t a = 0; a < s->naxes; a++) {
        for (size_t k = 0; k < s->axes[a].n; k++)
            ts_free(s->axes[a].vals[k]);
        ts_free(s->axes[a].vals);
        ts_free(s->axes[a].num);
        ts_free(s->axes[a].key);
    }
    ts_free(s->axes);
    for (size_t i = 0; i < s->nmetrics; i++)
        ts_free(s->metrics[i]);
    ts_free(s->metrics);
    for (size_t i = 0; i < s->nfilters; i++)
        ts_free(s->filters[i].text);
    ts_free(s->filters);
    ts_free(s->ids);
    ts_free(s->config);
    ts_free(s->file);
    ts_free(s->dir);
    ts_free(s);
}

static ts_status at(ts_sweep *s, ts_err *err, const ts_ynode *y, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static ts_status at(ts_sweep *s, ts_err *err, const ts_ynode *y, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ts_err_at(err, TS_EINPUT, s->file, y->line, y->col, "%s", msg);
}

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* A path as the loaders should see it: beside the spec when a file exists there, else as written
 * (a file in the current directory or a built-in name). */
static char *resolve(const ts_sweep *s, const char *p)
{
    if (p[0] != '/' && s->dir[0]) {
        size_t n = strlen(s->dir) + strlen(p) + 2;
        char *j = ts_malloc(n);
        if (!j)
            return NULL;
        snprintf(j, n, "%s/%s", s->dir, p);
        if (is_file(j))
            return j;
        ts_free(j);
    }
    return ts_strdup(p);
}

/* Shortest text that reads back as v. */
static void fmt_double(double v, char *buf, size_t n)
{
    if (v == floor(v) && fabs(v) < 1e15) { /* whole numbers in full: 1000000000, not 1e+09 */
        snprintf(buf, n, "%.0f", v);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

static void free_value(const ts_cfg_key *k, value *v)
{
    if (k->type == TS_CFG_STRING) {
        ts_free(v->s);
    } else if (k->type == TS_CFG_STRLIST) {
        for (size_t i = 0; i < v->sl.n; i++)
            ts_free(v->sl.v[i]);
        ts_free(v->sl.v);
    } else if (k->type == TS_CFG_INTLIST) {
        ts_free(v->il.v);
    }
}

/* Parse one value of an axis, check it like the loader would, and add its canonical form. */
static ts_status axis_add(ts_sweep *s, axis *ax, const ts_ynode *at_node, const char *text, ts_err *err)
{
    value v;
    memset(&v, 0, sizeof v);
    char why[512];
    ts_status st = ts_config_parse_value(ax->ck, text, &v, why, sizeof why);
    if (st == TS_ENOMEM)
        return ts_err_set(err, st, "out of memory");
    if (st != TS_OK)
        return at(s, err, at_node, "%s: %s", ax->key, why);
    char buf[64];
    const char *canon = buf;
    double num = 0;
    switch (ax->ck->type) {
    case TS_CFG_INT: snprintf(buf, sizeof buf, "%lld", (long long)v.i); num = (double)v.i; break;
    case TS_CFG_UINT: snprintf(buf, sizeof buf, "%llu", (unsigned long long)v.u); num = (double)v.u; break;
    case TS_CFG_FLOAT: fmt_double(v.d, buf, sizeof buf); num = v.d; break;
    case TS_CFG_BOOL: canon = v.b ? "true" : "false"; num = v.b; break;
    case TS_CFG_ENUM: canon = ax->ck->choices[v.e]; break;
    default: canon = text; break;
    }
    char *c = ts_strdup(canon);
    free_value(ax->ck, &v);
    if (!c || ts_grow((void **)&ax->vals, &ax->cap, ax->n + 1, sizeof *ax->vals) ||
        ts_grow((void **)&ax->num, &ax->numcap, ax->n + 1, sizeof *ax->num)) {
        ts_free(c);
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    }
    ax->vals[ax->n] = c;
    ax->num[ax->n++] = num;
    return TS_OK;
}

/* A range {from, to, step} or a series {from, to, factor}. */
static ts_status axis_range(ts_sweep *s, axis *ax, const ts_ynode *m, ts_err *err)
{
    static const char *const rkeys[] = {"from", "to", "step", "factor", NULL};
    for (size_t i = 0; i < m->n; i += 2) {
        const ts_ynode *k = m->kids[i];
        if (!closest(k->text, rkeys) || strcmp(closest(k->text, rkeys), k->text)) {
            const char *c = closest(k->text, rkeys);
            if (c)
                return at(s, err, k, "%s: unknown key '%s' (did you mean '%s'?)", ax->key, k->text, c);
            return at(s, err, k, "%s: unknown key '%s' (a range has from, to and step or factor)", ax->key,
                      k->text);
        }
        if (i + 1 < m->n && m->kids[i + 1]->kind != TS_Y_SCALAR)
            return at(s, err, m->kids[i + 1], "%s.%s: expected a value, got %s", ax->key, k->text,
                      ts_ynode_kind_name(m->kids[i + 1]));
    }
    const ts_ynode *from = ts_ynode_get(m, "from"), *to = ts_ynode_get(m, "to");
    const ts_ynode *step = ts_ynode_get(m, "step"), *factor = ts_ynode_get(m, "factor");
    if (!from || !to)
        return at(s, err, m, "%s: a range needs 'from' and 'to'", ax->key);
    if (!step == !factor)
        return at(s, err, m, "%s: a range needs one of 'step' or 'factor'", ax->key);
    ts_cfg_type t = ax->ck->type;
    if (t != TS_CFG_INT && t != TS_CFG_UINT && t != TS_CFG_FLOAT)
        return at(s, err, m, "%s: a range needs a numeric key; list the values instead", ax->key);
    double lo, hi, by;
    char why[512];
    ts_status st = axis_add(s, ax, from, from->text, err);
    if (st == TS_OK)
        st = axis_add(s, ax, to, to->text, err);
    if (st != TS_OK)
        return st;
    lo = ax->num[0];
    hi = ax->num[1];
    ts_free(ax->vals[0]);
    ts_free(ax->vals[1]);
    ax->n = 0;
    if (hi < lo)
        return at(s, err, to, "%s: 'to' is below 'from'", ax->key);
    if (step) {
        if (ts_unit_parse(step->text, ax->ck->unit, &by, why, sizeof why))
            return at(s, err, step, "%s.step: %s", ax->key, why);
        if (!(by > 0))
            return at(s, err, step, "%s.step: must be above 0", ax->key);
        if (t != TS_CFG_FLOAT && by != floor(by))
            return at(s, err, step, "%s.step: expected a whole number, got '%s'", ax->key, step->text);
    } else {
        if (ts_unit_parse(factor->text, TS_UNIT_NONE, &by, why, sizeof why))
            return at(s, err, factor, "%s.factor: %s", ax->key, why);
        if (!(by > 1))
            return at(s, err, factor, "%s.factor: must be above 1", ax->key);
        if (!(lo > 0))
            return at(s, err, from, "%s: a series needs 'from' above 0", ax->key);
    }
    /* v_k = from + k step, or from factor^k, up to `to` (a relative slack of 1e-9 absorbs the
     * rounding of decimal steps such as 0.1 GHz). The count is known before any value is made, so
     * a range of a billion values is refused at once. */
    double slack = hi * 1e-9;
    uint64_t lim = ts_limit(TS_LIMIT_SWEEP_POINTS);
    double count = step ? floor((hi + slack - lo) / by) + 1 : floor(log((hi + slack) / lo) / log(by)) + 1;
    if (!(count <= (double)lim))
        return at(s, err, m, "%s: %.0f values, more than the limit of %" PRIu64 " " TS_LIMIT_HINT_FMT, ax->key,
                  count, lim, ts_limit_name(TS_LIMIT_SWEEP_POINTS));
    for (size_t k = 0;; k++) {
        double v = step ? lo + (double)k * by : lo * pow(by, (double)k);
        if (v > hi + slack)
            break;
        if (v > hi)
            v = hi;
        if (k >= lim)
            return at(s, err, m, "%s: more than %" PRIu64 " values " TS_LIMIT_HINT_FMT, ax->key, lim,
                      ts_limit_name(TS_LIMIT_SWEEP_POINTS));
        char buf[64];
        if (t == TS_CFG_FLOAT)
            fmt_double(v, buf, sizeof buf);
        else
            snprintf(buf, sizeof buf, "%.0f", floor(v + 0.5));
        if ((st = axis_add(s, ax, m, buf, err)) != TS_OK)
            return st;
    }
    return TS_OK;
}

static ts_status parse_axes(ts_sweep *s, const ts_ynode *m, const ts_schema *sch, ts_err *err)
{
    if (m->kind != TS_Y_MAP)
        return at(s, err, m, "axes: expected a map of config keys to values, got %s", ts_ynode_kind_name(m));
    s->axes = ts_calloc(m->n / 2 + 1, sizeof *s->axes);
    if (!s->axes)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    for (size_t i = 0; i + 1 < m->n; i += 2) {
        const ts_ynode *k = m->kids[i], *v = m->kids[i + 1];
        for (size_t a = 0; a < s->naxes; a++)
            if (!strcmp(s->axes[a].key, k->text))
                return at(s, err, k, "axis '%s' given twice", k->text);
        axis *ax = &s->axes[s->naxes++];
        ax->line = k->line;
        ax->col = k->col;
        if (!(ax->key = ts_strdup(k->text)))
            return ts_err_set(err, TS_ENOMEM, "out of memory");
        for (size_t j = 0; j < sch->nkeys && !ax->ck; j++)
            if (!strcmp(sch->keys[j].path, k->text))
                ax->ck = &sch->keys[j];
        for (size_t j = 0; j < sizeof common_keys / sizeof common_keys[0] && !ax->ck; j++)
            if (!strcmp(common_keys[j].path, k->text))
                ax->ck = &common_keys[j];
        for (size_t j = 0; j < sizeof setting_keys / sizeof setting_keys[0] && !ax->ck; j++)
            if (!strcmp(setting_keys[j].path, k->text)) {
                ax->ck = &setting_keys[j];
                ax->setting = true;
            }
        if (!ax->ck) {
            if (!strcmp(k->text, "arch") || !strcmp(k->text, "base") || !strcmp(k->text, "name") ||
                !strcmp(k->text, "description"))
                return at(s, err, k, "'%s' cannot be swept", k->text);
            size_t best = 3, kl = strlen(k->text);
            const char *pick = NULL;
            for (size_t j = 0; j < sch->nkeys; j++) {
                size_t d = ts_edit_distance(k->text, kl, sch->keys[j].path, strlen(sch->keys[j].path), false);
                if (d < best && d < kl) {
                    best = d;
                    pick = sch->keys[j].path;
                }
            }
            for (size_t j = 0; j < sizeof common_keys / sizeof common_keys[0]; j++) {
                size_t d = ts_edit_distance(k->text, kl, common_keys[j].path, strlen(common_keys[j].path), false);
                if (d < best && d < kl) {
                    best = d;
                    pick = common_keys[j].path;
                }
            }
            if (pick)
                return at(s, err, k, "unknown key '%s' for arch %s (did you mean '%s'?)", k->text, sch->arch, pick);
            return at(s, err, k, "unknown key '%s' for arch %s (see 'tessera config --schema %s')", k->text,
                      sch->arch, sch->arch);
        }
        ts_status st = TS_OK;
        if (v->kind == TS_Y_SCALAR) {
            st = axis_add(s, ax, v, v->text, err);
        } else if (v->kind == TS_Y_SEQ) {
            if (!v->n)
                return at(s, err, v, "%s: no values", ax->key);
            for (size_t j = 0; j < v->n && st == TS_OK; j++) {
                if (v->kids[j]->kind != TS_Y_SCALAR)
                    return at(s, err, v->kids[j], "%s: expected a value, got %s", ax->key,
                              ts_ynode_kind_name(v->kids[j]));
                st = axis_add(s, ax, v->kids[j], v->kids[j]->text, err);
            }
        } else {
            st = axis_range(s, ax, v, err);
        }
        if (st != TS_OK)
            return st;
        ax->numeric = ax->ck->type == TS_CFG_INT || ax->ck->type == TS_CFG_UINT ||
                      ax->ck->type == TS_CFG_FLOAT || ax->ck->type == TS_CFG_BOOL;
    }
    return TS_OK;
}

/* A scalar or a list of scalars into an owned array of owned strings. */
static ts_status str_list(ts_sweep *s, const ts_ynode *v, const char *what, char ***out, size_t *n, ts_err *err)
{
    size_t cnt = v->kind == TS_Y_SCALAR ? 1 : v->n;
    if (v->kind == TS_Y_MAP)
        return at(s, err, v, "%s: expected a list, got a map", what);
    if (!cnt)
        return at(s, err, v, "%s: empty list", what);
    *out = ts_calloc(cnt, sizeof **out);
    if (!*out)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    for (size_t i = 0; i < cnt; i++) {
        const ts_ynode *it = v->kind == TS_Y_SCALAR ? v : v->kids[i];
        if (it->kind != TS_Y_SCALAR)
            return at(s, err, it, "%s: expected text, got %s", what, ts_ynode_kind_name(it));
        if (!it->text[0])
            return at(s, err, it, "%s: empty item", what);
        if (!((*out)[i] = ts_strdup(it->text)))
            return ts_err_set(err, TS_ENOMEM, "out of memory");
        *n = i + 1;
    }
    return TS_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Filters: a small expression language over axis values.
 *
 *   expr := and ('||' and)*        and := not ('&&' not)*       not := '!' not | cmp
 *   cmp  := sum (('=='|'!='|'<'|'<='|'>'|'>=') sum)?
 *   sum  := prod (('+'|'-') prod)*  prod := unary (('*'|'/') unary)*
 *   unary := '-' unary | atom       atom := NUMBER [UNIT] | 'text' | "text" | AXIS | true | false | '(' expr ')'
 */

typedef struct fval { bool str; double num; const char *s; size_t n; } fval;

typedef struct fparse {
    const char *p, *start;
    const ts_sweep *sw;
    size_t point;             /* index of the combination: values come from idx[] */
    const size_t *idx;        /* value index per axis */
    char msg[300];            /* first error */
    size_t err_off;
    int depth;                /* '(', '-' and '!' open, bounded so a filter cannot exhaust the stack */
} fparse;

#define F_MAX_DEPTH 64

static bool ffail(fparse *f, const char *at_p, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool ffail(fparse *f, const char *at_p, const char *fmt, ...)
{
    if (!f->msg[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(f->msg, sizeof f->msg, fmt, ap);
        va_end(ap);
        f->err_off = (size_t)(at_p - f->start);
    }
    return false;
}

/* Open one more '(', '-' or '!' (at p0); false past F_MAX_DEPTH. */
static bool f_enter(fparse *f, const char *p0)
{
    if (f->depth == F_MAX_DEPTH)
        return ffail(f, p0, "expression nested more than %d levels", F_MAX_DEPTH);
    f->depth++;
    return true;
}

static void fws(fparse *f)
{
    while (*f->p == ' ' || *f->p == '\t' || *f->p == '\n' || *f->p == '\r')
        f->p++;
}

static bool feat(fparse *f, const char *op)
{
    fws(f);
    size_t n = strlen(op);
    if (strncmp(f->p, op, n))
        return false;
    /* "<" must not take the first half of "<=", nor "!" of "!=". */
    if (n == 1 && (op[0] == '<' || op[0] == '>' || op[0] == '!' || op[0] == '=') && f->p[1] == '=')
        return false;
    f->p += n;
    return true;
}

static bool f_expr(fparse *f, fval *v);

static bool is_ident(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (!first && ((c >= '0' && c <= '9') || c == '.'));
}

static bool f_atom(fparse *f, fval *v)
{
    fws(f);
    const char *p0 = f->p;
    memset(v, 0, sizeof *v);
    if (*f->p == '(') {
        if (!f_enter(f, p0))
            return false;
        f->p++;
        bool ok = f_expr(f, v);
        f->depth--;
        if (!ok)
            return false;
        if (!feat(f, ")"))
            return ffail(f, f->p, "expected ')'");
        return true;
    }
    if (*f->p == '\'' || *f->p == '"') {
        char q = *f->p++;
        const char *e = strchr(f->p, q);
        if (!e)
            return ffail(f, p0, "unclosed text");
        v->str = true;
        v->s = f->p;
        v->n = (size_t)(e - f->p);
        f->p = e + 1;
        return true;
    }
    if ((*f->p >= '0' && *f->p <= '9') || *f->p == '.') {
        char *end;
        strtod(f->p, &end);
        const char *u = end;
        while (*u == ' ')
            u++;
        const char *ue = u;
        while (is_ident(*ue, true) || *ue == '/' || (unsigned char)*ue >= 0x80)
            ue++;
        char text[96];
        size_t len = (size_t)((ue > u ? ue : end) - f->p);
        if (len >= sizeof text)
            return ffail(f, p0, "number too long");
        memcpy(text, f->p, len);
        text[len] = 0;
        char why[256];
        bool ok = false;
        for (int k = 0; k < TS_UNIT_KIND_COUNT && !ok; k++)
            ok = ts_unit_parse(text, (ts_unit_kind)k, &v->num, why, sizeof why) == 0;
        if (!ok)
            return ffail(f, p0, "'%s' is not a number or a quantity", text);
        f->p += len;
        return true;
    }
    if (is_ident(*f->p, true)) {
        const char *e = f->p;
        while (is_ident(*e, false))
            e++;
        size_t n = (size_t)(e - f->p);
        f->p = e;
        if (n == 4 && !strncmp(p0, "true", 4)) {
            v->num = 1;
            return true;
        }
        if (n == 5 && !strncmp(p0, "false", 5))
            return true;
        const ts_sweep *s = f->sw;
        for (size_t a = 0; a < s->naxes; a++) {
            const axis *ax = &s->axes[a];
            if (strlen(ax->key) == n && !strncmp(ax->key, p0, n)) {
                if (ax->numeric) {
                    v->num = ax->num[f->idx[a]];
                } else if (ax->ck->type == TS_CFG_ENUM || ax->ck->type == TS_CFG_STRING) {
                    v->str = true;
                    v->s = ax->vals[f->idx[a]];
                    v->n = strlen(v->s);
                } else {
                    return ffail(f, p0, "axis '%s' holds lists and cannot be used in a filter", ax->key);
                }
                return true;
            }
        }
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)n, p0);
        const char *best = NULL;
        size_t bd = 3;
        for (size_t a = 0; a < s->naxes; a++) {
            size_t d = ts_edit_distance(name, strlen(name), s->axes[a].key, strlen(s->axes[a].key), false);
            if (d < bd && d < strlen(name)) {
                bd = d;
                best = s->axes[a].key;
            }
        }
        if (best)
            return ffail(f, p0, "unknown axis '%s' (did you mean '%s'?)", name, best);
        return ffail(f, p0, "unknown axis '%s' (a filter names axes of this sweep)", name);
    }
    if (!*f->p)
        return ffail(f, p0, "expression ends too early");
    return ffail(f, p0, "unexpected '%c'", *f->p);
}

static bool f_num(fparse *f, const fval *v, const char *p0)
{
    return v->str ? ffail(f, p0, "text cannot be used in arithmetic") : true;
}

static bool f_unary(fparse *f, fval *v)
{
    fws(f);
    const char *p0 = f->p;
    if (feat(f, "-")) {
        if (!f_enter(f, p0))
            return false;
        bool ok = f_unary(f, v);
        f->depth--;
        if (!ok || !f_num(f, v, p0))
            return false;
        v->num = -v->num;
        return true;
    }
    return f_atom(f, v);
}

typedef bool f_level(fparse *f, fval *v);

/* Operands of the next level joined left to right by either one-character operator of ops
 * (multiply and divide, or add and subtract); both sides of each must be numbers. */
static bool f_arith(fparse *f, fval *v, f_level *operand, const char ops[2])
{
    const char *p0 = (fws(f), f->p);
    if (!operand(f, v))
        return false;
    for (;;) {
        const char op1[2] = {ops[0], 0}, op2[2] = {ops[1], 0};
        char op = feat(f, op1) ? ops[0] : feat(f, op2) ? ops[1] : 0;
        if (!op)
            return true;
        fval r;
        const char *p1 = (fws(f), f->p);
        if (!operand(f, &r) || !f_num(f, v, p0) || !f_num(f, &r, p1))
            return false;
        v->num = op == '*'   ? v->num * r.num
                 : op == '/' ? v->num / r.num
                 : op == '+' ? v->num + r.num
                             : v->num - r.num;
    }
}

static bool f_prod(fparse *f, fval *v)
{
    return f_arith(f, v, f_unary, "*/");
}

static bool f_sum(fparse *f, fval *v)
{
    return f_arith(f, v, f_prod, "+-");
}

static bool f_cmp(fparse *f, fval *v)
{
    const char *p0 = (fws(f), f->p);
    if (!f_sum(f, v))
        return false;
    static const char *const ops[] = {"==", "!=", "<=", ">=", "<", ">"};
    int op = -1;
    for (int i = 0; i < 6 && op < 0; i++)
        if (feat(f, ops[i]))
            op = i;
    if (op < 0)
        return true;
    fval r;
    if (!f_sum(f, &r))
        return false;
    bool res;
    if (v->str || r.str) {
        if (!(v->str && r.str))
            return ffail(f, p0, "cannot compare text with a number");
        if (op > 1)
            return ffail(f, p0, "text can only be compared with == and !=");
        res = (v->n == r.n && !memcmp(v->s, r.s, v->n)) == (op == 0);
    } else {
        double a = v->num, b = r.num;
        res = op == 0 ? a == b : op == 1 ? a != b : op == 2 ? a <= b : op == 3 ? a >= b : op == 4 ? a < b : a > b;
    }
    memset(v, 0, sizeof *v);
    v->num = res;
    return true;
}

static bool f_truth(fparse *f, const fval *v, const char *p0, bool *out)
{
    if (v->str)
        return ffail(f, p0, "text is not true or false: compare it with == or !=");
    *out = v->num != 0;
    return true;
}

static bool f_not(fparse *f, fval *v)
{
    fws(f);
    const char *p0 = f->p;
    if (feat(f, "!")) {
        bool t = false;
        if (!f_enter(f, p0))
            return false;
        bool ok = f_not(f, v);
        f->depth--;
        if (!ok || !f_truth(f, v, p0, &t))
            return false;
        memset(v, 0, sizeof *v);
        v->num = !t;
        return true;
    }
    return f_cmp(f, v);
}

/* Operands of the next level joined by op ("&&" or "||"); each must be true or false. Both sides
 * are always read, so a bad right side is reported even when the left decides. */
static bool f_logic(fparse *f, fval *v, f_level *operand, const char *op)
{
    const char *p0 = (fws(f), f->p);
    if (!operand(f, v))
        return false;
    while (feat(f, op)) {
        fval r;
        bool a = false, b = false;
        const char *p1 = (fws(f), f->p);
        if (!operand(f, &r) || !f_truth(f, v, p0, &a) || !f_truth(f, &r, p1, &b))
            return false;
        memset(v, 0, sizeof *v);
        v->num = op[0] == '&' ? a && b : a || b;
    }
    return true;
}

static bool f_and(fparse *f, fval *v)
{
    return f_logic(f, v, f_not, "&&");
}

static bool f_expr(fparse *f, fval *v)
{
    return f_logic(f, v, f_and, "||");
}

/* Evaluate filter i at the value indices idx: 1 keep, 0 drop, -1 error (in err). */
static int filter_eval(const ts_sweep *s, size_t i, const size_t *idx, ts_err *err)
{
    const filter *fl = &s->filters[i];
    fparse f = {.p = fl->text, .start = fl->text, .sw = s, .idx = idx};
    fval v;
    bool keep = false;
    if (f_expr(&f, &v)) {
        fws(&f);
        if (*f.p)
            ffail(&f, f.p, "unexpected '%c'", *f.p);
        else
            f_truth(&f, &v, fl->text, &keep);
    }
    if (f.msg[0]) {
        ts_err_at(err, TS_EINPUT, s->file, fl->line, fl->col + (int)f.err_off, "filter: %s", f.msg);
        return -1;
    }
    return keep;
}

/* ---------------------------------------------------------------------------------------------
 * Loading. */

/* Value indices of combination c (within one workload). */
static void combo_idx(const ts_sweep *s, size_t c, size_t *idx)
{
    for (size_t a = s->naxes; a-- > 0;) {
        if (s->zip) {
            idx[a] = c;
        } else {
            idx[a] = c % s->axes[a].n;
            c /= s->axes[a].n;
        }
    }
}

static ts_status expand(ts_sweep *s, ts_err *err)
{
    uint64_t lim = ts_limit(TS_LIMIT_SWEEP_POINTS);
    size_t per = 1;
    if (s->zip) {
        per = s->naxes ? s->axes[0].n : 1;
        for (size_t a = 1; a < s->naxes; a++)
            if (s->axes[a].n != per)
                return ts_err_at(err, TS_EINPUT, s->file, 1, 1,
                                 "combine: zip needs axes of one length, but '%s' has %zu values and '%s' %zu",
                                 s->axes[0].key, per, s->axes[a].key, s->axes[a].n);
    } else {
        for (size_t a = 0; a < s->naxes; a++) {
            if (per > lim / s->axes[a].n)
                return ts_err_at(err, TS_EINPUT, s->file, 1, 1, "the sweep has more than %" PRIu64 " points "
                                 TS_LIMIT_HINT_FMT, lim, ts_limit_name(TS_LIMIT_SWEEP_POINTS));
            per *= s->axes[a].n;
        }
    }
    if (per > lim / s->nwl)
        return ts_err_at(err, TS_EINPUT, s->file, 1, 1, "the sweep has more than %" PRIu64 " points " TS_LIMIT_HINT_FMT,
                         lim, ts_limit_name(TS_LIMIT_SWEEP_POINTS));
    s->per_wl = per;
    s->ntotal = per * s->nwl;
    s->ids = ts_calloc(s->ntotal ? s->ntotal : 1, sizeof *s->ids);
    size_t *idx = ts_calloc(s->naxes + 1, sizeof *idx);
    if (!s->ids || !idx) {
        ts_free(idx);
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    }
    /* Filters depend only on axis values, the same for every workload. */
    for (size_t c = 0; c < per; c++) {
        combo_idx(s, c, idx);
        bool keep = true;
        for (size_t i = 0; i < s->nfilters; i++) {
            int r = filter_eval(s, i, idx, err); /* every filter, so each is checked fully */
            if (r < 0) {
                ts_free(idx);
                return TS_EINPUT;
            }
            keep = keep && r;
        }
        if (keep)
            s->ids[s->npoints++] = c;
    }
    ts_free(idx);
    size_t kept = s->npoints;
    for (size_t w = 1; w < s->nwl; w++)
        for (size_t k = 0; k < kept; k++)
            s->ids[s->npoints++] = w * per + s->ids[k];
    return TS_OK;
}

static ts_status load_tree(ts_sweep *s, const ts_ynode *root, const ts_config_opts *copts, ts_err *err)
{
    if (!root)
        return ts_err_at(err, TS_EINPUT, s->file, 1, 1, "empty sweep spec");
    if (root->kind != TS_Y_MAP)
        return at(s, err, root, "expected a map of sweep keys, got %s", ts_ynode_kind_name(root));
    const ts_ynode *axes = NULL, *cfgv = NULL, *wls = NULL, *filt = NULL, *mets = NULL;
    size_t dup = SIZE_MAX, dupof = 0;
    int r = ts_ynode_first_dup(root, &dup, &dupof);
    if (r < 0)
        return ts_err_set(err, TS_ENOMEM, "out of memory reading %s", s->file);
    if (r == 0)
        dup = SIZE_MAX;
    for (size_t i = 0; i + 1 < root->n; i += 2) {
        const ts_ynode *k = root->kids[i], *v = root->kids[i + 1];
        if (i == dup)
            return at(s, err, k, "duplicate key '%s' (first at line %d, col %d)", k->text,
                      root->kids[dupof]->line, root->kids[dupof]->col);
        if (!strcmp(k->text, "config")) {
            cfgv = v;
        } else if (!strcmp(k->text, "workloads")) {
            wls = v;
        } else if (!strcmp(k->text, "axes")) {
            axes = v;
        } else if (!strcmp(k->text, "filter")) {
            filt = v;
        } else if (!strcmp(k->text, "metrics")) {
            mets = v;
        } else if (setting_index(k->text) >= 0) {
            pin *pn = &s->pins[setting_index(k->text)];
            if (v->kind != TS_Y_SCALAR || !v->text[0])
                return at(s, err, v, "%s: expected one value", k->text);
            if (!(pn->value = ts_strdup(v->text)))
                return ts_err_set(err, TS_ENOMEM, "out of memory");
            pn->line = v->line;
            pn->col = v->col;
        } else if (!strcmp(k->text, "description")) {
            if (v->kind != TS_Y_SCALAR)
                return at(s, err, v, "description: expected text, got %s", ts_ynode_kind_name(v));
        } else if (!strcmp(k->text, "combine")) {
            if (v->kind != TS_Y_SCALAR || (strcmp(v->text, "cartesian") && strcmp(v->text, "zip")))
                return at(s, err, v, "combine: expected 'cartesian' or 'zip'");
            s->zip = !strcmp(v->text, "zip");
        } else if (!strcmp(k->text, "max_cycles")) {
            char *end;
            if (v->kind != TS_Y_SCALAR || !v->text[0] || v->text[0] == '-' ||
                (s->max_cycles = strtoull(v->text, &end, 10), *end) || !s->max_cycles)
                return at(s, err, v, "max_cycles: expected a positive whole number");
        } else {
            const char *c = closest(k->text, spec_keys);
            if (c)
                return at(s, err, k, "unknown key '%s' (did you mean '%s'?)", k->text, c);
            return at(s, err, k, "unknown key '%s' (a sweep has config, workloads, axes, combine, filter, "
                                 "metrics, max_cycles, planner, max_tiles and description)", k->text);
        }
    }
    if (!cfgv)
        return at(s, err, root, "missing required key 'config'");
    if (cfgv->kind != TS_Y_SCALAR || !cfgv->text[0])
        return at(s, err, cfgv, "config: expected a config file or a built-in name");
    if (!wls)
        return at(s, err, root, "missing required key 'workloads'");
    if (!(s->config = resolve(s, cfgv->text)))
        return ts_err_set(err, TS_ENOMEM, "out of memory");

    /* The base config gives the family, whose schema checks the axes. */
    ts_config_opts o = *copts;
    o.sets = NULL;
    o.nsets = 0;
    ts_config *cfg = NULL;
    ts_err cerr;
    ts_err_init(&cerr);
    if (ts_config_load(&cfg, s->config, &o, &cerr) != TS_OK) {
        char line[1200];
        ts_err_format(&cerr, line, sizeof line);
        ts_status cst = cerr.status;
        ts_err_free(&cerr);
        if (cst == TS_ENOMEM)
            return ts_err_set(err, cst, "out of memory");
        return at(s, err, cfgv, "config '%s' does not load: %s", cfgv->text, line);
    }
    ts_err_free(&cerr);
    const ts_schema *sch = ts_config_schema(cfg);
    ts_status st = TS_OK;

    size_t nwl = 0;
    if ((st = str_list(s, wls, "workloads", &s->wl_name, &nwl, err)) != TS_OK) {
        s->nwl = nwl;
        goto out;
    }
    s->nwl = nwl;
    s->wl_path = ts_calloc(nwl, sizeof *s->wl_path);
    s->wl_line = ts_calloc(nwl, sizeof *s->wl_line);
    s->wl_col = ts_calloc(nwl, sizeof *s->wl_col);
    if (!s->wl_path || !s->wl_line || !s->wl_col) {
        st = ts_err_set(err, TS_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < nwl; i++) {
        const ts_ynode *wn = wls->kind == TS_Y_SCALAR ? wls : wls->kids[i];
        s->wl_line[i] = wn->line;
        s->wl_col[i] = wn->col;
        if (!(s->wl_path[i] = resolve(s, s->wl_name[i]))) {
            st = ts_err_set(err, TS_ENOMEM, "out of memory");
            goto out;
        }
    }
    if (axes && (st = parse_axes(s, axes, sch, err)) != TS_OK)
        goto out;
    for (size_t a = 0; a < s->naxes; a++)
        if (s->axes[a].setting && s->pins[setting_index(s->axes[a].key)].value) {
            const pin *pn = &s->pins[setting_index(s->axes[a].key)];
            st = ts_err_at(err, TS_EINPUT, s->file, pn->line, pn->col,
                           "%s: pinned here and swept as an axis: give one of them", s->axes[a].key);
            goto out;
        }
    if (mets) {
        if ((st = str_list(s, mets, "metrics", &s->metrics, &s->nmetrics, err)) != TS_OK)
            goto out;
        for (size_t i = 0; i < s->nmetrics; i++) {
            const char *m = s->metrics[i];
            const ts_ynode *mn = mets->kind == TS_Y_SCALAR ? mets : mets->kids[i];
            const char *dot = strchr(m, '.');
            char first[64];
            snprintf(first, sizeof first, "%.*s", dot ? (int)(dot - m) : (int)strlen(m), m);
            bool known = false;
            for (size_t j = 0; report_fields[j] && !known; j++)
                known = !strcmp(first, report_fields[j]);
            if (!known) {
                const char *c = closest(first, report_fields);
                st = c ? at(s, err, mn, "metrics: unknown report field '%s' (did you mean '%s'?)", first, c)
                       : at(s, err, mn, "metrics: unknown report field '%s' (family statistics are 'stats.NAME')",
                            first);
                goto out;
            }
            static const char *const sweep_fields[] = {"planner", "plan", "runs_per_s", "runs_per_j",
                                                       "peak_macs_per_cycle", "mac_share", NULL};
            if (!strcmp(first, "sweep")) {
                const char *sub = dot ? dot + 1 : "";
                bool ok = false;
                for (size_t j = 0; sweep_fields[j] && !ok; j++)
                    ok = !strcmp(sub, sweep_fields[j]);
                if (!ok) {
                    const char *c = closest(sub, sweep_fields);
                    st = c ? at(s, err, mn, "metrics: unknown sweep field 'sweep.%s' (did you mean 'sweep.%s'?)", sub, c)
                           : at(s, err, mn, "metrics: unknown sweep field 'sweep.%s' (planner, plan, runs_per_s, "
                                            "runs_per_j, peak_macs_per_cycle, mac_share)", sub);
                    goto out;
                }
            }
            for (size_t j = 0; j < i; j++)
                if (!strcmp(s->metrics[j], m)) {
                    st = at(s, err, mn, "metrics: '%s' given twice", m);
                    goto out;
                }
        }
    } else {
        size_t n = 0;
        while (default_metrics[n])
            n++;
        s->metrics = ts_calloc(n, sizeof *s->metrics);
        if (!s->metrics) {
            st = ts_err_set(err, TS_ENOMEM, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < n; i++) {
            if (!(s->metrics[i] = ts_strdup(default_metrics[i]))) {
                st = ts_err_set(err, TS_ENOMEM, "out of memory");
                goto out;
            }
            s->nmetrics = i + 1;
        }
    }
    if (filt) {
        size_t nf = filt->kind == TS_Y_SCALAR ? 1 : filt->n;
        if (filt->kind == TS_Y_MAP) {
            st = at(s, err, filt, "filter: expected an expression or a list of them, got a map");
            goto out;
        }
        s->filters = ts_calloc(nf + 1, sizeof *s->filters);
        if (!s->filters) {
            st = ts_err_set(err, TS_ENOMEM, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < nf; i++) {
            const ts_ynode *it = filt->kind == TS_Y_SCALAR ? filt : filt->kids[i];
            if (it->kind != TS_Y_SCALAR) {
                st = at(s, err, it, "filter: expected an expression, got %s", ts_ynode_kind_name(it));
                goto out;
            }
            filter *fl = &s->filters[s->nfilters++];
            fl->line = it->line;
            fl->col = it->col + !it->plain;
            if (!(fl->text = ts_strdup(it->text))) {
                st = ts_err_set(err, TS_ENOMEM, "out of memory");
                goto out;
            }
        }
    }
    st = expand(s, err);
out:
    ts_config_destroy(cfg);
    return st;
}

ts_status ts_sweep_load_string(ts_sweep **out, const char *name, const char *dir, const char *text,
                               size_t len, const ts_config_opts *copts, ts_err *err)
{
    *out = NULL;
    ts_sweep *s = ts_calloc(1, sizeof *s);
    if (!s)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    s->file = ts_strdup(name ? name : "sweep");
    s->dir = ts_strdup(dir ? dir : "");
    if (!s->file || !s->dir) {
        ts_sweep_destroy(s);
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    }
    ts_ynode *root = NULL;
    ts_status st = ts_ytree_parse(s->file, text, len, &yaml_opts, &root, err);
    if (st == TS_OK)
        st = load_tree(s, root, copts, err);
    ts_ynode_destroy(root);
    if (st != TS_OK) {
        ts_sweep_destroy(s);
        return st;
    }
    *out = s;
    return TS_OK;
}

ts_status ts_sweep_load(ts_sweep **out, const char *path, const ts_config_opts *copts, ts_err *err)
{
    *out = NULL;
    char *text;
    size_t len;
    ts_status st = ts_read_file(path, &text, &len, err);
    if (st != TS_OK)
        return st;
    const char *slash = strrchr(path, '/');
    char *dir = slash ? ts_strndup(path, (size_t)(slash - path + (slash == path))) : ts_strdup("");
    if (!dir) {
        ts_free(text);
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    }
    st = ts_sweep_load_string(out, path, dir, text, len, copts, err);
    ts_free(dir);
    ts_free(text);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * Accessors. */

const char *ts_sweep_config(const ts_sweep *s) { return s->config; }
size_t ts_sweep_nworkloads(const ts_sweep *s) { return s->nwl; }
const char *ts_sweep_workload_name(const ts_sweep *s, size_t i) { return s->wl_name[i]; }
const char *ts_sweep_workload_path(const ts_sweep *s, size_t i) { return s->wl_path[i]; }
size_t ts_sweep_naxes(const ts_sweep *s) { return s->naxes; }
const char *ts_sweep_axis_key(const ts_sweep *s, size_t i) { return s->axes[i].key; }
size_t ts_sweep_nmetrics(const ts_sweep *s) { return s->nmetrics; }
const char *ts_sweep_metric(const ts_sweep *s, size_t i) { return s->metrics[i]; }
uint64_t ts_sweep_max_cycles(const ts_sweep *s) { return s->max_cycles; }
size_t ts_sweep_npoints(const ts_sweep *s) { return s->npoints; }
size_t ts_sweep_ntotal(const ts_sweep *s) { return s->ntotal; }
uint64_t ts_sweep_point_id(const ts_sweep *s, size_t i) { return s->ids[i]; }
size_t ts_sweep_point_workload(const ts_sweep *s, size_t i) { return (size_t)(s->ids[i] / s->per_wl); }

const char *ts_sweep_point_value(const ts_sweep *s, size_t i, size_t a)
{
    size_t c = (size_t)(s->ids[i] % s->per_wl);
    if (s->zip)
        return s->axes[a].vals[c];
    for (size_t b = s->naxes; b-- > a + 1;)
        c /= s->axes[b].n;
    return s->axes[a].vals[c % s->axes[a].n];
}

long ts_sweep_find(const ts_sweep *s, uint64_t id)
{
    size_t lo = 0, hi = s->npoints;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->npoints && s->ids[lo] == id ? (long)lo : -1;
}

void ts_sweep_point_sets(const ts_sweep *s, size_t i, ts_buf *out, size_t *offsets)
{
    ts_buf_reset(out);
    for (size_t a = 0; a < s->naxes; a++) {
        offsets[a] = out->len;
        if (!s->axes[a].setting)
            ts_buf_printf(out, "%s=%s", s->axes[a].key, ts_sweep_point_value(s, i, a));
        ts_buf_putc(out, 0);
    }
}

bool ts_sweep_axis_is_setting(const ts_sweep *s, size_t a)
{
    return s->axes[a].setting;
}

const char *ts_sweep_setting_name(size_t k)
{
    return k < TS_SWEEP_SETTINGS ? setting_keys[k].path : NULL;
}

const char *ts_sweep_point_setting(const ts_sweep *s, size_t i, size_t k)
{
    for (size_t a = 0; a < s->naxes; a++)
        if (s->axes[a].setting && !strcmp(s->axes[a].key, setting_keys[k].path))
            return ts_sweep_point_value(s, i, a);
    return s->pins[k].value;
}

const char *ts_sweep_point_planner(const ts_sweep *s, size_t i)
{
    return ts_sweep_point_setting(s, i, 0);
}

bool ts_sweep_key_lowered(const char *key)
{
    for (size_t j = 0; not_lowered[j]; j++) {
        size_t n = strlen(not_lowered[j]);
        if (not_lowered[j][n - 1] == '.' ? !strncmp(key, not_lowered[j], n) : !strcmp(key, not_lowered[j]))
            return false;
    }
    return true;
}

void ts_sweep_compile_key(const ts_sweep *s, size_t i, ts_buf *out)
{
    ts_buf_reset(out);
    ts_buf_printf(out, "workload=%zu", ts_sweep_point_workload(s, i));
    for (size_t k = 0; k < TS_SWEEP_SETTINGS; k++) {
        const char *v = ts_sweep_point_setting(s, i, k);
        if (v)
            ts_buf_printf(out, ";%s=%s", setting_keys[k].path, v);
    }
    for (size_t a = 0; a < s->naxes; a++)
        if (!s->axes[a].setting && ts_sweep_key_lowered(s->axes[a].key))
            ts_buf_printf(out, ";%s=%s", s->axes[a].key, ts_sweep_point_value(s, i, a));
}

ts_status ts_sweep_check(const ts_sweep *s, const ts_sweep_checks *chk, ts_err *err)
{
    char msg[1200];
    for (size_t w = 0; w < s->nwl && chk->workload; w++) {
        ts_err e;
        ts_err_init(&e);
        ts_status st = chk->workload(chk->ud, s->wl_path[w], &e);
        if (st != TS_OK) {
            ts_err_format(&e, msg, sizeof msg);
            ts_err_free(&e);
            if (st == TS_ENOMEM)
                return ts_err_set(err, st, "out of memory");
            return ts_err_at(err, TS_EINPUT, s->file, s->wl_line[w], s->wl_col[w], "workloads: %s", msg);
        }
    }
    /* the axes that are settings, then the pinned settings (a = naxes + k) */
    for (size_t a = 0; a < s->naxes + TS_SWEEP_SETTINGS && chk->setting; a++) {
        const pin *pn = a >= s->naxes ? &s->pins[a - s->naxes] : NULL;
        if (pn ? !pn->value : !s->axes[a].setting)
            continue;
        const char *name = pn ? setting_keys[a - s->naxes].path : s->axes[a].key;
        size_t nv = pn ? 1 : s->axes[a].n;
        for (size_t k = 0; k < nv; k++) {
            const char *val = pn ? pn->value : s->axes[a].vals[k];
            ts_err e;
            ts_err_init(&e);
            ts_status st = chk->setting(chk->ud, name, val, &e);
            if (st != TS_OK) {
                ts_err_format(&e, msg, sizeof msg);
                ts_err_free(&e);
                if (st == TS_ENOMEM)
                    return ts_err_set(err, st, "out of memory");
                int line = pn ? pn->line : s->axes[a].line, col = pn ? pn->col : s->axes[a].col;
                return ts_err_at(err, TS_EINPUT, s->file, line, col, "%s: %s", name, msg);
            }
        }
    }
    return TS_OK;
}

/* ---------------------------------------------------------------------------------------------
 * CSV. */

void ts_csv_field(ts_buf *out, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        ts_buf_puts(out, s);
        return;
    }
    ts_buf_putc(out, '"');
    for (; *s; s++) {
        if (*s == '"')
            ts_buf_putc(out, '"');
        ts_buf_putc(out, *s);
    }
    ts_buf_putc(out, '"');
}

long ts_csv_split(const char *line, size_t len, ts_buf *out)
{
    ts_buf_reset(out);
    long n = 0;
    size_t i = 0;
    for (;;) {
        if (i < len && line[i] == '"') {
            i++;
            for (;;) {
                if (i >= len)
                    return -1;
                if (line[i] == '"') {
                    if (i + 1 < len && line[i + 1] == '"') {
                        ts_buf_putc(out, '"');
                        i += 2;
                        continue;
                    }
                    i++;
                    break;
                }
                ts_buf_putc(out, line[i++]);
            }
            if (i < len && line[i] != ',')
                return -1;
        } else {
            while (i < len && line[i] != ',') {
                if (line[i] == '"')
                    return -1;
                ts_buf_putc(out, line[i++]);
            }
        }
        ts_buf_putc(out, 0);
        n++;
        if (i >= len)
            break;
        i++; /* the comma */
    }
    return out->oom ? -1 : n;
}

void ts_sweep_csv_header(const ts_sweep *s, ts_buf *out)
{
    ts_buf_puts(out, "point,workload");
    for (size_t a = 0; a < s->naxes; a++) {
        ts_buf_putc(out, ',');
        ts_csv_field(out, s->axes[a].key);
    }
    for (size_t m = 0; m < s->nmetrics; m++) {
        ts_buf_putc(out, ',');
        ts_csv_field(out, s->metrics[m]);
    }
    ts_buf_puts(out, ",error\n");
}

void ts_sweep_csv_prefix(const ts_sweep *s, size_t i, ts_buf *out)
{
    ts_buf_printf(out, "%llu,", (unsigned long long)s->ids[i]);
    ts_csv_field(out, s->wl_name[ts_sweep_point_workload(s, i)]);
    ts_buf_putc(out, ',');
    for (size_t a = 0; a < s->naxes; a++) {
        ts_csv_field(out, ts_sweep_point_value(s, i, a));
        ts_buf_putc(out, ',');
    }
}

void ts_sweep_csv_row(const ts_sweep *s, size_t i, const char *report_json, const char *error,
                      ts_buf *out)
{
    ts_buf vals = TS_BUF_INIT;
    char missing[300] = "";
    size_t *off = ts_calloc(s->nmetrics + 1, sizeof *off);
    if (!off) {
        out->oom = true;
        return;
    }
    if (!error && report_json) {
        size_t jl = strlen(report_json);
        for (size_t m = 0; m < s->nmetrics; m++) {
            off[m] = vals.len;
            if (ts_json_lookup(report_json, jl, s->metrics[m], &vals) && !missing[0])
                snprintf(missing, sizeof missing, "metric '%s' is not a value in the report", s->metrics[m]);
            ts_buf_putc(&vals, 0);
        }
    } else if (!error) {
        error = "no report";
    }
    if (missing[0])
        error = missing;
    ts_sweep_csv_prefix(s, i, out);
    for (size_t m = 0; m < s->nmetrics; m++) {
        if (!error)
            ts_csv_field(out, vals.data + off[m]);
        ts_buf_putc(out, ',');
    }
    if (error) {
        /* One line: a multi-line message keeps its first line. */
        char one[1024];
        size_t n = strcspn(error, "\n");
        snprintf(one, sizeof one, "%.*s", (int)(n < sizeof one ? n : sizeof one - 1), error);
        ts_csv_field(out, one);
    }
    ts_buf_putc(out, '\n');
    if (vals.oom)
        out->oom = true;
    ts_buf_free(&vals);
    ts_free(off);
}

/* ---------------------------------------------------------------------------------------------
 * JSON: a field of a report, read with jansson. */

/* Append the scalar v (strings as they are, numbers as ts_buf_json_num writes them, null as
 * nothing); an object with a "value" member (a statistic) stands for that value. -1 for arrays,
 * other objects and a missing v. */
static int jscalar(const json_t *v, ts_buf *out)
{
    if (json_is_object(v))
        v = json_object_get(v, "value");
    if (!v || json_is_object(v) || json_is_array(v))
        return -1;
    if (json_is_string(v))
        ts_buf_put(out, json_string_value(v), json_string_length(v));
    else if (json_is_integer(v))
        ts_buf_printf(out, "%" PRId64, (int64_t)json_integer_value(v));
    else if (json_is_real(v))
        ts_buf_json_num(out, json_real_value(v));
    else if (!json_is_null(v))
        ts_buf_puts(out, json_is_true(v) ? "true" : "false");
    return 0;
}

/* Find path in v: a member whose key is a prefix of path ending at a dot or at its end, then the
 * rest of path in it, members tried in order. */
static int jfind(const json_t *v, const char *path, ts_buf *out)
{
    if (!*path)
        return jscalar(v, out);
    if (!json_is_object(v))
        return -1;
    const char *k;
    const json_t *m;
    size_t pl = strlen(path);
    json_object_foreach((json_t *)v, k, m) {
        size_t kl = strlen(k);
        if (kl <= pl && !memcmp(k, path, kl) && (path[kl] == 0 || path[kl] == '.')) {
            size_t mark = out->len;
            if (jfind(m, path[kl] ? path + kl + 1 : "", out) == 0)
                return 0;
            out->len = mark;
            if (out->data)
                out->data[mark] = 0;
        }
    }
    return -1;
}

int ts_json_lookup(const char *json, size_t len, const char *path, ts_buf *out)
{
    if (!path[0])
        return -1;
    json_t *root = json_loadb(json, len, 0, NULL);
    int rc = root ? jfind(root, path, out) : -1;
    json_decref(root);
    return rc;
}

void ts_json_compact(const char *json, size_t len, ts_buf *out)
{
    json_t *root = json_loadb(json, len, JSON_DECODE_ANY, NULL);
    if (root)
        ts_buf_json(out, root, JSON_COMPACT | JSON_REAL_PRECISION(TS_JSON_DIGITS));
    else
        ts_buf_puts(out, "null");
    json_decref(root);
}
