/* pytest-genai: per-channel symmetric int8 quantization of an fp32 weight matrix in one read from memory
 * (pytest_genai/quant/codecs.py, format int8 without groups).
 *
 * For each row: amax = max |w|, scale = max(amax / 127, FLT_MIN) rounded up to 16 significant bits (1 where amax is
 * 0), codes =
 * clamp(round-half-even(w / scale), -127, 127). The row is read from memory once for amax and again from L1/L2 for
 * the codes (rows of up to ~64K weights stay in L2). The same fp32 operations as the torch path (IEEE division, no
 * reciprocal), so the codes are the same bits; the caller checks each row's scale against torch's arithmetic on
 * amax and has torch redo any row that differs (none has, subnormal scales included), so a drift here costs speed,
 * never a result.
 *
 * Returns -1 when every row's amax is finite, else the index of the first row with inf or NaN (rows from it on
 * are not written; the caller raises).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

int64_t genai_quantize_int8_rows(const float *restrict w, int64_t rows, int64_t cols, float *restrict amaxes,
                                 float *restrict scales, int8_t *restrict codes) {
    for (int64_t r = 0; r < rows; r++) {
        const float *restrict p = w + r * cols;
        /* max |w| on the bit patterns without the sign: they order non-negative floats as integers, inf and NaN
         * above every finite value, and an integer max reduction vectorizes (a float one does not, for NaN) */
        const uint32_t *restrict b = (const uint32_t *)p;
        uint32_t top = 0;
        for (int64_t i = 0; i < cols; i++) {
            const uint32_t m = b[i] & 0x7fffffffu;
            top = m > top ? m : top;
        }
        if (top >= 0x7f800000u) return r;  /* inf or NaN */
        float amax;
        memcpy(&amax, &top, sizeof amax);
        float s = amax > 0.0f ? fmaxf(amax / 127.0f, FLT_MIN) : 1.0f;  /* a normal scale (codecs.MIN_SCALE) */
        int e;
        const float m = frexpf(s, &e);
        s = ldexpf(ceilf(m * 65536.0f) / 65536.0f, e);
        amaxes[r] = amax;
        scales[r] = s;
        int8_t *restrict q = codes + r * cols;
        for (int64_t i = 0; i < cols; i++) {
            float c = nearbyintf(p[i] / s);
            c = c < -127.0f ? -127.0f : (c > 127.0f ? 127.0f : c);
            q[i] = (int8_t)c;
        }
    }
    return -1;
}
