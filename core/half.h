/* core/half.h — IEEE binary16 <-> binary32 conversions shared by every family.
 *
 * f32 -> f16 rounds to nearest, ties to even; NaNs stay NaNs (quiet bit set); overflow gives
 * infinity; values below half the smallest subnormal give signed zero. f16 -> f32 is exact.
 * Inline: both sit in the executors' inner loops.
 */
#ifndef TS_CORE_HALF_H
#define TS_CORE_HALF_H

#include <stdint.h>
#include <string.h>

static inline float ts_f16_to_f32(uint16_t h)
{
    uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, f = h & 0x3ffu, bits;
    if (e == 0) {
        if (f == 0) {
            bits = s;
        } else { /* subnormal: normalise */
            e = 127 - 15 + 1;
            while (!(f & 0x400u)) {
                f <<= 1;
                e--;
            }
            bits = s | (e << 23) | ((f & 0x3ffu) << 13);
        }
    } else if (e == 31) {
        bits = s | 0x7f800000u | (f << 13);
    } else {
        bits = s | ((e + 127 - 15) << 23) | (f << 13);
    }
    float out;
    memcpy(&out, &bits, 4);
    return out;
}

static inline uint16_t ts_f32_to_f16(float x)
{
    uint32_t b;
    memcpy(&b, &x, 4);
    uint32_t s = (b >> 16) & 0x8000u, e = (b >> 23) & 0xff, f = b & 0x7fffffu;
    if (e == 0xff)
        return (uint16_t)(s | 0x7c00u | (f ? 0x200u : 0));
    int32_t ee = (int32_t)e - 127 + 15;
    if (ee >= 31)
        return (uint16_t)(s | 0x7c00u);
    if (ee <= 0) {
        if (ee < -10)
            return (uint16_t)s;
        f |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - ee);
        uint32_t half = f >> shift, rem = f & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return (uint16_t)(s | half);
    }
    uint32_t half = ((uint32_t)ee << 10) | (f >> 13), rem = f & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1)))
        half++; /* may carry into the exponent, which rounds up to infinity correctly */
    return (uint16_t)(s | half);
}

#endif
