// The embedded interpreter (pythonhost.h) and the KernelBench-format callable
// (candidatecallable.h). The only file with both Python.h and ATen: tensors cross as DLPack
// capsules, so libtorch_python's headers are not needed.
#ifdef KWB_WITH_PYTHON
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#endif

#include "worker/python/candidatecallable.h"
#include "worker/python/pythonhost.h"

#include <ATen/DLConvertor.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <stdexcept>

namespace kwb {
using json = nlohmann::json;

namespace python {

namespace {
std::string g_nativeCodeRefusal;
}

void refuseNativeCode(const std::string& why)
{
    g_nativeCodeRefusal =
        "no OS sandbox here (" + why +
        "): a KernelBench-format answer runs native host code (its load_inline extension), which only "
        "the OS sandbox contains; evaluate it where bubblewrap works, or pass --no-os-sandbox to run "
        "it without one";
}

std::string nativeCodeRefusal()
{
    return g_nativeCodeRefusal;
}

namespace {
// Set as the host is about to load an answer's library (forgetModuleOfOtherLibrary, called before
// every such load); never cleared: the process has run the answer's native code from then on.
std::atomic<bool> g_answerLibraryLoaded{false};
} // namespace

bool answerLibraryLoaded()
{
    return g_answerLibraryLoaded.load();
}

std::string extensionCacheDir()
{
    if (const char* env = std::getenv("KWB_EXTENSION_CACHE"); env && *env)
        return env;
    const char* tmp = std::getenv("TMPDIR");
    return std::string(tmp && *tmp ? tmp : "/tmp") + "/kwb-extensions";
}

} // namespace python

#ifndef KWB_WITH_PYTHON

namespace python {
constexpr const char* kNoPython =
    "this kwb-worker was built without Python (KWB_WORKER_PYTHON off, or no Python whose torch is its libtorch), "
    "so KernelBench-format answers (class ModelNew with load_inline) cannot be evaluated; answer in the native "
    "format (docs/candidate-format.md) or use a worker built with Python";
bool available(std::string* why)
{
    if (why)
        *why = kNoPython;
    return false;
}
json checkSource(const std::string&)
{
    throw std::runtime_error(kNoPython);
}
json build(const std::string&, const std::string&)
{
    throw std::runtime_error(kNoPython);
}
void requestBuildsEarly(const std::string&, const std::string&) {}
void dropEarlyRequests() {}
std::string takeError()
{
    return {};
}
int runBuildBroker(const std::string&)
{
    throw std::runtime_error(kNoPython);
}
int buildExtension(const std::string&, const std::string&)
{
    throw std::runtime_error(kNoPython);
}
} // namespace python

KernelBenchModel loadKernelBenchModel(const std::string&, const json&, uint64_t, const std::string&, const std::string&)
{
    throw std::runtime_error(python::kNoPython);
}
KernelBenchReference loadKernelBenchReference(const std::string&, uint64_t, const std::string&)
{
    throw std::runtime_error(python::kNoPython);
}
std::vector<c10::IValue> kernelBenchInputs(const std::string&, uint64_t, const std::string&,
                                           const std::map<std::string, int64_t>&)
{
    throw std::runtime_error(python::kNoPython);
}

#else

namespace {

const char* const kHostSource =
#include "kernelbench_host_py.inc"
    ;
const char* const kCudaSplitSource =
#include "cuda_split_py.inc"
    ;
const char* const kSplitVerdictSource =
#include "split_verdict_py.inc"
    ;
const char* const kExtensionCacheSource =
#include "extension_cache_py.inc"
    ;
const char* const kEarlyRequestsSource =
#include "early_requests_py.inc"
    ;

/// Owns one reference.
struct Ref
{
    PyObject* p = nullptr;
    Ref() = default;
    explicit Ref(PyObject* o)
        : p(o)
    {}
    Ref(const Ref&) = delete;
    Ref& operator=(const Ref&) = delete;
    Ref(Ref&& o) noexcept
        : p(o.p)
    {
        o.p = nullptr;
    }
    ~Ref() { Py_XDECREF(p); }
    PyObject* release()
    {
        PyObject* r = p;
        p = nullptr;
        return r;
    }
    explicit operator bool() const { return p != nullptr; }
};

PyObject* g_host = nullptr; // the _kwb_host module
std::string g_startError;

std::string pyString(PyObject* o)
{
    if (!o)
        return {};
    Ref s(PyObject_Str(o));
    if (!s) {
        PyErr_Clear();
        return "?";
    }
    const char* c = PyUnicode_AsUTF8(s.p);
    return c ? c : "?";
}

/// Starts the interpreter once: named after the Python found at configure time (so sys.prefix and
/// site-packages are that Python's, where its torch lives), no signal handlers of its own (the
/// worker's SIGINT/SIGTERM stay the worker's), then kernelbench_host.py as _kwb_host.
PyObject* g_extensions = nullptr; // the _kwb_extensions module (extension_cache.py)
PyObject* g_early = nullptr;      // the _kwb_early module (early_requests.py)

/// One of the embedded scripts run as the module `name`; nullptr with g_startError set where it fails.
PyObject* loadModule(const char* source, const char* file, const char* name)
{
    Ref code(Py_CompileString(source, file, Py_file_input));
    PyObject* module = code ? PyImport_ExecCodeModule(name, code.p) : nullptr;
    if (!module)
        g_startError = std::string(file) + " did not load: " + python::takeError();
    return module;
}

/// pybind11 3 keeps every module it made in the interpreter's state dict, by module name, and hands
/// that module back when a library of the same name is loaded later (pybind11/pybind11#5782): in a
/// reused worker on the H200 (torch 2.11), the second answer naming its extension "matmul" ran the
/// first answer's functions (session 22, recorded Qwen3-Coder answers: 6 of 30 verdicts wrong).
/// So before the host loads a library as module `name`, it forgets a cached module of that name
/// made from another file; one made from this very file is kept (loading it again must not run its
/// init twice). _kwb_extensions.forget_module_of_other_library(name, path) -> bool (forgotten).
PyObject* forgetModuleOfOtherLibrary(PyObject*, PyObject* args)
{
    // kernelbench_host.py calls this right before it loads an answer's library, whatever follows.
    python::g_answerLibraryLoaded = true;
    PyObject* name = nullptr;
    PyObject* path = nullptr;
    if (!PyArg_ParseTuple(args, "UU", &name, &path))
        return nullptr;
    PyObject* state = PyInterpreterState_GetDict(PyInterpreterState_Get());                           // borrowed
    PyObject* cache = state ? PyDict_GetItemString(state, "__pybind11_module_cache") : nullptr;       // borrowed
    PyObject* module = cache && PyDict_Check(cache) ? PyDict_GetItemWithError(cache, name) : nullptr; // borrowed
    if (!module) {
        if (PyErr_Occurred())
            return nullptr;
        Py_RETURN_FALSE;
    }
    Ref file(PyObject_GetAttrString(module, "__file__"));
    if (!file)
        PyErr_Clear(); // no file: not this library's
    const int same = file ? PyObject_RichCompareBool(file.p, path, Py_EQ) : 0;
    if (same < 0)
        return nullptr;
    if (same == 1)
        Py_RETURN_FALSE;
    if (PyDict_DelItem(cache, name) != 0)
        return nullptr;
    Py_RETURN_TRUE;
}

PyMethodDef kForgetModuleOfOtherLibrary = {"forget_module_of_other_library", forgetModuleOfOtherLibrary, METH_VARARGS,
                                           "forgets pybind11's cached module NAME unless made from PATH"};

/// The interpreter, cuda_split.py as _kwb_cuda_split, split_verdict.py as _kwb_split_verdict,
/// extension_cache.py as _kwb_extensions (which imports the first two) and early_requests.py as _kwb_early (which
/// imports the second), without torch (the build broker, the builds asked for early).
bool startInterpreter()
{
    static std::once_flag once;
    std::call_once(once, [] {
        PyConfig config;
        PyConfig_InitPythonConfig(&config);
        config.install_signal_handlers = 0;
        config.parse_argv = 0;
        config.buffered_stdio = 0;
        PyStatus st = PyConfig_SetBytesString(&config, &config.program_name, KWB_PYTHON_EXECUTABLE);
        if (!PyStatus_Exception(st))
            st = Py_InitializeFromConfig(&config);
        PyConfig_Clear(&config);
        if (PyStatus_Exception(st)) {
            g_startError = std::string("the embedded Python did not start: ") + (st.err_msg ? st.err_msg : "?");
            return;
        }
        if (!loadModule(kCudaSplitSource, "cuda_split.py", "_kwb_cuda_split") ||
            !loadModule(kSplitVerdictSource, "split_verdict.py", "_kwb_split_verdict"))
            return;
        g_extensions = loadModule(kExtensionCacheSource, "extension_cache.py", "_kwb_extensions");
        if (g_extensions) {
            Ref forget(PyCFunction_New(&kForgetModuleOfOtherLibrary, nullptr));
            if (!forget || PyObject_SetAttrString(g_extensions, kForgetModuleOfOtherLibrary.ml_name, forget.p) != 0) {
                g_startError = "extension_cache.py: " + python::takeError();
                g_extensions = nullptr;
                return;
            }
            g_early = loadModule(kEarlyRequestsSource, "early_requests.py", "_kwb_early");
        }
    });
    return g_extensions != nullptr && g_early != nullptr;
}

/// Then kernelbench_host.py as _kwb_host (imports torch).
bool start()
{
    static std::once_flag once;
    std::call_once(once, [] {
        if (!startInterpreter())
            return;
        g_host = loadModule(kHostSource, "kernelbench_host.py", "_kwb_host");
    });
    return g_host != nullptr;
}

/// Starts the host or throws. A Python object may be made only once the interpreter runs, and
/// callHost's arguments are made before it is called: so every entry point that makes them calls
/// this first (a worker whose first request was run_reference of a KernelBench-only task made its
/// arguments before any interpreter and died by SIGSEGV, session 20 on the H200).
void requireHost()
{
    if (!start())
        throw std::runtime_error(g_startError);
}

/// _kwb_host.<fn>(args...) with new references given; throws with Python's message on an exception.
Ref callHost(const char* fn, std::initializer_list<PyObject*> args)
{
    requireHost();
    Ref tuple(PyTuple_New(Py_ssize_t(args.size())));
    Py_ssize_t i = 0;
    for (PyObject* a : args) {
        if (!a)
            throw std::runtime_error("embedded Python: " + python::takeError());
        PyTuple_SET_ITEM(tuple.p, i++, a);
    }
    Ref f(PyObject_GetAttrString(g_host, fn));
    Ref out(f ? PyObject_Call(f.p, tuple.p, nullptr) : nullptr);
    if (!out)
        throw std::runtime_error(python::takeError());
    return out;
}

PyObject* str(const std::string& s)
{
    return PyUnicode_FromStringAndSize(s.data(), Py_ssize_t(s.size()));
}

/// When the answer's module has run (or failed): python::dropEarlyRequests.
struct DropEarlyRequests
{
    DropEarlyRequests() = default;
    DropEarlyRequests(const DropEarlyRequests&) = delete;
    DropEarlyRequests& operator=(const DropEarlyRequests&) = delete;
    ~DropEarlyRequests() { python::dropEarlyRequests(); }
};

json jsonResult(Ref r)
{
    const char* c = PyUnicode_AsUTF8(r.p);
    if (!c)
        throw std::runtime_error(python::takeError());
    return json::parse(c);
}

void capsuleDestructor(PyObject* capsule)
{
    // Still named "dltensor": never consumed, so the tensor it holds is ours to release.
    if (PyCapsule_IsValid(capsule, "dltensor")) {
        auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
        if (m && m->deleter)
            m->deleter(m);
    }
}

// torch 1.13's DLPack has no bool: a bool tensor crosses as its bytes (a uint8 view, no copy) in
// a tuple tagged "bool" (kernelbench_host.py's _to_capsule and _from_capsule).
constexpr const char* kBoolTag = "bool";

PyObject* toPython(const c10::IValue& v)
{
    if (v.isTensor()) {
        const at::Tensor& t = v.toTensor();
        if (t.scalar_type() == at::kBool)
            return Py_BuildValue("(Ns)", PyCapsule_New(at::toDLPack(t.view(at::kByte)), "dltensor", capsuleDestructor),
                                 kBoolTag);
        return PyCapsule_New(at::toDLPack(t), "dltensor", capsuleDestructor);
    }
    if (v.isDouble())
        return PyFloat_FromDouble(v.toDouble());
    if (v.isInt())
        return PyLong_FromLongLong(v.toInt());
    if (v.isBool())
        return PyBool_FromLong(v.toBool());
    throw std::invalid_argument(std::string("cannot pass a ") + v.tagKind() + " to ModelNew.forward");
}

at::Tensor fromCapsule(PyObject* capsule)
{
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (!m)
        throw std::runtime_error("embedded Python: forward's output is not a DLPack capsule");
    at::Tensor t = at::fromDLPack(m); // owns m now
    PyCapsule_SetName(capsule, "used_dltensor");
    return t;
}

/// A tensor from Python (a capsule, or a bool tensor's tagged tuple) or a number.
c10::IValue fromPython(PyObject* o)
{
    if (PyTuple_Check(o) && PyTuple_GET_SIZE(o) == 2)
        return fromCapsule(PyTuple_GET_ITEM(o, 0)).view(at::kBool);
    if (PyCapsule_CheckExact(o))
        return fromCapsule(o);
    if (PyBool_Check(o))
        return o == Py_True;
    if (PyLong_Check(o))
        return int64_t(PyLong_AsLongLong(o));
    if (PyFloat_Check(o))
        return PyFloat_AsDouble(o);
    throw std::runtime_error("embedded Python: a value that is neither a tensor nor a number");
}

class KernelBenchCallable final : public CandidateCallable
{
public:
    explicit KernelBenchCallable(long handle)
        : m_handle(handle)
    {}
    ~KernelBenchCallable() override
    {
        try {
            callHost("release", {PyLong_FromLong(m_handle)});
        } catch (const std::exception&) {
        }
    }
    void keepOwnWeights() override { m_ownWeights = true; }
    void seedEachCall(uint64_t seed) override { m_seed = seed; }
    std::function<c10::IValue()> bind(std::vector<c10::IValue> args) override
    {
        Ref list(PyList_New(0)), params(PyDict_New());
        for (const auto& a : args) {
            if (a.isGenericDict()) {
                if (m_ownWeights)
                    continue;
                for (const auto& e : a.toGenericDict()) {
                    Ref value(toPython(e.value()));
                    PyDict_SetItemString(params.p, e.key().toStringRef().c_str(), value.p);
                }
            } else {
                Ref value(toPython(a));
                PyList_Append(list.p, value.p);
            }
        }
        PyObject* seed = m_seed ? PyLong_FromUnsignedLongLong(*m_seed) : Py_NewRef(Py_None);
        auto bound = std::make_shared<Ref>(
            callHost("bind", {PyLong_FromLong(m_handle), list.release(), params.release(), seed}));
        return [bound]() -> c10::IValue {
            Ref out = callHost("call", {Py_NewRef(bound->p)});
            return fromPython(out.p);
        };
    }

private:
    long m_handle;
    bool m_ownWeights = false;
    std::optional<uint64_t> m_seed;
};

} // namespace

namespace python {

bool available(std::string* why)
{
    if (start())
        return true;
    if (why)
        *why = g_startError;
    return false;
}

std::string takeError()
{
    if (!PyErr_Occurred())
        return {};
    PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    Ref t(type), v(value), b(tb);
    Ref typeName(t ? PyObject_GetAttrString(t.p, "__name__") : nullptr);
    const std::string name = typeName ? pyString(typeName.p) : "Error";
    PyErr_Clear();
    std::string msg = name + ": " + pyString(v.p);
    // The answer's innermost line, for the model to find its mistake.
    int line = 0;
    for (PyObject* cur = b.p; cur && cur != Py_None;) {
        Ref frame(PyObject_GetAttrString(cur, "tb_frame"));
        Ref code(frame ? PyObject_GetAttrString(frame.p, "f_code") : nullptr);
        Ref file(code ? PyObject_GetAttrString(code.p, "co_filename") : nullptr);
        if (file && pyString(file.p) == "<answer>") {
            Ref ln(PyObject_GetAttrString(cur, "tb_lineno"));
            if (ln)
                line = int(PyLong_AsLong(ln.p));
        }
        Ref next(PyObject_GetAttrString(cur, "tb_next"));
        if (!next)
            break;
        cur = next.p; // kept alive by the chain from b
    }
    PyErr_Clear();
    if (line > 0)
        msg += " (answer line " + std::to_string(line) + ")";
    return msg;
}

int runBuildBroker(const std::string& configPath)
{
    if (!startInterpreter())
        throw std::runtime_error(g_startError);
    Ref f(PyObject_GetAttrString(g_extensions, "serve_broker"));
    Ref out(f ? PyObject_CallFunction(f.p, "s", configPath.c_str()) : nullptr);
    if (!out)
        throw std::runtime_error(python::takeError());
    return 0;
}

int buildExtension(const std::string& requestPath, const std::string& outDir)
{
    if (!startInterpreter())
        throw std::runtime_error(g_startError);
    Ref f(PyObject_GetAttrString(g_extensions, "build_extension"));
    Ref out(f ? PyObject_CallFunction(f.p, "ss", requestPath.c_str(), outDir.c_str()) : nullptr);
    if (!out)
        throw std::runtime_error(python::takeError());
    return int(PyLong_AsLong(out.p));
}

json checkSource(const std::string& source)
{
    requireHost();
    return jsonResult(callHost("check_json", {str(source)}));
}

void requestBuildsEarly(const std::string& source, const std::string& arch)
{
    // The broker's socket is kwb's word that builds go through one; the interpreter without torch
    // starts in milliseconds, torch comes after.
    if (!std::getenv("KWB_BUILD_BROKER") || !startInterpreter())
        return;
    Ref f(PyObject_GetAttrString(g_early, "request_early"));
    Ref s(str(source)), a(str(arch));
    Ref out(f && s && a ? PyObject_CallFunctionObjArgs(f.p, s.p, a.p, nullptr) : nullptr);
    if (!out)
        PyErr_Clear(); // only a head start: the module's load_inline asks the broker as always
}

void dropEarlyRequests()
{
    if (!g_early)
        return;
    PyObject* type = nullptr;
    PyObject* value = nullptr;
    PyObject* traceback = nullptr;
    PyErr_Fetch(&type, &value, &traceback); // an error being raised stays the caller's
    Ref f(PyObject_GetAttrString(g_early, "drop_early"));
    Ref out(f ? PyObject_CallNoArgs(f.p) : nullptr);
    if (!out)
        PyErr_Clear();
    PyErr_Restore(type, value, traceback);
}

json build(const std::string& source, const std::string& arch)
{
    requireHost();
    std::filesystem::create_directories(extensionCacheDir());
    callHost("configure", {str(extensionCacheDir()), str(arch)});
    DropEarlyRequests drop;
    return jsonResult(callHost("build_json", {str(source)}));
}

} // namespace python

KernelBenchReference loadKernelBenchReference(const std::string& source, uint64_t seed, const std::string& device)
{
    requireHost();
    json r = jsonResult(callHost("load_reference_json", {str(source), PyLong_FromUnsignedLongLong(seed), str(device)}));
    KernelBenchReference ref;
    if (!r.value("ok", false)) {
        ref.error = r.value("message", std::string("the reference failed"));
        return ref;
    }
    ref.initInputs = r["init_inputs"];
    ref.callable = std::make_unique<KernelBenchCallable>(r["handle"].get<long>());
    return ref;
}

std::vector<c10::IValue> kernelBenchInputs(const std::string& source, uint64_t seed, const std::string& device,
                                           const std::map<std::string, int64_t>& moduleValues)
{
    if (!start())
        throw std::runtime_error(g_startError);
    Ref values(PyDict_New()); // a shape set's module values; empty: KernelBench's own
    for (const auto& [name, value] : moduleValues) {
        Ref v(PyLong_FromLongLong(value));
        if (!v.p || PyDict_SetItemString(values.p, name.c_str(), v.p) != 0)
            throw std::runtime_error("embedded Python: " + python::takeError());
    }
    Ref list =
        callHost("reference_inputs", {str(source), PyLong_FromUnsignedLongLong(seed), str(device), values.release()});
    std::vector<c10::IValue> out;
    for (Py_ssize_t i = 0; i < PyList_Size(list.p); ++i)
        out.push_back(fromPython(PyList_GET_ITEM(list.p, i)));
    return out;
}

KernelBenchModel loadKernelBenchModel(const std::string& source, const json& initInputs, uint64_t seed,
                                      const std::string& device, const std::string& arch)
{
    requireHost();
    std::filesystem::create_directories(python::extensionCacheDir());
    callHost("configure", {str(python::extensionCacheDir()), str(arch)});
    DropEarlyRequests drop;
    json r = jsonResult(callHost(
        "load_model_json", {str(source), str(initInputs.dump()), PyLong_FromUnsignedLongLong(seed), str(device)}));
    KernelBenchModel m;
    if (!r.value("ok", false)) {
        r.erase("ok");
        m.error = r;
        if (m.error.contains("detail") && m.error["detail"].is_array() && m.error.value("status", "") != "rejected")
            m.builds = m.error["detail"];
        return m;
    }
    m.builds = r["builds"];
    m.parameters = r["parameters"];
    m.notes = r.value("notes", json::array());
    m.callable = std::make_unique<KernelBenchCallable>(r["handle"].get<long>());
    return m;
}

#endif

} // namespace kwb
