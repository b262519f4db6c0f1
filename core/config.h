/* core/config.h — chip configs: YAML read once into a typed, validated struct.
 *
 * Each family declares a schema: one row per key (dotted path, type, unit kind, range, default,
 * description with its source, offsetof into the family's config struct). Loading parses the YAML
 * (libyaml), follows `base:` files, applies `--set key.path=value` overrides, rejects unknown keys
 * (with a did-you-mean), wrong types, out-of-range values and missing required keys, all as
 * `file:line:col: what is wrong`, and fills the struct. After loading nothing looks keys up by
 * string again.
 *
 * Keys every config has, handled here and not in family schemas:
 *   arch: <family name>          required
 *   name: <text>                 optional, defaults to the file's stem (not inherited from a base)
 *   description: <text>          optional (not inherited from a base)
 *   base: <path>                 optional, a config whose keys this one overrides (path relative
 *                                to this file, or a built-in config name)
 *   energy.table: <name>         optional, energy table file or built-in name, default horowitz45
 *   energy.static_power: <power> optional, static power of the chip, default 0 W
 *   power.node, power.vdd, power.vdd_clock, power.vdd_per_ghz, power.vdd_min, power.sram_key,
 *   power.sram_array, power.clock_share:
 *                                the power model (docs/energy.md); defaults leave energy unscaled
 */
#ifndef TS_CORE_CONFIG_H
#define TS_CORE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/buf.h"
#include "core/err.h"
#include "core/units.h"

typedef enum ts_cfg_type {
    TS_CFG_INT,     /* int64_t; with a unit kind it must be a whole number of base units */
    TS_CFG_UINT,    /* uint64_t, likewise */
    TS_CFG_FLOAT,   /* double, in base units of its unit kind */
    TS_CFG_BOOL,    /* bool: true/false */
    TS_CFG_STRING,  /* char *, owned by the ts_config */
    TS_CFG_ENUM,    /* int: index into choices */
    TS_CFG_STRLIST, /* ts_strlist, owned by the ts_config */
    TS_CFG_INTLIST, /* ts_intlist, owned by the ts_config; items may carry the key's unit */
} ts_cfg_type;

typedef struct ts_strlist { char **v; size_t n; } ts_strlist;
typedef struct ts_intlist { int64_t *v; size_t n; } ts_intlist;

/* One row of a schema. */
typedef struct ts_cfg_key {
    const char *path;            /* dotted path, e.g. "tile.sram" */
    ts_cfg_type type;
    ts_unit_kind unit;           /* quantities accepted for numeric types */
    double min, max;             /* inclusive range for numbers; ignored when min > max */
    const char *def;             /* default as YAML scalar text; NULL means required */
    const char *desc;            /* one line: meaning and source, "(assumed: why)" if not public */
    size_t offset;               /* offsetof(family config struct, field) */
    const char *const *choices;  /* TS_CFG_ENUM: NULL-terminated names */
} ts_cfg_key;

/* A family's schema. */
typedef struct ts_schema {
    const char *arch;            /* family name, the value of `arch:` */
    const char *title;           /* one line, e.g. "Graphcore-style IPU with BSP and exchange" */
    const ts_cfg_key *keys;
    size_t nkeys;
    size_t size;                 /* sizeof the family's config struct */
    /* Cross-key checks and derived fields after all keys are set; may be NULL. */
    ts_status (*check)(void *cfg, ts_err *err);
} ts_schema;

typedef const ts_schema *(*ts_schema_lookup_fn)(const char *arch);

/* Built-in files (configs, energy tables) by name, e.g. "ipu_mk1"; 0 if found. */
typedef int (*ts_builtin_fn)(const char *name, const char **text, size_t *len);

typedef struct ts_config_opts {
    ts_schema_lookup_fn schema;  /* arch name -> schema; required */
    ts_builtin_fn builtin;       /* resolves `base:` and paths that are not files; may be NULL */
    const char *const *sets;     /* "key.path=value" overrides, applied after the file and bases */
    size_t nsets;
} ts_config_opts;

typedef struct ts_config ts_config; /* opaque */

/* Load a config from a file path, or from a built-in name when no such file exists. */
ts_status ts_config_load(ts_config **out, const char *path, const ts_config_opts *opts, ts_err *err);
/* Load from text in memory; `name` is used as the file name in messages and as default name. */
ts_status ts_config_load_string(ts_config **out, const char *name, const char *text, size_t len,
                                const ts_config_opts *opts, ts_err *err);
void ts_config_destroy(ts_config *cfg);

const void *ts_config_data(const ts_config *cfg);  /* the family's typed struct */
const ts_schema *ts_config_schema(const ts_config *cfg);
const char *ts_config_arch(const ts_config *cfg);
const char *ts_config_name(const ts_config *cfg);
const char *ts_config_path(const ts_config *cfg);  /* file it came from, or the built-in name */
/* The family key at `path` ("tile.sram"), NULL if the schema has none. */
const ts_cfg_key *ts_config_key(const ts_config *cfg, const char *path);
/* The value of the numeric family key at `path` as an unsigned integer (an int key converted, a
 * float key truncated): 0 with *v set, or -1 when there is no such numeric key. */
int ts_config_u64(const ts_config *cfg, const char *path, uint64_t *v);
/* Fingerprint of the resolved values (not the text): equal configs give equal fingerprints. */
uint64_t ts_config_fingerprint(const ts_config *cfg);
/* Name of the energy table (`energy.table`, default "horowitz45"): a built-in name, or a file path
 * (a relative path that names a file beside the config that gives it comes back joined to that
 * config's directory). */
const char *ts_config_energy_table(const ts_config *cfg);
/* Power drawn whatever the activity, in watts: `energy.static_power` (default 0 W: use the
 * family's own figure), given at power.vdd and power.vdd_clock. With a V-f curve its leakage part
 * scales with V / power.vdd and its clock-tree part (`power.clock_share`) with
 * (f / power.vdd_clock) (V / power.vdd)^2 (docs/energy.md). */
double ts_config_static_power(const ts_config *cfg);
/* Process node in metres (`power.node`; 0: price at the energy table's own node, unscaled). */
double ts_config_node(const ts_config *cfg);
/* `power.vdd` (0: none given), and the supply the V-f curve gives at the config's `clock`:
 * vdd + vdd_per_ghz x (clock - vdd_clock), at least vdd_min; 0 when no vdd is given. */
double ts_config_vdd_nominal(const ts_config *cfg);
double ts_config_vdd(const ts_config *cfg);
/* Bytes of one unit's SRAM array for the SRAM energy rule: the value of the family key named by
 * `power.sram_key` (e.g. tile.sram), else `power.sram_array`; 0 when neither is given. */
double ts_config_sram_array(const ts_config *cfg);
/* The resolved config as YAML, every key with its value (for reports and `tessera config`). */
void ts_config_dump(const ts_config *cfg, ts_buf *out);

/* The documented schema, one key per entry: path, type, unit, range, default, description. */
void ts_schema_print(const ts_schema *schema, ts_buf *out);

/* Parse one scalar for a key (used by --set and by sweeps). dst points at a field of the key's
 * type; the key's unit and range apply. Strings and lists (written "[a, b]" or "a, b") are newly
 * allocated and owned by the caller (ts_free each item, then the array). On failure returns
 * TS_EINPUT (or TS_ENOMEM) with the reason, without the key's path, in why. */
ts_status ts_config_parse_value(const ts_cfg_key *key, const char *text, void *dst, char *why, size_t n);

#endif
