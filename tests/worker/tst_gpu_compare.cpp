// GPU test (label gpu), issue 13: the fused float32 comparison (output_compare.hpp) gives the same
// mismatch count as the ATen ops of evaluator.cpp's compareOutputs on every case, and, where nothing
// mismatches, the same max |a − b| and max relative difference, bit for bit: random outputs,
// elements on either side of the tolerance's edge (one float step apart), NaN and Inf on either
// side, zeros, huge values, odd lengths. Exits 77 (skipped) where there is no CUDA device.
#include "output_compare.hpp"

#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

namespace {
int failures = 0;

/// compareOutputs' ATen path: mismatches, max finite |a − b|, max of that over |b| + 1e-12.
void atenCompare(const at::Tensor& a, const at::Tensor& b, double atol, double rtol, int64_t* bad, double* maxAbs,
                 double* maxRel)
{
    at::Tensor diff = (a - b).abs();
    at::Tensor within = diff <= (atol + rtol * b.abs());
    at::Tensor finiteDiff = torch::where(torch::isfinite(diff), diff, torch::zeros_like(diff));
    *bad = (~within).sum().item<int64_t>();
    *maxAbs = a.numel() ? finiteDiff.max().to(at::kDouble).item<double>() : 0.0;
    *maxRel = a.numel() ? (finiteDiff / (b.abs() + 1e-12)).max().to(at::kDouble).item<double>() : 0.0;
}

void check(const std::string& name, const at::Tensor& a, const at::Tensor& b, double atol = 1e-4, double rtol = 1e-4)
{
    int64_t bad = 0;
    double maxAbs = 0, maxRel = 0;
    atenCompare(a, b, atol, rtol, &bad, &maxAbs, &maxRel);
    std::string why;
    const auto f = kwb::fusedCompare(a.data_ptr<float>(), b.data_ptr<float>(), a.numel(), atol, rtol, a.device().index(), &why);
    bool ok = f && f->mismatches == bad;
    if (ok && bad == 0)
        ok = f->maxAbs == maxAbs && (f->maxRel == maxRel || (std::isnan(f->maxRel) && std::isnan(maxRel)));
    std::printf("%s %s: ATen %lld mismatches, max abs %.9g, max rel %.9g; fused %s\n", ok ? "ok  " : "FAIL", name.c_str(),
                (long long)bad, maxAbs, maxRel,
                f ? (std::to_string(f->mismatches) + " mismatches, max abs " + std::to_string(f->maxAbs) + ", max rel " +
                     std::to_string(f->maxRel))
                        .c_str()
                  : ("not run: " + why).c_str());
    failures += !ok;
}
} // namespace

int main()
{
    if (!torch::cuda::is_available()) {
        std::printf("SKIP: no CUDA device\n");
        return 77;
    }
    torch::manual_seed(7);
    const auto cuda = at::TensorOptions().dtype(at::kFloat).device(at::kCUDA);
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    for (int64_t n : {int64_t(1), int64_t(1000), int64_t(1) << 20, (int64_t(1) << 24) + 7}) {
        const std::string at = " (n=" + std::to_string(n) + ")";
        at::Tensor b = torch::randn({n}, cuda);
        check("identical" + at, b.clone(), b);
        check("within tolerance" + at, b + 1e-6 * torch::randn({n}, cuda), b);
        check("beyond tolerance" + at, b + 1e-2 * torch::randn({n}, cuda), b);
        // The edge: a = b + tol exactly as ATen rounds tol, then one float step either side.
        at::Tensor tol = 1e-4 + 1e-4 * b.abs();
        at::Tensor edge = b + tol;
        check("on the edge" + at, edge, b);
        check("one step inside" + at, torch::nextafter(edge, b), b);
        check("one step outside" + at, torch::nextafter(edge, torch::full_like(b, inf)), b);
        check("one step outside, below" + at, torch::nextafter(b - tol, torch::full_like(b, -inf)), b);
        at::Tensor a = b.clone();
        a[n / 2] = nan;
        check("NaN in the output" + at, a, b);
        a[n / 2] = inf;
        check("Inf in the output" + at, a, b);
        at::Tensor bz = b.clone();
        bz[0] = 0;
        check("a zero in the reference" + at, bz + 1e-5, bz);
        at::Tensor bn = b.clone();
        bn[n - 1] = nan;
        check("NaN in the reference" + at, bn.clone(), bn);
        check("huge values" + at, b * 1e30f * (1 + 1e-6), b * 1e30f);
        check("other tolerances" + at, b + 5e-3 * torch::randn({n}, cuda), b, 1e-2, 1e-2);
    }
    std::printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
