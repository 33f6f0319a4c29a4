/* pytest-genai: the sensitivity analysis's one streaming pass over a weight tensor (pytest_genai/quant/threshold.py).
 *
 * For n fp32 weights w: sum |w|, the number with |w| > hi, the number with lo <= |w| <= hi, and the in-bracket
 * magnitudes appended to out in order (at most cap of them). Each weight is read from memory once. With AVX-512
 * (compiled with -march=native on a CPU that has it) one loop does everything, 16 weights at a time, compressing
 * the few bracket values into out; otherwise a 4096-element block is reduced by a loop the compiler vectorizes,
 * then, only when the block holds bracket values, re-read from L1 to build a byte mask and collect what it marks.
 *
 * Sums are fp32 within a block and fp64 across blocks. NaN compares false everywhere and propagates into the sum,
 * as in the torch path. Returns the number of in-bracket values (stored only while it is <= cap; the caller
 * retries with a larger buffer when it is not), or the count when keep is 0.
 */
#include <stdint.h>
#include <string.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

enum { BLOCK = 4096 };

#if defined(__AVX512F__)
int64_t genai_scan_f32(const float *restrict w, int64_t n, float lo, float hi, int keep,
                       float *restrict out, int64_t cap,
                       int64_t *n_above, double *sum_abs) {
    int64_t above = 0, inside = 0;
    double total = 0.0;
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    const __m512i absmask = _mm512_set1_epi32(0x7fffffff);
    int64_t a = 0;
    for (; a + BLOCK <= n; a += BLOCK) {
        __m512 s = _mm512_setzero_ps();
        int64_t ga = 0;
        for (int i = 0; i < BLOCK; i += 16) {
            const __m512 x = _mm512_castsi512_ps(_mm512_and_si512(_mm512_loadu_si512(w + a + i), absmask));
            s = _mm512_add_ps(s, x);
            ga += __builtin_popcount(_mm512_cmp_ps_mask(x, vhi, _CMP_GT_OQ));  /* NaN: false */
            const __mmask16 in = _mm512_cmp_ps_mask(x, vlo, _CMP_GE_OQ) & _mm512_cmp_ps_mask(x, vhi, _CMP_LE_OQ);
            if (in) {
                if (keep && inside + 16 <= cap) {  /* compress in a register, then a plain 16-lane store */
                    _mm512_storeu_ps(out + inside, _mm512_maskz_compress_ps(in, x));
                } else if (keep) {
                    float lanes[16];
                    _mm512_storeu_ps(lanes, x);
                    int64_t k = inside;
                    for (int j = 0; j < 16; j++) {
                        if (((in >> j) & 1) && k < cap) out[k] = lanes[j];
                        k += (in >> j) & 1;
                    }
                }
                inside += __builtin_popcount(in);
            }
        }
        total += (double)_mm512_reduce_add_ps(s);
        above += ga;
    }
    for (; a < n; a++) {
        const float x = __builtin_fabsf(w[a]);
        total += (double)x;
        above += x > hi;
        if (x >= lo && x <= hi) {
            if (keep && inside < cap) out[inside] = x;
            inside++;
        }
    }
    *n_above = above;
    *sum_abs = total;
    return inside;
}
#else
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
#endif
