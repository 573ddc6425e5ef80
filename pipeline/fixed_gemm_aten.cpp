// Registers fixed_gemm.c as torch's CPU kernel of aten::mm, addmm, bmm and baddbmm (pipeline/fixed_gemm.py): float32
// products take it; every other dtype, layout or a scaled addmm/baddbmm goes on to torch's own CPU kernel (at::cpu::).
#include <ATen/ATen.h>
#include <ATen/ops/addmm_cpu_dispatch.h>
#include <ATen/ops/baddbmm_cpu_dispatch.h>
#include <ATen/ops/bmm_cpu_dispatch.h>
#include <ATen/ops/mm_cpu_dispatch.h>
#include <torch/library.h>

extern "C" int fixed_gemm_batched(int64_t batch, int64_t m, int64_t n, int64_t k,
                                  const float *a, int64_t bsa, int64_t rsa, int64_t csa,
                                  const float *b, int64_t bsb, int64_t rsb, int64_t csb,
                                  float *c, int64_t bsc, int64_t ldc, int accumulate);

namespace {

bool ours(const at::Tensor &t) {
    return t.scalar_type() == at::kFloat && t.layout() == at::kStrided && !t.is_neg() && !t.is_conj();
}

bool plain(const at::Scalar &s, double value) { return !s.isComplex() && s.toDouble() == value; }

// [batch, m, n] = start + a [batch, m, k] @ b [batch, k, n]; start: a new contiguous tensor of that shape, or undefined
at::Tensor product(const at::Tensor &a, const at::Tensor &b, at::Tensor start) {
    const int64_t batch = a.size(0), m = a.size(1), k = a.size(2), n = b.size(2);
    const bool accumulate = start.defined();
    at::Tensor out = accumulate ? start : at::empty({batch, m, n}, a.options());
    if (batch == 0 || m == 0 || n == 0) return out;
    if (fixed_gemm_batched(batch, m, n, k, a.const_data_ptr<float>(), a.stride(0), a.stride(1), a.stride(2),
                           b.const_data_ptr<float>(), b.stride(0), b.stride(1), b.stride(2),
                           out.mutable_data_ptr<float>(), out.stride(0), out.stride(1), accumulate) != 0)
        TORCH_CHECK(false, "fixed_gemm: no memory for the packing buffers of a ", m, "x", k, " @ ", k, "x", n,
                    " product");
    return out;
}

// the input an addmm/baddbmm adds to, broadcast to the product's shape in a new tensor (it is written in place)
at::Tensor start_from(const at::Tensor &input, at::IntArrayRef shape) {
    return input.expand(shape).clone(at::MemoryFormat::Contiguous);
}

// shapes torch's own kernel would refuse go to it, for its error message
bool products(const at::Tensor &a, const at::Tensor &b, int64_t dim) {
    return ours(a) && ours(b) && a.dim() == dim && b.dim() == dim && a.size(dim - 1) == b.size(dim - 2) &&
           (dim == 2 || a.size(0) == b.size(0));
}

at::Tensor mm(const at::Tensor &a, const at::Tensor &b) {
    if (!products(a, b, 2)) return at::cpu::mm(a, b);
    return product(a.unsqueeze(0), b.unsqueeze(0), at::Tensor()).squeeze(0);
}

at::Tensor addmm(const at::Tensor &input, const at::Tensor &a, const at::Tensor &b, const at::Scalar &beta,
                 const at::Scalar &alpha) {
    if (!ours(input) || !products(a, b, 2) || !plain(alpha, 1) || !(plain(beta, 1) || plain(beta, 0)))
        return at::cpu::addmm(input, a, b, beta, alpha);
    at::Tensor start = plain(beta, 0) ? at::Tensor() : start_from(input, {a.size(0), b.size(1)}).unsqueeze(0);
    return product(a.unsqueeze(0), b.unsqueeze(0), start).squeeze(0);
}

at::Tensor bmm(const at::Tensor &a, const at::Tensor &b) {
    if (!products(a, b, 3)) return at::cpu::bmm(a, b);
    return product(a, b, at::Tensor());
}

at::Tensor baddbmm(const at::Tensor &input, const at::Tensor &a, const at::Tensor &b, const at::Scalar &beta,
                   const at::Scalar &alpha) {
    if (!ours(input) || !products(a, b, 3) || !plain(alpha, 1) || !(plain(beta, 1) || plain(beta, 0)))
        return at::cpu::baddbmm(input, a, b, beta, alpha);
    at::Tensor start = plain(beta, 0) ? at::Tensor() : start_from(input, {a.size(0), a.size(1), b.size(2)});
    return product(a, b, start);
}

// torch warns that these replace its kernels; they are meant to
struct Quiet : c10::WarningHandler {
    void process(const c10::Warning &) override {}
};

}  // namespace

// install the kernels for the rest of the process (pipeline/fixed_gemm.py use(); once)
extern "C" void fixed_gemm_install() {
    static Quiet quiet;
    c10::WarningUtils::WarningHandlerGuard guard(&quiet);
    static torch::Library library(torch::Library::IMPL, "aten", c10::DispatchKey::CPU, __FILE__, __LINE__);
    library.impl("mm", mm);
    library.impl("addmm", addmm);
    library.impl("bmm", bmm);
    library.impl("baddbmm", baddbmm);
}
