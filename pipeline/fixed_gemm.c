/* C (+)= A B in float32 with one order of operations on every x86-64 processor with AVX2 and FMA
   (the loader: fixed_gemm.py).

   Each element is one chain of fused multiply-adds in the order of k:
       c = fma(a[k-1], b[k-1], ... fma(a[1], b[1], fma(a[0], b[0], c0)))
   with c0 = 0, or C's value when accumulating. An FMA rounds once, exactly as IEEE 754 defines it, so the bits depend
   on nothing but the inputs: not on the processor, its cache sizes, the compiler, the blocking below (a block of k
   carries each element's running sum over in C) or the width of the vectors that run many chains side by side.
   fixed_gemm_reference computes the same chain one element at a time. BLIS's layout: B packed in panels of NR
   columns, A in slivers of MR rows, and a kernel of MR x NR elements: 6x16 in 12 AVX2 registers, or 12x32 in 24
   AVX-512 registers where the processor has them (twice the FMAs per instruction; the same bits).
   Built with -ffp-contract=off, never -ffast-math (refused below). */
#if defined(__FAST_MATH__)
#error "fixed_gemm.c must not be built with -ffast-math: it would reorder the sums"
#endif
#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KC 256
#define MC 96     /* a multiple of every kernel's MR */
#define NC 2048   /* a multiple of every kernel's NR */
#define MR_MAX 12
#define NR_MAX 32

/* acc[r][*] = (first ? 0 : c[r][*]); then for each k in order: acc = fma(a[r][k], b[k][*], acc) */
typedef void kernel_fn(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int first);
struct kernel { int64_t mr, nr; kernel_fn *run; };

static void pack_a(int64_t mr, int64_t mc, int64_t kc, const float *a, int64_t rsa, int64_t csa, float *p) {
    for (int64_t i = 0; i < mc; i += mr) {
        int64_t rows = mc - i < mr ? mc - i : mr;
        for (int64_t k = 0; k < kc; k++) {
            for (int64_t r = 0; r < rows; r++) p[r] = a[(i + r) * rsa + k * csa];
            for (int64_t r = rows; r < mr; r++) p[r] = 0.0f;
            p += mr;
        }
    }
}

static void pack_b(int64_t nr, int64_t kc, int64_t nc, const float *b, int64_t rsb, int64_t csb, float *p) {
    for (int64_t j = 0; j < nc; j += nr) {
        int64_t cols = nc - j < nr ? nc - j : nr;
        for (int64_t k = 0; k < kc; k++) {
            const float *row = b + k * rsb + j * csb;
            if (csb == 1 && cols == nr) memcpy(p, row, nr * sizeof(float));
            else {
                for (int64_t c = 0; c < cols; c++) p[c] = row[c * csb];
                for (int64_t c = cols; c < nr; c++) p[c] = 0.0f;
            }
            p += nr;
        }
    }
}

static void kernel_6x16(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int first) {
    __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
    if (first) {
        c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
    } else {
        c00 = _mm256_loadu_ps(c + 0 * ldc); c01 = _mm256_loadu_ps(c + 0 * ldc + 8);
        c10 = _mm256_loadu_ps(c + 1 * ldc); c11 = _mm256_loadu_ps(c + 1 * ldc + 8);
        c20 = _mm256_loadu_ps(c + 2 * ldc); c21 = _mm256_loadu_ps(c + 2 * ldc + 8);
        c30 = _mm256_loadu_ps(c + 3 * ldc); c31 = _mm256_loadu_ps(c + 3 * ldc + 8);
        c40 = _mm256_loadu_ps(c + 4 * ldc); c41 = _mm256_loadu_ps(c + 4 * ldc + 8);
        c50 = _mm256_loadu_ps(c + 5 * ldc); c51 = _mm256_loadu_ps(c + 5 * ldc + 8);
    }
    for (int64_t k = 0; k < kc; k++) {
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8), x;
        x = _mm256_broadcast_ss(a + 0); c00 = _mm256_fmadd_ps(x, b0, c00); c01 = _mm256_fmadd_ps(x, b1, c01);
        x = _mm256_broadcast_ss(a + 1); c10 = _mm256_fmadd_ps(x, b0, c10); c11 = _mm256_fmadd_ps(x, b1, c11);
        x = _mm256_broadcast_ss(a + 2); c20 = _mm256_fmadd_ps(x, b0, c20); c21 = _mm256_fmadd_ps(x, b1, c21);
        x = _mm256_broadcast_ss(a + 3); c30 = _mm256_fmadd_ps(x, b0, c30); c31 = _mm256_fmadd_ps(x, b1, c31);
        x = _mm256_broadcast_ss(a + 4); c40 = _mm256_fmadd_ps(x, b0, c40); c41 = _mm256_fmadd_ps(x, b1, c41);
        x = _mm256_broadcast_ss(a + 5); c50 = _mm256_fmadd_ps(x, b0, c50); c51 = _mm256_fmadd_ps(x, b1, c51);
        a += 6; b += 16;
    }
    _mm256_storeu_ps(c + 0 * ldc, c00); _mm256_storeu_ps(c + 0 * ldc + 8, c01);
    _mm256_storeu_ps(c + 1 * ldc, c10); _mm256_storeu_ps(c + 1 * ldc + 8, c11);
    _mm256_storeu_ps(c + 2 * ldc, c20); _mm256_storeu_ps(c + 2 * ldc + 8, c21);
    _mm256_storeu_ps(c + 3 * ldc, c30); _mm256_storeu_ps(c + 3 * ldc + 8, c31);
    _mm256_storeu_ps(c + 4 * ldc, c40); _mm256_storeu_ps(c + 4 * ldc + 8, c41);
    _mm256_storeu_ps(c + 5 * ldc, c50); _mm256_storeu_ps(c + 5 * ldc + 8, c51);
}

/* the same chains, 16 columns to an instruction: rows r of A broadcast, two vectors of B's 32 columns */
#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define DECLARE(r) __m512 c##r##_0, c##r##_1;
#define ZERO(r) c##r##_0 = c##r##_1 = _mm512_setzero_ps();
#define LOAD(r) c##r##_0 = _mm512_loadu_ps(c + r * ldc); c##r##_1 = _mm512_loadu_ps(c + r * ldc + 16);
#define FMA(r) x = _mm512_set1_ps(a[r]); c##r##_0 = _mm512_fmadd_ps(x, b0, c##r##_0); \
               c##r##_1 = _mm512_fmadd_ps(x, b1, c##r##_1);
#define STORE(r) _mm512_storeu_ps(c + r * ldc, c##r##_0); _mm512_storeu_ps(c + r * ldc + 16, c##r##_1);

__attribute__((target("avx512f")))
static void kernel_12x32(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int first) {
    ROWS(DECLARE)
    if (first) { ROWS(ZERO) } else { ROWS(LOAD) }
    for (int64_t k = 0; k < kc; k++) {
        __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16), x;
        ROWS(FMA)
        a += 12; b += 32;
    }
    ROWS(STORE)
}

static const struct kernel AVX2 = {6, 16, kernel_6x16}, AVX512 = {12, 32, kernel_12x32};
static const struct kernel *widest;   /* the widest kernel this processor runs (chosen on loading) */

/* 512 where this processor runs AVX-512F, else 256 */
static int supported_width(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") ? 512 : 256;
}

/* products from here on use vectors of at most `bits` (256 or 512; for tests and benchmarks, as every width gives
   the same bits); returns the widest width now in effect */
int fixed_gemm_set_width(int bits) {
    widest = bits >= 512 && supported_width() == 512 ? &AVX512 : &AVX2;
    return (int)widest->nr * 16;
}

__attribute__((constructor)) static void choose_width(void) { fixed_gemm_set_width(512); }

/* the wide kernel where its tiles are mostly full and its k loop long; small products (attention's) run faster in
   the narrow one's 6x16 tiles */
static const struct kernel *kernel_for(int64_t m, int64_t n, int64_t k) {
    return widest == &AVX512 && m >= 12 && n >= 64 && k >= 64 ? &AVX512 : &AVX2;
}

/* the columns of the tiles a product of this shape is computed in (16 or 32; for tests) */
int fixed_gemm_tile_columns(int64_t m, int64_t n, int64_t k) { return (int)kernel_for(m, n, k)->nr; }

/* C[m,n] (rows ldc apart, columns adjacent) = (accumulate ? C : 0) + A[m,k] B[k,n], A and B of any strides. */
static void gemm(const struct kernel *kern, int64_t m, int64_t n, int64_t k, const float *a, int64_t rsa,
                 int64_t csa, const float *b, int64_t rsb, int64_t csb, float *c, int64_t ldc, int accumulate,
                 float *apack, float *bpack) {
    const int64_t mr = kern->mr, nr = kern->nr;
    float edge[MR_MAX * NR_MAX];
    if (k == 0) {
        if (!accumulate) for (int64_t i = 0; i < m; i++) memset(c + i * ldc, 0, n * sizeof(float));
        return;
    }
    for (int64_t jc = 0; jc < n; jc += NC) {
        int64_t nc = n - jc < NC ? n - jc : NC;
        for (int64_t pc = 0; pc < k; pc += KC) {
            int64_t kc = k - pc < KC ? k - pc : KC;
            int first = pc == 0 && !accumulate;
            pack_b(nr, kc, nc, b + pc * rsb + jc * csb, rsb, csb, bpack);
            for (int64_t ic = 0; ic < m; ic += MC) {
                int64_t mc = m - ic < MC ? m - ic : MC;
                pack_a(mr, mc, kc, a + ic * rsa + pc * csa, rsa, csa, apack);
                for (int64_t jr = 0; jr < nc; jr += nr) {
                    int64_t cols = nc - jr < nr ? nc - jr : nr;
                    for (int64_t ir = 0; ir < mc; ir += mr) {
                        int64_t rows = mc - ir < mr ? mc - ir : mr;
                        float *ct = c + (ic + ir) * ldc + jc + jr;
                        const float *ap = apack + ir * kc, *bp = bpack + jr * kc;
                        if (rows == mr && cols == nr) kern->run(kc, ap, bp, ct, ldc, first);
                        else {
                            for (int64_t r = 0; r < rows; r++)
                                for (int64_t q = 0; q < cols; q++) edge[r * nr + q] = first ? 0.0f : ct[r * ldc + q];
                            kern->run(kc, ap, bp, edge, nr, first);
                            for (int64_t r = 0; r < rows; r++)
                                for (int64_t q = 0; q < cols; q++) ct[r * ldc + q] = edge[r * nr + q];
                        }
                    }
                }
            }
        }
    }
}

/* batch of products: the i-th reads A at a + i*bsa, B at b + i*bsb and writes C at c + i*bsc; returns 0, or -1
   when its packing buffers cannot be allocated */
int fixed_gemm_batched(int64_t batch, int64_t m, int64_t n, int64_t k,
                       const float *a, int64_t bsa, int64_t rsa, int64_t csa,
                       const float *b, int64_t bsb, int64_t rsb, int64_t csb,
                       float *c, int64_t bsc, int64_t ldc, int accumulate) {
    const struct kernel *kern = kernel_for(m, n, k);
    int64_t mc = m < MC ? m : MC, nc = n < NC ? n : NC, kc = k < KC ? k : KC;
    float *apack = aligned_alloc(64, (size_t)((mc + kern->mr - 1) / kern->mr * kern->mr * kc + 16) * sizeof(float));
    float *bpack = aligned_alloc(64, (size_t)((nc + kern->nr - 1) / kern->nr * kern->nr * kc + 16) * sizeof(float));
    if (!apack || !bpack) { free(apack); free(bpack); return -1; }
    for (int64_t i = 0; i < batch; i++)
        gemm(kern, m, n, k, a + i * bsa, rsa, csa, b + i * bsb, rsb, csb, c + i * bsc, ldc, accumulate, apack, bpack);
    free(apack); free(bpack);
    return 0;
}

/* the definition the kernel follows, one element at a time: c = fma(a[k-1], b[k-1], ... fma(a[0], b[0], c0)) */
void fixed_gemm_reference(int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c, int accumulate) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float acc = accumulate ? c[i * n + j] : 0.0f;
            for (int64_t p = 0; p < k; p++) acc = __builtin_fmaf(a[i * k + p], b[p * n + j], acc);
            c[i * n + j] = acc;
        }
}

/* 1 where this processor runs the kernel's instructions (AVX2 and FMA), else 0 */
int fixed_gemm_supported(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
