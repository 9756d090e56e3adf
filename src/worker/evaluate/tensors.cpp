// The tensors of an evaluation: the task's inputs and parameters as drawn from the seed, fresh
// clones for each run, and the checks on what a run returned or changed (aliasing, equality,
// finiteness, the degenerate reference, the tolerance comparison, byte fingerprints).
#include "worker/evaluate/evaluation.h"

#include <ATen/CPUGeneratorImpl.h>

namespace kwb::evaluation {

double msSince(Clock::time_point t0)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

namespace {

at::ScalarType scalarType(const std::string& dtype)
{
    if (dtype == "float32")
        return at::kFloat;
    if (dtype == "float16")
        return at::kHalf;
    if (dtype == "bfloat16")
        return at::kBFloat16;
    if (dtype == "float64")
        return at::kDouble;
    if (dtype == "int32")
        return at::kInt;
    if (dtype == "int64")
        return at::kLong;
    throw std::invalid_argument("unknown dtype " + dtype);
}

} // namespace

std::string shapeString(at::IntArrayRef s)
{
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i)
        out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
}

void uniformInSlices(at::Tensor& t, double from, double to, const at::Generator& gen, int64_t sliceElements,
                     const std::atomic<bool>* stop)
{
    // A contiguous tensor's uniform draw takes the generator's numbers in memory order (torch's
    // serial CPU kernel), so drawing it slice by slice takes them in the same order: the same
    // values, with a place between slices to stop (tst_torch_side checks it against the torch it
    // is built with: 1.13 in CI, 2.11 on the GPU machine in session 43).
    at::Tensor flat = t.view({-1});
    const int64_t n = flat.numel();
    for (int64_t at = 0; at < n; at += sliceElements) {
        if (stop && stop->load())
            throw DrawStopped();
        flat.narrow(0, at, std::min(sliceElements, n - at)).uniform_(from, to, gen);
    }
}

ParamDict makeParams(const Task& task, Scale scale, at::Device device, uint64_t seed, DrawnOn drawnOn,
                     const std::atomic<bool>* stop)
{
    // As KernelBench: a CPU generator of the draw's own, in the state torch::manual_seed(seed) puts
    // the global one in, so the draw can run on a thread beside the answer's ModelNew, which draws
    // from the global one (kernelBenchLoadStage). On the device: its generator, seeded as all are.
    const bool asKernelBench = drawnOn == DrawnOn::CpuAsKernelBench;
    std::optional<at::Generator> cpuGen;
    if (asKernelBench)
        cpuGen = at::detail::createCPUGenerator(seed);
    else
        torch::manual_seed(seed);
    ParamDict dict;
    const auto opts = at::TensorOptions().dtype(at::kFloat).device(asKernelBench ? at::Device(at::kCPU) : device);
    for (size_t i = 0; i < task.params.size(); ++i) {
        if (stop && stop->load())
            throw DrawStopped();
        const ParamSpec& p = task.params[i];
        const auto shape = task.paramShape(i, scale);
        at::Tensor t;
        if (p.init == "uniform_fan_in") {
            const double bound = 1.0 / std::sqrt(task.fanIn(i, scale));
            t = torch::empty(shape, opts);
            if (cpuGen)
                uniformInSlices(t, -bound, bound, *cpuGen, kDrawSliceElements, stop);
            else
                t.uniform_(-bound, bound);
        } else if (p.init == "randn") {
            t = cpuGen ? torch::randn(shape, *cpuGen, opts) : torch::randn(shape, opts);
        } else if (p.init == "ones") {
            t = torch::ones(shape, opts);
        } else if (p.init == "zeros") {
            t = torch::zeros(shape, opts);
        } else if (p.init == "constant") {
            t = torch::full(shape, p.value, opts);
        } else {
            throw std::invalid_argument(task.id + ": unknown init " + p.init);
        }
        dict.insert(p.name, t.device() == device ? t : t.to(device));
    }
    return dict;
}

std::vector<c10::IValue> makeInputs(const Task& task, Scale scale, at::Device device, uint64_t seed,
                                    const std::string& generatorOverride)
{
    if (task.isKernelBenchOnly()) {
        // KernelBench's own draw: get_inputs() of its problem file, seeded (no generator of ours to
        // override), with a shape set's module values where the task is at one (atShapeSet).
        if (!generatorOverride.empty())
            throw std::logic_error(task.id + " is KernelBench only: its inputs are get_inputs()'s, drawn as they are");
        return kernelBenchInputs(task.referencePython, seed, device.is_cuda() ? "cuda" : "cpu", task.moduleValues);
    }
    torch::manual_seed(seed);
    std::vector<c10::IValue> inputs;
    for (size_t i = 0; i < task.inputs.size(); ++i) {
        const InputSpec& in = task.inputs[i];
        if (in.kind == "float") {
            inputs.emplace_back(in.value);
        } else if (in.kind == "int") {
            inputs.emplace_back(static_cast<int64_t>(in.value));
        } else {
            const auto opts = at::TensorOptions().dtype(scalarType(in.dtype)).device(device);
            const auto shape = task.inputShape(i, scale);
            const std::string& gen = generatorOverride.empty() ? in.generator : generatorOverride;
            const bool floating = at::isFloatingType(scalarType(in.dtype));
            inputs.emplace_back(gen == "randn" && floating ? torch::randn(shape, opts) : torch::rand(shape, opts));
        }
    }
    return inputs;
}

/// Fresh copies of everything a forward may write to, so one run cannot influence another.
/// With weightsToo = false, parameters that are not buffers are passed as they are (timing).
/// `variant` > 0: each tensor input's copy is a rotation of it instead (variantOf).
std::vector<c10::IValue> cloneArgs(const std::vector<c10::IValue>& inputs, const ParamDict& params, const Task& task,
                                   bool weightsToo, int64_t variant)
{
    std::vector<c10::IValue> stack;
    stack.reserve(inputs.size() + 1);
    for (const auto& v : inputs)
        stack.push_back(v.isTensor() ? c10::IValue(variantOf(v.toTensor(), variant)) : v);
    ParamDict copy;
    for (const ParamSpec& p : task.params) {
        at::Tensor t = params.at(p.name);
        copy.insert(p.name, (weightsToo || p.buffer) ? t.clone() : t);
    }
    stack.emplace_back(copy);
    return stack;
}

at::Tensor variantOf(const at::Tensor& t, int64_t variant)
{
    const int64_t n = t.numel();
    if (variant <= 0 || n <= 1)
        return t.clone();
    // A large odd stride spreads the variants' shifts over the tensor; never 0 (the input itself).
    const int64_t shift = 1 + ((variant - 1) * 7919) % (n - 1);
    return t.contiguous().view({-1}).roll(shift).view(t.sizes());
}

namespace {

/// Whether two tensors' storages share bytes: the same storage, or (a tensor that came back
/// through DLPack has a storage object of its own) overlapping memory.
bool sharesMemory(const at::Tensor& a, const at::Tensor& b)
{
    if (a.is_alias_of(b))
        return true;
    if (!a.has_storage() || !b.has_storage() || a.device() != b.device())
        return false;
    const auto* pa = static_cast<const char*>(a.storage().data_ptr().get());
    const auto* pb = static_cast<const char*>(b.storage().data_ptr().get());
    const size_t na = a.storage().nbytes(), nb = b.storage().nbytes();
    return pa && pb && na && nb && pa < pb + nb && pb < pa + na;
}

} // namespace

namespace {

/// Input i's name: the task file's, or for a KernelBench-only task (inputs from get_inputs()) its place.
std::string inputName(const Task& task, size_t i)
{
    return i < task.inputs.size() ? task.inputs[i].name : "get_inputs()[" + std::to_string(i) + "]";
}

} // namespace

/// The name of the argument (input or parameter) whose storage the output shares, or "".
std::string aliasedArgument(const at::Tensor& out, const std::vector<c10::IValue>& args, const Task& task)
{
    for (size_t i = 0; i < args.size(); ++i)
        if (args[i].isTensor() && sharesMemory(out, args[i].toTensor()))
            return inputName(task, i);
    if (!args.empty() && args.back().isGenericDict()) {
        for (const auto& entry : args.back().toGenericDict())
            if (entry.value().isTensor() && sharesMemory(out, entry.value().toTensor()))
                return entry.key().toStringRef();
    }
    return {};
}

/// torch.equal(a, b): same sizes and every element equal (floats: NaN never, -0 == +0). On one
/// GPU, for contiguous float32 or integer/boolean data of one dtype, one pass of the evaluator's
/// own kernel (outputcompare.h: no first load of ATen's eq and all in a fresh worker); else ATen.
bool equalValues(const at::Tensor& a, const at::Tensor& b)
{
    if (a.sizes() != b.sizes())
        return false;
    if (a.is_cuda() && b.is_cuda() && a.device() == b.device() && a.scalar_type() == b.scalar_type() &&
        a.is_contiguous() && b.is_contiguous() && a.numel() > 0) {
        std::string why;
        std::optional<int64_t> bad;
        if (a.scalar_type() == at::kFloat)
            bad = fusedUnequalFloats(a.data_ptr<float>(), b.data_ptr<float>(), a.numel(), a.device().index(), &why);
        else if (at::isIntegralType(a.scalar_type(), /*includeBool=*/true))
            bad = fusedUnequalBytes(a.data_ptr(), b.data_ptr(), int64_t(a.nbytes()), a.device().index(), &why);
        if (bad)
            return *bad == 0;
    }
    return torch::equal(a, b);
}

/// The name of the first input, or parameter that is not a buffer, that a run changed: `args`
/// are the clones the candidate got, `inputs` and `params` the originals they were cloned from.
/// Buffers (BatchNorm's running statistics) are meant to be updated and are left out.
std::string modifiedArgument(const std::vector<c10::IValue>& args, const std::vector<c10::IValue>& inputs,
                             const ParamDict& params, const Task& task)
{
    for (size_t i = 0; i < args.size() && i < inputs.size(); ++i)
        if (args[i].isTensor() && inputs[i].isTensor() && !equalValues(args[i].toTensor(), inputs[i].toTensor()))
            return inputName(task, i);
    if (!args.empty() && args.back().isGenericDict()) {
        const auto dict = args.back().toGenericDict();
        for (const ParamSpec& p : task.params) {
            if (p.buffer || !dict.contains(p.name))
                continue;
            const c10::IValue v = dict.at(p.name);
            if (v.isTensor() && !equalValues(v.toTensor(), params.at(p.name)))
                return p.name;
        }
    }
    return {};
}

/// Synchronises and reports any pending CUDA error. Errors that poison the context (illegal
/// address, launch failure, ...) are sticky: every later call fails the same way.
CudaFault syncCuda()
{
    CudaFault f;
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess)
        e = cudaGetLastError();
    if (e != cudaSuccess) {
        f.any = true;
        f.message = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
        // A second call tells a sticky error (it repeats) from a cleared one.
        f.sticky = cudaDeviceSynchronize() != cudaSuccess;
        cudaGetLastError();
    }
    return f;
}

/// Whether every element is finite (integers are): the evaluator's own kernel for float32 on one
/// GPU, else ATen's isfinite.
bool allFinite(const at::Tensor& t)
{
    if (t.is_cuda() && t.scalar_type() == at::kFloat && t.is_contiguous()) {
        std::string why;
        if (const auto stats = fusedStats(t.data_ptr<float>(), t.numel(), t.device().index(), &why))
            return stats->nonFinite == 0;
    }
    return torch::isfinite(t).all().item<bool>();
}

/// Flags references whose output cannot tell a right candidate from a wrong one.
json degenerateCheck(const std::vector<at::Tensor>& refs)
{
    if (refs.empty() || refs[0].numel() == 0)
        return nullptr;
    const at::Tensor& r = refs[0];
    // One pass of the evaluator's own kernel where it can (float32 on one GPU), else ATen's.
    std::optional<FusedStats> stats;
    if (r.is_cuda() && r.scalar_type() == at::kFloat && r.is_contiguous()) {
        std::string why;
        stats = fusedStats(r.data_ptr<float>(), r.numel(), r.device().index(), &why);
    }
    const double zeroFraction = (stats ? double(stats->zeros) : (r == 0).sum().item<double>()) / double(r.numel());
    json d;
    if (zeroFraction >= 0.999) {
        d = {{protocol::Key::kKind, zeroFraction == 1.0 ? "all_zero" : "mostly_zero"},
             {protocol::Key::kZeroFraction, zeroFraction}};
        d[protocol::Key::kMessage] =
            zeroFraction == 1.0 ? "every output element of the reference is 0: a candidate returning zeros passes"
                                : "almost every output element of the reference is 0: a candidate returning zeros "
                                  "nearly passes, and correctness says little";
        return d;
    }
    // max == min as ATen has it: a NaN anywhere makes both NaN, never equal.
    if (stats ? stats->nans == 0 && stats->min == stats->max : (r.max() == r.min()).item<bool>())
        return {{protocol::Key::kKind, "constant"},
                {protocol::Key::kZeroFraction, zeroFraction},
                {protocol::Key::kMessage, "the reference output is one constant value"}};
    if (refs.size() > 1 && equalValues(refs[0], refs[1]))
        return {{protocol::Key::kKind, "input_independent"},
                {protocol::Key::kZeroFraction, zeroFraction},
                {protocol::Key::kMessage, "two different inputs gave the same reference output"}};
    return nullptr;
}

Comparison compareOutputs(const at::Tensor& cand, const at::Tensor& ref, double atol, double rtol)
{
    Comparison c;
    if (cand.sizes() != ref.sizes()) {
        c.ok = false;
        c.reason = "output shape " + shapeString(cand.sizes()) + ", expected " + shapeString(ref.sizes());
        return c;
    }
    if (cand.scalar_type() != ref.scalar_type()) {
        c.ok = false;
        c.reason = std::string("output dtype ") + c10::toString(cand.scalar_type()) + ", expected " +
                   c10::toString(ref.scalar_type());
        return c;
    }
    // float32 on one GPU: one fused pass that rounds as the ATen ops below do (outputcompare.h);
    // those ops run only where it finds a mismatch (for the report), or where it cannot run.
    if (cand.is_cuda() && ref.device() == cand.device() && cand.scalar_type() == at::kFloat && cand.is_contiguous() &&
        ref.is_contiguous()) {
        std::string why;
        const auto f = fusedCompare(cand.data_ptr<float>(), ref.data_ptr<float>(), cand.numel(), atol, rtol,
                                    cand.device().index(), &why);
        if (f && f->mismatches == 0) {
            c.maxAbs = f->maxAbs;
            c.maxRel = f->maxRel;
            return c;
        }
    }
    // Compared in the output's own dtype, as torch.allclose does.
    const at::Tensor& a = cand;
    at::Tensor b = ref.to(cand.device());
    at::Tensor badFinite = torch::isfinite(b) & ~torch::isfinite(a);
    at::Tensor diff = (a - b).abs();
    at::Tensor within = diff <= (atol + rtol * b.abs());
    // NaN in diff compares false, so NaN counts as a mismatch, as allclose does (equal_nan=False).
    at::Tensor bad = ~within;
    // The four numbers the check needs, brought to the host in one copy (one synchronisation).
    int64_t nonFinite = 0;
    if (diff.numel()) {
        at::Tensor finiteDiff = torch::where(torch::isfinite(diff), diff, torch::zeros_like(diff));
        const at::Tensor summary =
            at::stack({badFinite.sum().to(at::kDouble), bad.sum().to(at::kDouble), finiteDiff.max().to(at::kDouble),
                       (finiteDiff / (b.abs() + 1e-12)).max().to(at::kDouble)})
                .to(at::kCPU);
        const double* v = summary.data_ptr<double>();
        nonFinite = int64_t(v[0]);
        c.mismatches = int64_t(v[1]);
        c.maxAbs = v[2];
        c.maxRel = v[3];
    }
    if (nonFinite > 0) {
        c.ok = false;
        const int64_t idx = badFinite.flatten().nonzero().index({0, 0}).item<int64_t>();
        c.reason = std::to_string(nonFinite) +
                   " output elements are NaN or Inf where the reference is finite (first at flat index " +
                   std::to_string(idx) + ")";
        c.detail = {{"non_finite", nonFinite}, {"first_index", idx}};
        return c;
    }
    if (c.mismatches > 0) {
        c.ok = false;
        const int64_t idx = bad.flatten().nonzero().index({0, 0}).item<int64_t>();
        const double got = a.flatten()[idx].item<double>();
        const double want = b.flatten()[idx].item<double>();
        c.reason = std::to_string(c.mismatches) + " of " + std::to_string(a.numel()) +
                   " elements differ beyond atol/rtol; first at flat index " + std::to_string(idx) + ": got " +
                   std::to_string(got) + ", expected " + std::to_string(want);
        c.detail = {{"mismatches", c.mismatches}, {"first_index", idx}, {"got", got}, {"expected", want}};
    }
    return c;
}

/// Byte fingerprints of the tensors among `values`, in order (a scalar counts as 0).
std::vector<int64_t> fingerprints(const std::vector<c10::IValue>& values)
{
    std::vector<at::Tensor> tensors;
    for (const auto& v : values)
        tensors.push_back(v.isTensor() ? v.toTensor() : at::Tensor());
    return byteFingerprints(tensors);
}

} // namespace kwb::evaluation

namespace kwb {

/// A cheap fingerprint of each tensor's bytes, taken where it lives, so a candidate that writes
/// outside its own buffers into the evaluator's copies is named as such instead of just failing;
/// an undefined tensor counts as 0. It is the sum (mod 2^64) of the bytes read as 64-bit words,
/// plus the trailing bytes (< 8): a change of any one word changes it. The words are summed in
/// place: summing the bytes with dtype kLong made ATen convert the tensor to int64 first, an 8×
/// copy (an 8 GiB input: 64 GiB more on the GPU, and the time to write it). All sums come to the
/// host in one copy: a task with dozens of parameters would otherwise synchronise once per
/// parameter per check.
std::vector<int64_t> byteFingerprints(const std::vector<at::Tensor>& tensors)
{
    // On one GPU: the evaluator's own kernel (outputcompare.h), a launch per tensor and one
    // copy back, without a first load of ATen's reductions in a fresh worker. Same sums.
    {
        std::vector<at::Tensor> held; // the contiguous, aligned bytes, alive until the sums are back
        std::vector<DeviceBytes> spans;
        std::vector<size_t> where;
        int device = -1;
        bool oneGpu = true;
        for (size_t i = 0; i < tensors.size() && oneGpu; ++i) {
            if (!tensors[i].defined() || tensors[i].numel() == 0)
                continue;
            if (!tensors[i].is_cuda() || (device >= 0 && tensors[i].device().index() != device)) {
                oneGpu = false;
                break;
            }
            device = tensors[i].device().index();
            at::Tensor bytes = tensors[i].contiguous();
            if (reinterpret_cast<std::uintptr_t>(bytes.data_ptr()) % 8 != 0)
                bytes = bytes.clone(); // a view at an odd offset: words need an 8-byte-aligned start
            spans.push_back({bytes.data_ptr(), int64_t(bytes.nbytes())});
            held.push_back(std::move(bytes));
            where.push_back(i);
        }
        std::string why;
        if (oneGpu && !spans.empty()) {
            if (const auto sums = fusedWordSums(spans, device, &why)) {
                std::vector<int64_t> out(tensors.size(), 0);
                for (size_t k = 0; k < where.size(); ++k)
                    out[where[k]] = static_cast<int64_t>((*sums)[k]);
                return out;
            }
        }
    }
    std::vector<at::Tensor> sums;
    std::vector<size_t> where;
    for (size_t i = 0; i < tensors.size(); ++i) {
        if (!tensors[i].defined() || tensors[i].numel() == 0)
            continue;
        at::Tensor bytes = tensors[i].contiguous().view({-1}).view(at::kByte);
        const int64_t n = bytes.numel(), whole = n / 8 * 8;
        if (whole > 0 && bytes.storage_offset() % 8 != 0)
            bytes = bytes.clone(); // a view at an odd offset: words need an 8-byte-aligned start
        at::Tensor sum = bytes.narrow(0, whole, n - whole).sum(at::kLong); // the tail: under 8 bytes
        if (whole > 0)
            sum = sum + bytes.narrow(0, 0, whole).view(at::kLong).sum();
        sums.push_back(sum);
        where.push_back(i);
    }
    std::vector<int64_t> out(tensors.size(), 0);
    if (sums.empty())
        return out;
    const at::Tensor host = at::stack(sums).to(at::kCPU);
    const int64_t* v = host.data_ptr<int64_t>();
    for (size_t k = 0; k < where.size(); ++k)
        out[where[k]] = v[k];
    return out;
}

} // namespace kwb

namespace kwb::evaluation {

namespace {

/// The canary's bits per floating dtype: a signalling NaN whose payload (0xA5…) no arithmetic
/// makes (an operation on a signalling NaN returns a quiet one), so an element that holds it was
/// never written; as an integer of the same width, for fill_ and ==.
std::optional<std::pair<at::ScalarType, int64_t>> canaryBits(at::ScalarType t)
{
    switch (t) {
    case at::kFloat: return std::make_pair(at::kInt, int64_t(0x7FA5A5A5));
    case at::kDouble: return std::make_pair(at::kLong, int64_t(0x7FF5A5A5A5A5A5A5LL));
    case at::kHalf: return std::make_pair(at::kShort, int64_t(0x7D5A));
    case at::kBFloat16: return std::make_pair(at::kShort, int64_t(0x7FA5));
    default: return std::nullopt;
    }
}

} // namespace

void poison(at::Tensor& t)
{
    if (!t.defined() || t.numel() == 0)
        return;
    try {
        at::NoGradGuard noGrad;
        // The whole storage, not only the view: a slice of a buffer the candidate keeps and
        // returns again is poisoned too.
        at::Tensor all = t;
        if (t.has_storage() && t.element_size() > 0) {
            const int64_t n = int64_t(t.storage().nbytes()) / int64_t(t.element_size());
            all = at::empty({0}, t.options()).set_(t.storage(), 0, {n}, {1});
        }
        if (const auto bits = canaryBits(all.scalar_type()))
            all.view(bits->first).fill_(bits->second);
        else if (all.scalar_type() == at::kBool)
            all.logical_not_();
        else if (at::isIntegralType(all.scalar_type(), /*includeBool=*/false))
            all.bitwise_not_();
        else
            all.fill_(std::numeric_limits<double>::quiet_NaN());
    } catch (const std::exception&) {
        // A layout without one storage to fill (sparse, a tensor subclass): left as it is; the
        // comparison still judges the values it holds.
    }
}

int64_t canaryCount(const at::Tensor& t)
{
    const auto bits = t.defined() ? canaryBits(t.scalar_type()) : std::nullopt;
    if (!bits || t.numel() == 0)
        return 0;
    return t.view(bits->first).eq(bits->second).sum().item<int64_t>();
}

std::vector<c10::IValue> stressInputs(const std::vector<c10::IValue>& inputs, double scale, bool heavyTailed,
                                      uint64_t seed)
{
    torch::manual_seed(seed);
    std::vector<c10::IValue> out;
    out.reserve(inputs.size());
    for (const c10::IValue& v : inputs) {
        if (!v.isTensor() || !at::isFloatingType(v.toTensor().scalar_type()) || v.toTensor().numel() == 0) {
            out.push_back(v);
            continue;
        }
        const at::Tensor x = v.toTensor();
        if (!heavyTailed) {
            out.emplace_back(x * scale);
            continue;
        }
        // Student's t with 2 degrees of freedom (infinite variance): z / sqrt(chi2_2 / 2), in
        // float32 and then the input's dtype; of the draw's sign where the draw had none
        // (U[0,1) inputs stay non-negative, so a log or sqrt keeps its domain).
        const auto f = x.options().dtype(at::kFloat);
        const at::Tensor z = torch::randn(x.sizes(), f);
        const at::Tensor chi = (torch::randn(x.sizes(), f).square() + torch::randn(x.sizes(), f).square()) / 2;
        at::Tensor t = z / chi.sqrt().clamp_min(1e-30);
        if (x.min().item<double>() >= 0)
            t = t.abs();
        out.emplace_back(t.to(x.scalar_type()) * scale);
    }
    return out;
}

double rootMeanSquare(const at::Tensor& t)
{
    if (!t.defined() || t.numel() == 0 || !at::isFloatingType(t.scalar_type()))
        return 0;
    return t.to(at::kDouble).square().mean().sqrt().item<double>();
}

} // namespace kwb::evaluation
