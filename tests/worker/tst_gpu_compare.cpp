// GPU test (label gpu), issue 13: the fused float32 comparison (outputcompare.h) gives the same
// mismatch count as the ATen ops of compareOutputs (evaluate/tensors.cpp) on every case, and, where nothing
// mismatches, the same max |a − b| and max relative difference, bit for bit: random outputs,
// elements on either side of the tolerance's edge (one float step apart), NaN and Inf on either
// side, zeros, huge values, odd lengths. The module's other kernels against what they replace:
// the degenerate check's statistics and the finiteness check against ATen's reductions, equality
// against torch.equal, and the byte fingerprints on the GPU against the same tensors' on the CPU
// (ATen's path), over dtypes, odd byte lengths, misaligned views, non-contiguous tensors and more
// tensors than one copy back holds. Exits 77 (skipped) where there is no CUDA device.
#include "worker/evaluate/evaluation.h"
#include "worker/evaluate/outputcompare.h"
#include "worker/evaluate/tensorfingerprint.h"

#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

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
    const auto f =
        kwb::fusedCompare(a.data_ptr<float>(), b.data_ptr<float>(), a.numel(), atol, rtol, a.device().index(), &why);
    bool ok = f && f->mismatches == bad;
    if (ok && bad == 0)
        ok = f->maxAbs == maxAbs && (f->maxRel == maxRel || (std::isnan(f->maxRel) && std::isnan(maxRel)));
    std::printf("%s %s: ATen %lld mismatches, max abs %.9g, max rel %.9g; fused %s\n", ok ? "ok  " : "FAIL",
                name.c_str(), (long long)bad, maxAbs, maxRel,
                f ? (std::to_string(f->mismatches) + " mismatches, max abs " + std::to_string(f->maxAbs) +
                     ", max rel " + std::to_string(f->maxRel))
                        .c_str()
                  : ("not run: " + why).c_str());
    failures += !ok;
}
void report(bool ok, const std::string& what)
{
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
    failures += !ok;
}

/// kwb_stats_f32 against ATen: zeros, non-finite, NaN, and min/max over the non-NaN elements.
void checkStats(const std::string& name, const at::Tensor& x)
{
    std::string why;
    const auto s = kwb::fusedStats(x.data_ptr<float>(), x.numel(), x.device().index(), &why);
    if (!s) {
        report(false, "stats " + name + ": not run: " + why);
        return;
    }
    const int64_t zeros = (x == 0).sum().item<int64_t>();
    const int64_t nonFinite = (~torch::isfinite(x)).sum().item<int64_t>();
    const int64_t nans = torch::isnan(x).sum().item<int64_t>();
    bool ok = s->zeros == zeros && s->nonFinite == nonFinite && s->nans == nans;
    const at::Tensor kept = x.masked_select(~torch::isnan(x));
    if (kept.numel() > 0) {
        const float mn = kept.min().item<float>(), mx = kept.max().item<float>();
        ok = ok && s->min == mn && s->max == mx;
        // The degenerate check's question, both ways: is the tensor one constant (NaN: never)?
        const bool atenConstant = (x.max() == x.min()).item<bool>();
        ok = ok && atenConstant == (s->nans == 0 && s->min == s->max);
    }
    report(ok, "stats " + name + ": zeros " + std::to_string(s->zeros) + "/" + std::to_string(zeros) + ", non-finite " +
                   std::to_string(s->nonFinite) + "/" + std::to_string(nonFinite) + ", NaN " + std::to_string(s->nans) +
                   "/" + std::to_string(nans));
}

/// The fused equality against torch.equal (float32 by value, others by bytes).
void checkEqual(const std::string& name, const at::Tensor& a, const at::Tensor& b)
{
    std::string why;
    std::optional<int64_t> bad;
    if (a.scalar_type() == at::kFloat)
        bad = kwb::fusedUnequalFloats(a.data_ptr<float>(), b.data_ptr<float>(), a.numel(), a.device().index(), &why);
    else
        bad = kwb::fusedUnequalBytes(a.data_ptr(), b.data_ptr(), int64_t(a.nbytes()), a.device().index(), &why);
    const bool aten = torch::equal(a, b);
    report(bad && (*bad == 0) == aten, "equal " + name + ": torch.equal " + (aten ? "true" : "false") + ", fused " +
                                           (bad ? std::to_string(*bad) + " unequal" : "not run: " + why));
}

/// byteFingerprints of CUDA tensors (the fused kernel) equal those of their CPU copies (ATen).
void checkFingerprints(const std::string& name, const std::vector<at::Tensor>& onGpu)
{
    std::vector<at::Tensor> onCpu;
    for (const at::Tensor& t : onGpu)
        onCpu.push_back(t.defined() ? t.cpu() : at::Tensor());
    const auto g = kwb::byteFingerprints(onGpu), c = kwb::byteFingerprints(onCpu);
    report(g == c, "fingerprints " + name + " (" + std::to_string(onGpu.size()) + " tensors)");
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
    for (int64_t n : {int64_t(1), int64_t(777), (int64_t(1) << 22) + 3}) {
        const std::string at = " (n=" + std::to_string(n) + ")";
        at::Tensor x = torch::randn({n}, cuda);
        checkStats("randn" + at, x);
        checkStats("rand" + at, torch::rand({n}, cuda));
        checkStats("zeros" + at, torch::zeros({n}, cuda));
        checkStats("negative zeros" + at, torch::full({n}, -0.0f, cuda));
        checkStats("constant" + at, torch::full({n}, 3.5f, cuda));
        checkStats("all NaN" + at, torch::full({n}, nan, cuda));
        checkStats("-Inf only" + at, torch::full({n}, -inf, cuda));
        at::Tensor y = x.clone();
        y[0] = -0.0f;
        y[n - 1] = 0.0f;
        checkStats("signed zeros among values" + at, y);
        y[n / 2] = nan;
        checkStats("a NaN" + at, y);
        y[n / 2] = inf;
        checkStats("+Inf" + at, y);
        y[0] = -inf;
        checkStats("both infinities" + at, y);
        at::Tensor c = torch::full({n}, 2.0f, cuda);
        c[n - 1] = nan;
        checkStats("a constant with a NaN" + at, c);

        checkEqual("identical" + at, x, x.clone());
        at::Tensor z = x.clone();
        z[n - 1] = z[n - 1] + 1;
        checkEqual("one element changed" + at, x, z);
        at::Tensor zn = x.clone();
        zn[0] = nan;
        checkEqual("NaN on both sides" + at, zn, zn.clone());
        checkEqual("-0 against +0" + at, torch::zeros({n}, cuda), torch::full({n}, -0.0f, cuda));
        at::Tensor li = torch::randint(0, 1000, {n}, cuda.dtype(at::kLong));
        checkEqual("int64 identical" + at, li, li.clone());
        at::Tensor lj = li.clone();
        lj[n / 2] = lj[n / 2] + 1;
        checkEqual("int64 one changed" + at, li, lj);
        at::Tensor bi = torch::randint(0, 2, {n}, cuda.dtype(at::kBool));
        at::Tensor bj = bi.clone();
        checkEqual("bool identical" + at, bi, bj);
        bj[n - 1] = !bj[n - 1].item<bool>();
        checkEqual("bool last changed (the tail bytes)" + at, bi, bj);
        at::Tensor ui = torch::randint(0, 256, {n}, cuda.dtype(at::kByte));
        at::Tensor uj = ui.clone();
        uj[n - 1] = (uj[n - 1].item<int>() + 1) % 256;
        checkEqual("uint8 last changed" + at, ui, uj);
    }
    {
        std::vector<at::Tensor> many;
        for (int k = 0; k < 150; ++k) // past two copies back
            many.push_back(torch::randn({k + 1}, cuda));
        checkFingerprints("150 small float32", many);
        at::Tensor bytes = torch::randint(0, 256, {1001}, cuda.dtype(at::kByte));
        checkFingerprints("uint8, odd lengths and offsets",
                          {bytes, bytes.narrow(0, 1, 1000), bytes.narrow(0, 3, 997), bytes.narrow(0, 8, 5)});
        at::Tensor m = torch::randn({64, 33}, cuda);
        checkFingerprints("non-contiguous, empty, undefined",
                          {m.t(), m.narrow(1, 1, 7), torch::empty({0}, cuda), at::Tensor(), m});
        checkFingerprints("other dtypes",
                          {torch::randn({1023}, cuda.dtype(at::kHalf)), torch::randn({17}, cuda.dtype(at::kDouble)),
                           torch::randint(0, 2, {13}, cuda.dtype(at::kBool)),
                           torch::randint(-5, 5, {9}, cuda.dtype(at::kInt))});
        checkFingerprints("a large one", {torch::randn({(int64_t(1) << 24) + 5}, cuda)});
        // A change of one word changes it (as on the CPU).
        at::Tensor w = torch::randn({4097}, cuda);
        const auto before = kwb::byteFingerprints({w});
        w[4096] = w[4096] * 2 + 1;
        report(kwb::byteFingerprints({w}) != before, "fingerprints: one element changed changes it");
    }
    {
        // Output poisoning (issue 39 item 3): a poisoned output, once dropped, is the block the
        // caching allocator hands the next torch.empty of its size, canary and all; a candidate
        // writing half of it leaves the other half counted as never written.
        using namespace kwb::evaluation;
        const int64_t n = (int64_t(1) << 20) + 3;
        at::Tensor out = torch::randn({n}, cuda);
        const void* block = out.data_ptr();
        poison(out);
        out = at::Tensor();
        at::Tensor next = torch::empty({n}, cuda);
        report(next.data_ptr() == block, "poison: the allocator hands the same block back");
        report(canaryCount(next) == n, "poison: a fresh torch.empty holds the canary everywhere");
        next.narrow(0, 0, n / 2).copy_(torch::randn({n / 2}, cuda));
        report(canaryCount(next) == n - n / 2, "poison: a half-written output counts the other half");
        at::Tensor reused = next + 0; // arithmetic on the canary is a quiet NaN, never the canary
        report(canaryCount(reused) == 0, "poison: a computed NaN is not the canary");
    }
    std::printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
