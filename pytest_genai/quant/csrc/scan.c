/* pytest-genai: the sensitivity analysis's one streaming pass over a weight tensor (pytest_genai/quant/threshold.py).
 *
 * For n fp32 weights w: sum |w|, the number with |w| > hi, the number with lo <= |w| <= hi, and the in-bracket
 * magnitudes appended to out (at most cap of them). Each weight is read from memory once: a 4096-element block
 * is reduced by a vectorizable loop, then, only when the block holds bracket values, re-read from L1 to build a
 * byte mask and collect the few values it marks.
 *
 * Sums are fp32 within a block and fp64 across blocks. NaN compares false everywhere and propagates into the sum,
 * as in the torch path. Returns the number of in-bracket values (stored only while it is <= cap; the caller
 * retries with a larger buffer when it is not), or the count when keep is 0.
 */
#include <stdint.h>
#include <string.h>

enum { BLOCK = 4096 };

int64_t genai_scan_f32(const float *restrict w, int64_t n, float lo, float hi, int keep,
                       float *restrict out, int64_t cap,
                       int64_t *n_above, double *sum_abs) {
    int64_t above = 0, inside = 0;
    double total = 0.0;
    uint8_t mask[BLOCK] __attribute__((aligned(64)));
    for (int64_t a = 0; a < n; a += BLOCK) {
        const int m = (n - a < BLOCK) ? (int)(n - a) : BLOCK;
        const float *restrict p = w + a;
        float s = 0.0f, above_f = 0.0f, inside_f = 0.0f; /* exact: at most 4096 each */
        for (int i = 0; i < m; i++) {
            const float x = __builtin_fabsf(p[i]);
            s += x;
            above_f += (x > hi) ? 1.0f : 0.0f;
            inside_f += (x >= lo && x <= hi) ? 1.0f : 0.0f;
        }
        total += (double)s;
        above += (int64_t)above_f;
        if (keep && inside_f > 0.0f && inside + (int64_t)inside_f <= cap) {
            for (int i = 0; i < m; i++) {
                const float x = __builtin_fabsf(p[i]);
                mask[i] = (uint8_t)((x >= lo) & (x <= hi));
            }
            int64_t k = inside;
            int i = 0;
            for (; i + 8 <= m; i += 8) {
                uint64_t word;
                memcpy(&word, mask + i, 8);
                if (word) {
                    for (int j = i; j < i + 8; j++) {
                        if (mask[j]) out[k++] = __builtin_fabsf(p[j]);
                    }
                }
            }
            for (; i < m; i++) {
                if (mask[i]) out[k++] = __builtin_fabsf(p[i]);
            }
        }
        inside += (int64_t)inside_f;
    }
    *n_above = above;
    *sum_abs = total;
    return inside;
}
