/* core/energy.h — energy = events x energy per event + static power x time.
 *
 * A table is YAML: every entry carries value (with unit), bit width, technology node, the
 * component it is charged to, and its source; entries not confirmed against the source say so.
 * Built-in tables: "horowitz45" (Horowitz, ISSCC 2014) and "jouppi7" (Jouppi et al., ISCA 2021,
 * Table 2). Format: docs/energy.md.
 *
 *   name: horowitz45
 *   node: 45 nm
 *   entries:
 *     fp32_mul: {value: 3.7 pJ, bits: 32, component: compute, source: "...", confirmed: true}
 */
#ifndef TS_CORE_ENERGY_H
#define TS_CORE_ENERGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/config.h"
#include "core/err.h"

typedef struct ts_energy_entry {
    const char *name;      /* event name, e.g. "fp16_mac", "sram_read_64b", "wire_bit_mm" */
    double joules;         /* per event */
    int bits;
    const char *node;
    const char *component; /* "compute", "sram", "network", "offchip", "control", ... */
    const char *source;
    bool confirmed;
} ts_energy_entry;

typedef struct ts_energy_table ts_energy_table; /* opaque */

/* Load a table from a file path, or a built-in name if no such file (builtin may be NULL). */
ts_status ts_energy_load(ts_energy_table **out, const char *path, ts_builtin_fn builtin, ts_err *err);
ts_status ts_energy_load_string(ts_energy_table **out, const char *name, const char *text, size_t len,
                                ts_err *err);
void ts_energy_destroy(ts_energy_table *t);
const char *ts_energy_name(const ts_energy_table *t);
const ts_energy_entry *ts_energy_find(const ts_energy_table *t, const char *event);
size_t ts_energy_count(const ts_energy_table *t);
const ts_energy_entry *ts_energy_at(const ts_energy_table *t, size_t i);

/* The power model (docs/energy.md): the factor entry e is multiplied by on a chip of node node_m
 * (metres; 0: unscaled, 1 returned) at supply vdd (volts; 0: the table's 0.9 V) whose units have
 * SRAM arrays of sram_bytes (0: the table's 8 KB). Compute, control and SRAM entries scale with
 * node / entry node x (vdd / 0.9 V)^2, wires with (vdd / 0.9 V)^2 only, off-chip entries not at
 * all; the 8 KB SRAM access entries also with sqrt(sram_bytes / 8 KB). */
double ts_energy_scale_factor(const ts_energy_entry *e, double node_m, double vdd, double sram_bytes);
/* Scale every entry of t by ts_energy_scale_factor: a config's power.node (ts_config_node), the
 * V-f curve's supply at its clock (ts_config_vdd) and its units' SRAM array
 * (ts_config_sram_array); nothing when node_m is 0. */
void ts_energy_scale(ts_energy_table *t, double node_m, double vdd, double sram_bytes);

#endif
