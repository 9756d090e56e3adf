// kwb-worker: evaluates tasks and candidates for the workbench. Speaks docs/protocol.md.
#include "worker/measure/cpuaffinity.h"
#include "worker/measure/gpuquietlock.h"
#include "worker/protocol/protocol.h"
#include "worker/python/pythonhost.h"
#include "worker/sandbox/parentwatch.h"
#include "worker/sandbox/sandboxinit.h"
#include "worker/worker.h"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <unistd.h>

int main(int argc, char** argv)
{
    // Before anything else: a worker whose parent is gone ends, busy or not.
    kwb::watchParent();
    // Nothing kwb's process happened to leave open reaches an answer (sandboxinit.h).
    kwb::closeInheritedDescriptors();
    // Before any thread, in the roles kwb starts: builds, compile workers' torch imports and a
    // worker's own other threads overlap other candidates' timings, so all of it stays off the
    // timing threads' CPUs (the timing thread pins itself onto its own for each measurement). A
    // builder, started by the broker, has the broker's set already: from it, it would take another.
    const bool builder = argc == 4 && std::strcmp(argv[1], "--build-extension") == 0;
    const std::string sharedTimingCpus = builder ? "" : kwb::affinity::keepOffTimingCpus();
    // The extension cache's two other roles (pythonhost.h): they run no answer's code.
    if (argc == 3 && std::strcmp(argv[1], "--build-broker") == 0) {
        // A worker may close a request's connection before its reply (an early request no
        // load_inline took): the reply's write must fail with EPIPE, which the broker handles,
        // not end the broker by SIGPIPE (its embedded Python installs no signal handlers).
        std::signal(SIGPIPE, SIG_IGN);
        // Before the interpreter and any thread: every build the broker starts inherits it.
        if (const std::string why = kwb::limitBuildMemory(); !why.empty())
            std::cerr << "kwb-worker --build-broker: no data limit for builds: " << why << "\n";
        if (!sharedTimingCpus.empty())
            std::cerr << "kwb-worker --build-broker: builds share the timing CPUs: " << sharedTimingCpus << "\n";
        try {
            return kwb::python::runBuildBroker(argv[2]);
        } catch (const std::exception& e) {
            std::cerr << "kwb-worker --build-broker: " << e.what() << "\n";
            return 2;
        }
    }
    if (builder) {
        if (const char* why = kwb::denyKeyrings(); *why)
            std::cerr << "kwb-worker --build-extension: " << why << "\n";
        try {
            return kwb::python::buildExtension(argv[2], argv[3]);
        } catch (const std::exception& e) {
            std::cerr << "kwb-worker --build-extension: " << e.what() << "\n";
            return 2;
        }
    }
    // In the OS sandbox this process is PID 1 of its namespace: only a signal from outside can
    // kill it, and a candidate cannot fake one (sandboxinit.h).
    if (const char* why = kwb::setUpSandboxInit(); *why)
        std::cerr << "kwb-worker: the sandbox's init: " << why << "\n";
    if (!sharedTimingCpus.empty())
        std::cerr << "kwb-worker: its threads share the timing CPUs: " << sharedTimingCpus << "\n";
    // Then, before anything can print: responses get a private descriptor, fd 1 becomes stderr.
    const int protocolFd = kwb::protocol::takeOverStdout();
    if (protocolFd < 0) {
        std::cerr << "kwb-worker: cannot set up the protocol descriptor\n";
        return 2;
    }
    std::string tasksDir;
    bool hostLimits = false;
    long long hostMemory = 0;
    long long hostThreads = 0;
    std::unique_ptr<kwb::GpuQuietLock> quietLock;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--tasks-dir" && i + 1 < argc) {
            tasksDir = argv[++i];
        } else if ((a == "--max-host-memory" || a == "--max-host-threads") && i + 1 < argc) {
            const std::string value = argv[++i];
            char* end = nullptr;
            const long long number = value == "default" ? 0 : std::strtoll(value.c_str(), &end, 10);
            if (value != "default" && (end == value.c_str() || *end != '\0' || number <= 0)) {
                std::cerr << "kwb-worker: " << a << " takes a positive number or 'default', not '" << value << "'\n";
                return 2;
            }
            (a == "--max-host-memory" ? hostMemory : hostThreads) = number;
            hostLimits = true;
        } else if (a == "--gpu-quiet-lock" && i + 1 < argc) {
            // One that cannot be opened: said once here and in hello; the worker goes on without it.
            quietLock = std::make_unique<kwb::GpuQuietLock>(argv[++i]);
            if (!quietLock->usable())
                std::cerr << "kwb-worker: --gpu-quiet-lock: " << quietLock->error() << "; going on without the lock\n";
        } else if (a == "--refuse-native-code" && i + 1 < argc) {
            kwb::python::refuseNativeCode(argv[++i]);
        } else if (a == "--end-on-stdin-eof") {
            kwb::watchInputHangup(0); // a remote worker: the connection is its stdin
        } else if (a == "--version") {
            std::string v = std::string("kwb-worker ") + KWB_VERSION + " protocol " +
                            std::to_string(kwb::protocol::kVersion) + "\n";
            (void)!::write(protocolFd, v.data(), v.size());
            return 0;
        } else if (a == "--help" || a == "-h") {
            std::cerr
                << "usage: kwb-worker [--tasks-dir DIR] [--end-on-stdin-eof] [--max-host-memory BYTES|default]\n"
                   "                  [--max-host-threads N|default] [--gpu-quiet-lock PATH]\n"
                   "                  [--refuse-native-code WHY]\n"
                   "Reads JSON requests (one per line) on stdin and answers on stdout; see docs/protocol.md.\n"
                   "--end-on-stdin-eof: end at once (SIGKILL) when stdin closes, busy or not (remote workers).\n"
                   "--max-host-memory, --max-host-threads: end (exit 96) when this process and its children\n"
                   "  go over that much host memory or that many threads; default: this machine's default\n"
                   "  (remote workers: the supervisor cannot watch them there; docs/remote-workers.md).\n"
                   "--gpu-quiet-lock PATH: the GPU's quiet lock file (flock): held exclusively while timing,\n"
                   "  profiling traffic or measuring ceilings, shared while answering `warm`; without it no lock.\n"
                   "--refuse-native-code WHY: refuse KernelBench-format answers (native host code) as `rejected`:\n"
                   "  kwb passes it where the OS sandbox is unavailable (docs/security.md).\n";
            return 0;
        } else {
            std::cerr << "kwb-worker: unknown argument '" << a << "' (try --help)\n";
            return 2;
        }
    }
    if (hostLimits)
        kwb::watchHostLimits(hostMemory, int(std::min<long long>(hostThreads, 1 << 30)));
    if (tasksDir.empty())
        tasksDir = kwb::defaultTasksDir(argv[0]);
    kwb::Worker worker(protocolFd, tasksDir, std::move(quietLock));
    const int code = worker.run();
    kwb::endCandidateProcesses(); // nothing a candidate started outlives the worker
    // Every answer is already written (write(2) on the protocol descriptor). Ending here, without
    // libtorch's, cuDNN's and the CUDA runtime's destructors, saves ~0.3 s per worker on the H200
    // (stdin closed to exit 260-301 ms, bench/results/2026-12-01-worker-start-h200.md): in fresh
    // mode the next worker takes the GPU only once this one has exited. The kernel frees the
    // memory and the driver the context either way.
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    _exit(code);
}
