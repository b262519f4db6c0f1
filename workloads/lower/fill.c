/* workloads/lower/fill.c — a tensor's values: its data, or deterministic values (fill.h). */
#include "workloads/lower/fill.h"

#include <string.h>

#include "core/half.h"

float ts_fill_f32(int tensor, uint64_t i)
{
    uint64_t z = ((uint64_t)(uint32_t)tensor << 40) ^ i ^ 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)((double)(z >> 40) / (double)(1ull << 23) - 1.0); /* k / 2^23 - 1, exact in f32 */
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

int8_t ts_fill_i8(int tensor, uint64_t i)
{
    return (int8_t)((int)(mix(((uint64_t)(uint32_t)tensor << 40) ^ i ^ 0x5eedull) % 32) - 16);
}

int32_t ts_fill_bias(int tensor, uint64_t i)
{
    return (int32_t)(mix(((uint64_t)(uint32_t)tensor << 40) ^ i ^ 0xb1a5ull) % 512) - 256;
}

float ts_fill_value_f32(const ts_graph_tensor *t, int id, uint64_t i)
{
    if (t->dtype == TS_DT_F16) {
        uint16_t h;
        if (!t->data)
            return ts_f16_to_f32(ts_f32_to_f16(ts_fill_f32(id, i)));
        memcpy(&h, (const char *)t->data + 2 * i, 2);
        return ts_f16_to_f32(h);
    }
    if (t->data) {
        float f;
        memcpy(&f, (const char *)t->data + 4 * i, 4);
        return f;
    }
    return ts_fill_f32(id, i);
}

int8_t ts_fill_value_i8(const ts_graph_tensor *t, int id, uint64_t i)
{
    return t->data && t->dtype == TS_DT_I8 ? ((const int8_t *)t->data)[i] : ts_fill_i8(id, i);
}
