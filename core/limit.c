/* core/limit.c — the input limits (see limit.h). */
#include "core/limit.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    uint64_t def;
} table[TS_LIMIT_COUNT] = {
    /* A file read whole is held in memory once or twice: 1 GiB covers every shipped model with
     * its weights (ResNet-50's ONNX file is about 100 MB) and stays within a laptop's memory. */
    [TS_LIMIT_INPUT_BYTES] = {"input_bytes", UINT64_C(1) << 30},
    /* A node of the YAML tree costs about 100 bytes of host memory: a million nodes is 100 MB, and
     * the largest shipped YAML (a config with its base, ResNet-50's workload) has under 2,000. */
    [TS_LIMIT_YAML_NODES] = {"yaml_nodes", 1000000},
    /* 2^28 elements (1 GiB of f32): larger than any activation or weight of the built-in models at
     * their defaults (ResNet-50's largest is 802,816; BERT-base's 2,359,296) by two orders. */
    [TS_LIMIT_TENSOR_ELEMS] = {"tensor_elems", UINT64_C(1) << 28},
    [TS_LIMIT_TENSOR_BYTES] = {"tensor_bytes", UINT64_C(1) << 30},
    /* ResNet-50 has 122 operators once its batch norms are folded. */
    [TS_LIMIT_GRAPH_NODES] = {"graph_nodes", 100000},
    /* The largest unit grid shipped, the WSE-2's 850,000 PEs, fits in one range. */
    [TS_LIMIT_RANGE_UNITS] = {"range_units", UINT64_C(1) << 20},
    /* Far above any tile memory modelled (an IPU tile holds 624 KiB, a WSE PE 48 KiB). */
    [TS_LIMIT_DATA_BYTES] = {"data_bytes", UINT64_C(64) << 20},
    [TS_LIMIT_PROGRAM_BYTES] = {"program_bytes", UINT64_C(1) << 30},
    /* Each point is a simulation: a million are weeks of host time for the smallest chip. */
    [TS_LIMIT_SWEEP_POINTS] = {"sweep_points", 1000000},
};

static uint64_t current[TS_LIMIT_COUNT];
static int ready;

static void init(void)
{
    if (ready)
        return;
    for (int i = 0; i < TS_LIMIT_COUNT; i++)
        current[i] = table[i].def;
    ready = 1;
}

uint64_t ts_limit(ts_limit_id id)
{
    init();
    return id < TS_LIMIT_COUNT ? current[id] : UINT64_MAX;
}

const char *ts_limit_name(ts_limit_id id) { return id < TS_LIMIT_COUNT ? table[id].name : "?"; }

uint64_t ts_limit_default(ts_limit_id id) { return id < TS_LIMIT_COUNT ? table[id].def : UINT64_MAX; }

void ts_limit_set(ts_limit_id id, uint64_t value)
{
    init();
    if (id < TS_LIMIT_COUNT)
        current[id] = value ? value : UINT64_MAX;
}

void ts_limits_reset(void)
{
    ready = 0;
    init();
}

/* A value: digits and an optional suffix; 0 and "none" are no limit (UINT64_MAX). */
static int parse_value(const char *s, size_t n, uint64_t *out)
{
    if (n == 4 && !memcmp(s, "none", 4)) {
        *out = UINT64_MAX;
        return 0;
    }
    uint64_t v = 0;
    size_t i = 0;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(s[i] - '0'), &v))
            return -1;
    if (i == 0)
        return -1;
    static const char *const suffix[] = {"k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti"};
    static const uint64_t mult[] = {UINT64_C(1000), UINT64_C(1000000), UINT64_C(1000000000),
                                    UINT64_C(1000000000000), UINT64_C(1) << 10, UINT64_C(1) << 20,
                                    UINT64_C(1) << 30, UINT64_C(1) << 40};
    if (i < n) {
        size_t k = 0;
        while (k < 8 && (strlen(suffix[k]) != n - i || memcmp(suffix[k], s + i, n - i)))
            k++;
        if (k == 8 || __builtin_mul_overflow(v, mult[k], &v))
            return -1;
    }
    *out = v ? v : UINT64_MAX;
    return 0;
}

int ts_limits_parse(const char *spec, char *why, size_t n)
{
    init();
    uint64_t next[TS_LIMIT_COUNT];
    memcpy(next, current, sizeof next);
    for (const char *p = spec; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (len) {
            size_t kl = eq ? (size_t)(eq - p) : len;
            int id = 0;
            while (id < TS_LIMIT_COUNT && (strlen(table[id].name) != kl || memcmp(table[id].name, p, kl)))
                id++;
            if (id == TS_LIMIT_COUNT) {
                snprintf(why, n, "unknown limit '%.*s' (limits: input_bytes, yaml_nodes, tensor_elems, "
                         "tensor_bytes, graph_nodes, range_units, data_bytes, program_bytes, sweep_points)", (int)kl, p);
                return -1;
            }
            if (!eq || parse_value(eq + 1, len - kl - 1, &next[id])) {
                snprintf(why, n, "limit '%s' needs a whole number like 4096, 64Mi or 2G, or none, got '%.*s'",
                         table[id].name, eq ? (int)(len - kl - 1) : 0, eq ? eq + 1 : "");
                return -1;
            }
        }
        p = end ? end + 1 : NULL;
    }
    memcpy(current, next, sizeof next);
    return 0;
}
