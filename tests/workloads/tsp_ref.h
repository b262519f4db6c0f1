/* tests/workloads/tsp_ref.h — C references of the TSP lowering's steps that more than one test
 * file repeats (test_lower_tsp_ops, test_values). Included after each file's own includes
 * (static inline functions; needs math.h and core/half.h). */
#ifndef TS_TESTS_WORKLOADS_TSP_REF_H
#define TS_TESTS_WORKLOADS_TSP_REF_H

/* int8 rounding of the VXM's cvt i8: nearest even, saturating. */
static inline int8_t tsp_ref_cvt8(float f)
{
    double r = nearbyint((double)f);
    return (int8_t)(r < -128 ? -128 : r > 127 ? 127 : (int)r);
}

/* LayerNorm of a row of D int8 values (q / 16) as workloads/tsp/layernorm.c computes it: the plane
 * sums f16 inputs exactly and rounds once to f32 per abc (a tile of 320), accumulating the tiles
 * in f32; every VXM step is one f32 operation. g16, b16: 16 gamma, 16 beta; eps_q: 256 eps. */
static inline void tsp_ref_layernorm(const int8_t *x, int64_t D, const float *g16, const float *b16, float eps_q,
                                     int8_t *y)
{
    float invd = (float)(1.0 / (double)D), acc = 0, acc2 = 0;
    for (int64_t t = 0; t * 320 < D; t++) {
        double s = 0;
        for (int64_t c = t * 320; c < D && c < t * 320 + 320; c++)
            s += (double)ts_f16_to_f32(ts_f32_to_f16((float)x[c]));
        acc = t ? acc + (float)s : (float)s;
    }
    float mean = acc * invd;
    for (int64_t t = 0; t * 320 < D; t++) {
        double s = 0;
        for (int64_t c = t * 320; c < D && c < t * 320 + 320; c++) {
            float d = (float)x[c] - mean;
            s += (double)ts_f16_to_f32(ts_f32_to_f16(d * d));
        }
        acc2 = t ? acc2 + (float)s : (float)s;
    }
    float r = 1.0f / sqrtf(acc2 * invd + eps_q);
    for (int64_t c = 0; c < D; c++)
        y[c] = tsp_ref_cvt8(((float)x[c] - mean) * r * g16[c] + b16[c]);
}

#endif
