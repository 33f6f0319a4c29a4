/* pytest-genai: the sensitivity analysis's one streaming pass over a weight tensor (pytest_genai/quant/threshold.py).
 *
 * For n fp32 weights w: sum |w|, the number with |w| > hi, the number with lo <= |w| <= hi, and the in-bracket
 * magnitudes appended to out in order (at most cap of them). Each weight is read from memory once. Built with
 * -march=native, the CPU's widest path is compiled in (genai_scan_isa names it): with AVX-512 one loop does
 * everything, 16 weights at a time, compressing the few bracket values into out; with AVX2 the same loop, 8 weights
 * at a time, packing the bracket lanes with a permutation from a 256-entry table (AVX2 has no compress); otherwise
 * a 4096-element block is reduced by a loop the compiler vectorizes, then, only when the block holds bracket
 * values, re-read from L1 to build a byte mask and collect what it marks (half the AVX-512 loop's rate on an AVX2
 * CPU, measured: docs/quant.md).
 *
 * Sums are fp32 within a block and fp64 across blocks. NaN compares false everywhere and propagates into the sum,
 * as in the torch path. Returns the number of in-bracket values (stored only while it is <= cap; the caller
 * retries with a larger buffer when it is not), or the count when keep is 0.
 */
#include <stdint.h>
#include <string.h>
#if defined(__AVX512F__) || defined(__AVX2__)
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
        __m512i gacc = _mm512_setzero_si512();  /* per-lane count of |w| > hi: at most BLOCK / 16 per lane */
        /* No data-dependent branch: at the ~1% of weights a bracket holds, a branch on "this vector has one"
         * mispredicts on every fifth vector and halves the streaming rate. The compressed lanes are stored every
         * time (a 64-byte store that the next one mostly overwrites) while 16 more fit in out: a branch that is
         * predictable, as keep is. */
        for (int i = 0; i < BLOCK; i += 16) {
            const __m512 x = _mm512_castsi512_ps(_mm512_and_si512(_mm512_loadu_si512(w + a + i), absmask));
            s = _mm512_add_ps(s, x);
            const __mmask16 gt = _mm512_cmp_ps_mask(x, vhi, _CMP_GT_OQ);  /* NaN: false */
            gacc = _mm512_mask_sub_epi32(gacc, gt, gacc, _mm512_set1_epi32(-1));
            const __mmask16 in = _mm512_cmp_ps_mask(x, vlo, _CMP_GE_OQ) & _mm512_cmp_ps_mask(x, vhi, _CMP_LE_OQ);
            if (keep && inside + 16 <= cap) {
                _mm512_storeu_ps(out + inside, _mm512_maskz_compress_ps(in, x));
            } else if (keep && in) {
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
        ga = _mm512_reduce_add_epi32(gacc);
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
#elif defined(__AVX2__)
/* PACK[m]: the lanes of m's set bits in order, then zeros: one 32-byte row per 8-bit mask (8 KiB, stays in L1),
 * loaded as the permutation itself. Filled when the library loads (a constructor runs once, before any thread can
 * call in). */
static int32_t PACK[256][8] __attribute__((aligned(32)));
enum { PREFETCH_AHEAD = 768 };  /* floats */

__attribute__((constructor)) static void genai_scan_pack_table(void) {
    for (int m = 0; m < 256; m++) {
        int k = 0;
        for (int j = 0; j < 8; j++)
            if ((m >> j) & 1) PACK[m][k++] = j;
        while (k < 8) PACK[m][k++] = 0;
    }
}

/* 8 weights: |w| into the sum, the > hi count into the per-lane counter (a true compare is all ones: -1); in the
 * bracket is >= lo and not > hi (NaN: neither); the bracket lanes packed to the front and stored at out + inside
 * while 8 more fit (no data-dependent branch, as in the AVX-512 loop), else one by one. */
#define GENAI_SCAN_AVX2_STEP(x, s, gacc)                                                                          \
    do {                                                                                                          \
        s = _mm256_add_ps(s, x);                                                                                  \
        const __m256 gt = _mm256_cmp_ps(x, vhi, _CMP_GT_OQ);                                                      \
        gacc = _mm256_sub_epi32(gacc, _mm256_castps_si256(gt));                                                   \
        const int in = _mm256_movemask_ps(_mm256_andnot_ps(gt, _mm256_cmp_ps(x, vlo, _CMP_GE_OQ)));               \
        if (keep && inside + 8 <= cap) {                                                                          \
            const __m256i idx = _mm256_load_si256((const __m256i *)PACK[in]);                                     \
            _mm256_storeu_ps(out + inside, _mm256_permutevar8x32_ps(x, idx));                                     \
        } else if (keep && in) {                                                                                  \
            float lanes[8];                                                                                       \
            _mm256_storeu_ps(lanes, x);                                                                           \
            int64_t k = inside;                                                                                   \
            for (int j = 0; j < 8; j++) {                                                                         \
                if (((in >> j) & 1) && k < cap) out[k] = lanes[j];                                                \
                k += (in >> j) & 1;                                                                               \
            }                                                                                                     \
        }                                                                                                         \
        inside += __builtin_popcount((unsigned)in);                                                               \
    } while (0)

int64_t genai_scan_f32(const float *restrict w, int64_t n, float lo, float hi, int keep,
                       float *restrict out, int64_t cap,
                       int64_t *n_above, double *sum_abs) {
    int64_t above = 0, inside = 0;
    double total = 0.0;
    const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    int64_t a = 0;
    for (; a + BLOCK <= n; a += BLOCK) {
        /* two sums and two counters, one per half of 16 weights: the adds' latency overlaps (and the 16 lane sums
         * per block are as many as the AVX-512 loop's) */
        __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
        __m256i g0 = _mm256_setzero_si256(), g1 = _mm256_setzero_si256();  /* at most BLOCK / 16 per lane */
        for (int i = 0; i < BLOCK; i += 16) {
            /* one cache line, 3 KiB ahead: the loop alone read at 0.77-0.87 of the copy's rate with it, 0.63
             * without (AMD EPYC, AVX2, one thread, measured: docs/quant.md); a prefetch past the end is a hint, never
             * a fault */
            _mm_prefetch((const char *)(w + a + i + PREFETCH_AHEAD), _MM_HINT_T0);
            const __m256 x0 = _mm256_and_ps(_mm256_loadu_ps(w + a + i), absmask);
            const __m256 x1 = _mm256_and_ps(_mm256_loadu_ps(w + a + i + 8), absmask);
            GENAI_SCAN_AVX2_STEP(x0, s0, g0);
            GENAI_SCAN_AVX2_STEP(x1, s1, g1);
        }
        float lane_sums[16];
        int32_t lane_counts[16];
        _mm256_storeu_ps(lane_sums, s0);
        _mm256_storeu_ps(lane_sums + 8, s1);
        _mm256_storeu_si256((__m256i *)lane_counts, g0);
        _mm256_storeu_si256((__m256i *)(lane_counts + 8), g1);
        float s = 0.0f;
        for (int j = 0; j < 16; j++) {
            s += lane_sums[j];
            above += lane_counts[j];
        }
        total += (double)s;
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
#undef GENAI_SCAN_AVX2_STEP
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

/* Many pieces (weight ranges) in one call: on the OpenMP threads of the process when built with -fopenmp (torch's
 * runtime when torch loaded it first: its threads, spinning after the last torch op, pick the pieces up at once),
 * else one after another. Piece j: w[j] and n[j] in, out[j] with room for cap[j] in-bracket values; its results in
 * n_above[j], sum_abs[j] and inside[j] (as genai_scan_f32's). threads: how many threads to use (torch's count). */
void genai_scan_pieces_f32(const float *const *w, const int64_t *n, int64_t pieces, float lo, float hi, int keep,
                           float *const *out, const int64_t *cap, int64_t *n_above, double *sum_abs,
                           int64_t *inside, int threads) {
#if defined(_OPENMP)
    #pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
#else
    (void)threads;
#endif
    for (int64_t j = 0; j < pieces; j++)
        inside[j] = genai_scan_f32(w[j], n[j], lo, hi, keep, out[j], cap[j], &n_above[j], &sum_abs[j]);
}

/* The streaming loop compiled in: "avx512", "avx2" or "portable" (what -march=native found on the building CPU). */
const char *genai_scan_isa(void) {
#if defined(__AVX512F__)
    return "avx512";
#elif defined(__AVX2__)
    return "avx2";
#else
    return "portable";
#endif
}

/* 1 when built with OpenMP (genai_scan_pieces_f32 runs its pieces in parallel), else 0. */
int genai_scan_openmp(void) {
#if defined(_OPENMP)
    return 1;
#else
    return 0;
#endif
}

/* Order statistics of n non-negative floats (magnitudes: the sample, or the bracket's candidates) by radix selection
 * on their bit patterns, which order non-negative floats as unsigned integers (NaN patterns sort above inf, as
 * numpy's partition puts NaN last). Each level counts the values into 4096 buckets of the remaining bit range, keeps
 * the bucket holding the rank and narrows the range at least 2048-fold: at most three levels, the first over all n
 * values and the others over one bucket's. */
enum { NBUCKET = 4096 };

/* The bucket of rank *k in a histogram of nb buckets; *k becomes the rank within it. */
static int64_t rank_bucket(const int64_t *hist, int64_t *k) {
    int64_t j = 0;
    while (*k >= hist[j]) *k -= hist[j++];
    return j;
}

static int range_shift(uint32_t range) {
    int shift = 0;
    while ((range >> shift) >= NBUCKET) shift++;
    return shift;
}

/* The values of src whose (x - lo) >> shift is j, to the front of buf (buf may be src: c <= i); their min and max.
 * A bucket holds few of the values, so each run of 32 is first tested as a whole, in a loop the compiler vectorizes,
 * and read one by one only when it holds one: a tenth of the time of testing each value with a branch (measured). */
static int64_t take_bucket(const uint32_t *src, int64_t m, uint32_t lo, int shift, uint32_t j, uint32_t *buf,
                           uint32_t *min_out, uint32_t *max_out) {
    /* x is in bucket j when x - base < width as unsigned: x below base wraps to a large value */
    const uint32_t base = lo + (j << shift), width = (uint32_t)1 << shift;
    int64_t c = 0, i = 0;
    uint32_t mn = UINT32_MAX, mx = 0;
    for (; i < m; i += 32) {
        const int64_t end = m - i < 32 ? m : i + 32;
        if (end == i + 32) {
            int any = 0;
            for (int t = 0; t < 32; t++) any |= (src[i + t] - base) < width;
            if (!any) continue;
        }
        for (int64_t t = i; t < end; t++) {
            const uint32_t x = src[t];
            if (x - base < width) {
                buf[c++] = x;
                mn = x < mn ? x : mn;
                mx = x > mx ? x : mx;
            }
        }
    }
    *min_out = mn;
    *max_out = mx;
    return c;
}

/* Rank k of the m values in buf, all within [lo, hi]; buf is overwritten. */
static uint32_t select_in(uint32_t *buf, int64_t m, int64_t k, uint32_t lo, uint32_t hi, int64_t *hist) {
    while (lo != hi) {
        const int shift = range_shift(hi - lo);
        const int64_t nb = (int64_t)((hi - lo) >> shift) + 1;
        memset(hist, 0, (size_t)nb * sizeof hist[0]);
        for (int64_t i = 0; i < m; i++) hist[(buf[i] - lo) >> shift]++;
        const int64_t j = rank_bucket(hist, &k);
        if (shift == 0) return lo + (uint32_t)j;
        m = take_bucket(buf, m, lo, shift, (uint32_t)j, buf, &lo, &hi);
    }
    return lo;
}

/* The ks[r]-th smallest (0-based) of the n values v, for each of the nk ranks, into out[r]. The ranks share the
 * first level (the min and max, and the histogram over all n values: the costly passes); each then narrows its own
 * bucket in tmp, which has room for n values. v is not modified. Requires 0 <= ks[r] < n. */
void genai_select_many_f32(const float *restrict v, int64_t n, const int64_t *ks, int64_t nk, float *restrict tmp,
                           float *out) {
    const uint32_t *src = (const uint32_t *)v;
    uint32_t *buf = (uint32_t *)tmp;
    uint32_t lo = UINT32_MAX, hi = 0;
    for (int64_t i = 0; i < n; i++) {
        lo = src[i] < lo ? src[i] : lo;
        hi = src[i] > hi ? src[i] : hi;
    }
    int64_t hist[NBUCKET];
    const int shift = range_shift(hi - lo);
    if (lo != hi) {
        memset(hist, 0, sizeof hist);
        for (int64_t i = 0; i < n; i++) hist[(src[i] - lo) >> shift]++;
    }
    for (int64_t r = 0; r < nk; r++) {
        uint32_t x = lo;
        if (lo != hi) {
            int64_t k = ks[r];
            const int64_t j = rank_bucket(hist, &k);
            if (shift == 0) {
                x = lo + (uint32_t)j;
            } else {
                uint32_t blo, bhi;
                const int64_t m = take_bucket(src, n, lo, shift, (uint32_t)j, buf, &blo, &bhi);
                int64_t deeper[NBUCKET];
                x = select_in(buf, m, k, blo, bhi, deeper);
            }
        }
        memcpy(&out[r], &x, sizeof x);
    }
}

/* The gathered sample: |w| of `run` consecutive weights from each of w + starts[0..m), into out in order (m * run
 * values). Each run is one or two cache lines at a random place, prefetched some runs ahead. */
void genai_gather_abs_f32(const float *restrict w, const int64_t *restrict starts, int64_t m, int64_t run,
                          float *restrict out) {
    enum { AHEAD = 16 };  /* runs: the misses of the next ones in flight while this one is copied */
    for (int64_t j = 0; j < m; j++) {
        if (j + AHEAD < m) {
            __builtin_prefetch(w + starts[j + AHEAD]);
            __builtin_prefetch(w + starts[j + AHEAD] + run - 1);
        }
        const float *restrict p = w + starts[j];
        float *restrict o = out + j * run;
        for (int64_t i = 0; i < run; i++) o[i] = __builtin_fabsf(p[i]);
    }
}

/* The number of the n floats that are > x (NaN: not counted): each tensor's candidates above tau. */
int64_t genai_count_gt_f32(const float *restrict v, int64_t n, float x) {
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++) c += v[i] > x;
    return c;
}
