/* fuzz/fuzz_config.c — libFuzzer target for the config loader (core/config.c).
 *
 * The input is loaded as a config with ts_config_load_string. Its arch is looked up among the
 * registered families; any other arch gets the small schema below, so the fuzzer reaches key
 * validation without guessing a family name. Odd-sized inputs also get --set overrides. A config
 * that loads is dumped; for the schema below the dump must load back to the same fingerprint.
 * Nothing may crash or leak.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arch/registry.h"
#include "core/buf.h"
#include "core/config.h"

typedef struct fuzz_cfg {
    int64_t count;
    uint64_t size;
    double clock;
    bool flag;
    char *text;
    int mode;
    ts_strlist names;
    ts_intlist widths;
    double bw;
    int64_t delay;
} fuzz_cfg;

static const char *const fuzz_modes[] = {"a", "bb", "ccc", NULL};

static const ts_cfg_key fuzz_keys[] = {
    {"count", TS_CFG_INT, TS_UNIT_NONE, 1, 1000, "4", "a count", offsetof(fuzz_cfg, count), NULL},
    {"mem.size", TS_CFG_UINT, TS_UNIT_BYTES, 0, -1, "64 KiB", "a size", offsetof(fuzz_cfg, size), NULL},
    {"mem.clock", TS_CFG_FLOAT, TS_UNIT_FREQ, 1, 1e12, "1 GHz", "a clock", offsetof(fuzz_cfg, clock), NULL},
    {"flag", TS_CFG_BOOL, TS_UNIT_NONE, 0, -1, "false", "a flag", offsetof(fuzz_cfg, flag), NULL},
    {"text", TS_CFG_STRING, TS_UNIT_NONE, 0, -1, "x", "a string", offsetof(fuzz_cfg, text), NULL},
    {"mode", TS_CFG_ENUM, TS_UNIT_NONE, 0, -1, "bb", "a choice", offsetof(fuzz_cfg, mode), fuzz_modes},
    {"names", TS_CFG_STRLIST, TS_UNIT_NONE, 0, -1, "[]", "strings", offsetof(fuzz_cfg, names), NULL},
    {"net.widths", TS_CFG_INTLIST, TS_UNIT_BYTES, 0, 4096, "[8]", "sizes", offsetof(fuzz_cfg, widths), NULL},
    {"net.link.bw", TS_CFG_FLOAT, TS_UNIT_BANDWIDTH, 0, -1, "1 GB/s", "a bandwidth", offsetof(fuzz_cfg, bw),
     NULL},
    {"net.link.delay", TS_CFG_INT, TS_UNIT_CYCLES, -5, 5, "1", "a latency", offsetof(fuzz_cfg, delay), NULL},
};

static ts_status fuzz_check(void *p, ts_err *err)
{
    const fuzz_cfg *c = p;
    if (c->flag && c->count > 500)
        return ts_err_set(err, TS_EINPUT, "flag needs count <= 500");
    return TS_OK;
}

static const ts_schema fuzz_schema = {
    "fuzzchip", "schema of the config fuzzer", fuzz_keys, sizeof fuzz_keys / sizeof fuzz_keys[0],
    sizeof(fuzz_cfg), fuzz_check,
};

static const ts_schema *fuzz_lookup(const char *arch)
{
    const ts_schema *s = ts_registry_schema(arch);
    return s ? s : &fuzz_schema;
}

/* One built-in base, so `base: fuzzbase` is reachable. */
static int fuzz_builtin(const char *name, const char **text, size_t *len)
{
    static const char base[] = "arch: fuzzchip\ncount: 7\nmem: {size: 1 MiB}\nnames: [p, q]\n";
    if (strcmp(name, "fuzzbase"))
        return -1;
    *text = base;
    *len = sizeof base - 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const sets[] = {"count=9", "net.widths=[1 KiB, 16]", "mem.clok=1 GHz"};
    ts_config_opts o = {fuzz_lookup, fuzz_builtin, sets, size % 2 ? 2 : 0};
    if (size % 4 == 3)
        o.nsets = 3; /* an unknown key in --set */
    ts_config *cfg = NULL;
    ts_err err;
    ts_err_init(&err);
    if (ts_config_load_string(&cfg, "fuzz.yaml", (const char *)data, size, &o, &err) == TS_OK) {
        ts_buf dump = TS_BUF_INIT;
        ts_config_dump(cfg, &dump);
        if (ts_config_schema(cfg) == &fuzz_schema && !dump.oom) {
            ts_config_opts plain = {fuzz_lookup, fuzz_builtin, NULL, 0};
            ts_config *back = NULL;
            ts_err err2;
            ts_err_init(&err2);
            if (ts_config_load_string(&back, "dump.yaml", dump.data, dump.len, &plain, &err2) != TS_OK ||
                ts_config_fingerprint(back) != ts_config_fingerprint(cfg))
                abort(); /* the dump of a config must load back to the same values */
            ts_config_destroy(back);
            ts_err_free(&err2);
        }
        ts_buf_free(&dump);
        ts_buf b = TS_BUF_INIT;
        ts_schema_print(ts_config_schema(cfg), &b);
        ts_buf_free(&b);
    }
    ts_config_destroy(cfg);
    ts_err_free(&err);
    return 0;
}
