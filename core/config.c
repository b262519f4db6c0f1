/* core/config.c — chip configs: YAML read once into a typed, validated struct (see config.h).
 *
 * Loading runs in four steps:
 *   1. parse: the text becomes a tree of maps, sequences and scalars (core/ytree), each node with
 *      its file, line and column; `--set` values become nodes of the file "--set";
 *   2. layers: the top file and its chain of `base:` files, found through the top-level `arch`
 *      and `base` keys before anything else is read;
 *   3. flatten: every layer, base first, is walked against the known dotted paths (the common
 *      keys below plus the family schema), so `tile: {sram: ..}` and `tile.sram: ..` both land
 *      in the slot of `tile.sram`; a later layer overrides an earlier one, then `--set` overrides
 *      all of them;
 *   4. convert: each slot, or the schema default, is converted into the family's struct, and the
 *      family's check runs on the result.
 * Only the first error is reported, as `file:line:col: what is wrong`.
 */
#include "core/config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "core/alloc.h"
#include "core/suggest.h"
#include "core/fileio.h"
#include "core/ytree.h"

/* Limits that keep hostile input cheap: nesting of YAML collections and of `base:` files. */
#define MAX_DEPTH 64
#define MAX_LAYERS 16
#define SET_FILE "--set"

/* ---------------------------------------------------------------------------------------------
 * The common keys, handled here for every family. They use the same conversion code as schema
 * keys, into this struct. */
typedef struct core_vals {
    char *arch;          /* owned */
    char *name;          /* owned */
    char *description;   /* owned */
    char *base;          /* owned; the top file's base as written */
    char *energy_table;  /* owned */
    double static_power; /* W */
    double node_m;       /* process node, m; 0: the energy table's own */
    double vdd;          /* V at vdd_clock; 0: the energy table's voltage */
    double vdd_clock;    /* Hz; 0: the config's clock */
    double vdd_per_ghz;  /* V per GHz of clock above (below) vdd_clock */
    double vdd_min;      /* V: the curve's floor */
    char *sram_key;      /* owned: family key of one unit's SRAM array, "" for none */
    uint64_t sram_array; /* bytes of one unit's SRAM array when no sram_key names it; 0: none */
    double clock_share;  /* part of static_power that is the clock tree (~ f V^2), 0..1 */
} core_vals;

enum { CK_ARCH, CK_NAME, CK_DESC, CK_BASE, CK_ETABLE, CK_SPOWER, CK_NODE, CK_VDD, CK_VCLK, CK_VSLOPE, CK_VMIN, CK_SRAMKEY, CK_SRAMARR, CK_CSHARE, NCORE };

static const ts_cfg_key core_keys[NCORE] = {
    [CK_ARCH] = {"arch", TS_CFG_STRING, TS_UNIT_NONE, 0, -1, NULL,
                 "chip family this config describes (required, here or in a base)",
                 offsetof(core_vals, arch), NULL},
    [CK_NAME] = {"name", TS_CFG_STRING, TS_UNIT_NONE, 0, -1, NULL,
                 "name shown in reports (default: the file's stem)", offsetof(core_vals, name), NULL},
    [CK_DESC] = {"description", TS_CFG_STRING, TS_UNIT_NONE, 0, -1, "\"\"",
                 "free text for people", offsetof(core_vals, description), NULL},
    [CK_BASE] = {"base", TS_CFG_STRING, TS_UNIT_NONE, 0, -1, "\"\"",
                 "config whose keys this one overrides: a path relative to this file or a built-in name",
                 offsetof(core_vals, base), NULL},
    [CK_ETABLE] = {"energy.table", TS_CFG_STRING, TS_UNIT_NONE, 0, -1, "horowitz45",
                   "energy table: a file or a built-in name", offsetof(core_vals, energy_table), NULL},
    /* The 1 MW bound only catches slips of the prefix: no single chip comes near it. */
    [CK_SPOWER] = {"energy.static_power", TS_CFG_FLOAT, TS_UNIT_POWER, 0, 1e6, "0 W",
                   "power drawn whatever the activity at power.vdd and power.vdd_clock: leakage, and the "
                   "clock tree (power.clock_share); 0 uses the family's own figure",
                   offsetof(core_vals, static_power), NULL},
    /* The power model (docs/energy.md): events priced at the table's node and voltage are scaled
     * to this node and to the voltage the V-f curve gives at the config's clock. */
    [CK_NODE] = {"power.node", TS_CFG_FLOAT, TS_UNIT_LENGTH, 0, 1e-6, "0 nm",
                 "process node: event energies scale with node / table node (C ~ feature size, Dennard); "
                 "0 prices at the table's own node and voltage, unscaled", offsetof(core_vals, node_m), NULL},
    [CK_VDD] = {"power.vdd", TS_CFG_FLOAT, TS_UNIT_NONE, 0, 5, "0",
                "core supply in volts at power.vdd_clock: dynamic energy scales with (V / 0.9 V)^2, the table's "
                "voltage (Horowitz ISSCC 2014: 45 nm, 0.9 V); 0 takes the table's voltage", offsetof(core_vals, vdd),
                NULL},
    [CK_VCLK] = {"power.vdd_clock", TS_CFG_FLOAT, TS_UNIT_FREQ, 0, 1e10, "0 Hz",
                 "clock at which the supply is power.vdd; 0 is the config's own clock",
                 offsetof(core_vals, vdd_clock), NULL},
    [CK_VSLOPE] = {"power.vdd_per_ghz", TS_CFG_FLOAT, TS_UNIT_NONE, 0, 10, "0",
                   "V-f curve: volts per GHz the supply rises above power.vdd_clock and falls below it "
                   "(linear, floored at power.vdd_min); 0 is a fixed supply", offsetof(core_vals, vdd_per_ghz), NULL},
    [CK_VMIN] = {"power.vdd_min", TS_CFG_FLOAT, TS_UNIT_NONE, 0, 5, "0",
                 "lowest supply the V-f curve reaches, volts (near-threshold limit)", offsetof(core_vals, vdd_min),
                 NULL},
    [CK_SRAMKEY] = {"power.sram_key", TS_CFG_STRING, TS_UNIT_NONE, 0, -1, "\"\"",
                    "the family key giving one unit's SRAM array (tile.sram, pe.sram, mem.slice_bytes): SRAM "
                    "access energy grows with sqrt(array / 8 KB) (Horowitz 2014: 8 KB 10 pJ, 32 KB 20 pJ, 1 MB "
                    "100 pJ); \"\" for none", offsetof(core_vals, sram_key), NULL},
    [CK_SRAMARR] = {"power.sram_array", TS_CFG_UINT, TS_UNIT_BYTES, 0, 1e12, "0 B",
                    "one unit's SRAM array when power.sram_key names none; 0: the table's 8 KB",
                    offsetof(core_vals, sram_array), NULL},
    [CK_CSHARE] = {"power.clock_share", TS_CFG_FLOAT, TS_UNIT_NONE, 0, 1, "0",
                   "the part of energy.static_power drawn by what no event counts (clock tree, control): it "
                   "scales with f V^2, the rest (leakage) with V", offsetof(core_vals, clock_share), NULL},
};

struct ts_config {
    const ts_schema *schema; /* borrowed: schemas are static */
    void *data;              /* owned: schema->size bytes */
    core_vals core;
    char *path;              /* owned: the file or built-in name it came from */
    uint64_t fingerprint;
};

/* How configs read YAML: one document, collections 64 deep, libyaml's full context. */
static const ts_ytree_opts yaml_opts = {
    .max_depth = MAX_DEPTH,
    .one_doc = "more than one yaml document (a config is one document)",
    .detail = true,
    .key_kind = true,
};

/* ---------------------------------------------------------------------------------------------
 * Small string helpers. */


static const char *last_segment(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot ? dot + 1 : path;
}

static void trim_span(const char **s, size_t *len)
{
    while (*len && isspace((unsigned char)**s))
        (*s)++, (*len)--;
    while (*len && isspace((unsigned char)(*s)[*len - 1]))
        (*len)--;
}

/* ---------------------------------------------------------------------------------------------
 * The set of known keys: the common ones, then the family's. Index i < NCORE is core_keys[i]. */
typedef struct keyset {
    const ts_schema *schema;
    size_t n;
} keyset;

static const ts_cfg_key *ks_key(const keyset *ks, size_t i)
{
    return i < NCORE ? &core_keys[i] : &ks->schema->keys[i - NCORE];
}

static long ks_find(const keyset *ks, const char *path, size_t len)
{
    for (size_t i = 0; i < ks->n; i++) {
        const char *p = ks_key(ks, i)->path;
        if (strlen(p) == len && !memcmp(p, path, len))
            return (long)i;
    }
    return -1;
}

/* Whether some key lies under group (e.g. "tile" for "tile.sram"). */
static bool ks_is_group(const keyset *ks, const char *group, size_t len)
{
    for (size_t i = 0; i < ks->n; i++) {
        const char *p = ks_key(ks, i)->path;
        if (strlen(p) > len && !memcmp(p, group, len) && p[len] == '.')
            return true;
    }
    return false;
}

/* First key under group, for messages. */
static const char *ks_first_in_group(const keyset *ks, const char *group, size_t len)
{
    for (size_t i = 0; i < ks->n; i++) {
        const char *p = ks_key(ks, i)->path;
        if (strlen(p) > len && !memcmp(p, group, len) && p[len] == '.')
            return p;
    }
    return "";
}

/* The closest known key or group to an unknown one: edit distance <= 2 (and less than its
 * length, so "x" is not taken for "y"), else a key ending with the same last segment. Writes
 * into out, or "" when nothing is close. */
static void ks_suggest(const keyset *ks, const char *unknown, bool is_map, char *out, size_t n)
{
    out[0] = 0;
    /* Score: twice the distance, plus one when a key is offered for a map or a group for a value. */
    size_t best = 6, ulen = strlen(unknown);
    for (size_t i = 0; i < ks->n; i++) {
        const char *p = ks_key(ks, i)->path;
        /* The key itself and each of its groups ("a", "a.b" for "a.b.c"). */
        for (const char *end = p;; end++) {
            if (*end == '.' || !*end) {
                char cand[256];
                size_t cl = (size_t)(end - p);
                if (cl < sizeof cand) {
                    memcpy(cand, p, cl);
                    cand[cl] = 0;
                    size_t d = ts_edit_distance(unknown, strlen(unknown), cand, cl, false);
                    size_t score = 2 * d + (is_map != (*end == '.'));
                    if (d <= 2 && d < ulen && score < best) {
                        best = score;
                        snprintf(out, n, "%s", cand);
                    }
                }
            }
            if (!*end)
                break;
        }
    }
    if (out[0])
        return;
    const char *useg = last_segment(unknown);
    for (size_t i = 0; i < ks->n; i++) {
        const char *p = ks_key(ks, i)->path;
        if (strcmp(p, unknown) && !strcmp(last_segment(p), useg)) {
            snprintf(out, n, "%s", p);
            return;
        }
    }
}

static ts_status unknown_key(const keyset *ks, ts_err *err, const char *file, int line, int col,
                             const char *path, bool is_map)
{
    char sug[256];
    ks_suggest(ks, path, is_map, sug, sizeof sug);
    if (sug[0])
        return ts_err_at(err, TS_EINPUT, file, line, col, "unknown key '%s' (did you mean '%s'?)", path, sug);
    return ts_err_at(err, TS_EINPUT, file, line, col, "unknown key '%s'", path);
}

/* ---------------------------------------------------------------------------------------------
 * Converting text to typed values. */

/* "a frequency like '1.6 GHz'": what a key expects, for messages. */
static void expect_text(const ts_cfg_key *key, char *buf, size_t n)
{
    switch (key->type) {
    case TS_CFG_INT:
    case TS_CFG_UINT:
    case TS_CFG_FLOAT:
    case TS_CFG_INTLIST:
        if (key->unit == TS_UNIT_NONE && key->type != TS_CFG_FLOAT) {
            snprintf(buf, n, "a whole number like '4'");
        } else {
            /* The units module words it: "expected a frequency like '1.6 GHz', got ''". */
            char why[256] = "";
            double v;
            ts_unit_parse("", key->unit, &v, why, sizeof why);
            const char *s = strncmp(why, "expected ", 9) ? why : why + 9;
            const char *g = strstr(s, ", got");
            snprintf(buf, n, "%.*s", g ? (int)(g - s) : (int)strlen(s), s);
        }
        if (key->type == TS_CFG_INTLIST) {
            char item[200];
            snprintf(item, sizeof item, "%s", buf);
            snprintf(buf, n, "a list of %s", item);
        }
        return;
    case TS_CFG_BOOL: snprintf(buf, n, "true or false"); return;
    case TS_CFG_STRING: snprintf(buf, n, "a string"); return;
    case TS_CFG_ENUM: {
        size_t k = (size_t)snprintf(buf, n, "one of ");
        for (size_t i = 0; key->choices && key->choices[i] && k < n; i++)
            k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? ", " : "", key->choices[i]);
        return;
    }
    case TS_CFG_STRLIST: snprintf(buf, n, "a list of strings like [a, b]"); return;
    }
    snprintf(buf, n, "a value");
}

/* A bound or value of a key, for messages: with its unit when it has one. */
static void format_num(const ts_cfg_key *key, double v, char *buf, size_t n)
{
    if (key->unit == TS_UNIT_NONE || key->unit == TS_UNIT_CYCLES) {
        if (fabs(v) < 1e18 && v == floor(v))
            snprintf(buf, n, "%.0f", v);
        else
            snprintf(buf, n, "%.6g", v);
        return;
    }
    ts_unit_format(v, key->unit, buf, n);
}

static int range_fail(const ts_cfg_key *key, const char *text, char *why, size_t n)
{
    char lo[64], hi[64];
    format_num(key, key->min, lo, sizeof lo);
    format_num(key, key->max, hi, sizeof hi);
    snprintf(why, n, "%s is out of range [%s, %s]", text, lo, hi);
    return -1;
}

/* A whole number in text (trimmed): exact for plain integers, through the units otherwise.
 * Checks the key's range. 0 on success, -1 with why. */
static int parse_whole(const ts_cfg_key *key, const char *text, bool is_unsigned, int64_t *iv, uint64_t *uv,
                       char *why, size_t n)
{
    char expect[256];
    expect_text(key, expect, sizeof expect);
    const char *s = text;
    size_t i = 0;
    if (s[i] == '-' || s[i] == '+')
        i++;
    size_t d0 = i;
    while (isdigit((unsigned char)s[i]))
        i++;
    bool neg = s[0] == '-';
    if (i > d0 && !s[i]) {
        /* Exact: a plain integer never goes through a double. */
        if (is_unsigned && neg && strspn(s + 1, "0") != strlen(s + 1))
            goto below;
        errno = 0;
        if (is_unsigned) {
            unsigned long long v = strtoull(s + (s[0] == '+'), NULL, 10);
            if (errno == ERANGE)
                goto too_large;
            *uv = (uint64_t)v;
        } else {
            long long v = strtoll(s, NULL, 10);
            if (errno == ERANGE)
                goto too_large;
            *iv = (int64_t)v;
        }
    } else {
        double v;
        if (key->unit == TS_UNIT_NONE) {
            char tmp[256];
            if (ts_unit_parse(s, TS_UNIT_NONE, &v, tmp, sizeof tmp)) {
                snprintf(why, n, "expected %s, got '%s'", expect, s);
                return -1;
            }
        } else if (ts_unit_parse(s, key->unit, &v, why, n)) {
            return -1;
        }
        double r = nearbyint(v);
        if (fabs(v - r) > 1e-9 * fabs(v) + 1e-9) {
            if (key->unit == TS_UNIT_NONE || key->unit == TS_UNIT_CYCLES)
                snprintf(why, n, "expected a whole number, got '%s'", s);
            else
                snprintf(why, n, "expected a whole number of %s (%s), got '%s'", ts_unit_symbol(key->unit),
                         ts_unit_noun(key->unit), s);
            return -1;
        }
        if (is_unsigned) {
            if (r < 0)
                goto below;
            if (r >= 18446744073709551616.0)
                goto too_large;
            *uv = (uint64_t)r;
        } else {
            if (r < -9223372036854775808.0 || r >= 9223372036854775808.0)
                goto too_large;
            *iv = (int64_t)r;
        }
    }
    if (key->min <= key->max) {
        double v = is_unsigned ? (double)*uv : (double)*iv;
        if (v < key->min || v > key->max)
            return range_fail(key, s, why, n);
    }
    return 0;
below:
    if (key->min <= key->max)
        return range_fail(key, s, why, n);
    snprintf(why, n, "expected a whole number >= 0, got '%s'", s);
    return -1;
too_large:
    if (key->min <= key->max)
        return range_fail(key, s, why, n);
    snprintf(why, n, "'%s' is too large for a 64-bit whole number", s);
    return -1;
}

static int parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on", NULL}, *const no[] = {"false", "no", "off", NULL};
    for (size_t i = 0; yes[i]; i++)
        if (!strcasecmp(s, yes[i])) {
            *out = true;
            return 0;
        }
    for (size_t i = 0; no[i]; i++)
        if (!strcasecmp(s, no[i])) {
            *out = false;
            return 0;
        }
    return -1;
}

/* Convert one scalar text for a key into dst (the field). Strings are copied (owned by the
 * caller). Lists are not handled here. TS_EINPUT with why, or TS_ENOMEM. */
static ts_status parse_scalar(const ts_cfg_key *key, const char *text, void *dst, char *why, size_t n)
{
    /* Trimmed copy: quantities and words are short; longer text only matters for strings. */
    const char *s = text;
    size_t len = strlen(text);
    if (key->type != TS_CFG_STRING)
        trim_span(&s, &len);
    char small[256];
    if (key->type != TS_CFG_STRING) {
        if (len >= sizeof small) {
            char expect[256];
            expect_text(key, expect, sizeof expect);
            snprintf(why, n, "expected %s, got '%.32s...'", expect, s);
            return TS_EINPUT;
        }
        memcpy(small, s, len);
        small[len] = 0;
    }
    switch (key->type) {
    case TS_CFG_INT:
        return parse_whole(key, small, false, dst, NULL, why, n) ? TS_EINPUT : TS_OK;
    case TS_CFG_UINT:
        return parse_whole(key, small, true, NULL, dst, why, n) ? TS_EINPUT : TS_OK;
    case TS_CFG_FLOAT: {
        double v;
        if (key->unit == TS_UNIT_NONE) {
            char tmp[256];
            if (ts_unit_parse(small, TS_UNIT_NONE, &v, tmp, sizeof tmp)) {
                char expect[256];
                expect_text(key, expect, sizeof expect);
                snprintf(why, n, "expected %s, got '%s'", expect, small);
                return TS_EINPUT;
            }
        } else if (ts_unit_parse(small, key->unit, &v, why, n)) {
            return TS_EINPUT;
        }
        if (key->min <= key->max && (v < key->min || v > key->max))
            return range_fail(key, small, why, n) ? TS_EINPUT : TS_OK;
        memcpy(dst, &v, sizeof v);
        return TS_OK;
    }
    case TS_CFG_BOOL: {
        bool b;
        if (parse_bool(small, &b)) {
            snprintf(why, n, "expected true or false, got '%s'", small);
            return TS_EINPUT;
        }
        memcpy(dst, &b, sizeof b);
        return TS_OK;
    }
    case TS_CFG_STRING: {
        char *c = ts_strdup(text);
        if (!c) {
            snprintf(why, n, "out of memory");
            return TS_ENOMEM;
        }
        memcpy(dst, &c, sizeof c);
        return TS_OK;
    }
    case TS_CFG_ENUM: {
        int found = -1;
        for (int i = 0; key->choices && key->choices[i] && found < 0; i++)
            if (!strcmp(key->choices[i], small))
                found = i;
        for (int i = 0; key->choices && key->choices[i] && found < 0; i++)
            if (!strcasecmp(key->choices[i], small))
                found = i;
        if (found < 0) {
            char expect[512];
            expect_text(key, expect, sizeof expect);
            snprintf(why, n, "unknown choice '%s' (expected %s)", small, expect);
            return TS_EINPUT;
        }
        memcpy(dst, &found, sizeof found);
        return TS_OK;
    }
    case TS_CFG_STRLIST:
    case TS_CFG_INTLIST:
        break;
    }
    snprintf(why, n, "key type %d takes a list, not a single value", (int)key->type);
    return TS_EINTERNAL;
}

/* Free what a field owns and clear it. */
static void field_free(const ts_cfg_key *key, void *base)
{
    char *f = (char *)base + key->offset;
    switch (key->type) {
    case TS_CFG_STRING: {
        char *s;
        memcpy(&s, f, sizeof s);
        ts_free(s);
        s = NULL;
        memcpy(f, &s, sizeof s);
        break;
    }
    case TS_CFG_STRLIST: {
        ts_strlist l;
        memcpy(&l, f, sizeof l);
        for (size_t i = 0; i < l.n; i++)
            ts_free(l.v[i]);
        ts_free(l.v);
        memset(f, 0, sizeof l);
        break;
    }
    case TS_CFG_INTLIST: {
        ts_intlist l;
        memcpy(&l, f, sizeof l);
        ts_free(l.v);
        memset(f, 0, sizeof l);
        break;
    }
    default:
        break;
    }
}

/* A list item, from a node or from --set text. */
typedef struct item {
    const char *text;
    const ts_ynode *at; /* position for messages */
} item;

/* Convert list items into a fresh list at dst. On failure nothing is left allocated; *bad is
 * the index of the item at fault (or -1) and why says what is wrong. */
static ts_status parse_list(const ts_cfg_key *key, const item *items, size_t n, void *dst, long *bad,
                            char *why, size_t wn)
{
    *bad = -1;
    if (key->type == TS_CFG_STRLIST) {
        ts_strlist l = {ts_calloc(n ? n : 1, sizeof(char *)), 0};
        if (!l.v)
            goto oom;
        for (; l.n < n; l.n++) {
            l.v[l.n] = ts_strdup(items[l.n].text);
            if (!l.v[l.n]) {
                for (size_t i = 0; i < l.n; i++)
                    ts_free(l.v[i]);
                ts_free(l.v);
                goto oom;
            }
        }
        memcpy(dst, &l, sizeof l);
        return TS_OK;
    }
    ts_intlist l = {ts_calloc(n ? n : 1, sizeof(int64_t)), n};
    if (!l.v)
        goto oom;
    ts_cfg_key one = *key;
    one.type = TS_CFG_INT;
    for (size_t i = 0; i < n; i++) {
        ts_status st = parse_scalar(&one, items[i].text, &l.v[i], why, wn);
        if (st != TS_OK) {
            ts_free(l.v);
            *bad = (long)i;
            return st;
        }
    }
    memcpy(dst, &l, sizeof l);
    return TS_OK;
oom:
    snprintf(why, wn, "out of memory");
    return TS_ENOMEM;
}

/* Split "[a, b, c]" or "a, b, c" into trimmed items (pointers into a copy the caller frees).
 * Item offsets into text are written to off. Returns the count, or -1 without memory. */
static long split_list(const char *text, char **copy, item **items, size_t **off)
{
    *copy = ts_strdup(text);
    *items = NULL;
    *off = NULL;
    if (!*copy)
        return -1;
    char *s = *copy;
    size_t len = strlen(s);
    size_t start = 0;
    while (start < len && isspace((unsigned char)s[start]))
        start++;
    while (len > start && isspace((unsigned char)s[len - 1]))
        len--;
    if (start < len && s[start] == '[' && s[len - 1] == ']') {
        start++;
        len--;
    }
    s[len] = 0;
    size_t cnt = 1;
    for (size_t i = start; i < len; i++)
        cnt += s[i] == ',';
    *items = ts_calloc(cnt, sizeof **items);
    *off = ts_calloc(cnt, sizeof **off);
    if (!*items || !*off) {
        ts_free(*items);
        ts_free(*off);
        ts_free(*copy);
        *items = NULL;
        *off = NULL;
        *copy = NULL;
        return -1;
    }
    long k = 0;
    size_t i = start;
    for (;;) {
        size_t j = i;
        while (j < len && s[j] != ',')
            j++;
        size_t a = i, b = j;
        while (a < b && isspace((unsigned char)s[a]))
            a++;
        while (b > a && isspace((unsigned char)s[b - 1]))
            b--;
        bool last = j >= len;
        s[b] = 0;
        /* "[]" and "" are the empty list; an empty item elsewhere is kept so it is reported. */
        if (!(a == b && last && k == 0)) {
            (*items)[k].text = s + a;
            (*off)[k] = a;
            k++;
        }
        if (last)
            break;
        i = j + 1;
    }
    return k;
}

ts_status ts_config_parse_value(const ts_cfg_key *key, const char *text, void *dst, char *why, size_t n)
{
    char dummy[8];
    if (!why || !n) {
        why = dummy;
        n = sizeof dummy;
    }
    if (!key || !text || !dst) {
        snprintf(why, n, "no key, text or destination given");
        return TS_EINTERNAL;
    }
    if (key->type != TS_CFG_STRLIST && key->type != TS_CFG_INTLIST)
        return parse_scalar(key, text, dst, why, n);
    char *copy;
    item *items;
    size_t *off;
    long cnt = split_list(text, &copy, &items, &off);
    if (cnt < 0) {
        snprintf(why, n, "out of memory");
        return TS_ENOMEM;
    }
    long bad;
    char tmp[512];
    ts_status st = parse_list(key, items, (size_t)cnt, dst, &bad, tmp, sizeof tmp);
    if (st != TS_OK && bad >= 0)
        snprintf(why, n, "item %ld: %s", bad + 1, tmp);
    else if (st != TS_OK)
        snprintf(why, n, "%s", tmp);
    ts_free(copy);
    ts_free(items);
    ts_free(off);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * Layers: the top file and its bases. */
typedef struct layer {
    char *file;  /* owned: name in messages */
    char *dir;   /* owned: directory for the base's path; NULL for built-ins */
    char *ident; /* owned: identity for cycle detection */
    char *text;  /* owned copy when read from a file; else NULL */
    ts_ynode *root;       /* owned; NULL for an empty document */
    const ts_ynode *arch; /* borrowed from root: value of top-level arch, or NULL */
    const ts_ynode *base; /* borrowed from root: value of top-level base, or NULL */
} layer;

typedef struct slot {
    const ts_ynode *val; /* borrowed: the winning value */
    const ts_ynode *key; /* borrowed: its key, for duplicate messages */
    int layer;       /* which layer set it; -1 for --set */
} slot;

typedef struct loader {
    const ts_config_opts *opts;
    ts_err *err;
    layer layers[MAX_LAYERS];
    size_t nlayers;
    ts_ynode **extra; /* owned: nodes made for --set values */
    size_t nextra, capextra;
    keyset ks;
    slot *slots; /* owned: one per known key */
} loader;

static void loader_free(loader *L)
{
    for (size_t i = 0; i < L->nlayers; i++) {
        layer *y = &L->layers[i];
        ts_ynode_destroy(y->root);
        ts_free(y->file);
        ts_free(y->dir);
        ts_free(y->ident);
        ts_free(y->text);
    }
    for (size_t i = 0; i < L->nextra; i++)
        ts_ynode_destroy(L->extra[i]);
    ts_free(L->extra);
    ts_free(L->slots);
}

static bool is_regular_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Directory part of a path, "" when it has none. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? ts_strndup(path, (size_t)(slash - path + (slash == path))) : ts_strdup("");
}

/* Stem of a path: "configs/ipu_mk1.yaml" -> "ipu_mk1". */
static char *stem_of(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    const char *dot = strrchr(b, '.');
    size_t n = dot && dot != b ? (size_t)(dot - b) : strlen(b);
    return ts_strndup(b, n);
}

/* Find a built-in by name, or by the stem of name ("ipu_mk1.yaml" -> "ipu_mk1"). Returns 0 and
 * the stem found in *which (owned), -1 if none, -2 without memory. */
static int find_builtin(const ts_config_opts *opts, const char *name, const char **text, size_t *len,
                        char **which)
{
    *which = NULL;
    if (!opts->builtin)
        return -1;
    if (!opts->builtin(name, text, len)) {
        *which = ts_strdup(name);
        return *which ? 0 : -2;
    }
    char *stem = stem_of(name);
    if (!stem)
        return -2;
    if (strcmp(stem, name) && !opts->builtin(stem, text, len)) {
        *which = stem;
        return 0;
    }
    ts_free(stem);
    return -1;
}

/* Every map's keys are unique (YAML requires it); check the whole tree, naming full paths. */
static ts_status check_dups(const ts_ynode *nd, char *path, size_t plen, size_t cap, ts_err *err)
{
    if (nd->kind == TS_Y_SEQ) {
        for (size_t i = 0; i < nd->n; i++) {
            ts_status st = check_dups(nd->kids[i], path, plen, cap, err);
            if (st != TS_OK)
                return st;
        }
        return TS_OK;
    }
    if (nd->kind != TS_Y_MAP)
        return TS_OK;
    /* The first repeated key, found by sorting (n log n; comparing each key with every earlier
     * one took seconds for 40,000 keys); reported where the walk in document order meets it, so
     * an error in an earlier value still comes first. */
    size_t dup = SIZE_MAX, first = 0;
    int r = ts_ynode_first_dup(nd, &dup, &first);
    if (r < 0)
        return ts_err_set(err, TS_ENOMEM, "out of memory checking keys");
    if (r == 0)
        dup = SIZE_MAX;
    for (size_t i = 0; i + 1 < nd->n; i += 2) {
        const ts_ynode *k = nd->kids[i];
        size_t kl = strlen(k->text);
        size_t nl = plen + (plen ? 1 : 0) + kl;
        bool fits = nl < cap;
        if (fits) {
            if (plen)
                path[plen] = '.';
            memcpy(path + plen + (plen ? 1 : 0), k->text, kl + 1);
        }
        if (i == dup)
            return ts_ynode_err(err, k, "duplicate key '%s' (first at line %d, col %d)",
                                fits ? path : k->text, nd->kids[first]->line, nd->kids[first]->col);
        ts_status st = check_dups(nd->kids[i + 1], path, fits ? nl : plen, cap, err);
        path[plen] = 0;
        if (st != TS_OK)
            return st;
    }
    return TS_OK;
}

/* Add a layer from text; follow its base. from is the `base:` value that named it (NULL for the
 * top). Takes ownership of file, dir, ident and owned_text whatever happens. */
static ts_status add_layer(loader *L, char *file, char *dir, char *ident, char *owned_text, const char *text,
                           size_t len, const ts_ynode *from)
{
    ts_err *err = L->err;
    if (!file || !ident) {
        ts_free(file), ts_free(dir), ts_free(ident), ts_free(owned_text);
        return ts_err_set(err, TS_ENOMEM, "out of memory loading a config");
    }
    /* A base that is already in the chain is a cycle. */
    for (size_t i = 0; i < L->nlayers; i++)
        if (!strcmp(L->layers[i].ident, ident)) {
            char chain[768] = "";
            size_t k = 0;
            for (size_t j = i; j < L->nlayers && k < sizeof chain; j++)
                k += (size_t)snprintf(chain + k, sizeof chain - k, "%s -> ", L->layers[j].file);
            if (k < sizeof chain)
                snprintf(chain + k, sizeof chain - k, "%s", file);
            ts_free(file), ts_free(dir), ts_free(ident), ts_free(owned_text);
            return ts_ynode_err(err, from, "base cycle: %s", chain);
        }
    if (L->nlayers == MAX_LAYERS) {
        ts_free(file), ts_free(dir), ts_free(ident), ts_free(owned_text);
        return ts_ynode_err(err, from, "bases nested deeper than %d levels", MAX_LAYERS);
    }
    layer *y = &L->layers[L->nlayers++];
    *y = (layer){.file = file, .dir = dir, .ident = ident, .text = owned_text};

    ts_status st = ts_ytree_parse(y->file, text, len, &yaml_opts, &y->root, err);
    if (st != TS_OK)
        return st;
    ts_ynode *root = y->root;
    if (root && ts_ynode_is_null(root)) {
        ts_ynode_destroy(root);
        root = y->root = NULL;
    }
    if (root && root->kind != TS_Y_MAP)
        return ts_ynode_err(err, root, "expected a map of keys at the top level, got %s",
                            root->kind == TS_Y_SEQ ? "a list" : "a single value");
    if (root) {
        char path[512] = "";
        if ((st = check_dups(root, path, 0, sizeof path, err)) != TS_OK)
            return st;
    }
    y->arch = ts_ynode_get(root, "arch");
    y->base = ts_ynode_get(root, "base");
    if (y->arch && (y->arch->kind != TS_Y_SCALAR || ts_ynode_is_null(y->arch)))
        return ts_ynode_err(err, y->arch, "arch: expected a family name, got %s",
                            y->arch->kind == TS_Y_SCALAR ? "nothing" : ts_ynode_kind_name(y->arch));
    if (!y->base)
        return TS_OK;
    if (y->base->kind != TS_Y_SCALAR || ts_ynode_is_null(y->base))
        return ts_ynode_err(err, y->base, "base: expected a config file or built-in name, got %s",
                            y->base->kind == TS_Y_SCALAR ? "nothing" : ts_ynode_kind_name(y->base));

    /* The base: a file relative to this one (as written, then with ".yaml" when it has no
     * extension, so `base: wse2` finds wse2.yaml beside it), else a built-in of that name. */
    const ts_ynode *b = y->base;
    const char *name = b->text;
    char looked[512] = "";
    const char *bslash = strrchr(name, '/');
    bool has_ext = strchr(bslash ? bslash + 1 : name, '.') != NULL;
    for (int tries = 0; y->dir && tries < (has_ext ? 1 : 2); tries++) {
        size_t dl = strlen(y->dir);
        size_t pl = dl + strlen(name) + 8;
        char *path = ts_malloc(pl);
        if (!path)
            return ts_err_set(err, TS_ENOMEM, "out of memory loading %s", name);
        const char *ext = tries ? ".yaml" : "";
        if (name[0] == '/' || !dl)
            snprintf(path, pl, "%s%s", name, ext);
        else
            snprintf(path, pl, "%s%s%s%s", y->dir, y->dir[dl - 1] == '/' ? "" : "/", name, ext);
        if (is_regular_file(path)) {
            char *data;
            size_t dlen;
            ts_err rerr;
            ts_err_init(&rerr);
            st = ts_read_file(path, &data, &dlen, &rerr);
            if (st != TS_OK) {
                st = st == TS_ENOMEM ? ts_err_set(err, TS_ENOMEM, "%s", rerr.msg)
                                     : ts_ynode_err(err, b, "cannot read base '%s': %s", path, rerr.msg);
                ts_err_free(&rerr);
                ts_free(path);
                return st;
            }
            char real[PATH_MAX];
            char *id = ts_strdup(realpath(path, real) ? real : path);
            char *d = dir_of(path);
            if (!d) {
                ts_free(path), ts_free(id), ts_free(data);
                return ts_err_set(err, TS_ENOMEM, "out of memory loading %s", name);
            }
            return add_layer(L, path, d, id, data, data, dlen, b);
        }
        if (!tries)
            snprintf(looked, sizeof looked, "%s", path);
        ts_free(path);
    }
    const char *btext;
    size_t blen;
    char *which;
    int r = find_builtin(L->opts, name, &btext, &blen, &which);
    if (r == -2)
        return ts_err_set(err, TS_ENOMEM, "out of memory loading %s", name);
    if (r == -1) {
        if (y->dir)
            return ts_ynode_err(err, b, "base '%s' not found (no file '%s'%s)", name, looked,
                                L->opts->builtin ? " and no built-in config of that name" : "");
        return ts_ynode_err(err, b, "base '%s' not found (no built-in config of that name)", name);
    }
    size_t il = strlen(which) + 10;
    char *id = ts_malloc(il);
    if (id)
        snprintf(id, il, "builtin:%s", which);
    return add_layer(L, which, NULL, id, NULL, btext, blen, b);
}

/* ---------------------------------------------------------------------------------------------
 * Flattening layers into slots. */
static ts_status flatten(loader *L, const ts_ynode *map, int li, char *prefix, size_t plen, size_t cap)
{
    for (size_t i = 0; i + 1 < map->n; i += 2) {
        const ts_ynode *k = map->kids[i], *v = map->kids[i + 1];
        size_t kl = strlen(k->text);
        size_t nl = plen + (plen ? 1 : 0) + kl;
        if (nl >= cap)
            return unknown_key(&L->ks, L->err, k->file, k->line, k->col, k->text, v->kind == TS_Y_MAP);
        if (plen)
            prefix[plen] = '.';
        memcpy(prefix + plen + (plen ? 1 : 0), k->text, kl + 1);
        long idx = ks_find(&L->ks, prefix, nl);
        ts_status st = TS_OK;
        if (idx >= 0) {
            slot *s = &L->slots[idx];
            if (s->val && s->layer == li)
                st = ts_ynode_err(L->err, k, "duplicate key '%s' (first at line %d, col %d)", prefix, s->key->line,
                                  s->key->col);
            else
                *s = (slot){v, k, li};
        } else if (ks_is_group(&L->ks, prefix, nl)) {
            if (v->kind == TS_Y_MAP)
                st = flatten(L, v, li, prefix, nl, cap);
            else if (!ts_ynode_is_null(v))
                st = ts_ynode_err(L->err, v, "%s: expected a map of keys like '%s', got %s", prefix,
                                  ks_first_in_group(&L->ks, prefix, nl),
                                  v->kind == TS_Y_SEQ ? "a list" : "a single value");
            /* An empty group ("tile:") sets nothing. */
        } else {
            st = unknown_key(&L->ks, L->err, k->file, k->line, k->col, prefix, v->kind == TS_Y_MAP);
        }
        prefix[plen] = 0;
        if (st != TS_OK)
            return st;
    }
    return TS_OK;
}

static ts_ynode *extra_node(loader *L, ts_ykind kind, int line, int col)
{
    if (ts_grow((void **)&L->extra, &L->capextra, L->nextra + 1, sizeof *L->extra))
        return NULL;
    ts_ynode *nd = ts_ynode_create(kind, SET_FILE, line, col);
    if (nd)
        L->extra[L->nextra++] = nd;
    return nd;
}

/* One UTF-8 code point at p (n bytes left): its value and length, or 0 when the bytes are not
 * UTF-8 (overlong, a surrogate, past U+10FFFF, cut short). */
static int utf8_decode(const unsigned char *p, size_t n, uint32_t *cp)
{
    if (p[0] < 0x80) {
        *cp = p[0];
        return 1;
    }
    int len = p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 && p[0] < 0xe0 ? 2 : 0;
    if (!len || (size_t)len > n || (p[0] >= 0xf0 && len != 4))
        return 0;
    uint32_t v = p[0] & (0x7f >> len);
    for (int i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        v = v << 6 | (p[i] & 0x3f);
    }
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < least[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return len;
}

/* Whether s is UTF-8 text (what a YAML file can hold; --set values are checked with it). */
static bool utf8_valid(const char *s, size_t n)
{
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        int l = utf8_decode((const unsigned char *)s + i, n - i, &cp);
        if (!l)
            return false;
        i += (size_t)l;
    }
    return true;
}

/* Apply one "key.path=value" (index j, 0-based) to the slots. */
static ts_status apply_set(loader *L, size_t j, const char *s)
{
    ts_err *err = L->err;
    int line = (int)j + 1;
    const char *eq = strchr(s, '=');
    const char *k = s;
    size_t kl = eq ? (size_t)(eq - s) : strlen(s);
    trim_span(&k, &kl);
    if (!eq || !kl)
        return ts_err_at(err, TS_EINPUT, SET_FILE, line, 1, "expected key.path=value, got '%s'", s);
    int kcol = (int)(k - s) + 1;
    char path[256];
    if (kl >= sizeof path)
        kl = sizeof path - 1;
    memcpy(path, k, kl);
    path[kl] = 0;
    long idx = ks_find(&L->ks, path, kl);
    if (idx < 0)
        return unknown_key(&L->ks, err, SET_FILE, line, kcol, path, false);
    if (idx == CK_ARCH || idx == CK_BASE)
        return ts_err_at(err, TS_EINPUT, SET_FILE, line, kcol, "%s cannot be changed with --set", path);
    const ts_cfg_key *key = ks_key(&L->ks, (size_t)idx);

    const char *v = eq + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    int vcol = (int)(v - s) + 1;
    size_t vl = strlen(v);
    while (vl && isspace((unsigned char)v[vl - 1]))
        vl--;
    if (!utf8_valid(v, vl)) /* a YAML file holds only UTF-8: neither could the config's dump */
        return ts_err_at(err, TS_EINPUT, SET_FILE, line, vcol, "%s: the value is not UTF-8 text", path);
    ts_ynode *nd;
    if (key->type == TS_CFG_STRLIST || key->type == TS_CFG_INTLIST) {
        nd = extra_node(L, TS_Y_SEQ, line, vcol);
        char *copy;
        item *items;
        size_t *off;
        long cnt = nd ? split_list(v, &copy, &items, &off) : -1;
        if (cnt < 0)
            return ts_err_set(err, TS_ENOMEM, "out of memory applying --set");
        for (long i = 0; i < cnt && nd; i++) {
            const char *t = items[i].text;
            ts_ynode *it = ts_ynode_scalar(SET_FILE, line, vcol + (int)off[i], t, strlen(t), false);
            if (!it || ts_ynode_add(nd, it)) {
                ts_ynode_destroy(it);
                nd = NULL;
            }
        }
        ts_free(copy);
        ts_free(items);
        ts_free(off);
    } else {
        nd = extra_node(L, TS_Y_SCALAR, line, vcol);
        if (nd) {
            nd->text = ts_strndup(v, vl);
            nd->plain = vl == 0;
            if (!nd->text)
                nd = NULL;
        }
    }
    if (!nd)
        return ts_err_set(err, TS_ENOMEM, "out of memory applying --set");
    L->slots[idx] = (slot){nd, nd, -1};
    return TS_OK;
}

/* Convert a slot's value node into the field of key at base. */
static ts_status convert(loader *L, const ts_cfg_key *key, const ts_ynode *v, void *base)
{
    ts_err *err = L->err;
    char expect[512], why[768];
    void *dst = (char *)base + key->offset;
    bool list = key->type == TS_CFG_STRLIST || key->type == TS_CFG_INTLIST;
    if (list) {
        if (v->kind != TS_Y_SEQ) {
            expect_text(key, expect, sizeof expect);
            const char *got = v->kind == TS_Y_MAP ? "a map" : ts_ynode_is_null(v) ? "nothing" : NULL;
            if (got)
                return ts_ynode_err(err, v, "%s: expected %s, got %s", key->path, expect, got);
            return ts_ynode_err(err, v, "%s: expected %s, got '%s'", key->path, expect, v->text);
        }
        item *items = ts_calloc(v->n ? v->n : 1, sizeof *items);
        if (!items)
            return ts_err_set(err, TS_ENOMEM, "out of memory reading %s", key->path);
        for (size_t i = 0; i < v->n; i++) {
            const ts_ynode *it = v->kids[i];
            if (it->kind != TS_Y_SCALAR || ts_ynode_is_null(it)) {
                ts_free(items);
                expect_text(key, expect, sizeof expect);
                return ts_ynode_err(err, it, "%s[%zu]: expected %s, got %s", key->path, i, expect,
                                    it->kind == TS_Y_SCALAR ? "nothing" : ts_ynode_kind_name(it));
            }
            items[i] = (item){it->text, it};
        }
        long bad;
        ts_status st = parse_list(key, items, v->n, dst, &bad, why, sizeof why);
        if (st == TS_EINPUT && bad >= 0)
            st = ts_ynode_err(err, items[bad].at, "%s[%ld]: %s", key->path, bad, why);
        else if (st != TS_OK)
            st = ts_err_set(err, st, "%s: %s", key->path, why);
        ts_free(items);
        return st;
    }
    if (v->kind != TS_Y_SCALAR || ts_ynode_is_null(v)) {
        expect_text(key, expect, sizeof expect);
        return ts_ynode_err(err, v, "%s: expected %s, got %s", key->path, expect,
                            v->kind == TS_Y_SCALAR ? "nothing" : ts_ynode_kind_name(v));
    }
    ts_status st = parse_scalar(key, v->text, dst, why, sizeof why);
    if (st == TS_EINPUT)
        return ts_ynode_err(err, v, "%s: %s", key->path, why);
    if (st != TS_OK)
        return ts_err_set(err, st, "%s: %s", key->path, why);
    return TS_OK;
}

/* The schema default of key into base: parsed like user text; a bad default is a bug. */
static ts_status apply_default(const ts_schema *schema, const ts_cfg_key *key, void *base, ts_err *err)
{
    char why[768];
    const char *def = key->def;
    /* A quoted default ("\"\"") is the text inside the quotes. */
    char unq[256];
    size_t dl = strlen(def);
    if (dl >= 2 && def[0] == '"' && def[dl - 1] == '"' && dl - 2 < sizeof unq) {
        memcpy(unq, def + 1, dl - 2);
        unq[dl - 2] = 0;
        def = unq;
    }
    ts_status st = ts_config_parse_value(key, def, (char *)base + key->offset, why, sizeof why);
    if (st == TS_ENOMEM)
        return ts_err_set(err, TS_ENOMEM, "out of memory setting the default of %s", key->path);
    if (st != TS_OK)
        return ts_err_set(err, TS_EINTERNAL, "schema '%s': bad default '%s' for %s: %s",
                          schema ? schema->arch : "common", key->def, key->path, why);
    return TS_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Fingerprint and loading. */

/* Shortest text that reads back as the same double; whole numbers without a fraction or an
 * exponent. Values beyond 64-bit integers never go through an integer conversion. */
static void put_double(ts_buf *out, double v)
{
    if (v == 0) {
        ts_buf_putc(out, '0'); /* -0 and 0 are the same setting */
        return;
    }
    if (fabs(v) < 9e15 && v == floor(v)) {
        ts_buf_printf(out, "%.0f", v);
        return;
    }
    char tmp[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    ts_buf_puts(out, tmp);
}

/* A YAML double-quoted string that reads back as s: besides quotes and backslashes, every
 * character YAML does not take as it is in a double-quoted scalar is escaped: C0 and C1 controls
 * and DEL (a reader refuses them raw), NEL, LINE and PARAGRAPH SEPARATOR (line breaks to YAML 1.1,
 * which folds them into spaces), the byte-order mark, U+FFFE and U+FFFF. */
static void put_yaml_str(ts_buf *out, const char *s)
{
    ts_buf_putc(out, '"');
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int l = utf8_decode((const unsigned char *)s + i, n - i, &cp);
        if (!l) { /* not UTF-8: cannot be written as YAML; the replacement character stands in */
            ts_buf_puts(out, "\\uFFFD");
            i++;
            continue;
        }
        if (cp == '"')
            ts_buf_puts(out, "\\\"");
        else if (cp == '\\')
            ts_buf_puts(out, "\\\\");
        else if (cp == '\n')
            ts_buf_puts(out, "\\n");
        else if (cp == '\t')
            ts_buf_puts(out, "\\t");
        else if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
            ts_buf_printf(out, "\\x%02x", (unsigned)cp);
        else if (cp == 0x2028 || cp == 0x2029)
            ts_buf_puts(out, cp == 0x2028 ? "\\L" : "\\P");
        else if (cp == 0xfeff || cp == 0xfffe || cp == 0xffff)
            ts_buf_printf(out, "\\u%04X", (unsigned)cp);
        else
            ts_buf_put(out, s + i, (size_t)l);
        i += (size_t)l;
    }
    ts_buf_putc(out, '"');
}

/* Canonical text of a field, for the fingerprint (yaml false: strings as JSON) and the dump's
 * values (yaml true: strings as YAML that reads back to them). */
static void canon_value(const ts_cfg_key *key, const void *base, bool yaml, ts_buf *out)
{
    const char *f = (const char *)base + key->offset;
    switch (key->type) {
    case TS_CFG_INT: {
        int64_t v;
        memcpy(&v, f, sizeof v);
        ts_buf_printf(out, "%" PRId64, v);
        return;
    }
    case TS_CFG_UINT: {
        uint64_t v;
        memcpy(&v, f, sizeof v);
        ts_buf_printf(out, "%" PRIu64, v);
        return;
    }
    case TS_CFG_FLOAT: {
        double v;
        memcpy(&v, f, sizeof v);
        put_double(out, v);
        return;
    }
    case TS_CFG_BOOL: {
        bool v;
        memcpy(&v, f, sizeof v);
        ts_buf_puts(out, v ? "true" : "false");
        return;
    }
    case TS_CFG_STRING: {
        char *s;
        memcpy(&s, f, sizeof s);
        if (yaml)
            put_yaml_str(out, s ? s : "");
        else
            ts_buf_json_str(out, s ? s : "");
        return;
    }
    case TS_CFG_ENUM: {
        int v;
        memcpy(&v, f, sizeof v);
        ts_buf_puts(out, key->choices && v >= 0 ? key->choices[v] : "?");
        return;
    }
    case TS_CFG_STRLIST: {
        ts_strlist l;
        memcpy(&l, f, sizeof l);
        ts_buf_putc(out, '[');
        for (size_t i = 0; i < l.n; i++) {
            if (i)
                ts_buf_puts(out, ", ");
            if (yaml)
                put_yaml_str(out, l.v[i]);
            else
                ts_buf_json_str(out, l.v[i]);
        }
        ts_buf_putc(out, ']');
        return;
    }
    case TS_CFG_INTLIST: {
        ts_intlist l;
        memcpy(&l, f, sizeof l);
        ts_buf_putc(out, '[');
        for (size_t i = 0; i < l.n; i++)
            ts_buf_printf(out, "%s%" PRId64, i ? ", " : "", l.v[i]);
        ts_buf_putc(out, ']');
        return;
    }
    }
}

static ts_status fingerprint(ts_config *cfg, ts_err *err)
{
    uint64_t h = ts_fnv1a(TS_FNV_SEED, cfg->core.arch, strlen(cfg->core.arch) + 1);
    ts_buf b = TS_BUF_INIT;
    for (size_t i = 0; i < cfg->schema->nkeys; i++) {
        const ts_cfg_key *key = &cfg->schema->keys[i];
        ts_buf_reset(&b);
        ts_buf_puts(&b, key->path);
        ts_buf_putc(&b, '=');
        canon_value(key, cfg->data, false, &b);
        if (b.oom) {
            ts_buf_free(&b);
            return ts_err_set(err, TS_ENOMEM, "out of memory computing the config fingerprint");
        }
        h = ts_fnv1a(h, b.data, b.len + 1);
    }
    ts_buf_free(&b);
    cfg->fingerprint = h;
    return TS_OK;
}

void ts_config_destroy(ts_config *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < NCORE; i++)
        field_free(&core_keys[i], &cfg->core);
    if (cfg->data && cfg->schema)
        for (size_t i = 0; i < cfg->schema->nkeys; i++)
            field_free(&cfg->schema->keys[i], cfg->data);
    ts_free(cfg->data);
    ts_free(cfg->path);
    ts_free(cfg);
}

/* Everything after the top layer is in: bases, schema, flattening, --set, conversion. */
static ts_status resolve(loader *L, ts_config **out)
{
    ts_err *err = L->err;
    const ts_config_opts *opts = L->opts;
    layer *top = &L->layers[0];

    /* arch: the nearest layer that gives it; all that give it agree. */
    const ts_ynode *arch = NULL;
    for (size_t i = 0; i < L->nlayers; i++) {
        const ts_ynode *a = L->layers[i].arch;
        if (!a)
            continue;
        if (!arch)
            arch = a;
        else if (strcmp(arch->text, a->text))
            return ts_ynode_err(err, arch, "arch '%s' differs from arch '%s' of its base %s", arch->text, a->text,
                                L->layers[i].file);
    }
    if (!arch)
        return ts_err_at(err, TS_EINPUT, top->file, 1, 1, "missing required key 'arch'%s",
                         L->nlayers > 1 ? " (in this file or its bases)" : "");
    const ts_schema *schema = opts->schema ? opts->schema(arch->text) : NULL;
    if (!schema)
        return ts_ynode_err(err, arch, "unknown arch '%s'", arch->text);

    L->ks = (keyset){schema, NCORE + schema->nkeys};
    L->slots = ts_calloc(L->ks.n, sizeof *L->slots);
    ts_config *cfg = ts_calloc(1, sizeof *cfg);
    if (cfg) {
        cfg->schema = schema;
        cfg->data = ts_calloc(1, schema->size);
        cfg->path = ts_strdup(top->file);
    }
    if (!L->slots || !cfg || !cfg->data || !cfg->path) {
        ts_config_destroy(cfg);
        return ts_err_set(err, TS_ENOMEM, "out of memory loading %s", top->file);
    }

    /* Base first, so each file overrides what it builds on. */
    ts_status st = TS_OK;
    char prefix[512];
    for (size_t i = L->nlayers; i-- > 0 && st == TS_OK;) {
        prefix[0] = 0;
        if (L->layers[i].root)
            st = flatten(L, L->layers[i].root, (int)i, prefix, 0, sizeof prefix);
    }
    for (size_t j = 0; j < opts->nsets && st == TS_OK; j++)
        st = apply_set(L, j, opts->sets[j] ? opts->sets[j] : "");

    /* Convert every key: its value, else its default, else it is missing. */
    for (size_t i = 0; i < L->ks.n && st == TS_OK; i++) {
        const ts_cfg_key *key = ks_key(&L->ks, i);
        void *base = i < NCORE ? (void *)&cfg->core : cfg->data;
        /* name and description describe one file: a base's are not inherited. */
        bool own = !((i == CK_NAME || i == CK_DESC) && L->slots[i].layer > 0);
        if (L->slots[i].val && own) {
            st = convert(L, key, L->slots[i].val, base);
        } else if (i == CK_NAME) {
            cfg->core.name = top->dir ? stem_of(top->file) : ts_strdup(top->file);
            if (!cfg->core.name)
                st = ts_err_set(err, TS_ENOMEM, "out of memory loading %s", top->file);
        } else if (key->def) {
            st = apply_default(i < NCORE ? NULL : schema, key, base, err);
        } else {
            st = ts_err_at(err, TS_EINPUT, top->file, 1, 1, "missing required key '%s'%s", key->path,
                           L->nlayers > 1 ? " (in this file or its bases)" : "");
        }
    }
    /* An energy table named by a relative path is found beside the file that names it, like a
     * base; a built-in name (no such file there) is kept as written. */
    const slot *et = &L->slots[CK_ETABLE];
    if (st == TS_OK && et->val && et->layer >= 0) {
        const layer *y = &L->layers[et->layer];
        const char *t = cfg->core.energy_table;
        if (y->dir && y->dir[0] && t[0] && t[0] != '/') {
            size_t dl = strlen(y->dir), pl = dl + strlen(t) + 2;
            char *joined = ts_malloc(pl);
            if (!joined) {
                st = ts_err_set(err, TS_ENOMEM, "out of memory loading %s", top->file);
            } else {
                snprintf(joined, pl, "%s%s%s", y->dir, y->dir[dl - 1] == '/' ? "" : "/", t);
                if (is_regular_file(joined)) {
                    ts_free(cfg->core.energy_table);
                    cfg->core.energy_table = joined;
                } else {
                    ts_free(joined);
                }
            }
        }
    }
    if (st == TS_OK && schema->check) {
        st = schema->check(cfg->data, err);
        if (st != TS_OK && err) {
            if (!err->msg[0])
                ts_err_set(err, st, "the %s config is not consistent", schema->arch);
            if (!err->file[0])
                snprintf(err->file, sizeof err->file, "%s", top->file);
        }
    }
    if (st == TS_OK)
        st = fingerprint(cfg, err);
    if (st != TS_OK) {
        ts_config_destroy(cfg);
        return st;
    }
    *out = cfg;
    return TS_OK;
}

static ts_status load_common(ts_config **out, char *file, char *dir, char *ident, char *owned, const char *text,
                             size_t len, const ts_config_opts *opts, ts_err *err)
{
    loader L;
    memset(&L, 0, sizeof L);
    L.opts = opts;
    L.err = err;
    ts_status st = add_layer(&L, file, dir, ident, owned, text, len, NULL);
    if (st == TS_OK)
        st = resolve(&L, out);
    loader_free(&L);
    return st;
}

ts_status ts_config_load_string(ts_config **out, const char *name, const char *text, size_t len,
                                const ts_config_opts *opts, ts_err *err)
{
    if (!out)
        return ts_err_set(err, TS_EINTERNAL, "no place to store the config");
    *out = NULL;
    if (!opts || !opts->schema)
        return ts_err_set(err, TS_EINTERNAL, "no schema look-up given to load a config");
    if (!name)
        name = "<string>";
    if (!text)
        text = "", len = 0;
    char *file = ts_strdup(name), *dir = dir_of(name), *ident = ts_strdup(name);
    if (!file || !dir || !ident) {
        ts_free(file), ts_free(dir), ts_free(ident);
        return ts_err_set(err, TS_ENOMEM, "out of memory loading %s", name);
    }
    return load_common(out, file, dir, ident, NULL, text, len, opts, err);
}

ts_status ts_config_load(ts_config **out, const char *path, const ts_config_opts *opts, ts_err *err)
{
    if (!out)
        return ts_err_set(err, TS_EINTERNAL, "no place to store the config");
    *out = NULL;
    if (!opts || !opts->schema)
        return ts_err_set(err, TS_EINTERNAL, "no schema look-up given to load a config");
    if (!path || !path[0])
        return ts_err_set(err, TS_EINPUT, "no config path given");
    if (is_regular_file(path)) {
        char *data;
        size_t len;
        ts_status st = ts_read_file(path, &data, &len, err);
        if (st != TS_OK)
            return st;
        char real[PATH_MAX];
        char *file = ts_strdup(path), *dir = dir_of(path), *ident = ts_strdup(realpath(path, real) ? real : path);
        if (!file || !dir || !ident) {
            ts_free(file), ts_free(dir), ts_free(ident), ts_free(data);
            return ts_err_set(err, TS_ENOMEM, "out of memory loading %s", path);
        }
        return load_common(out, file, dir, ident, data, data, len, opts, err);
    }
    const char *text;
    size_t len;
    char *which;
    int r = find_builtin(opts, path, &text, &len, &which);
    if (r == -2)
        return ts_err_set(err, TS_ENOMEM, "out of memory loading %s", path);
    if (r == -1)
        return ts_err_at(err, TS_EIO, path, 0, 0, "no such config file%s",
                         opts->builtin ? " or built-in config" : "");
    size_t il = strlen(which) + 10;
    char *ident = ts_malloc(il);
    if (ident)
        snprintf(ident, il, "builtin:%s", which);
    return load_common(out, which, NULL, ident, NULL, text, len, opts, err);
}

/* ---------------------------------------------------------------------------------------------
 * Accessors. */
const void *ts_config_data(const ts_config *cfg) { return cfg ? cfg->data : NULL; }
const ts_schema *ts_config_schema(const ts_config *cfg) { return cfg ? cfg->schema : NULL; }
const char *ts_config_arch(const ts_config *cfg) { return cfg ? cfg->core.arch : ""; }

const ts_cfg_key *ts_config_key(const ts_config *cfg, const char *path)
{
    const ts_schema *s = ts_config_schema(cfg);
    for (size_t i = 0; s && i < s->nkeys; i++)
        if (!strcmp(s->keys[i].path, path))
            return &s->keys[i];
    return NULL;
}

int ts_config_u64(const ts_config *cfg, const char *path, uint64_t *v)
{
    const ts_cfg_key *k = ts_config_key(cfg, path);
    if (!k)
        return -1;
    const char *base = (const char *)ts_config_data(cfg) + k->offset;
    if (k->type == TS_CFG_UINT) {
        memcpy(v, base, sizeof *v);
    } else if (k->type == TS_CFG_INT) {
        int64_t x;
        memcpy(&x, base, sizeof x);
        *v = (uint64_t)x;
    } else if (k->type == TS_CFG_FLOAT) {
        double x;
        memcpy(&x, base, sizeof x);
        *v = (uint64_t)x;
    } else {
        return -1;
    }
    return 0;
}
const char *ts_config_name(const ts_config *cfg) { return cfg ? cfg->core.name : ""; }
const char *ts_config_path(const ts_config *cfg) { return cfg ? cfg->path : ""; }
uint64_t ts_config_fingerprint(const ts_config *cfg) { return cfg ? cfg->fingerprint : 0; }
const char *ts_config_energy_table(const ts_config *cfg) { return cfg ? cfg->core.energy_table : "horowitz45"; }
double ts_config_node(const ts_config *cfg) { return cfg ? cfg->core.node_m : 0; }
double ts_config_vdd_nominal(const ts_config *cfg) { return cfg ? cfg->core.vdd : 0; }

double ts_config_vdd(const ts_config *cfg)
{
    if (!cfg || !(cfg->core.vdd > 0))
        return 0;
    uint64_t clk = 0;
    double f = ts_config_u64(cfg, "clock", &clk) == 0 ? (double)clk : 0;
    double f0 = cfg->core.vdd_clock > 0 ? cfg->core.vdd_clock : f;
    double v = cfg->core.vdd + cfg->core.vdd_per_ghz * (f - f0) / 1e9;
    return v < cfg->core.vdd_min ? cfg->core.vdd_min : v;
}

double ts_config_sram_array(const ts_config *cfg)
{
    uint64_t v = 0;
    if (!cfg)
        return 0;
    if (!cfg->core.sram_key || !cfg->core.sram_key[0])
        return (double)cfg->core.sram_array;
    if (ts_config_u64(cfg, cfg->core.sram_key, &v))
        return 0;
    return (double)v;
}

double ts_config_static_power(const ts_config *cfg)
{
    if (!cfg)
        return 0;
    double v = ts_config_vdd(cfg);
    if (!(v > 0))
        return cfg->core.static_power;
    uint64_t clk = 0;
    double f = ts_config_u64(cfg, "clock", &clk) == 0 ? (double)clk : 0;
    double f0 = cfg->core.vdd_clock > 0 ? cfg->core.vdd_clock : f;
    double r = v / cfg->core.vdd;
    /* leakage ~ V at a fixed leakage current; the clock tree ~ f V^2 */
    double c = cfg->core.clock_share;
    return cfg->core.static_power * ((1 - c) * r + c * (f0 > 0 ? f / f0 : 1) * r * r);
}

/* ---------------------------------------------------------------------------------------------
 * Dump and schema print. */

/* A YAML value and, for quantities, a comment in human units. */
static void dump_value(const ts_cfg_key *key, const void *base, ts_buf *out)
{
    canon_value(key, base, true, out);
    const char *f = (const char *)base + key->offset;
    if (key->unit == TS_UNIT_NONE || key->unit == TS_UNIT_CYCLES)
        return;
    double v;
    if (key->type == TS_CFG_INT) {
        int64_t i;
        memcpy(&i, f, sizeof i);
        v = (double)i;
    } else if (key->type == TS_CFG_UINT) {
        uint64_t u;
        memcpy(&u, f, sizeof u);
        v = (double)u;
    } else if (key->type == TS_CFG_FLOAT) {
        memcpy(&v, f, sizeof v);
    } else {
        return;
    }
    char human[64];
    ts_unit_format(v, key->unit, human, sizeof human);
    ts_buf_printf(out, "  # %s", human);
}

/* Emit every key under group prefix (length plen) at indent, nesting by dots, in the order keys
 * first appear. Keys come from two tables (common, then family). */
static void dump_group(const ts_config *cfg, const char *prefix, size_t plen, int indent, ts_buf *out)
{
    keyset ks = {cfg->schema, NCORE + cfg->schema->nkeys};
    for (size_t i = 0; i < ks.n; i++) {
        const ts_cfg_key *key = ks_key(&ks, i);
        const char *p = key->path;
        if (i == CK_BASE || strncmp(p, prefix, plen) || (plen && p[plen - 1] != '.'))
            continue;
        const char *seg = p + plen;
        const char *dot = strchr(seg, '.');
        size_t sl = dot ? (size_t)(dot - seg) : strlen(seg);
        /* Skip a group already written by an earlier key. */
        bool seen = false;
        for (size_t j = 0; j < i && !seen && dot; j++) {
            const char *q = ks_key(&ks, j)->path;
            seen = j != CK_BASE && !strncmp(q, prefix, plen) && !strncmp(q + plen, seg, sl) && q[plen + sl] == '.';
        }
        if (seen)
            continue;
        ts_buf_printf(out, "%*s", indent, "");
        ts_buf_put(out, seg, sl);
        ts_buf_putc(out, ':');
        if (dot) {
            ts_buf_putc(out, '\n');
            char sub[512];
            size_t nl = plen + sl + 1;
            if (nl < sizeof sub) {
                memcpy(sub, p, nl);
                sub[nl] = 0;
                dump_group(cfg, sub, nl, indent + 2, out);
            }
        } else {
            ts_buf_putc(out, ' ');
            dump_value(key, i < NCORE ? (const void *)&cfg->core : cfg->data, out);
            ts_buf_putc(out, '\n');
        }
    }
}

void ts_config_dump(const ts_config *cfg, ts_buf *out)
{
    if (!cfg || !out)
        return;
    ts_buf_printf(out, "# resolved config from %s, fingerprint %016" PRIx64 "\n", cfg->path, cfg->fingerprint);
    ts_buf_puts(out, "# quantities are in base units (Hz, B, B/s, J, s, W, m); comments give the human form\n");
    dump_group(cfg, "", 0, 0, out);
}

static const char *type_name(const ts_cfg_key *key)
{
    switch (key->type) {
    case TS_CFG_INT: return "integer";
    case TS_CFG_UINT: return "unsigned integer";
    case TS_CFG_FLOAT: return "number";
    case TS_CFG_BOOL: return "bool (true or false)";
    case TS_CFG_STRING: return "string";
    case TS_CFG_ENUM: return "choice";
    case TS_CFG_STRLIST: return "list of strings";
    case TS_CFG_INTLIST: return "list of integers";
    }
    return "value";
}

static void print_key(const ts_cfg_key *key, const char *def, ts_buf *out)
{
    ts_buf_printf(out, "%s\n", key->path);
    ts_buf_printf(out, "    type:     %s", type_name(key));
    bool numeric = key->type == TS_CFG_INT || key->type == TS_CFG_UINT || key->type == TS_CFG_FLOAT ||
                   key->type == TS_CFG_INTLIST;
    if (numeric && key->unit != TS_UNIT_NONE) {
        ts_buf_printf(out, ", %s (base unit %s)", ts_unit_noun(key->unit), ts_unit_symbol(key->unit));
    }
    ts_buf_putc(out, '\n');
    if (key->type == TS_CFG_ENUM) {
        ts_buf_puts(out, "    choices:  ");
        for (size_t i = 0; key->choices && key->choices[i]; i++)
            ts_buf_printf(out, "%s%s", i ? ", " : "", key->choices[i]);
        ts_buf_putc(out, '\n');
    }
    if (numeric && key->min <= key->max) {
        char lo[64], hi[64];
        format_num(key, key->min, lo, sizeof lo);
        format_num(key, key->max, hi, sizeof hi);
        ts_buf_printf(out, "    range:    %s .. %s\n", lo, hi);
    }
    if (!def)
        def = key->def ? key->def : "required";
    ts_buf_printf(out, "    default:  %s\n", def[0] ? def : "\"\"");
    if (key->desc && key->desc[0])
        ts_buf_printf(out, "    %s\n", key->desc);
}

void ts_schema_print(const ts_schema *schema, ts_buf *out)
{
    if (!schema || !out)
        return;
    ts_buf_printf(out, "arch: %s — %s\n", schema->arch, schema->title ? schema->title : "");
    ts_buf_printf(out, "%zu keys. Nested maps and dotted keys are the same: 'tile: {sram: 1 MiB}' is "
                       "'tile.sram: 1 MiB'.\n",
                  schema->nkeys);
    ts_buf_puts(out, "Quantities take units, e.g. '1.6 GHz', '256 KiB', '6.3 GB/s', '0.9 pJ', '165 ns'.\n\n");
    ts_buf_puts(out, "# keys of every config\n\n");
    for (size_t i = 0; i < NCORE; i++) {
        /* The name has no fixed default: it falls back to the file's stem. */
        print_key(&core_keys[i], i == CK_NAME ? "the file's stem" : NULL, out);
        ts_buf_putc(out, '\n');
    }
    ts_buf_printf(out, "# keys of %s\n\n", schema->arch);
    for (size_t i = 0; i < schema->nkeys; i++) {
        print_key(&schema->keys[i], NULL, out);
        if (i + 1 < schema->nkeys)
            ts_buf_putc(out, '\n');
    }
}
