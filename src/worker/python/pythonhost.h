#pragma once
// The embedded CPython of kwb-worker (KernelBench's answer format; docs/decisions.md): started
// once, on first use, with the interpreter whose torch is the libtorch this worker links. Its
// Python side is kernelbench_host.py. This interface is torch-free; the model's calls are in
// candidatecallable.h. Built without Python (KWB_WORKER_PYTHON off), available() says why.
#include <nlohmann/json.hpp>

#include <string>

namespace kwb::python {

/// Whether KernelBench-format answers can run here; `why` says why not.
bool available(std::string* why = nullptr);

/// Refuses every KernelBench-format answer from now on (`kwb-worker --refuse-native-code WHY`):
/// its load_inline extension is native host code that only the OS sandbox contains, and this
/// worker runs without it (docs/security.md, "No sandbox, no native model code").
void refuseNativeCode(const std::string& why);
/// The refusal's message ("" while native code may run): what a refused answer's evaluation says.
std::string nativeCodeRefusal();

/// Whether this process has loaded an answer's library (a load_inline extension): its native code
/// may have left a thread or changed the process's memory, which no check can rule out, so the
/// worker is not used for another candidate (it answers, then exits; docs/sandbox.md).
bool answerLibraryLoaded();

/// The static check of a module's source (Python's ast): [{"line","reason"}], empty when it may
/// run; a syntax error is one entry with "syntax": true. Throws std::runtime_error when !available().
nlohmann::json checkSource(const std::string& source);

/// Where load_inline builds: KWB_EXTENSION_CACHE, else $TMPDIR (or /tmp)/kwb-extensions. One
/// folder per extension, keyed by the hash of its sources, flags, torch, arch and Python.
std::string extensionCacheDir();

/// Sends the build broker (KWB_BUILD_BROKER) the builds of the answer's load_inline calls whose
/// arguments its source states plainly, before torch is imported and the module runs
/// (early_requests.py's request_early): the module's load_inline takes those requests' replies,
/// so a compile error or a library is there seconds sooner; nothing else changes. Without a broker
/// or Python it does nothing, and it never fails an evaluation.
void requestBuildsEarly(const std::string& source, const std::string& arch);
/// Closes the early requests no load_inline took (the broker stops their builds). The module's
/// load does so when it has run; the worker again after every request, whatever ended it.
void dropEarlyRequests();

/// The compile step alone (the `compile` request): runs the module (its load_inline calls build
/// into the cache) for `arch`. {"ok","status","stage","message","line","builds":[…],"refusals":[…]}.
nlohmann::json build(const std::string& source, const std::string& arch);

/// `kwb-worker --build-broker CONFIG`: serves extension builds for sandboxed workers (the
/// broker of extension_cache.py; docs/sandbox.md, "The extension cache") until the process ends.
int runBuildBroker(const std::string& configPath);
/// `kwb-worker --build-extension REQUEST OUT`: builds one load_inline call into OUT without
/// loading it (extension_cache.py's build_extension); its result is OUT/kwb-build-result.json.
int buildExtension(const std::string& requestPath, const std::string& outDir);

/// The Python error being handled, as "Type: message (answer line N)", cleared; "" if none.
std::string takeError();

/// Whether an error text (takeError's "Type: message", anywhere in it) is the host's own refusal of
/// what the answer's code tried while it ran (kernelbench_host.py's SandboxError, every one of whose
/// messages starts "kwb sandbox:": the audit hook, a module view, a class statement, load_inline's
/// arguments). An answer that fakes the text only labels its own failure `rejected`.
inline bool isSandboxRefusal(const std::string& error)
{
    return error.find("SandboxError: kwb sandbox: ") != std::string::npos;
}

} // namespace kwb::python
