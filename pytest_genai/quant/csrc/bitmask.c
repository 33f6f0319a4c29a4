/* pytest-genai: the dense codes of a bitmask-stored weight (pytest_genai/quant/sparse.py, densify).
 *
 * Layout (sparse.pack_bitmask): row r's mask is ceil(cols / 8) bytes, column j in bit j % 8 of byte j / 8; the
 * nonzero codes are stored in row-major order. out[r, j] is the next stored code where the bit is set, else 0, for
 * codes of `width` bytes (1: int8 / fp8; 2: bf16 / fp16), copied as bit patterns.
 *
 * With AVX-512 VBMI2 (compiled with -march=native on a CPU that has it) 64 one-byte or 32 two-byte codes are placed
 * per masked expand-load, which reads only the codes it places; elsewhere each chunk is zeroed and its set bits are
 * walked. Both read the mask and the codes once and write each output byte once.
 *
 * Returns the number of codes placed (the caller checks it equals the number stored), or -1 when the mask has more
 * set bits than there are codes (nothing is read past the codes).
 */
#include <stdint.h>
#include <string.h>
#if defined(__AVX512VBMI2__) && defined(__AVX512BW__)
#include <immintrin.h>
#endif

static uint64_t chunk_bits(const uint8_t *row_mask, int64_t col, int64_t n) {
    /* the mask bits of columns [col, col + n), n <= 64, col a multiple of 8 */
    uint64_t bits = 0;
    memcpy(&bits, row_mask + col / 8, (size_t)((n + 7) / 8));  /* little-endian: column col + i in bit i */
    return n == 64 ? bits : bits & ((UINT64_C(1) << n) - 1);
}

/* the portable path: zero the chunk's n codes, then place one stored code per set bit */
static inline void place_codes(uint8_t *restrict o, const uint8_t *restrict v, uint64_t bits, int64_t n,
                               int64_t width) {
    memset(o, 0, (size_t)(n * width));
    for (int64_t i = 0; bits; i++, bits &= bits - 1)
        memcpy(o + (int64_t)__builtin_ctzll(bits) * width, v + i * width, (size_t)width);
}

int64_t genai_densify_bitmask(const uint8_t *restrict mask, int64_t rows, int64_t cols, const void *restrict values,
                              int64_t n_values, int64_t width, void *restrict out) {
    if (width != 1 && width != 2) return -1;
    const int64_t mask_row = (cols + 7) / 8;
    const int64_t step = width == 1 ? 64 : 32;  /* columns per chunk */
    int64_t k = 0;
    for (int64_t r = 0; r < rows; r++) {
        const uint8_t *m = mask + r * mask_row;
        for (int64_t c = 0; c < cols; c += step) {
            const int64_t n = cols - c < step ? cols - c : step;
            const uint64_t bits = chunk_bits(m, c, n);
            const int64_t set = __builtin_popcountll(bits);
            if (set > n_values - k) return -1;
            uint8_t *o = (uint8_t *)out + (r * cols + c) * width;
            const uint8_t *v = (const uint8_t *)values + k * width;
#if defined(__AVX512VBMI2__) && defined(__AVX512BW__)
            const uint64_t lanes = n == 64 ? ~UINT64_C(0) : (UINT64_C(1) << n) - 1;  /* the chunk's columns */
            if (width == 1)
                _mm512_mask_storeu_epi8(o, (__mmask64)lanes, _mm512_maskz_expandloadu_epi8((__mmask64)bits, v));
            else
                _mm512_mask_storeu_epi16(o, (__mmask32)lanes, _mm512_maskz_expandloadu_epi16((__mmask32)bits, v));
#else
            if (width == 1)
                place_codes(o, v, bits, n, 1);  /* constant widths: the memcpy becomes one load and one store */
            else
                place_codes(o, v, bits, n, 2);
#endif
            k += set;
        }
    }
    return k;
}
